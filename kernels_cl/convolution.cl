/*
 * convolution.cl: 2-D convolution of an HxW or HxWxC (interleaved) image, called by
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
 * Kernels (same signatures in both variants, so the host only changes defines and sizes):
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
 *   CONV_VARIANT  CONV_CPU (default) or CONV_GPU, with their own tuning defines below.
 *   PASSES      1: only convolve_2d; 2: only convolve_rows and convolve_cols (the separable
 *               path); undefined: all three. A program builds only what its path launches.
 */
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

#define CONV_CPU 1
#define CONV_GPU 2
#ifndef CONV_VARIANT
#define CONV_VARIANT CONV_CPU
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


#if CONV_VARIANT == CONV_CPU
/*
 * CPU variant (PoCL, Intel/AMD CPU drivers).
 *
 * Work-item (i, j) computes RUN = VW * NVEC consecutive row elements starting at i * RUN, for the
 * ROWS consecutive output rows starting at j * ROWS, one row after the other. Explicit VW-wide
 * vectors map onto the SIMD registers (float16 is one AVX-512 register) without relying on the
 * driver's work-group vectoriser. There are no barriers and no local memory, so any local size
 * works.
 *
 * Runs whose taps stay inside the row read src directly, with no folding: all but the first and
 * last one or two runs of a row. For each mask row they load the VW-aligned blocks around the
 * run once and form each tap's shifted window with a register permute: an unaligned vector load
 * per tap would straddle two cache lines almost every time and make the taps load-bound.
 * Consecutive taps go to NACC accumulators in turn, summed at the end, because one chain of
 * dependent multiply-adds is bound by their latency rather than their throughput. The tap loops
 * of masks up to MAX_UNROLL taps (MAX_UNROLL_1D for one row or column) are fully unrolled
 * (PoCL unrolls nothing by itself), so that blocks, shifts and accumulators are compile-time
 * constants held in registers; larger masks keep their rows rolled and use unaligned loads. The
 * separable passes count their own taps (KW, KH), not KH * KW. Measured on PoCL 3.1 (AVX-512),
 * 3840x2160 float32: unrolling a 9x9 mask takes 13.5 ms against 19-23 rolled, but a Gaussian's
 * passes of 81 taps take 39 ms unrolled against 33 rolled (241 taps: 154 against 89, and 9 s of
 * build against 1.5 s; some sizes, 239 and 243 taps, still take 7 s to build rolled).
 *
 * The first and last runs of a row, and constant-mode rows outside the image, copy the folded
 * source span of each mask row into a private buffer and run the taps on that.
 *
 * Defines: VW (vector width, default 16), NVEC (vectors per run, default 1), ROWS (default 4),
 * NACC (accumulators, default 2), MAX_UNROLL (taps of a 2-D mask unrolled, default 256),
 * MAX_UNROLL_1D (taps of a single row or column unrolled, default 32).
 */
#ifndef VW
#define VW 16
#endif
#ifndef NVEC
#define NVEC 1
#endif
#ifndef ROWS
#define ROWS 4
#endif
#ifndef NACC
#define NACC 2
#endif
#ifndef MAX_UNROLL
#define MAX_UNROLL 256
#endif
#ifndef MAX_UNROLL_1D
#define MAX_UNROLL_1D 32
#endif
/* taps of a mask of kh rows that are unrolled: a 2-D mask gains up to 256, a single row or
 * column (the separable passes) loses beyond about 32 */
#define UNROLL_LIMIT(kh) ((kh) == 1 ? MAX_UNROLL_1D : MAX_UNROLL)
#define RUN (VW * NVEC)
#define SPAN (RUN + HALO_L + HALO_R)
/* VW-blocks left and right of a run that its taps reach into */
#define BLK_L CLK_DIV_UP(HALO_L, VW)
#define BLK_R CLK_DIV_UP(HALO_R, VW)
#define NBLK (BLK_L + NVEC + BLK_R)

/* macros, not typedefs: convert_<type> is spelled by token pasting */
#define accv CLK_VEC(ACC_T, VW)
/* The kernels are vectorised by hand: the hint keeps a driver's work-group vectoriser (Intel's
 * CPU runtime) from widening them again over 16 work-items, with gathers and scatters, at twice
 * the build time. */
#define CPU_KERNEL_HINT __attribute__((vec_type_hint(accv)))
#define outv CLK_VEC(OUT_T, VW)
#define LOADV(p) CLK_CONVERT(accv)(CLK_VLOAD(VW)(0, (p)))
#define STOREV CLK_VSTORE(VW)

/* How a tap's shifted window is formed from the aligned blocks (CPU_PERMUTE):
 *   1  a register permute; clang's builtin, which takes the constant lanes this needs (default
 *      where the compiler is clang);
 *   2  a round trip through private memory: slow, but exact under Oclgrind 21.10, whose
 *      uninitialised-value check mistracks shufflevector and reports false positives;
 *   0  no blocks: one unaligned load per tap (default for other compilers). */
#ifndef CPU_PERMUTE
#if defined(__clang__)
#define CPU_PERMUTE 1
#else
#define CPU_PERMUTE 0
#endif
#endif
#if CPU_PERMUTE == 1 && VW != 4 && VW != 8 && VW != 16
#undef CPU_PERMUTE
#define CPU_PERMUTE 0
#endif

#if CPU_PERMUTE == 1
#define LANES4(n) n, n + 1, n + 2, n + 3
#define LANES8(n) LANES4(n), LANES4(n + 4)
#define LANES16(n) LANES8(n), LANES8(n + 8)
#define WINDOW_CASE(n) case n: return __builtin_shufflevector(a, b, CLK_CAT(LANES, VW)(n));

/* Elements [d, d + VW) of a:b. d is a constant wherever this is inlined into an unrolled tap
 * loop, so the switch folds into one permute instruction. */
CLK_INLINE accv window(accv a, accv b, int d)
{
    switch (d) {
    WINDOW_CASE(1) WINDOW_CASE(2) WINDOW_CASE(3)
#if VW > 4
    WINDOW_CASE(4) WINDOW_CASE(5) WINDOW_CASE(6) WINDOW_CASE(7)
#endif
#if VW > 8
    WINDOW_CASE(8) WINDOW_CASE(9) WINDOW_CASE(10) WINDOW_CASE(11)
    WINDOW_CASE(12) WINDOW_CASE(13) WINDOW_CASE(14) WINDOW_CASE(15)
#endif
    default: return a;
    }
}
#elif CPU_PERMUTE == 2
CLK_INLINE accv window(accv a, accv b, int d)
{
    ACC_T ab[2 * VW];
    STOREV(a, 0, ab);
    STOREV(b, 0, ab + VW);
    return CLK_VLOAD(VW)(0, ab + d);
}
#endif

CLK_INLINE void zero_acc(accv acc[NACC][NVEC])
{
#pragma unroll
    for (int j = 0; j < NACC; ++j)
#pragma unroll
        for (int v = 0; v < NVEC; ++v)
            acc[j][v] = (accv)(0);
}

/* The taps of a run at least BLK_L blocks from the row's start and BLK_R from its end: no
 * folding. Row r + t of the band is src row rowmap[r + t] (by_rowmap: convolve_2d) or src row
 * r (kh = 1: convolve_rows). kh is a constant once inlined, so only one of the two paths is
 * compiled: fully unrolled for masks of up to UNROLL_LIMIT(kh) taps, rows rolled with NACC taps per
 * step for larger ones (there build time and code size grow faster than the gain). Unrolled,
 * a tap of weight 0 folds away with its window and, when its whole mask row is unused, the
 * row's loads. */
CLK_INLINE void taps_direct(accv acc[NACC][NVEC], __global const SRC_T* src,
                            __global const int* rowmap, const int by_rowmap, const int r,
                            const int e0, const int rowlen, MASK_SPACE const ACC_T* mask,
                            const int kh)
{
    if (kh * KW <= UNROLL_LIMIT(kh)) {
#pragma unroll
        for (int t = 0; t < kh; ++t) {
            const int srow = by_rowmap ? rowmap[r + t] : r;
            __global const SRC_T* row = src + (size_t)srow * (size_t)rowlen + e0;
#if CPU_PERMUTE
            accv blk[NBLK];
#pragma unroll
            for (int b = 0; b < NBLK; ++b)
                blk[b] = LOADV(row + (b - BLK_L) * VW);
#endif
#pragma unroll
            for (int s = 0; s < KW; ++s) {
#pragma unroll
                for (int v = 0; v < NVEC; ++v) {
                    /* the tap's window starts d elements after the first block */
                    const int d = (BLK_L + v) * VW + (s - ANCHOR_X) * CHANNELS;
#if CPU_PERMUTE
                    const int b = d / VW;
                    const accv x = window(blk[b], blk[min(b + 1, NBLK - 1)], d - b * VW);
#else
                    const accv x = LOADV(row + d - BLK_L * VW);
#endif
                    IF_TAP_USED(by_rowmap ? MASK_2D : MASK_ROW, mask, t * KW + s)
                    acc[(t * KW + s) % NACC][v] += mask[t * KW + s] * x;
                }
            }
        }
    } else {
        for (int t = 0; t < kh; ++t) {
            const int srow = by_rowmap ? rowmap[r + t] : r;
            __global const SRC_T* row = src + (size_t)srow * (size_t)rowlen + (e0 - HALO_L);
            MASK_SPACE const ACC_T* w = mask + t * KW;
            int s = 0;
#pragma unroll 2
            for (; s + NACC <= KW; s += NACC)
#pragma unroll
                for (int j = 0; j < NACC; ++j)
#pragma unroll
                    for (int v = 0; v < NVEC; ++v)
                        IF_TAP_USED(by_rowmap ? MASK_2D : MASK_ROW, mask, t * KW + s + j)
                        acc[j][v] += w[s + j] * LOADV(row + (s + j) * CHANNELS + v * VW);
            for (; s < KW; ++s)
#pragma unroll
                for (int v = 0; v < NVEC; ++v)
                    IF_TAP_USED(by_rowmap ? MASK_2D : MASK_ROW, mask, t * KW + s)
                    acc[0][v] += w[s] * LOADV(row + s * CHANNELS + v * VW);
        }
    }
}

/* The nx taps [tap0, tap0 + nx) of one mask row over a private copy of the row's folded source
 * span; kind: which mask (MASK_2D, MASK_ROW or MASK_COL), for IF_TAP_USED. */
CLK_INLINE void taps_span(accv acc[NACC][NVEC], const ACC_T* span, MASK_SPACE const ACC_T* mask,
                          const int tap0, const int nx, const int kind)
{
    MASK_SPACE const ACC_T* w = mask + tap0;
    for (int s = 0; s < nx; ++s)
#pragma unroll
        for (int v = 0; v < NVEC; ++v)
            IF_TAP_USED(kind, mask, tap0 + s)
            acc[s % NACC][v] += w[s] * LOADV(span + s * CHANNELS + v * VW);
}

/* Sum the accumulators and store one row's run at element `at`: into tmp (ACC_T, the row pass)
 * when to_tmp, else into out (OUT_T). to_tmp is a constant at each call site, so only one of the
 * stores is compiled. The last run of a row may stick out of it (n < RUN). */
CLK_INLINE void store_run(__global ACC_T* tmp, __global OUT_T* out, const size_t at,
                          accv acc[NACC][NVEC], const int n, const int to_tmp)
{
    ACC_T part[RUN];
#pragma unroll
    for (int v = 0; v < NVEC; ++v) {
        accv sum = acc[0][v];
#pragma unroll
        for (int j = 1; j < NACC; ++j)
            sum += acc[j][v];
        if (n < RUN)
            STOREV(sum, 0, part + v * VW);
        else if (to_tmp)
            STOREV(sum, 0, tmp + at + v * VW);
        else
            STOREV(CLK_CONVERT(outv)(sum), 0, out + at + v * VW);
    }
    if (n < RUN)
        for (int i = 0; i < n; ++i) {
            if (to_tmp)
                tmp[at + i] = part[i];
            else
                out[at + i] = (OUT_T)part[i];
        }
}

/* Shared by convolve_2d (kh = KH, rows through rowmap, into dst) and convolve_rows (kh = 1,
 * output row r is src row r, into tmp). kh and by_rowmap are constants at each call site. */
CLK_INLINE void cpu_correlate(__global const SRC_T* src,
                              __global const int* rowmap,
                              MASK_SPACE const ACC_T* mask,
                              __global ACC_T* tmp, __global OUT_T* dst,
                              const int width, const int out_rows, const ACC_T cval,
                              const int kh, const int by_rowmap)
{
    const int rowlen = width * CHANNELS;
    const int e0 = (int)get_global_id(0) * RUN;
    const int r0 = (int)get_global_id(1) * ROWS;
    if (e0 >= rowlen || r0 >= out_rows)
        return;
    const int r1 = min(r0 + ROWS, out_rows);
    const int inside_x = e0 >= BLK_L * VW && e0 + (NVEC + BLK_R) * VW <= rowlen;

    for (int r = r0; r < r1; ++r) {
        accv acc[NACC][NVEC];
        zero_acc(acc);
        int direct = inside_x;
#if BORDER == BORDER_CONSTANT
        if (by_rowmap)
            for (int t = 0; t < kh; ++t)
                direct = direct && rowmap[r + t] >= 0;
#endif
        if (direct) {
            taps_direct(acc, src, rowmap, by_rowmap, r, e0, rowlen, mask, kh);
        } else {
            for (int t = 0; t < kh; ++t) {
                const int srow = by_rowmap ? rowmap[r + t] : r;
                ACC_T span[SPAN];
                for (int i = 0; i < SPAN; ++i)
                    span[i] = folded_src(src, srow, e0 - HALO_L + i, width, cval);
                taps_span(acc, span, mask, t * KW, KW, by_rowmap ? MASK_2D : MASK_ROW);
            }
        }
        store_run(tmp, dst, (size_t)r * (size_t)rowlen + e0, acc, rowlen - e0, !by_rowmap);
    }
}

#if WITH_DIRECT
/* Global size: (ceil(width * CHANNELS / RUN), ceil(out_rows / ROWS)), each rounded up to a
 * multiple of the local size; any local size. */
__kernel CPU_KERNEL_HINT void convolve_2d(__global const SRC_T* restrict src,
                          __global const int* restrict rowmap,
                          MASK_SPACE const ACC_T* restrict mask,
                          __global OUT_T* restrict dst,
                          const int width, const int out_rows, const ACC_T cval)
{
    cpu_correlate(src, rowmap, mask, 0, dst, width, out_rows, cval, KH, 1);
}
#endif

#if WITH_SEPARABLE
/* mask: the KW row taps. Global size as convolve_2d with n_rows for out_rows. */
__kernel CPU_KERNEL_HINT void convolve_rows(__global const SRC_T* restrict src,
                            MASK_SPACE const ACC_T* restrict mask,
                            __global ACC_T* restrict tmp,
                            const int width, const int n_rows, const ACC_T cval)
{
    cpu_correlate(src, 0, mask, tmp, 0, width, n_rows, cval, 1, 0);
}

#if KH <= MAX_UNROLL_1D
#define UNROLL_COLS _Pragma("unroll")
#else
#define UNROLL_COLS _Pragma("unroll 2")
#endif

/* mask: the KH column taps. Global size as convolve_2d. Column sums need no x halo, so only
 * the last run of a row, which may stick out of it, and constant rows go through a copy. */
__kernel CPU_KERNEL_HINT void convolve_cols(__global const ACC_T* restrict tmp,
                            __global const int* restrict rowmap,
                            MASK_SPACE const ACC_T* restrict mask,
                            __global OUT_T* restrict dst,
                            const int width, const int out_rows, const ACC_T cval)
{
    const int rowlen = width * CHANNELS;
    const int e0 = (int)get_global_id(0) * RUN;
    const int r0 = (int)get_global_id(1) * ROWS;
    if (e0 >= rowlen || r0 >= out_rows)
        return;
    const int r1 = min(r0 + ROWS, out_rows);
    const int whole = e0 + RUN <= rowlen;

    for (int r = r0; r < r1; ++r) {
        accv acc[NACC][NVEC];
        zero_acc(acc);
        int direct = whole;
#if BORDER == BORDER_CONSTANT
        for (int t = 0; t < KH; ++t)
            direct = direct && rowmap[r + t] >= 0;
#endif
        if (direct) {
            __global const ACC_T* col = tmp + e0;
            int t = 0;
            UNROLL_COLS
            for (; t + NACC <= KH; t += NACC)
#pragma unroll
                for (int j = 0; j < NACC; ++j)
#pragma unroll
                    for (int v = 0; v < NVEC; ++v)
                        IF_TAP_USED(MASK_COL, mask, t + j)
                        acc[j][v] += mask[t + j] *
                            LOADV(col + (size_t)rowmap[r + t + j] * (size_t)rowlen + v * VW);
#pragma unroll
            for (int j = 0; t + j < KH; ++j)
#pragma unroll
                for (int v = 0; v < NVEC; ++v)
                    IF_TAP_USED(MASK_COL, mask, t + j)
                    acc[j][v] += mask[t + j] *
                        LOADV(col + (size_t)rowmap[r + t + j] * (size_t)rowlen + v * VW);
        } else {
            for (int t = 0; t < KH; ++t) {
                const int srow = rowmap[r + t];
                ACC_T span[RUN];
                for (int i = 0; i < RUN; ++i)
                    span[i] = srow < 0 ? cval
                            : e0 + i < rowlen ? tmp[(size_t)srow * (size_t)rowlen + e0 + i]
                            : (ACC_T)0;
                taps_span(acc, span, mask, t, 1, MASK_COL);
            }
        }
        store_run(0, dst, (size_t)r * (size_t)rowlen + e0, acc, rowlen - e0, 0);
    }
}
#endif /* WITH_SEPARABLE */

#elif CONV_VARIANT == CONV_GPU
/*
 * GPU variant (NVIDIA, AMD, Intel GPUs).
 *
 * A work-group of LX x LY work-items computes a block of OUT_H = LY * PY output rows by
 * OUT_W = LX * PX row elements. It first copies the source block with its halo into local memory,
 * every work-item loading elements LX apart so that each warp reads consecutive addresses
 * (coalesced), folding x and reading rows through rowmap on the way; after one barrier all taps
 * read local memory. Work-item (lx, ly) computes PX elements LX apart (consecutive lanes touch
 * consecutive banks: no bank conflicts, coalesced stores) for PY consecutive rows (each local
 * value it reads feeds up to PY outputs held in registers). The mask sits in __constant memory:
 * all lanes read the same tap, which the constant cache broadcasts.
 *
 * A mask taller than KH_CHUNK rows is applied KH_CHUNK rows at a time, reloading the tile for
 * each chunk, so that any mask fits the local memory the host budgets:
 *   (OUT_H + KH_CHUNK - 1) * (OUT_W + (KW - 1) * CHANNELS) * sizeof(ACC_T) bytes (convolve_2d),
 *   OUT_H * (OUT_W + (KW - 1) * CHANNELS) * sizeof(ACC_T) (convolve_rows),
 *   (OUT_H + KH_CHUNK - 1) * OUT_W * sizeof(ACC_T) (convolve_cols).
 *
 * Defines: LX, LY (work-group shape, which the launch must use; default 32 x 8: whole warps
 * along x), PX (default 2), PY (default 4), KH_CHUNK (default KH).
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
#define OUT_W (LX * PX)
#define OUT_H (LY * PY)

/* Full unrolling keeps the accumulators in registers and turns tile offsets into immediates;
 * very large masks stay rolled to bound code size. */
#if (PY + KH_CHUNK) * KW * PX <= 1024
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

#if WITH_DIRECT
__kernel __attribute__((reqd_work_group_size(LX, LY, 1)))
void convolve_2d(__global const SRC_T* restrict src,
                 __global const int* restrict rowmap,
                 MASK_SPACE const ACC_T* restrict mask,
                 __global OUT_T* restrict dst,
                 const int width, const int out_rows, const ACC_T cval)
{
    __local ACC_T tile[(OUT_H + KH_CHUNK - 1) * (OUT_W + HALO_L + HALO_R)];
    gpu_correlate(tile, src, rowmap, mask, 0, dst, width, out_rows, cval, KH, KH_CHUNK, 1);
}
#endif

#if WITH_SEPARABLE
__kernel __attribute__((reqd_work_group_size(LX, LY, 1)))
void convolve_rows(__global const SRC_T* restrict src,
                   MASK_SPACE const ACC_T* restrict mask,
                   __global ACC_T* restrict tmp,
                   const int width, const int n_rows, const ACC_T cval)
{
    __local ACC_T tile[OUT_H * (OUT_W + HALO_L + HALO_R)];
    gpu_correlate(tile, src, 0, mask, tmp, 0, width, n_rows, cval, 1, 1, 0);
}

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
        tile_taps(tile, OUT_W, mask, KH, 1, c0, KH_CHUNK, acc, MASK_COL);
    }
    store_block(0, dst, acc, rowlen, out_rows, 0);
}
#endif /* WITH_SEPARABLE */

#else
#error "CONV_VARIANT must be CONV_CPU or CONV_GPU"
#endif
