/*
 * rank_filter_axis.cl: the minimum or maximum of a window along one axis of an N-D array, as
 * scipy.ndimage.minimum_filter1d and maximum_filter1d compute it (and minimum_filter and
 * maximum_filter with a rectangular size, one axis after another).
 *
 * Work-items map to elements, and the window's `taps` and `shift` to the input, as in
 * convolution_axis.cl (defines in specialised builds, arguments in generic ones). Values are
 * compared in ACC_T, scipy's double, with the window's first element as the start and a later
 * one taken only where it is strictly smaller (larger): a NaN at the start is kept, a later
 * one skipped, as in scipy. MAXIMUM: 0 or 1.
 */
#include "ndimage.h"

#if !GENERIC
#define taps TAPS
#define shift SHIFT
#endif

__kernel void min_or_max_axis(__global const SRC_T *src, __global DST_T *dst, int len,
                              long inner, ACC_T cval, int taps_, int shift_, int border)
{
#if GENERIC
    const int taps = taps_, shift = shift_;
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
    const bool inside = start >= 0 && start + taps <= len;
    ACC_T best = read_tap(src, base, start, len, inner, cval, inside, border);
    for (int k = 1; k < taps; k++) {
        ACC_T v = read_tap(src, base, start + k, len, inner, cval, inside, border);
#if MAXIMUM
        if (v > best)
            best = v;
#else
        if (v < best)
            best = v;
#endif
    }
    clk_store(dst, base + (long)i * inner, best);
}
