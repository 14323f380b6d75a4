/*
 * convolution_axis.cl: a 1-D correlation (or mean) along one axis of an N-D array, as
 * scipy.ndimage.correlate1d and uniform_filter1d compute it.
 *
 * The array is seen as (outer, len, inner): `len` elements along the axis, `inner` the product
 * of the axis's following dimensions (its stride in elements). One work-item computes one output
 * element; the work-items of dimension 0 are neighbours in memory (the axis itself when it is
 * the last one, LAST=1: global size (len, outer); else along `inner`: (inner, len, outer)), so
 * that a GPU's loads coalesce and a CPU driver vectorises across them.
 *
 * The window: `taps` weights, the input offset of tap 0 being i - shift (taps / 2 + origin);
 * `symmetric` 1 for symmetric weights, -1 antisymmetric, 0 neither: scipy's three orders of
 * summation, kept so that sums round as scipy's do. Specialised builds take them (and the border
 * mode) as the defines TAPS, SHIFT, SYMMETRIC, BORDER; generic ones (GENERIC=1) as arguments
 * (see ndimage.h). MEAN=1: the sum of the window over `taps`, without weights.
 */
#include "ndimage.h"

#ifndef MEAN
#define MEAN 0
#endif
#if !GENERIC
#define taps TAPS
#define shift SHIFT
#define symmetric SYMMETRIC
#endif

/* The window's sum, scipy's way, reading tap k with V(k) */
#if MEAN
#define WINDOW_SUM(V)                                 \
    sum = V(0);                                       \
    for (int k = 1; k < taps; k++)                    \
        sum += V(k);                                  \
    sum /= (ACC_T)taps;
#else
#define WINDOW_SUM(V)                                 \
    const int c = taps / 2;                           \
    if (symmetric > 0) {                              \
        sum = V(c) * w[c];                            \
        for (int k = 0; k < c; k++)                   \
            sum += (V(k) + V(taps - 1 - k)) * w[k];   \
    } else if (symmetric < 0) {                       \
        sum = V(c) * w[c];                            \
        for (int k = 0; k < c; k++)                   \
            sum += (V(k) - V(taps - 1 - k)) * w[k];   \
    } else {                                          \
        sum = V(taps - 1) * w[taps - 1];              \
        for (int k = 0; k < taps - 1; k++)            \
            sum += V(k) * w[k];                       \
    }
#endif

__kernel void correlate_axis(__global const SRC_T *src, __global DST_T *dst,
                             __constant ACC_T *w, int len, long inner, ACC_T cval,
                             int taps_, int shift_, int symmetric_, int border)
{
#if GENERIC
    const int taps = taps_, shift = shift_, symmetric = symmetric_;
#endif
#if LAST
    const int i = get_global_id(0);
    const long base = (long)get_global_id(1) * len;
    if (i >= len)
        return;
#else
    const long x = get_global_id(0);
    const int i = get_global_id(1);
    const long base = (long)get_global_id(2) * len * inner + x;
    if (x >= inner)
        return;
#endif
    const int start = i - shift;
    ACC_T sum;
    /* The window inside the line (almost every element) reads without folding: its own copy
     * of the sums, so that the loop has no test per tap. */
    if (start >= 0 && start + taps <= len) {
        __global const SRC_T *p = src + base + (long)start * inner;
#define V(k) LOAD(p, (long)(k) * inner)
        WINDOW_SUM(V)
#undef V
    } else {
#define V(k) read_tap(src, base, start + (k), len, inner, cval, false, border)
        WINDOW_SUM(V)
#undef V
    }
    clk_store(dst, base + (long)i * inner, sum);
}
