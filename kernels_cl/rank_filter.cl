/*
 * rank_filter.cl: scipy.ndimage's rank, median, percentile, minimum and maximum filters with
 * any footprint (rectangular minima and maxima go through rank_filter_axis.cl instead).
 *
 * One work-item per output element (see ndimage.h for the mapping) gathers its footprint's
 * values in the input's own type (taps listed by the host in C order, read as in
 * convolution_nd.cl) and selects the rank-th smallest:
 *  - MINIMUM or MAXIMUM: a running minimum or maximum, started at the first tap and replaced
 *    only by a strictly smaller (larger) value, as scipy compares;
 *  - NETWORK (specialised builds, footprints of up to 128 taps): a list of compare-exchanges
 *    CE(a,b), the part of Batcher's odd-even merge sort that RANK depends on, made by the host.
 *    Every work-item runs the same min/max sequence, with no branch on the data, so that SIMD
 *    lanes and GPU threads stay together;
 *  - otherwise a selection by insertion into a sorted prefix of rank + 1 values (KEEP of them
 *    at most: RANK + 1, or GENERIC_KEEP in generic builds, which take `rank` as an argument).
 * Two kernels take VW neighbouring elements along the last axis per work-item: rank_nd_vector
 * (CPUs) runs the network on vectors, rank_nd_columns (box footprints elsewhere) sorts each
 * column of the footprint once for the elements that share it.
 * cval arrives converted to the input's type (scipy's C cast), as RAW_T: a double cannot hold
 * every 64-bit integer.
 */
#include "ndimage.h"

#ifndef MAXIMUM
#define MAXIMUM 0
#endif
#ifndef MINIMUM
#define MINIMUM 0
#endif
#if GENERIC
#define KEEP GENERIC_KEEP
#else
#define ntaps NTAPS
#define rank RANK
#define KEEP (RANK + 1)
#endif

/* Tap t of the element at coordinates c, folded by the border mode (cval outside). */
CLK_INLINE RAW_T tap_folded(__global const SRC_T *src, const int *c, __constant int *offs,
                            int t, __constant int *shape, int border, RAW_T cval)
{
    long idx = clk_tap_index(c, offs, t, shape, border);
    return idx < 0 ? cval : LOAD_RAW(src, idx);
}

#define CE(a, b) { RAW_T lo_ = min(v[a], v[b]); v[b] = max(v[a], v[b]); v[a] = lo_; }

#if defined(NETWORK) && VW > 1
/* The index of the first of the work-item's VW neighbouring elements along the last axis,
 * where all of their footprints lie inside the array; -1 where it has no elements, or where
 * it has, after running the network on them one by one. */
CLK_INLINE long elements_inside(__global const SRC_T *src, __global DST_T *dst,
                                __constant int *offs, __constant long *flat,
                                __constant int *shape, __constant int *lo,
                                __constant int *hi, RAW_T cval, int border)
{
    const int width = shape[NDIM - 1];
    const int x0 = get_global_id(0) * VW;
    if (x0 >= width)
        return -1;
    int c[NDIM];
    const long row = (long)get_global_id(1) * width;
    const bool rows_inside = clk_line_coords(shape, lo, hi, c);
    if (rows_inside && x0 >= lo[NDIM - 1] && x0 + VW <= width - hi[NDIM - 1])
        return row + x0;
    for (int x = x0; x < min(x0 + VW, width); x++) {
        c[NDIM - 1] = x;
        const long g = row + x;
        const bool inside = rows_inside && x >= lo[NDIM - 1] && x < width - hi[NDIM - 1];
        RAW_T v[NTAPS];
        for (int t = 0; t < NTAPS; t++)
            v[t] = inside ? LOAD_RAW(src, g + flat[t])
                          : tap_folded(src, c, offs, t, shape, border, cval);
        NETWORK
        clk_store(dst, g, CLK_CONVERT(ACC_T)(v[RANK]));
    }
    return -1;
}

#ifndef COLUMN_SELECT
/* The sorting network on VW neighbouring elements along the last axis at once, as vectors
 * (CPUs): tap t of the VW elements is one vector load at g + flat[t], and each
 * compare-exchange is one vector min and max. */
#if SRC_HALF
#define VRAW CLK_VEC(float, VW)
#define VLOAD_RAW(p, off) CLK_CAT(vload_half, VW)(0, (p) + (off))
#else
#define VRAW CLK_VEC(SRC_T, VW)
#define VLOAD_RAW(p, off) CLK_VLOAD(VW)(0, (p) + (off))
#endif
/* SAME=1 (the output's type is the input's, which converting through double keeps: not
 * float16 nor 64-bit integers): the rank's vector is stored as it is, through a pointer to a
 * vector aligned like its elements, in one instruction instead of VW conversions and stores
 * (PoCL's vstoreN of 8-bit types would store byte by byte). */
#if SAME
typedef VRAW __attribute__((aligned(sizeof(SRC_T)))) raw_vec;
#endif

__kernel void rank_nd_vector(__global const SRC_T *src, __global DST_T *dst,
                             __constant int *offs, __constant long *flat,
                             __constant int *shape, __constant int *lo, __constant int *hi,
                             RAW_T cval, int ntaps_, int rank_, int border)
{
    const long g = elements_inside(src, dst, offs, flat, shape, lo, hi, cval, border);
    if (g < 0)
        return;
    VRAW v[NTAPS];
    for (int t = 0; t < NTAPS; t++)
        v[t] = VLOAD_RAW(src, g + flat[t]);
#undef CE
#define CE(a, b) { VRAW lo_ = min(v[a], v[b]); v[b] = max(v[a], v[b]); v[a] = lo_; }
    NETWORK
#undef CE
#define CE(a, b) { RAW_T lo_ = min(v[a], v[b]); v[b] = max(v[a], v[b]); v[a] = lo_; }
#if SAME
    *(__global raw_vec *)(dst + g) = v[RANK];
#else
    RAW_T lanes[VW];
    CLK_VSTORE(VW)(v[RANK], 0, lanes);
    for (int l = 0; l < VW; l++)
        clk_store(dst, g + l, CLK_CONVERT(ACC_T)(lanes[l]));
#endif
}

#else
/* A box footprint of KW columns (its taps of one offset along the last axis) of COLUMN taps:
 * the work-item's VW elements share VW + KW - 1 columns, which are read and sorted once
 * (COLUMN_SORT: CS(a,b) within a column), and each element selects its rank from its KW
 * sorted columns, value k * COLUMN + j the j-th smallest of its column k, with
 * COLUMN_SELECT, a network that relies on the columns being sorted (made by the host; the
 * rank ends in value SELECTED). Taps are listed in C order, so tap j * KW of the footprint
 * is row j of its first column. */
__kernel void rank_nd_columns(__global const SRC_T *src, __global DST_T *dst,
                              __constant int *offs, __constant long *flat,
                              __constant int *shape, __constant int *lo, __constant int *hi,
                              RAW_T cval, int ntaps_, int rank_, int border)
{
    const long g = elements_inside(src, dst, offs, flat, shape, lo, hi, cval, border);
    if (g < 0)
        return;
    RAW_T col[VW + KW - 1][COLUMN];
#define CS(a, b) { RAW_T lo_ = min(col[k][a], col[k][b]); col[k][b] = max(col[k][a], col[k][b]); \
                   col[k][a] = lo_; }
#pragma unroll
    for (int k = 0; k < VW + KW - 1; k++) {
#pragma unroll
        for (int j = 0; j < COLUMN; j++)
            col[k][j] = LOAD_RAW(src, g + k + flat[j * KW]);
        COLUMN_SORT
    }
#pragma unroll
    for (int e = 0; e < VW; e++) {
        RAW_T v[KW * COLUMN];
#pragma unroll
        for (int k = 0; k < KW; k++)
#pragma unroll
            for (int j = 0; j < COLUMN; j++)
                v[k * COLUMN + j] = col[e + k][j];
        COLUMN_SELECT
        clk_store(dst, g + e, CLK_CONVERT(ACC_T)(v[SELECTED]));
    }
}
#endif
#endif

__kernel void rank_nd(__global const SRC_T *src, __global DST_T *dst, __constant int *offs,
                      __constant long *flat, __constant int *shape, __constant int *lo,
                      __constant int *hi, RAW_T cval, int ntaps_, int rank_, int border)
{
#if GENERIC
    const int ntaps = ntaps_, rank = rank_;
#endif
    if (get_global_id(0) >= shape[NDIM - 1])
        return;
    int c[NDIM];
    bool inside;
    const long g = clk_coords(shape, lo, hi, c, &inside);
#define TAP(t) (inside ? LOAD_RAW(src, g + flat[t]) : tap_folded(src, c, offs, (t), shape, \
                                                                  border, cval))
    RAW_T best;
#if MINIMUM || MAXIMUM
    best = TAP(0);
    for (int t = 1; t < ntaps; t++) {
        RAW_T x = TAP(t);
#if MAXIMUM
        if (x > best)
            best = x;
#else
        if (x < best)
            best = x;
#endif
    }
#elif defined(NETWORK)
    RAW_T v[NTAPS];
    for (int t = 0; t < NTAPS; t++)
        v[t] = TAP(t);
    NETWORK
    best = v[RANK];
#else
    /* the rank + 1 smallest so far, sorted */
    RAW_T v[KEEP];
    int kept = 0;
    for (int t = 0; t < ntaps; t++) {
        RAW_T x = TAP(t);
        if (kept == rank + 1) {
            if (!(x < v[rank]))
                continue;
            kept--;
        }
        int k = kept++;
        while (k > 0 && x < v[k - 1]) {
            v[k] = v[k - 1];
            k--;
        }
        v[k] = x;
    }
    best = v[rank];
#endif
    clk_store(dst, g, CLK_CONVERT(ACC_T)(best));
}
