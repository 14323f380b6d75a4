/*
 * convolution.h: 2-D convolution of an HxW or HxWxC (interleaved) image, called by
 * clkit.kernels.convolve and clkit.kernels.gaussian_blur.
 *
 * What is computed. Every kernel here is a correlation with the mask exactly as passed:
 *
 *     dst[r][x, c] = sum_{t < KH, s < KW} mask[t * KW + s] * in(pad row r + t)[x + s - ANCHOR_X, c]
 *
 * scipy.ndimage.convolve(image, w) equals this with mask = w[::-1, ::-1] and
 * ANCHOR_X = (KW - 1) / 2, top halo (KH - 1) / 2, for odd and even sizes alike; the host flips.
 *
 * Rows come through a map, columns are folded here. A kernel computes the output rows [0, out_rows)
 * of a band. Padded row p in [0, out_rows + KH - 1) is row rowmap[p] of the src buffer, or, when
 * rowmap[p] == -1 (constant mode only), a row of cval. The host builds rowmap with the border mode
 * already applied, so src can hold the whole image, a contiguous range of rows with a halo, or
 * only the distinct rows a band needs; this is what lets clkit split work across devices, stream
 * images larger than memory and scatter bands over MPI with the same kernels. Bands are always
 * full width, so x is folded here with the build's BORDER.
 *
 * Channels are interleaved: a row is width * CHANNELS elements and a tap s of element e reads
 * element e + (s - ANCHOR_X) * CHANNELS, so every channel is filtered on its own without
 * de-interleaving and vector loads along a row work for any CHANNELS.
 *
 * Kernels (same signatures in both variants, convolution_cpu.cl and convolution_gpu.cl, which
 * include this header; the host picks the file, its defines and the sizes):
 *   convolve_2d    the direct 2-D correlation above (KH x KW mask);
 *   convolve_rows  separable pass 1: the KW-tap row filter over every row of src, into a
 *                  temporary of ACC_T with the same rows (no rowmap: rows are not folded yet);
 *   convolve_cols  separable pass 2: the KH-tap column filter over the temporary, read through
 *                  rowmap. In constant mode its cval must be cval * sum(row mask): a row outside
 *                  the image is all cval, and the row pass would have turned it into that.
 *
 * Build-time defines:
 *   SRC_T       element type of src: char to long, uchar to ulong, float or double (default float)
 *   ACC_T       arithmetic, mask and temporary type: float, or double (default float)
 *   OUT_T       output type (default ACC_T): float where double sums of integer images end in a
 *               float result
 *   CHANNELS    interleaved channels, 1..4 (default 1)
 *   KW, KH      mask width and height (required)
 *   ANCHOR_X    taps left of the centre in correlation form (default (KW - 1) / 2)
 *   BORDER      BORDER_REFLECT (default), BORDER_MIRROR, BORDER_NEAREST, BORDER_WRAP,
 *               BORDER_CONSTANT (see clkit.h)
 *   MASK_SPACE  address space of the mask (default __constant; __global for masks larger than
 *               the device's constant buffer)
 *   SKIP_ZERO_TAPS, TAPS_USED, ROW_TAPS_USED, COL_TAPS_USED
 *               leave out the taps of weight 0, as scipy does (see "Taps of weight 0" below)
 *   each variant's own tuning defines are listed in its file.
 *   PASSES      1: only convolve_2d; 2: only convolve_rows and convolve_cols (the separable
 *               path); undefined: all three. A program builds only what its path launches.
 */
#ifndef CLKIT_CONVOLUTION_H
#define CLKIT_CONVOLUTION_H

#include "clkit.h"

#ifndef SRC_T
#define SRC_T float
#endif
#ifndef ACC_T
#define ACC_T float
#endif
#ifndef OUT_T
#define OUT_T ACC_T
#endif
#ifndef CHANNELS
#define CHANNELS 1
#endif
#if !defined(KW) || !defined(KH)
#error "define the mask size: -D KW=<width> -D KH=<height>"
#endif
#ifndef ANCHOR_X
#define ANCHOR_X ((KW - 1) / 2)
#endif
#ifndef MASK_SPACE
#define MASK_SPACE __constant
#endif
#ifndef PASSES
#define PASSES 0
#endif
#define WITH_DIRECT (PASSES != 2)
#define WITH_SEPARABLE (PASSES != 1)

/*
 * Taps of weight 0. scipy.ndimage.convolve leaves them out of its sum, so a NaN or an infinity
 * under one (the middle column of a Sobel mask, all but one tap of a shift, cval in constant
 * mode) does not reach its result; a product would, as 0 * NaN = NaN. The host defines
 * SKIP_ZERO_TAPS only for masks with such taps: for every other mask IF_TAP_USED expands to
 * nothing, so there is no test at all and the kernels compile as without this section (the
 * kind arguments that say which mask a helper applies are then unused constants).
 *
 * With SKIP_ZERO_TAPS, a table lists which taps of a mask argument are used, 1 or 0 per tap in
 * the argument's order: TAPS_USED for convolve_2d (KH * KW, row by row), ROW_TAPS_USED for
 * convolve_rows (KW), COL_TAPS_USED for convolve_cols (KH). A table is a program-scope
 * __constant array because the compiler knows its values: in the unrolled tap loops the index
 * is a constant, so each test folds, an unused tap is not compiled at all and a used one costs
 * nothing. Rolled loops test at run time. A mask argument without a table (the host leaves out
 * those of large masks, whose loops are rolled anyway) has its weights themselves tested.
 *
 * IF_TAP_USED(kind, mask, i) stmt runs stmt only if tap i of mask is used; kind (MASK_2D,
 * MASK_ROW or MASK_COL, which table) is a constant at every call site, so the choice folds.
 * It is an if without an else: never follow stmt with one.
 */
#define MASK_2D 0
#define MASK_ROW 1
#define MASK_COL 2
#ifdef SKIP_ZERO_TAPS
#ifdef TAPS_USED
__constant uchar taps_used_2d[KH * KW] = {TAPS_USED};
#define USED_2D(mask, i) taps_used_2d[i]
#else
#define USED_2D(mask, i) ((mask)[i] != 0)
#endif
#ifdef ROW_TAPS_USED
__constant uchar taps_used_row[KW] = {ROW_TAPS_USED};
#define USED_ROW(mask, i) taps_used_row[i]
#else
#define USED_ROW(mask, i) ((mask)[i] != 0)
#endif
#ifdef COL_TAPS_USED
__constant uchar taps_used_col[KH] = {COL_TAPS_USED};
#define USED_COL(mask, i) taps_used_col[i]
#else
#define USED_COL(mask, i) ((mask)[i] != 0)
#endif
#define IF_TAP_USED(kind, mask, i) \
    if ((kind) == MASK_2D ? USED_2D(mask, i) : (kind) == MASK_ROW ? USED_ROW(mask, i) \
                                                                    : USED_COL(mask, i))
#else
#define IF_TAP_USED(kind, mask, i)
#endif


/*
 * Weights built into the program (the GPU kernels). WEIGHTS_2D (KH * KW, row by row),
 * ROW_WEIGHTS (KW) and COL_WEIGHTS (KH) list a mask argument's weights as exact hexadecimal
 * literals, in a program-scope __constant table that the kernels read in place of the
 * argument. In unrolled tap loops every index is a constant, so the compiler knows each
 * weight and puts it into its multiply-add as an operand: no load of the weight, and no
 * register holding it. MASK_2D_OF(mask), MASK_ROW_OF(mask) and MASK_COL_OF(mask) give the
 * table where there is one, else the argument.
 */
#ifdef WEIGHTS_2D
__constant ACC_T weights_2d[KH * KW] = {WEIGHTS_2D};
#define MASK_2D_OF(mask) weights_2d
#else
#define MASK_2D_OF(mask) (mask)
#endif
#ifdef ROW_WEIGHTS
__constant ACC_T weights_row[KW] = {ROW_WEIGHTS};
#define MASK_ROW_OF(mask) weights_row
#else
#define MASK_ROW_OF(mask) (mask)
#endif
#ifdef COL_WEIGHTS
__constant ACC_T weights_col[KH] = {COL_WEIGHTS};
#define MASK_COL_OF(mask) weights_col
#else
#define MASK_COL_OF(mask) (mask)
#endif

/* halo of a run of outputs, in row elements */
#define HALO_L (ANCHOR_X * CHANNELS)
#define HALO_R ((KW - 1 - ANCHOR_X) * CHANNELS)

/* Element e of a row belongs to pixel floor(e / CHANNELS); e may be as low as -HALO_L. */
CLK_INLINE int pixel_of(int e)
{
    return (e + HALO_L) / CHANNELS - ANCHOR_X;
}

/* Value of row element e (which may lie outside the row) of src row srow, border applied. */
CLK_INLINE ACC_T folded_src(__global const SRC_T* src, int srow, int e, int width, ACC_T cval)
{
    const int x = pixel_of(e);
    const int xs = clk_fold(x, width);
#if BORDER == BORDER_CONSTANT
    if (srow < 0 || xs < 0)
        return cval;
#endif
    return (ACC_T)src[(size_t)srow * (size_t)(width * CHANNELS) + xs * CHANNELS + (e - x * CHANNELS)];
}

/* Elements [0, 4) at p as a float4, in one load (the VEC4 forms, whose ACC_T is float): p must
 * lie on a multiple of 4 elements. */
#define LOAD_SRC4(p) convert_float4(*(__global const CLK_VEC(SRC_T, 4)*)(p))
/* Vectors of 4 row elements in the VEC4 forms. ROW_ALIGNED 1 (the default) is the build for
 * rows of a multiple of 4 elements: the vectors inside them lie on 16 bytes and go through
 * vector pointers, and other rows go element by element, folded. ROW_ALIGNED 0 is the build for
 * rows of other lengths: vectors at any element, each read and written as 4 elements, or in
 * runs read from the aligned vectors they lie in, shifted (shifted4). Either is right for any
 * row; the host builds the one its image's rows want (on a GPU, ROW_ALIGNED 0 for rows of
 * other lengths is the faster). */
#ifndef ROW_ALIGNED
#define ROW_ALIGNED 1
#endif

/* Elements s .. s + 3 of a followed by b (0 <= s < 4): a vector that starts s elements into an
 * aligned one, from two aligned loads. */
CLK_INLINE float4 shifted4(const float4 a, const float4 b, const int s)
{
    switch (s) {
    case 0: return a;
    case 1: return (float4)(a.s123, b.s0);
    case 2: return (float4)(a.s23, b.s01);
    default: return (float4)(a.s3, b.s012);
    }
}

/* How far element i of base lies past the start of a vector in memory (0 <= s < 4; in rows of
 * other lengths the same for every vector of a row): element i - s starts an aligned one. */
#define VECTOR_SHIFT(base, i) ((int)(((size_t)(base) / sizeof(*(base)) + (size_t)(i)) & 3))

/* Vector b of a run read from the aligned vectors it lies in, s elements into them (aligned:
 * where the run's first aligned vector starts), after vector b - 1: *carry holds the aligned
 * vector that vector b starts in (LOAD_SRC4(aligned) before vector 0) and moves on one, so that
 * each load serves two vectors of the run. */
#if !ROW_ALIGNED
CLK_INLINE float4 next_shifted4(__global const SRC_T* aligned, const int b, const int s,
                                float4* carry)
{
    const float4 prev = *carry;
    *carry = LOAD_SRC4(aligned + 4 * b + 4);
    return shifted4(prev, *carry, s);
}
#endif

#if ROW_ALIGNED
#define ROW_VECTORS(rowlen) (((rowlen) & 3) == 0)
#define ROW_SLACK 0
#define LOAD_ROW4(p) LOAD_SRC4(p)
#define STORE_ROW4(p, v) (*(__global float4*)(p) = (v))
#else
#define ROW_VECTORS(rowlen) 1
/* Elements past a span of vectors that its shifted loads read (ROW_ALIGNED 0: a run of vectors
 * from the aligned ones they lie in, each load serving two; see convolution_gpu.cl's row pass):
 * they must lie in the row. */
#define ROW_SLACK 4
/* One vector alone: 4 loads of one element (on a GPU the 2-D kernel's tiles load faster so
 * than through two aligned loads shifted) */
#define LOAD_ROW4(p) (float4)((float)(p)[0], (float)(p)[1], (float)(p)[2], (float)(p)[3])
#define STORE_ROW4(p, v) vstore4((v), 0, (p))
#endif

/* The first min(left, 4) elements of v at d (left > 0), d's row being rowlen long: one store
 * where the row allows (see ROW_VECTORS; in a row of a multiple of 4 elements, d lies on one
 * with 4 left). */
CLK_INLINE void store_row4(__global float* d, const float4 v, const int left, const int rowlen)
{
#if ROW_ALIGNED
    if (ROW_VECTORS(rowlen)) {
#else
    if (left >= 4) {
#endif
        STORE_ROW4(d, v);
        return;
    }
    const float a[4] = {v.x, v.y, v.z, v.w};
    for (int c = 0; c < 4 && c < left; c++)
        d[c] = a[c];
}

#endif /* CLKIT_CONVOLUTION_H */
