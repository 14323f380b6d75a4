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
 * The sums are the same, in the same order, as without it, in fewer reads of local memory.
 * The whole group loads the tile's vectors in turn, row after row: a tile row has more vectors
 * than LX, and loading each row LX vectors at a time took longer.
 *
 * Defines: LX, LY (work-group shape, which the launch must use; default 32 x 8: whole warps
 * along x), PX (default 2; 4 with VEC4), PY (default 4), KH_CHUNK (default KH), VEC4.
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
/* convolve_2d for 4 adjacent outputs per work-item (VEC4, images summed in float): through
 * tiles in local memory (tiled_2d4). */

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
#endif /* WITH_DIRECT && VEC4 */

#if WITH_DIRECT
__kernel __attribute__((reqd_work_group_size(LX, LY, 1)))
void convolve_2d(__global const SRC_T* restrict src,
                 __global const int* restrict rowmap,
                 MASK_SPACE const ACC_T* restrict mask,
                 __global OUT_T* restrict dst,
                 const int width, const int out_rows, const ACC_T cval)
{
#if VEC4
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
/* The separable passes streamed through registers, for images summed in float: convolve_rows
 * where ROW_SX is defined, convolve_cols where COL_SY is (the tiles' passes below serve the
 * others). */

#if defined(ROW_SX) != defined(COL_SY)
#error "the streamed passes go together: they share tmp's row pitch"
#endif
/* The row pitch of tmp between the streamed passes: the image's rows padded to a multiple of 4
 * elements, so that both passes move tmp in whole aligned vectors whatever the image's width
 * (the host allocates tmp so; the row pass writes the padding too). */
#define TMP_PITCH(rowlen) (((rowlen) + 3) & ~3)

#ifdef ROW_SX
#if ROW_SX % 4
#error "ROW_SX must be a multiple of 4: the row pass stores whole vectors"
#endif
/* elements of a work-item's span left of its first output: the halo, rounded up to vectors */
#define ROW_HL4 ((HALO_L + 3) / 4 * 4)
/* vectors of a work-item's span */
#define ROW_NV ((ROW_HL4 + ROW_SX + HALO_R + 3) / 4)
/*
 * The row pass streamed through registers (ROW_SX; images summed in float, masks taller than
 * the one-kernel filter takes). Work-item (i, r) computes the ROW_SX row elements from
 * i * ROW_SX of row r: it reads its span (the outputs and the halo on either side) once, 4
 * elements at a time, and adds each element into every output that takes it. Output j takes its
 * taps in the order s = 0 .. KW - 1 in one accumulator, as the tiles do: the same sums. The
 * tiles' row pass reads local memory once per multiply-add, which bounds it at a quarter of the
 * multiply-add rate. Spans inside a row are read as vectors where ROW_VECTORS allows (see
 * convolution.h); the others (a row's first and last work-items) element by element, folded.
 * Global size: (ceil(rowlen / ROW_SX), n_rows), the first rounded up to ROW_LX; local (ROW_LX, 1).
 */
__kernel __attribute__((reqd_work_group_size(ROW_LX, 1, 1)))
void convolve_rows(__global const SRC_T* restrict src,
                   MASK_SPACE const float* restrict mask,
                   __global float* restrict tmp,
                   const int width, const int n_rows, const float cval)
{
    MASK_SPACE const float* w = MASK_ROW_OF(mask);
    const int rowlen = width * CHANNELS;
    const int e = (int)get_global_id(0) * ROW_SX;
    const int r = (int)get_global_id(1);
    if (e >= rowlen || r >= n_rows)
        return;
    const int x0 = e - ROW_HL4;  /* the span's first element: a multiple of 4 */
    __global const SRC_T* row = src + (size_t)r * (size_t)rowlen;
#if ROW_ALIGNED
    const int inside = ROW_VECTORS(rowlen) && x0 >= 0 && x0 + 4 * ROW_NV <= rowlen;
#else
    /* Rows of other lengths: each vector of the span is made of two aligned loads, each load
     * serving two vectors (one load a vector, where one-element loads take four). */
    const int inside = x0 >= 0 && x0 + 4 * ROW_NV + ROW_SLACK <= rowlen;
    const int s = VECTOR_SHIFT(row, x0);
    __global const SRC_T* aligned = row + x0 - s;
    float4 next = inside ? LOAD_SRC4(aligned) : (float4)(0);
#endif
    float acc[ROW_SX];
#pragma unroll
    for (int j = 0; j < ROW_SX; ++j)
        acc[j] = 0;
    GPU_UNROLL
    for (int b = 0; b < ROW_NV; ++b) {
        float4 v;
        if (inside) {
#if ROW_ALIGNED
            v = LOAD_ROW4(row + x0 + 4 * b);
#else
            v = next_shifted4(aligned, b, s, &next);
#endif
        } else {
            const int x = x0 + 4 * b;
            v = (float4)(folded_src(src, r, x, width, cval), folded_src(src, r, x + 1, width, cval),
                         folded_src(src, r, x + 2, width, cval),
                         folded_src(src, r, x + 3, width, cval));
        }
        const float lanes[4] = {v.s0, v.s1, v.s2, v.s3};
#pragma unroll
        for (int l = 0; l < 4; ++l) {
#pragma unroll
            for (int j = 0; j < ROW_SX; ++j) {
                /* output e + j takes tap s from element e + j + s * CHANNELS - HALO_L */
                const int d = 4 * b + l - ROW_HL4 - j + HALO_L;
                if (d >= 0 && d % CHANNELS == 0 && d / CHANNELS < KW)
                    IF_TAP_USED(MASK_ROW, w, d / CHANNELS)
                    acc[j] += w[d / CHANNELS] * lanes[l];
            }
        }
    }
    /* the padding past the row's end takes the folded elements' sums: defined, never stored */
    const int pitch = TMP_PITCH(rowlen);
    __global float* out = tmp + (size_t)r * (size_t)pitch + e;
#pragma unroll
    for (int j = 0; j < ROW_SX; j += 4)
        if (e + j < pitch)
            *(__global float4*)(out + j) = (float4)(acc[j], acc[j + 1], acc[j + 2], acc[j + 3]);
}

#endif /* ROW_SX */

#ifdef COL_SY
/*
 * The column pass streamed through registers (COL_SY; images summed in float, masks taller
 * than the one-kernel filter takes). Work-item (i, j) computes the four row elements from 4i of
 * COL_SY output rows from j * COL_SY: it reads each of the COL_SY + KH - 1 rows of tmp they need
 * once, 16 bytes per row (a warp reads 512 consecutive bytes), and adds it into every output it
 * feeds. Output o takes its taps in the order t = 0 .. KH - 1 in one accumulator, as the tiles
 * do, so both give the same sums. No local memory: the tiles' column pass reads local memory
 * once per multiply-add, which bounds it at a quarter of the multiply-add rate.
 * Global size: (ceil(rowlen / 4), ceil(out_rows / COL_SY)), each rounded up to the local size
 * (COL_LX, 1).
 */
__kernel __attribute__((reqd_work_group_size(COL_LX, 1, 1)))
void convolve_cols(__global const float* restrict tmp,
                   __global const int* restrict rowmap,
                   MASK_SPACE const float* restrict mask,
                   __global OUT_T* restrict dst,
                   const int width, const int out_rows, const float cval)
{
    MASK_SPACE const float* w = MASK_COL_OF(mask);
    const int rowlen = width * CHANNELS;
    const int e = (int)get_global_id(0) * 4;
    const int p0 = (int)get_global_id(1) * COL_SY;
    if (e >= rowlen || p0 >= out_rows)
        return;
    const int last_p = out_rows + KH - 2;
    const int pitch = TMP_PITCH(rowlen);
    /* whole aligned vectors: rows of a multiple of 4 elements, all but a row's last vector */
    const int whole = (rowlen & 3) == 0 || e + 4 <= (rowlen & ~3);
    float4 acc[COL_SY];
#pragma unroll
    for (int o = 0; o < COL_SY; ++o)
        acc[o] = (float4)(0);
    GPU_UNROLL
    for (int q = 0; q < COL_SY + KH - 1; ++q) {
        const int srow = rowmap[min(p0 + q, last_p)];
        __global const float* row = tmp + (size_t)max(srow, 0) * (size_t)pitch + e;
        const float4 v = srow < 0 ? (float4)(cval) : *(__global const float4*)row;
#pragma unroll
        for (int o = 0; o < COL_SY; ++o) {
            const int t = q - o;
            if (t >= 0 && t < KH)
                IF_TAP_USED(MASK_COL, w, t)
                acc[o] += w[t] * v;
        }
    }
#pragma unroll
    for (int o = 0; o < COL_SY; ++o) {
        if (p0 + o >= out_rows)
            break;
        __global OUT_T* out = dst + (size_t)(p0 + o) * (size_t)rowlen + e;
        const CLK_VEC(OUT_T, 4) sum = CLK_CONVERT(CLK_VEC(OUT_T, 4))(acc[o]);
        if (whole && (rowlen & 3) == 0) {
            *(__global CLK_VEC(OUT_T, 4)*)out = sum;
        } else if (whole) {
            vstore4(sum, 0, out);
        } else {
            out[0] = sum.s0;
            if (e + 1 < rowlen)
                out[1] = sum.s1;
            if (e + 2 < rowlen)
                out[2] = sum.s2;
        }
    }
}
#endif /* COL_SY */
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
