/* convolution_gpu.cl: the GPU variant of the convolution kernels (see convolution.h). */
#include "convolution.h"

/*
 * GPU variant (NVIDIA, AMD, Intel GPUs).
 *
 * A work-group of LX x LY work-items computes a block of OUT_H = LY * PY output rows by
 * OUT_W = LX * PX row elements. It first copies the source block with its halo into local memory,
 * every work-item loading elements LX apart so that each warp reads consecutive addresses
 * (coalesced), folding x and reading rows through rowmap on the way; after one barrier all taps
 * read local memory. Work-item (lx, ly) computes PX elements LX apart (consecutive lanes touch
 * consecutive banks: no bank conflicts, coalesced stores) for PY consecutive rows (each local
 * value it reads feeds up to PY outputs held in registers). The host builds the mask's weights
 * into the program where it can (WEIGHTS_2D, ROW_WEIGHTS, COL_WEIGHTS: see convolution.h), so
 * that each tap is one multiply-add with the weight as an operand; a mask argument sits in
 * __constant memory, where all lanes read the same tap, which the constant cache broadcasts.
 *
 * A mask taller than KH_CHUNK rows is applied KH_CHUNK rows at a time, reloading the tile for
 * each chunk, so that any mask fits the local memory the host budgets:
 *   (OUT_H + KH_CHUNK - 1) * (OUT_W + (KW - 1) * CHANNELS) * sizeof(ACC_T) bytes (convolve_2d),
 *   OUT_H * (OUT_W + (KW - 1) * CHANNELS) * sizeof(ACC_T) (convolve_rows),
 *   (OUT_H + KH_CHUNK - 1) * OUT_W * sizeof(ACC_T) (convolve_cols).
 *
 * With VEC4 (images summed in float; convolve_2d only), each work-item computes PX = 4
 * adjacent row elements instead, for PY rows: its tile row is NV float4 reads of local memory,
 * from which every tap takes its 4 elements, where 4 outputs LX apart take 4 reads per tap. The
 * tile starts a whole vector left of the halo, so that the reads are aligned, and loads whole
 * vectors (16-byte loads: coalesced) where the row allows (see ROW_ALIGNED in convolution.h).
 * The sums are the same, in the same order, as without it (a 7680x4320 image on an H200: 9x9
 * 0.151 ms against 0.191, 5x5 0.095 against 0.116). The whole group loads the tile's vectors
 * in turn, row after row: a tile row has more vectors than LX (loading row by row, LX at a
 * time: 9x9 0.163 ms, 5x5 0.102).
 *
 * With VEC4 and STREAM_2D, convolve_2d keeps no tile: each work-item streams its own rows
 * through registers (see that kernel below).
 *
 * Defines: LX, LY (work-group shape, which the launch must use; default 32 x 8: whole warps
 * along x), PX (default 2; 4 with VEC4), PY (default 4), KH_CHUNK (default KH), VEC4,
 * STREAM_2D (default 0).
 * Global size: (ceil(width * CHANNELS / OUT_W) * LX, ceil(rows / OUT_H) * LY), local (LX, LY).
 */
#ifndef LX
#define LX 32
#endif
#ifndef LY
#define LY 8
#endif
#ifndef PX
#define PX 2
#endif
#ifndef PY
#define PY 4
#endif
#ifndef KH_CHUNK
#define KH_CHUNK KH
#endif
#ifndef VEC4
#define VEC4 0
#endif
#ifndef STREAM_2D
#define STREAM_2D 0
#endif
#if VEC4 && PX != 4
#error "VEC4 computes PX = 4 adjacent elements per work-item"
#endif
#define OUT_W (LX * PX)
#define OUT_H (LY * PY)

/* Full unrolling keeps the accumulators in registers and turns tile offsets and taps into
 * immediates; very large masks stay rolled to bound code size. A separable mask's passes each
 * unroll one of its two lists of taps: PY * PX * KW sums in the row pass, PY * PX * KH_CHUNK
 * in the column pass. */
#if PASSES == 2
#define GPU_UNROLLED (PY * PX * (KW > KH_CHUNK ? KW : KH_CHUNK) <= 2048)
#else
#define GPU_UNROLLED ((PY + KH_CHUNK) * KW * PX <= 1024)
#endif
#if GPU_UNROLLED
#define GPU_UNROLL _Pragma("unroll")
#else
#define GPU_UNROLL
#endif

/* Accumulate one chunk of mask rows [c0, c0 + chunk) from a tile of tile_w elements per row
 * whose row 0 is padded row c0 of the group and column 0 is element -halo of the group; kind:
 * which mask (MASK_2D, MASK_ROW or MASK_COL), for IF_TAP_USED. Unrolled with one chunk, the
 * tap index is a constant and a tap of weight 0 folds away; with several chunks c0 is not, and
 * the test is a branch taken alike by the whole group. */
CLK_INLINE void tile_taps(__local const ACC_T* tile, const int tile_w,
                          MASK_SPACE const ACC_T* mask, const int kh, const int kw,
                          const int c0, const int chunk, ACC_T acc[PY][PX], const int kind)
{
    const int lx = (int)get_local_id(0);
    const int ly = (int)get_local_id(1);
    GPU_UNROLL
    for (int q = 0; q < PY + chunk - 1; ++q) {
        __local const ACC_T* row = tile + (ly * PY + q) * tile_w + lx;
        GPU_UNROLL
        for (int s = 0; s < kw; ++s) {
#pragma unroll
            for (int k = 0; k < PX; ++k) {
                const ACC_T v = row[k * LX + s * CHANNELS];
#pragma unroll
                for (int o = 0; o < PY; ++o) {
                    const int t = q - o;
                    if (t >= 0 && t < chunk && c0 + t < kh)
                        IF_TAP_USED(kind, mask, (c0 + t) * kw + s)
                        acc[o][k] += mask[(c0 + t) * kw + s] * v;
                }
            }
        }
    }
}

/* Store the block into tmp (ACC_T, the row pass) when to_tmp, a constant at each call site, else
 * into dst (OUT_T). */
CLK_INLINE void store_block(__global ACC_T* tmp, __global OUT_T* dst, ACC_T acc[PY][PX],
                            const int rowlen, const int out_rows, const int to_tmp)
{
    const int e = (int)get_group_id(0) * OUT_W + (int)get_local_id(0);
    const int r = (int)get_group_id(1) * OUT_H + (int)get_local_id(1) * PY;
#pragma unroll
    for (int o = 0; o < PY; ++o)
#pragma unroll
        for (int k = 0; k < PX; ++k)
            if (r + o < out_rows && e + k * LX < rowlen) {
                const size_t at = (size_t)(r + o) * (size_t)rowlen + e + k * LX;
                if (to_tmp)
                    tmp[at] = acc[o][k];
                else
                    dst[at] = (OUT_T)acc[o][k];
            }
}

/* Copy tile rows [0, tile_h) = padded rows p0 + q, elements [-HALO_L, OUT_W + HALO_R) of the
 * group's block; rows of src through rowmap (by_rowmap) or directly (row p, capped at last_p).
 * Groups whose tile lies inside the row, all but the first and last of a row, skip the folding
 * (an integer modulo by a run-time width, costly on GPUs); the test is uniform across the group,
 * and so is the constant-mode test across a warp, which shares a tile row. */
CLK_INLINE void load_src_tile(__local ACC_T* tile, const int tile_h,
                              __global const SRC_T* src, __global const int* rowmap,
                              const int by_rowmap, const int p0, const int last_p,
                              const int width, const ACC_T cval)
{
    const int tile_w = OUT_W + HALO_L + HALO_R;
    const int rowlen = width * CHANNELS;
    const int e0 = (int)get_group_id(0) * OUT_W - HALO_L;
    const int inside = e0 >= 0 && e0 + tile_w <= rowlen;
    for (int q = (int)get_local_id(1); q < tile_h; q += LY) {
        const int p = min(p0 + q, last_p);
        const int srow = by_rowmap ? rowmap[p] : p;
        __local ACC_T* out = tile + q * tile_w;
#if BORDER == BORDER_CONSTANT
        if (srow < 0) {
            for (int i = (int)get_local_id(0); i < tile_w; i += LX)
                out[i] = cval;
            continue;
        }
#endif
        if (inside) {
            __global const SRC_T* in = src + (size_t)srow * (size_t)rowlen + e0;
            for (int i = (int)get_local_id(0); i < tile_w; i += LX)
                out[i] = (ACC_T)in[i];
        } else {
            for (int i = (int)get_local_id(0); i < tile_w; i += LX)
                out[i] = folded_src(src, srow, e0 + i, width, cval);
        }
    }
}

CLK_INLINE void gpu_correlate(__local ACC_T* tile,
                              __global const SRC_T* src,
                              __global const int* rowmap,
                              MASK_SPACE const ACC_T* mask,
                              __global ACC_T* tmp, __global OUT_T* dst,
                              const int width, const int out_rows, const ACC_T cval,
                              const int kh, const int chunk, const int by_rowmap)
{
    const int p0 = (int)get_group_id(1) * OUT_H;
    const int last_p = out_rows + kh - 2;
    ACC_T acc[PY][PX];
#pragma unroll
    for (int o = 0; o < PY; ++o)
#pragma unroll
        for (int k = 0; k < PX; ++k)
            acc[o][k] = 0;
    /* every work-item runs every chunk, also those with no output to store: the barriers must
     * be reached by the whole group */
    for (int c0 = 0; c0 < kh; c0 += chunk) {
        if (c0 > 0)
            barrier(CLK_LOCAL_MEM_FENCE);
        load_src_tile(tile, OUT_H + chunk - 1, src, rowmap, by_rowmap, p0 + c0, last_p,
                      width, cval);
        barrier(CLK_LOCAL_MEM_FENCE);
        tile_taps(tile, OUT_W + HALO_L + HALO_R, mask, kh, KW, c0, chunk, acc,
                  by_rowmap ? MASK_2D : MASK_ROW);
    }
    store_block(tmp, dst, acc, width * CHANNELS, out_rows, !by_rowmap);
}

#if WITH_DIRECT && VEC4
#include "convolution_2d4.h"
#endif

#if WITH_DIRECT
__kernel __attribute__((reqd_work_group_size(LX, LY, 1)))
void convolve_2d(__global const SRC_T* restrict src,
                 __global const int* restrict rowmap,
                 MASK_SPACE const ACC_T* restrict mask,
                 __global OUT_T* restrict dst,
                 const int width, const int out_rows, const ACC_T cval)
{
#if VEC4 && STREAM_2D
    streamed_2d(src, rowmap, MASK_2D_OF(mask), dst, width, out_rows, cval);
#elif VEC4
    __local float tile[(OUT_H + KH_CHUNK - 1) * TW4] __attribute__((aligned(16)));
    tiled_2d4(tile, src, rowmap, MASK_2D_OF(mask), dst, width, out_rows, cval);
#else
    __local ACC_T tile[(OUT_H + KH_CHUNK - 1) * (OUT_W + HALO_L + HALO_R)];
    gpu_correlate(tile, src, rowmap, MASK_2D_OF(mask), 0, dst, width, out_rows, cval, KH,
                  KH_CHUNK, 1);
#endif
}
#endif

#if WITH_SEPARABLE
#include "convolution_streamed.h"
#ifndef ROW_SX
__kernel __attribute__((reqd_work_group_size(LX, LY, 1)))
void convolve_rows(__global const SRC_T* restrict src,
                   MASK_SPACE const ACC_T* restrict mask,
                   __global ACC_T* restrict tmp,
                   const int width, const int n_rows, const ACC_T cval)
{
    __local ACC_T tile[OUT_H * (OUT_W + HALO_L + HALO_R)];
    gpu_correlate(tile, src, 0, MASK_ROW_OF(mask), tmp, 0, width, n_rows, cval, 1, 1, 0);
}
#endif /* ROW_SX */

#ifndef COL_SY
__kernel __attribute__((reqd_work_group_size(LX, LY, 1)))
void convolve_cols(__global const ACC_T* restrict tmp,
                   __global const int* restrict rowmap,
                   MASK_SPACE const ACC_T* restrict mask,
                   __global OUT_T* restrict dst,
                   const int width, const int out_rows, const ACC_T cval)
{
    __local ACC_T tile[(OUT_H + KH_CHUNK - 1) * OUT_W];
    const int rowlen = width * CHANNELS;
    const int p0 = (int)get_group_id(1) * OUT_H;
    const int e0 = (int)get_group_id(0) * OUT_W;
    const int last_p = out_rows + KH - 2;
    ACC_T acc[PY][PX];
#pragma unroll
    for (int o = 0; o < PY; ++o)
#pragma unroll
        for (int k = 0; k < PX; ++k)
            acc[o][k] = 0;
    for (int c0 = 0; c0 < KH; c0 += KH_CHUNK) {
        if (c0 > 0)
            barrier(CLK_LOCAL_MEM_FENCE);
        for (int q = (int)get_local_id(1); q < OUT_H + KH_CHUNK - 1; q += LY) {
            const int srow = rowmap[min(p0 + c0 + q, last_p)];
            for (int i = (int)get_local_id(0); i < OUT_W; i += LX) {
                /* elements past the row end feed no stored output; 0 keeps them defined */
                ACC_T v = 0;
                if (srow < 0)
                    v = cval;
                else if (e0 + i < rowlen)
                    v = tmp[(size_t)srow * (size_t)rowlen + e0 + i];
                tile[q * OUT_W + i] = v;
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        tile_taps(tile, OUT_W, MASK_COL_OF(mask), KH, 1, c0, KH_CHUNK, acc, MASK_COL);
    }
    store_block(0, dst, acc, rowlen, out_rows, 0);
}
#endif /* COL_SY */
#endif /* WITH_SEPARABLE */
