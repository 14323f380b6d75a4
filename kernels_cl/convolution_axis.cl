/*
 * convolution_axis.cl: a 1-D correlation (or mean) along one axis of an N-D array, as
 * scipy.ndimage.correlate1d and uniform_filter1d compute it.
 *
 * Work-items map to elements as ndimage.h describes (AXIS_ELEMENTS).
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

/* The sums of VW neighbouring elements at once, the first at `out`; `p` their first window's
 * first tap, `step` the distance between taps. */
#define VECTOR_SUMS(out, p, step)                                                         \
    {                                                                                     \
        const long step_ = (step);                                                        \
        VACC sum;                                                                         \
        WINDOW_SUM(VECTOR_TAP)                                                            \
        ACC_T lanes[VW];                                                                  \
        VSTORE_ACC(sum, lanes);                                                           \
        for (int l = 0; l < VW; l++)                                                      \
            clk_store(dst, (out) + l, lanes[l]);                                          \
    }
#define VECTOR_TAP(k) VLOAD(p, (long)(k) * step_)
/* The sum of element i of the line that starts at `base`, each tap folded. */
#define SCALAR_SUM(i, base)                                                               \
    {                                                                                     \
        const long base_ = (base);                                                        \
        const int start_ = (i) - shift;                                                   \
        ACC_T sum;                                                                        \
        WINDOW_SUM(FOLDED_TAP)                                                            \
        clk_store(dst, base_ + (long)(i) * STRIDE, sum);                                  \
    }
#define FOLDED_TAP(k) read_tap(src, base_, start_ + (k), len, STRIDE, cval, false, border)

__kernel void correlate_axis(__global const SRC_T *src, __global DST_T *dst,
                             __constant ACC_T *w, int len, long inner, ACC_T cval,
                             int taps_, int shift_, int symmetric_, int border)
{
#if GENERIC
    const int taps = taps_, shift = shift_, symmetric = symmetric_;
#endif
    AXIS_ELEMENTS(VECTOR_SUMS, SCALAR_SUM)
}
