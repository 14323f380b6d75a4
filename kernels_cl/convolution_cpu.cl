/* convolution_cpu.cl: the CPU variant of the convolution kernels (see convolution.h). */
#include "convolution.h"

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
 * separable passes count their own taps (KW, KH), not KH * KW. On PoCL, unrolling pays for 2-D
 * masks up to 9x9, but not for passes of many taps, which then also take seconds to build.
 *
 * The first and last runs of a row, and constant-mode rows outside the image, copy the folded
 * source span of each mask row into a private buffer and run the taps on that.
 *
 * NONTEMPORAL=1 (images larger than the caches hold): whole vectors are stored past the caches
 * (clang's nontemporal stores, where the address lies on a whole vector), so that a store does
 * not first read the line it fills and the stored image does not evict the one being read.
 *
 * Defines: VW (vector width, default 16), NVEC (vectors per run, default 1), ROWS (default 4),
 * NACC (accumulators, default 2), MAX_UNROLL (taps of a 2-D mask unrolled, default 256),
 * MAX_UNROLL_1D (taps of a single row or column unrolled, default 32), NONTEMPORAL.
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
/* A whole vector v of type T at p (see NONTEMPORAL) */
#if NONTEMPORAL && defined(__clang__)
#define STORE_WHOLE(v, p, T)                                                              \
    do {                                                                                  \
        if ((size_t)(p) % sizeof(T) == 0)                                                 \
            __builtin_nontemporal_store((v), (__global T*)(p));                           \
        else                                                                              \
            STOREV((v), 0, (p));                                                          \
    } while (0)
#else
#define STORE_WHOLE(v, p, T) STOREV((v), 0, (p))
#endif

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
/* Elements [d, d + VW) of a:b, in one permute once inlined (clkit.h) */
CLK_WINDOW_FN(window, accv, VW)
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
 * span; kind: which mask (MASK_2D, MASK_ROW or MASK_COL), for IF_TAP_USED. Tap s goes to
 * accumulator (first + s) % NACC, the one the direct path gives it, so that a pixel sums its
 * taps in the same order in every run of a row: its value does not depend on where the image
 * (or a tile of it) begins. */
CLK_INLINE void taps_span(accv acc[NACC][NVEC], const ACC_T* span, MASK_SPACE const ACC_T* mask,
                          const int tap0, const int nx, const int kind, const int first)
{
    MASK_SPACE const ACC_T* w = mask + tap0;
    for (int s = 0; s < nx; ++s)
#pragma unroll
        for (int v = 0; v < NVEC; ++v)
            IF_TAP_USED(kind, mask, tap0 + s)
            acc[(first + s) % NACC][v] += w[s] * LOADV(span + s * CHANNELS + v * VW);
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
            STORE_WHOLE(sum, tmp + at + v * VW, accv);
        else
            STORE_WHOLE(CLK_CONVERT(outv)(sum), out + at + v * VW, outv);
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
        int direct = inside_x;
#if BORDER == BORDER_CONSTANT
        if (by_rowmap)
            for (int t = 0; t < kh; ++t)
                direct = direct && rowmap[r + t] >= 0;
#endif
        /* (each path its own accumulators: the span's index them at run time, which would
         * keep the direct path's in memory too) */
        if (direct) {
            accv acc[NACC][NVEC];
            zero_acc(acc);
            taps_direct(acc, src, rowmap, by_rowmap, r, e0, rowlen, mask, kh);
            store_run(tmp, dst, (size_t)r * (size_t)rowlen + e0, acc, rowlen - e0, !by_rowmap);
        } else {
            accv acc[NACC][NVEC];
            zero_acc(acc);
            for (int t = 0; t < kh; ++t) {
                const int srow = by_rowmap ? rowmap[r + t] : r;
                ACC_T span[SPAN];
                for (int i = 0; i < SPAN; ++i)
                    span[i] = folded_src(src, srow, e0 - HALO_L + i, width, cval);
                /* taps_direct: unrolled, tap s of row t in accumulator (t * KW + s) % NACC;
                 * rolled, s % NACC */
                taps_span(acc, span, mask, t * KW, KW, by_rowmap ? MASK_2D : MASK_ROW,
                          kh * KW <= UNROLL_LIMIT(kh) ? t * KW : 0);
            }
            store_run(tmp, dst, (size_t)r * (size_t)rowlen + e0, acc, rowlen - e0, !by_rowmap);
        }
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
        int direct = whole;
#if BORDER == BORDER_CONSTANT
        for (int t = 0; t < KH; ++t)
            direct = direct && rowmap[r + t] >= 0;
#endif
        if (direct) {  /* (each path its own accumulators, as in cpu_correlate) */
            accv acc[NACC][NVEC];
            zero_acc(acc);
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
            store_run(0, dst, (size_t)r * (size_t)rowlen + e0, acc, rowlen - e0, 0);
        } else {
            accv acc[NACC][NVEC];
            zero_acc(acc);
            for (int t = 0; t < KH; ++t) {
                const int srow = rowmap[r + t];
                ACC_T span[RUN];
                for (int i = 0; i < RUN; ++i)
                    span[i] = srow < 0 ? cval
                            : e0 + i < rowlen ? tmp[(size_t)srow * (size_t)rowlen + e0 + i]
                            : (ACC_T)0;
                taps_span(acc, span, mask, t, 1, MASK_COL, t);
            }
            store_run(0, dst, (size_t)r * (size_t)rowlen + e0, acc, rowlen - e0, 0);
        }
    }
}
#endif /* WITH_SEPARABLE */
