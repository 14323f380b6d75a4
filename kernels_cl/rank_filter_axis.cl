/*
 * rank_filter_axis.cl: the minimum or maximum of a window along one axis of an N-D array, as
 * scipy.ndimage.minimum_filter1d and maximum_filter1d compute it (and minimum_filter and
 * maximum_filter with a rectangular size, one axis after another).
 *
 * Work-items map to elements as ndimage.h describes (AXIS_ELEMENTS), the window's `taps` and
 * `shift` to the input as in convolution_axis.cl (defines in specialised builds, arguments
 * in generic ones). Values are
 * compared in ACC_T, scipy's double, with the window's first element as the start and a later
 * one taken only where it is strictly smaller (larger): a NaN at the start is kept, a later
 * one skipped, as in scipy. MAXIMUM: 0 or 1.
 */
#include "ndimage.h"

#if !GENERIC
#define taps TAPS
#define shift SHIFT
#endif

#if MAXIMUM
#define BETTER(v, best) ((v) > (best))
#else
#define BETTER(v, best) ((v) < (best))
#endif
#if VW == 1
#define PICK(best, v) (BETTER(v, best) ? (v) : (best))
#else
#define PICK(best, v) select(best, v, BETTER(v, best))
#endif

/* The extremes of VW neighbouring windows at once (see convolution_axis.cl's VECTOR_SUMS): a
 * lane takes a later value only where it is strictly better, as the scalar loop does. */
#define VECTOR_EXTREMES(out, p, step)                                                     \
    {                                                                                     \
        const long step_ = (step);                                                        \
        VACC best = VLOAD(p, 0);                                                          \
        for (int k = 1; k < taps; k++) {                                                  \
            VACC v = VLOAD(p, (long)k * step_);                                           \
            best = PICK(best, v);                                                         \
        }                                                                                 \
        ACC_T lanes[VW];                                                                  \
        VSTORE_ACC(best, lanes);                                                          \
        for (int l = 0; l < VW; l++)                                                      \
            clk_store(dst, (out) + l, lanes[l]);                                          \
    }
#define SCALAR_EXTREME(i, base)                                                           \
    {                                                                                     \
        const long base_ = (base);                                                        \
        const int start_ = (i) - shift;                                                   \
        ACC_T best = read_tap(src, base_, start_, len, STRIDE, cval, false, border);       \
        for (int k = 1; k < taps; k++) {                                                  \
            ACC_T v = read_tap(src, base_, start_ + k, len, STRIDE, cval, false, border);  \
            if (BETTER(v, best))                                                          \
                best = v;                                                                 \
        }                                                                                 \
        clk_store(dst, base_ + (long)(i) * STRIDE, best);                                 \
    }

__kernel void min_or_max_axis(__global const SRC_T *src, __global DST_T *dst, int len,
                              long inner, ACC_T cval, int taps_, int shift_, int border)
{
#if GENERIC
    const int taps = taps_, shift = shift_;
#endif
    AXIS_ELEMENTS(VECTOR_EXTREMES, SCALAR_EXTREME)
}
