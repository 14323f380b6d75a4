/*
 * convolution_fused.cl: both passes of a separable (rank-1) mask in one kernel, for GPUs.
 *
 * The two-pass path (convolve_rows, then convolve_cols) writes the row pass's result to a
 * temporary in global memory and reads it back: on a GPU, whose filters are bound by memory
 * bandwidth, that is three image-sized transfers more than the one read and one write the
 * result needs. Here a work-group filters the rows its outputs need into local memory and
 * then the columns from there, so the image is read once (the rows shared with neighbouring
 * work-groups come from the cache) and the result written once.
 *
 *   convolve_fused(src, rowmap, row, col, dst, width, out_rows, cval, cval_rows)
 *
 * computes what convolve_rows followed by convolve_cols compute (see convolution.h): rows
 * through rowmap (a row of -1 is a row of cval, whose row pass is cval_rows, the row mask's
 * taps summed times cval), columns folded with the build's BORDER, zero taps left out as
 * there. A work-group of LX x LY work-items computes LX row elements of LY * PY output rows
 * (PY consecutive ones per work-item); its local memory holds the row pass of LY * PY + KH - 1
 * padded rows.
 *
 * Build-time defines: those of convolution.h, and LX, LY, PY (the host checks that the local
 * memory holds (LY * PY + KH - 1) * LX elements of ACC_T).
 */
#include "convolution.h"

#ifndef LX
#define LX 64
#endif
#ifndef LY
#define LY 4
#endif
#ifndef PY
#define PY 8
#endif
#define OUT_H (LY * PY)
#define TMP_H (OUT_H + KH - 1)

__kernel __attribute__((reqd_work_group_size(LX, LY, 1)))
void convolve_fused(__global const SRC_T* restrict src,
                    __global const int* restrict rowmap,
                    MASK_SPACE const ACC_T* restrict row,
                    MASK_SPACE const ACC_T* restrict col,
                    __global ACC_T* restrict dst,
                    const int width, const int out_rows, const ACC_T cval,
                    const ACC_T cval_rows)
{
    __local ACC_T tmp[TMP_H * LX];
    const int rowlen = width * CHANNELS;
    const int lx = (int)get_local_id(0);
    const int ly = (int)get_local_id(1);
    const int e0 = (int)get_group_id(0) * LX;
    const int e = e0 + lx;
    const int p0 = (int)get_group_id(1) * OUT_H;
    const int last_p = out_rows + KH - 2;
    /* Away from the row's ends no tap needs folding: plain loads, the same for every item. */
    const bool inside = e0 >= HALO_L && e0 + LX + HALO_R <= rowlen;

    for (int t = ly; t < TMP_H; t += LY) {
        /* padded rows past the band feed only outputs past it, which are not written */
        const int srow = rowmap[min(p0 + t, last_p)];
        ACC_T acc = 0;
        if (srow < 0) {
            acc = cval_rows;
        } else if (inside) {
            __global const SRC_T* s = src + (size_t)srow * (size_t)rowlen + (e - HALO_L);
#if KW <= 64
#pragma unroll
#endif
            for (int k = 0; k < KW; k++)
                IF_TAP_USED(MASK_ROW, row, k) acc += row[k] * (ACC_T)s[k * CHANNELS];
        } else if (e < rowlen) {
#if KW <= 64
#pragma unroll
#endif
            for (int k = 0; k < KW; k++)
                IF_TAP_USED(MASK_ROW, row, k)
                    acc += row[k] * folded_src(src, srow, e + (k - ANCHOR_X) * CHANNELS, width,
                                               cval);
        }
        tmp[t * LX + lx] = acc;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (e >= rowlen)
        return;
    /* PY consecutive rows per work-item: each row of tmp it reads feeds every one of its outputs
     * whose taps reach it (held in registers), PY + KH - 1 reads for PY outputs; the work-items
     * of a warp read neighbouring elements of one row together */
    const int r0 = ly * PY;
    ACC_T acc[PY];
#pragma unroll
    for (int o = 0; o < PY; o++)
        acc[o] = 0;
#if KH <= 64
#pragma unroll
#endif
    for (int t = 0; t < PY + KH - 1; t++) {
        const ACC_T v = tmp[(r0 + t) * LX + lx];
#pragma unroll
        for (int o = 0; o < PY; o++) {
            const int k = t - o;
            if (k >= 0 && k < KH)
                IF_TAP_USED(MASK_COL, col, k) acc[o] += col[k] * v;
        }
    }
#pragma unroll
    for (int o = 0; o < PY; o++)
        if (p0 + r0 + o < out_rows)
            dst[(size_t)(p0 + r0 + o) * (size_t)rowlen + e] = acc[o];
}
