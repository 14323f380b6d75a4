/*
 * rank_filter_histogram.cl: scipy.ndimage's rank, median and percentile filters of 8-bit data
 * (uint8, int8, bool) by a histogram of the window, Huang's method: its cost per element
 * grows with the footprint's edge, not its area, so it pays for large footprints.
 *
 * A work-item owns SEG consecutive elements along the last axis of one line (global size:
 * (ceil(shape[NDIM - 1] / SEG), the product of the other sizes)). It counts the footprint's
 * values at its first element (`ntaps` taps), then steps along the line: the taps that enter
 * the footprint and those that leave it (`nmove` of each, listed by the host after the
 * footprint's own taps: offsets in `offs`, flat offsets in `flat`) update the counts. The
 * rank-th smallest is the bin where the count of smaller values first passes `rank`; `below`
 * keeps the count under the current bin, which moves a few bins per step.
 * Bins: uint8 and bool as they are, int8 shifted by 128. Taps outside the array read as
 * ndimage.h folds them (cval, as the input's type gives it, in constant mode).
 */
#include "ndimage.h"

#if SRC_SIGNED
#define BIN(v) ((int)(uchar)((v) ^ 0x80))
#define VALUE(b) ((char)((b) ^ 0x80))
#else
#define BIN(v) ((int)(v))
#define VALUE(b) ((uchar)(b))
#endif

/* Tap t at coordinates c, folded by the border mode (cval outside). */
CLK_INLINE SRC_T tap_value(__global const SRC_T *src, const int *c, __constant int *offs,
                           int t, __constant int *shape, int border, SRC_T cval)
{
    long idx = clk_tap_index(c, offs, t, shape, border);
    return idx < 0 ? cval : src[idx];
}

__kernel void rank_histogram(__global const SRC_T *src, __global DST_T *dst,
                             __constant int *offs, __constant long *flat,
                             __constant int *shape, __constant int *lo, __constant int *hi,
                             int cval_raw, int ntaps, int nmove, int rank, int seg,
                             int border)
{
    const int width = shape[NDIM - 1];
    const int x0 = get_global_id(0) * seg;
    if (x0 >= width)
        return;
    const int x1 = min(x0 + seg, width);
    /* the coordinates of the work-item's first element */
    int c[NDIM];
    const long row = (long)get_global_id(1) * width;
    c[NDIM - 1] = x0;
    const bool rows_inside = clk_line_coords(shape, lo, hi, c);
    const SRC_T cval = (SRC_T)cval_raw;
#define TAP(t) (inside ? src[g + flat[t]] : tap_value(src, c, offs, (t), shape, border, cval))

    ushort hist[256];
    for (int b = 0; b < 256; b++)
        hist[b] = 0;
    long g = row + x0;
    bool inside = rows_inside && x0 >= lo[NDIM - 1] && x0 < width - hi[NDIM - 1];
    for (int t = 0; t < ntaps; t++)
        hist[BIN(TAP(t))]++;
    int bin = 0, below = 0;
    while (below + hist[bin] <= rank)
        below += hist[bin++];
    clk_store(dst, g, CLK_CONVERT(ACC_T)(VALUE(bin)));
    for (int x = x0 + 1; x < x1; x++) {
        c[NDIM - 1] = x;
        g = row + x;
        inside = rows_inside && x >= lo[NDIM - 1] && x < width - hi[NDIM - 1];
        for (int t = ntaps; t < ntaps + nmove; t++) {
            const int in = BIN(TAP(t)), out = BIN(TAP(t + nmove));
            hist[in]++;
            hist[out]--;
            below += (in < bin) - (out < bin);
        }
        while (below > rank)
            below -= hist[--bin];
        while (below + hist[bin] <= rank)
            below += hist[bin++];
        clk_store(dst, g, CLK_CONVERT(ACC_T)(VALUE(bin)));
    }
}
