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
 * there; the weights are the build's ROW_WEIGHTS and COL_WEIGHTS where it has them (see
 * convolution.h). A work-group of LX x LY work-items computes LX row elements of LY * PY
 * output rows (PY consecutive ones per work-item); its local memory holds the row pass of
 * LY * PY + KH - 1 padded rows.
 *
 * With VEC4 (images summed in float), each work-item computes 4 adjacent row elements:
 * away from the row's ends, its row pass reads the span its 4 elements need 4 source elements
 * at a time (one load serves up to 16 taps), and its column pass reads and writes float4s;
 * near the ends each of the 4 is summed on its own. In rows of a multiple of 4 elements these
 * accesses start on whole vectors, and go through vector pointers to say so: vload4 and vstore4
 * promise only an element's alignment, and cost more on NVIDIA's compiler (with bit-equal
 * results). Builds for rows of other lengths read the
 * vectors from aligned loads shifted, and write them element by element (ROW_ALIGNED 0, see
 * convolution.h).
 *
 * With VEC4 the row pass may give each work-item ROW_EPI (a multiple of 4) adjacent elements of a
 * row of the intermediate, which it sums from one span of source vectors: 8 elements of a 17-tap
 * row load 6 vectors where 4 load 5, so the loads that feed the multiply-adds fall by two
 * fifths; longer spans take more registers.
 *
 * Build-time defines: those of convolution.h, and LX, LY, PY, VEC4, ROW_EPI (default 4 with
 * VEC4) (the host checks that the local memory holds (LY * PY + KH - 1) * LX * (VEC4 ? 4 : 1)
 * elements of ACC_T).
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
#ifndef VEC4
#define VEC4 0
#endif
#define EPI (VEC4 ? 4 : 1)     /* row elements per work-item */
#define EW (LX * EPI)          /* row elements per work-group */
#define OUT_H (LY * PY)
#define TMP_H (OUT_H + KH - 1)
#define HL4 ((HALO_L + 3) / 4 * 4)             /* the left halo, rounded up to whole vectors */
/* The row pass's work-items: ROW_EPI adjacent row elements each (EPI, or with VEC4 more), RT of
 * them per row of tmp, RROWS rows of tmp at a time; with VEC4 a span of RNV vectors each. */
#ifndef ROW_EPI
#define ROW_EPI EPI
#endif
#if ROW_EPI % EPI || EW % ROW_EPI || (LX * LY) % (EW / ROW_EPI)
#error "ROW_EPI must divide the group's row elements in whole vectors over whole rows"
#endif
#define RT (EW / ROW_EPI)
#define RROWS (LX * LY / RT)
#define RNV ((HL4 + ROW_EPI + HALO_R + 3) / 4)

/* The row pass of element e of source row srow (not a row of cval); inside: no tap needs
 * folding. */
CLK_INLINE ACC_T row_element(__global const SRC_T* src, MASK_SPACE const ACC_T* row,
                             const int srow, const int e, const int width, const ACC_T cval,
                             const bool inside)
{
    ACC_T acc = 0;
    if (inside) {
        __global const SRC_T* s = src + (size_t)srow * (size_t)(width * CHANNELS) + (e - HALO_L);
#if KW <= 64
#pragma unroll
#endif
        for (int k = 0; k < KW; k++)
            IF_TAP_USED(MASK_ROW, row, k) acc += row[k] * (ACC_T)s[k * CHANNELS];
    } else {
#if KW <= 64
#pragma unroll
#endif
        for (int k = 0; k < KW; k++)
            IF_TAP_USED(MASK_ROW, row, k)
                acc += row[k] * folded_src(src, srow, e + (k - ANCHOR_X) * CHANNELS, width,
                                           cval);
    }
    return acc;
}

#if VEC4
/* The RNV source vectors of a row-pass span from s, its first element, into v. In rows of other
 * lengths (see convolution.h) the row pass reads them from aligned loads, each serving two
 * vectors. */
CLK_INLINE void load_span(float v[4 * RNV], __global const SRC_T* s)
{
#if ROW_ALIGNED
#pragma unroll
    for (int i = 0; i < RNV; i++)
        vstore4(LOAD_ROW4(s + 4 * i), i, v);
#else
    const int sh = VECTOR_SHIFT(s, 0);
    float4 next = LOAD_SRC4(s - sh);
#pragma unroll
    for (int i = 0; i < RNV; i++)
        vstore4(next_shifted4(s - sh, i, sh, &next), i, v);
#endif
}

/* The row pass of the 4 adjacent elements from 4q past a span's first output, from its
 * vectors v. */
CLK_INLINE float4 span_row4(const float v[4 * RNV], MASK_SPACE const ACC_T* row, const int q)
{
    float4 acc = 0;
#if KW <= 64
#pragma unroll
#endif
    for (int k = 0; k < KW; k++) {
        const int a = HL4 - HALO_L + k * CHANNELS + 4 * q;
        IF_TAP_USED(MASK_ROW, row, k)
            acc += row[k] * (float4)(v[a], v[a + 1], v[a + 2], v[a + 3]);
    }
    return acc;
}
#endif /* VEC4 */

/* The tiles' form: the row pass of the group's rows into tmp, then the column pass from there. */
CLK_INLINE void tiled_fused(__local ACC_T* tmp, __global const SRC_T* src,
                            __global const int* rowmap, MASK_SPACE const ACC_T* row,
                            MASK_SPACE const ACC_T* col, __global OUT_T* dst, const int width,
                            const int out_rows, const ACC_T cval, const ACC_T cval_rows)
{
    const int rowlen = width * CHANNELS;
    const int lx = (int)get_local_id(0);
    const int ly = (int)get_local_id(1);
    const int e0 = (int)get_group_id(0) * EW;
    const int e = e0 + lx * EPI;
    const int p0 = (int)get_group_id(1) * OUT_H;
    const int last_p = out_rows + KH - 2;
    /* Away from the row's ends no tap needs folding: plain loads, the same for every item. */
    const bool inside = e0 >= HALO_L && e0 + EW + HALO_R <= rowlen;
    const int rx = (ly * LX + lx) % RT;
    const int er = e0 + rx * ROW_EPI;  /* this work-item's first element in the row pass */
#if VEC4
    /* and the spans lie in the row: vectors, where ROW_VECTORS allows (see convolution.h) */
    const bool vectors = ROW_VECTORS(rowlen) && e0 >= HL4 &&
                         e0 + EW - ROW_EPI - HL4 + 4 * RNV + ROW_SLACK <= rowlen;
#endif

    for (int t = (ly * LX + lx) / RT; t < TMP_H; t += RROWS) {
        /* padded rows past the band feed only outputs past it, which are not written */
        const int srow = rowmap[min(p0 + t, last_p)];
        __local ACC_T* out = tmp + t * EW + rx * ROW_EPI;
        if (srow < 0) {
#if VEC4
#pragma unroll
            for (int q = 0; q < ROW_EPI / 4; q++)
                ((__local float4*)out)[q] = (float4)cval_rows;
#else
            out[0] = cval_rows;
#endif
        }
#if VEC4
        else if (vectors) {
            __global const SRC_T* s = src + (size_t)srow * (size_t)rowlen + (er - HL4);
            float v[4 * RNV];
            load_span(v, s);
#pragma unroll
            for (int q = 0; q < ROW_EPI / 4; q++)
                ((__local float4*)out)[q] = span_row4(v, row, q);
        }
#endif
        else {
            for (int c = 0; c < ROW_EPI; c++)
                out[c] = er + c < rowlen
                             ? row_element(src, row, srow, er + c, width, cval, inside) : 0;
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (e >= rowlen)
        return;
    /* PY consecutive rows per work-item: each row of tmp it reads feeds every one of its outputs
     * whose taps reach it (held in registers), PY + KH - 1 reads for PY outputs; the work-items
     * of a warp read neighbouring elements of one row together */
    const int r0 = ly * PY;
#if VEC4
    float4 acc[PY];
#else
    ACC_T acc[PY];
#endif
#pragma unroll
    for (int o = 0; o < PY; o++)
        acc[o] = 0;
#if KH <= 64
#pragma unroll
#endif
    for (int t = 0; t < PY + KH - 1; t++) {
#if VEC4
        const float4 v = *(__local const float4*)(tmp + (r0 + t) * EW + lx * 4);
#else
        const ACC_T v = tmp[(r0 + t) * EW + lx];
#endif
#pragma unroll
        for (int o = 0; o < PY; o++) {
            const int k = t - o;
            if (k >= 0 && k < KH)
                IF_TAP_USED(MASK_COL, col, k) acc[o] += col[k] * v;
        }
    }
#pragma unroll
    for (int o = 0; o < PY; o++) {
        if (p0 + r0 + o >= out_rows)
            break;
        __global OUT_T* d = dst + (size_t)(p0 + r0 + o) * (size_t)rowlen + e;
#if VEC4
        store_row4(d, acc[o], rowlen - e, rowlen);
#else
        d[0] = (OUT_T)acc[o];
#endif
    }
}

__kernel __attribute__((reqd_work_group_size(LX, LY, 1)))
void convolve_fused(__global const SRC_T* restrict src,
                    __global const int* restrict rowmap,
                    MASK_SPACE const ACC_T* restrict row_arg,
                    MASK_SPACE const ACC_T* restrict col_arg,
                    __global OUT_T* restrict dst,
                    const int width, const int out_rows, const ACC_T cval,
                    const ACC_T cval_rows)
{
    __local ACC_T tmp[TMP_H * EW] __attribute__((aligned(16)));
    tiled_fused(tmp, src, rowmap, MASK_ROW_OF(row_arg), MASK_COL_OF(col_arg), dst, width,
                out_rows, cval, cval_rows);
}
