/* convolution_2d4.h: convolve_2d of the GPU variant for 4 adjacent outputs per work-item (VEC4,
 * images summed in float; see convolution_gpu.cl): through tiles in local memory
 * (tiled_2d4), or, with STREAM_2D, streamed through registers (streamed_2d). Included by
 * convolution_gpu.cl, after its defines and tile helpers. */
#ifndef CLKIT_CONVOLUTION_2D4_H
#define CLKIT_CONVOLUTION_2D4_H

#define HL4 ((HALO_L + 3) / 4 * 4)          /* the left halo, rounded up to whole vectors */
#define NV ((HL4 + 4 + HALO_R + 3) / 4)      /* vectors of a work-item's span */
#define TW4 (4 * (LX - 1 + NV))              /* a tile row: element e0 - HL4 onwards */

/* Tile rows [0, tile_h) = padded rows p0 + q of src (through rowmap), elements from e0 - HL4:
 * vectors where they lie in the row (and ROW_VECTORS allows), else element by element,
 * folded; elements no tap reads (left of the halo, right of it) are 0. */
CLK_INLINE void load_src_tile4(__local float* tile, const int tile_h,
                               __global const SRC_T* src, __global const int* rowmap,
                               const int p0, const int last_p, const int width,
                               const float cval)
{
    const int rowlen = width * CHANNELS;
    const int e0 = (int)get_group_id(0) * OUT_W - HL4;
    const bool whole = ROW_VECTORS(rowlen);
    /* the whole group over the tile's vectors, row by row: a row has more vectors than LX */
    for (int k = (int)(get_local_id(1) * LX + get_local_id(0)); k < tile_h * (TW4 / 4);
         k += LX * LY) {
        const int q = k / (TW4 / 4);
        const int e = e0 + 4 * (k - q * (TW4 / 4));
        const int srow = rowmap[min(p0 + q, last_p)];
        float4 v;
        if (whole && srow >= 0 && e >= 0 && e + 4 <= rowlen) {
            v = LOAD_ROW4(src + (size_t)srow * (size_t)rowlen + e);
        } else {
            float a[4];
            for (int c = 0; c < 4; c++)
                a[c] = e + c >= -HALO_L && e + c < rowlen + HALO_R
                           ? folded_src(src, srow, e + c, width, cval) : 0;
            v = (float4)(a[0], a[1], a[2], a[3]);
        }
        ((__local float4*)tile)[k] = v;
    }
}

/* acc plus the taps of mask row t for 4 adjacent elements, from their span's NV vectors v */
CLK_INLINE float4 row_taps4(const float v[4 * NV], MASK_SPACE const float* mask, const int t,
                            float4 acc)
{
    GPU_UNROLL
    for (int s = 0; s < KW; ++s) {
        const int a = HL4 - HALO_L + s * CHANNELS;
        IF_TAP_USED(MASK_2D, mask, t * KW + s)
        acc += mask[t * KW + s] * (float4)(v[a], v[a + 1], v[a + 2], v[a + 3]);
    }
    return acc;
}

/* tile_taps for 4 adjacent elements: tile row q's span of NV vectors feeds every tap */
CLK_INLINE void tile_taps4(__local const float* tile, MASK_SPACE const float* mask,
                           const int c0, const int chunk, float4 acc[PY])
{
    const int lx = (int)get_local_id(0);
    const int ly = (int)get_local_id(1);
    GPU_UNROLL
    for (int q = 0; q < PY + chunk - 1; ++q) {
        __local const float4* row = (__local const float4*)(tile + (ly * PY + q) * TW4) + lx;
        float v[4 * NV];
#pragma unroll
        for (int i = 0; i < NV; i++)
            vstore4(row[i], i, v);
#pragma unroll
        for (int o = 0; o < PY; ++o) {
            const int t = q - o;
            if (t >= 0 && t < chunk && c0 + t < KH)
                acc[o] = row_taps4(v, mask, c0 + t, acc[o]);
        }
    }
}

#if STREAM_2D
/* Vectors [0, NV) of the span of src row srow from element x0 (a multiple of 4) into v, for the
 * 4 outputs from e = x0 + HL4: whole vectors where inside (the span lies in the row, and
 * ROW_VECTORS allows), else element by element, folded; elements no tap of those outputs reads
 * are 0. */
CLK_INLINE void load_span4(float v[4 * NV], __global const SRC_T* src, const int srow,
                           const int x0, const int width, const float cval, const bool inside)
{
    const int rowlen = width * CHANNELS;
#if BORDER == BORDER_CONSTANT
    if (srow < 0) {
#pragma unroll
        for (int i = 0; i < 4 * NV; i++)
            v[i] = cval;
        return;
    }
#endif
    if (inside) {
        __global const SRC_T* row = src + (size_t)srow * (size_t)rowlen + x0;
#pragma unroll
        for (int i = 0; i < NV; i++)
            vstore4(LOAD_ROW4(row + 4 * i), i, v);
        return;
    }
    for (int i = 0; i < 4 * NV; i++) {
        const int x = x0 + i;
        v[i] = i >= HL4 - HALO_L && i < HL4 + 4 + HALO_R && x < rowlen + HALO_R
                   ? folded_src(src, srow, x, width, cval) : 0;
    }
}

/*
 * STREAM_2D: convolve_2d streamed through registers, with no local memory and no barrier.
 * Work-item (i, j) computes the 4 adjacent row elements from 4i of the PY output rows from
 * j * PY: it reads each of the PY + KH - 1 source rows they need once, its span of NV vectors,
 * and adds each into every output the row feeds; an output is stored after its last row. The
 * taps go in the tiles' order (t, then s) into one accumulator per output: the same sums.
 * Neighbouring work-items of a group (LY > 1: rows PY apart) read the rows they share from the
 * cache. Global size: (ceil(rowlen / 4), ceil(out_rows / PY)), each rounded up to (LX, LY).
 */
CLK_INLINE void streamed_2d(__global const SRC_T* src, __global const int* rowmap,
                            MASK_SPACE const float* w, __global OUT_T* dst, const int width,
                            const int out_rows, const float cval)
{
    const int rowlen = width * CHANNELS;
    const int e = (int)get_global_id(0) * 4;
    const int p0 = (int)get_global_id(1) * PY;
    if (e >= rowlen || p0 >= out_rows)
        return;
    const int x0 = e - HL4;
    const int last_p = out_rows + KH - 2;
    const bool inside = ROW_VECTORS(rowlen) && x0 >= 0 && x0 + 4 * NV <= rowlen;
    float4 acc[PY];
#pragma unroll
    for (int q = 0; q < PY + KH - 1; ++q) {
        float v[4 * NV];
        load_span4(v, src, rowmap[min(p0 + q, last_p)], x0, width, cval, inside);
#pragma unroll
        for (int o = 0; o < PY; ++o) {
            const int t = q - o;
            if (t == 0)
                acc[o] = 0;
            if (t >= 0 && t < KH)
                acc[o] = row_taps4(v, w, t, acc[o]);
            if (t == KH - 1 && p0 + o < out_rows)
                store_row4(dst + (size_t)(p0 + o) * (size_t)rowlen + e, acc[o], rowlen - e,
                           rowlen);
        }
    }
}
#endif /* STREAM_2D */

/* The tiles' form of convolve_2d for 4 adjacent outputs (VEC4) */
CLK_INLINE void tiled_2d4(__local float* tile, __global const SRC_T* src,
                          __global const int* rowmap, MASK_SPACE const float* mask,
                          __global OUT_T* dst, const int width, const int out_rows,
                          const float cval)
{
    const int rowlen = width * CHANNELS;
    const int p0 = (int)get_group_id(1) * OUT_H;
    const int last_p = out_rows + KH - 2;
    float4 acc[PY];
#pragma unroll
    for (int o = 0; o < PY; ++o)
        acc[o] = 0;
    for (int c0 = 0; c0 < KH; c0 += KH_CHUNK) {
        if (c0 > 0)
            barrier(CLK_LOCAL_MEM_FENCE);
        load_src_tile4(tile, OUT_H + KH_CHUNK - 1, src, rowmap, p0 + c0, last_p, width, cval);
        barrier(CLK_LOCAL_MEM_FENCE);
        tile_taps4(tile, mask, c0, KH_CHUNK, acc);
    }
    const int e = (int)get_group_id(0) * OUT_W + 4 * (int)get_local_id(0);
    const int r = p0 + (int)get_local_id(1) * PY;
#pragma unroll
    for (int o = 0; o < PY; ++o) {
        if (r + o >= out_rows || e >= rowlen)
            break;
        __global float* d = dst + (size_t)(r + o) * (size_t)rowlen + e;
        store_row4(d, acc[o], rowlen - e, rowlen);
    }
}

#endif /* CLKIT_CONVOLUTION_2D4_H */
