/*
 * convolution_axis.cl: a 1-D correlation (or mean) along one axis of an N-D array, as
 * scipy.ndimage.correlate1d and uniform_filter1d compute it.
 *
 * Work-items map to elements as ndimage.h describes (AXIS_ELEMENTS).
 *
 * The window: `taps` weights, the input offset of tap 0 being i - shift (taps / 2 + origin);
 * `symmetric` 1 for symmetric weights, -1 antisymmetric, 0 neither: scipy's three orders of
 * summation, kept so that sums round as scipy's do. Specialised builds take them (and the border
 * mode) as the defines TAPS, SHIFT, SYMMETRIC, BORDER; generic ones (GENERIC=1) as arguments
 * (see ndimage.h). MEAN=1: the sum of the window over `taps`, without weights.
 *
 * RPI > 1 (specialised builds along an axis other than the last): a work-item computes its
 * VW neighbouring elements of RPI consecutive lines (global size (ceil(inner / VW),
 * ceil(len / RPI), outer)). Their windows overlap, so the RPI + TAPS - 1 vectors of their span
 * are loaded and converted to ACC_T once, into private memory, and each window's sum reads
 * them from there (CPUs, where the conversions cost as much as a fifth of the pass). The loops
 * over lines and taps are unrolled, so that the span stays in registers. Lines whose windows
 * cross the array's edge sum vectors of whole rows folded by the border mode.
 *
 * BLOCKS=1 (specialised builds along the last axis, VW of 4, 8 or 16, clang): a work-item
 * loads the aligned-to-its-run blocks of VW elements that its windows span, converted once,
 * and forms each tap's vector from two of them with a register permute (clkit.h's
 * CLK_WINDOW_FN), the tap loops unrolled so that each permute is one instruction; unaligned
 * loads per tap took up to twice the time (PoCL, 17 float32 taps). A work-item computes RUNS
 * neighbouring vectors (global size (ceil(len / (VW * RUNS)), outer)), which share all but
 * one of their blocks. A work-item whose windows cross the line's ends folds its span once
 * into private memory and sums vectors from there.
 *
 * Edge work-items summed element by element, each folding its taps, took as long as a fifth
 * of a pass (PoCL, 3840x2160 uint8, 17 taps).
 */
#include "ndimage.h"

#ifndef MEAN
#define MEAN 0
#endif
#if !GENERIC
#define taps TAPS
#define shift SHIFT
#define symmetric SYMMETRIC
#endif

#if !defined(BLOCKS) || !defined(__clang__)
#undef BLOCKS
#define BLOCKS 0  /* (the permutes are clang's builtin: other compilers load each tap) */
#endif
/* The tap loops, unrolled where the taps' vectors are permutes of the blocks (BLOCKS) */
#if BLOCKS || (defined(RPI) && RPI > 1)
#define TAP_LOOP _Pragma("unroll")
#else
#define TAP_LOOP
#endif

/* The tap loops of the work-items at an array's edges stay loops: unrolled, they made the
 * build along the last axis take 0.44-0.49 s instead of 0.54-0.88 and ran no faster (PoCL,
 * uint8, 17 taps). */
#define EDGE_LOOP _Pragma("nounroll")
/* The window's sum, scipy's way, reading tap k with V(k) (WINDOW_SUM_LOOP: its loops preceded
 * by LOOP) */
#define WINDOW_SUM(V) WINDOW_SUM_LOOP(V, TAP_LOOP)
#if MEAN
#define WINDOW_SUM_LOOP(V, LOOP)                      \
    sum = V(0);                                       \
    LOOP                                              \
    for (int k = 1; k < taps; k++)                    \
        sum += V(k);                                  \
    sum /= (ACC_T)taps;
#else
#define WINDOW_SUM_LOOP(V, LOOP)                      \
    const int c = taps / 2;                           \
    if (symmetric > 0) {                              \
        sum = V(c) * w[c];                            \
        LOOP                                          \
        for (int k = 0; k < c; k++)                   \
            sum += (V(k) + V(taps - 1 - k)) * w[k];   \
    } else if (symmetric < 0) {                       \
        sum = V(c) * w[c];                            \
        LOOP                                          \
        for (int k = 0; k < c; k++)                   \
            sum += (V(k) - V(taps - 1 - k)) * w[k];   \
    } else {                                          \
        sum = V(taps - 1) * w[taps - 1];              \
        LOOP                                          \
        for (int k = 0; k < taps - 1; k++)            \
            sum += V(k) * w[k];                       \
    }
#endif

/* The VW sums of `v` stored from element `out` on: as one vector where the conversion to
 * DST_T has a vector form that gives clk_store's values (floats rounded, and clk_cvt_int's
 * truncation for the types of OUT_KIND 2), else lane by lane. */
#if VW > 1 && !DST_HALF && (OUT_KIND == 0 || OUT_KIND == 2)
/* The vector of DST_T at any element: clang stores it in one instruction, where PoCL's vstoreN
 * of 8-bit types stores byte by byte. */
typedef CLK_VEC(DST_T, VW) __attribute__((aligned(sizeof(DST_T)))) dst_vec;
#define DST_VEC(out) (*(__global dst_vec *)(dst + (out)))
#define VINT CLK_VEC(int, VW)
#endif
#ifndef IN_RANGE
#define IN_RANGE 0
#endif
#if VW > 1 && !DST_HALF && OUT_KIND == 0
#define STORE_LANES(v, out) DST_VEC(out) = CLK_CONVERT(CLK_VEC(DST_T, VW))(v);
#elif VW > 1 && !DST_HALF && OUT_KIND == 2 && IN_RANGE
/* (IN_RANGE: the host found every sum within int's range, as clk_cvt_int tests) */
#define STORE_LANES(v, out) DST_VEC(out) = CLK_CONVERT(CLK_VEC(DST_T, VW))(CLK_CONVERT(VINT)(v));
#elif VW > 1 && !DST_HALF && OUT_KIND == 2
#define STORE_LANES(v, out)                                                               \
    {                                                                                     \
        const VINT in_ = CLK_CONVERT(VINT)((v) >= (ACC_T)-2147483648.0 &&                 \
                                           (v) < (ACC_T)2147483648.0);                    \
        const VINT t_ = select((VINT)INT_MIN, CLK_CONVERT(VINT)(v), in_);                 \
        DST_VEC(out) = CLK_CONVERT(CLK_VEC(DST_T, VW))(t_);                               \
    }
#else
#define STORE_LANES(v, out) STORE_FIRST(v, out, VW)
#endif
/* The first n of the VW sums of `v`, lane by lane, from element `out` on. */
#define STORE_FIRST(v, out, n)                                                            \
    {                                                                                     \
        ACC_T lanes[VW];                                                                  \
        VSTORE_ACC((v), lanes);                                                           \
        for (int l = 0; l < (n); l++)                                                     \
            clk_store(dst, (out) + l, lanes[l]);                                          \
    }

/* The sums of VW neighbouring elements at once, the first at `out`; `p` their first window's
 * first tap, `step` the distance between taps. */
#define VECTOR_SUMS(out, p, step)                                                         \
    {                                                                                     \
        const long step_ = (step);                                                        \
        VACC sum;                                                                         \
        WINDOW_SUM(VECTOR_TAP)                                                            \
        STORE_LANES(sum, out)                                                             \
    }
#define VECTOR_TAP(k) VLOAD(p, (long)(k) * step_)
/* The sum of element i of the line that starts at `base`, each tap folded. */
#define SCALAR_SUM(i, base)                                                               \
    {                                                                                     \
        const long base_ = (base);                                                        \
        const int start_ = (i) - shift;                                                   \
        ACC_T sum;                                                                        \
        WINDOW_SUM(FOLDED_TAP)                                                            \
        clk_store(dst, base_ + (long)(i) * STRIDE, sum);                                  \
    }
#define FOLDED_TAP(k) read_tap(src, base_, start_ + (k), len, STRIDE, cval, false, border)

#ifndef RPI
#define RPI 1
#endif
#if RPI > 1
#if LAST || GENERIC
#error "RPI > 1 is for specialised builds along an axis other than the last"
#endif
#define SPAN_TAP(k) span[r + (k)]
#undef AXIS_ELEMENTS
#define AXIS_ELEMENTS(VECTOR, SCALAR)                                                     \
    const long x0 = (long)get_global_id(0) * VW;                                          \
    const int i0 = get_global_id(1) * RPI;                                                \
    const long line = (long)get_global_id(2) * len * inner;                               \
    if (x0 + VW <= inner && i0 - shift >= 0 && i0 + RPI - 1 - shift + taps <= len) {      \
        __global const SRC_T *p = src + line + x0 + (long)(i0 - shift) * inner;           \
        VACC span[RPI + TAPS - 1];                                                        \
        _Pragma("unroll")                                                                 \
        for (int j = 0; j < RPI + TAPS - 1; j++)                                          \
            span[j] = VLOAD(p, (long)j * inner);                                          \
        _Pragma("unroll")                                                                 \
        for (int r = 0; r < RPI; r++) {                                                   \
            VACC sum;                                                                     \
            WINDOW_SUM(SPAN_TAP)                                                          \
            STORE_LANES(sum, line + x0 + (long)(i0 + r) * inner)                          \
        }                                                                                 \
    } else if (x0 + VW <= inner) {                                                        \
        for (int r = 0; r < RPI && i0 + r < len; r++) {                                   \
            const int start_ = i0 + r - shift;                                            \
            VACC sum;                                                                     \
            WINDOW_SUM_LOOP(FOLDED_ROW, EDGE_LOOP)                                        \
            STORE_LANES(sum, line + x0 + (long)(i0 + r) * inner)                          \
        }                                                                                 \
    } else {                                                                              \
        for (int r = 0; r < RPI && i0 + r < len; r++)                                     \
            for (int j = 0; j < VW && x0 + j < inner; j++) {                              \
                SCALAR(i0 + r, line + x0 + j)                                             \
            }                                                                             \
    }
/* Tap k of the VW lines from x0 of a line whose window crosses the array's edge: a whole row
 * of the neighbours, folded by the border mode (cval's where it has none). */
#define FOLDED_ROW(k) folded_row(src + line + x0, start_ + (k), len, inner, cval, border)
CLK_INLINE VACC folded_row(__global const SRC_T *p, int j, int len, long inner, ACC_T cval,
                           int border)
{
    j = FOLD(j, len);
    return j < 0 ? (VACC)cval : VLOAD(p, (long)j * inner);
}
#endif

#if BLOCKS
#if !LAST || GENERIC || VW == 1
#error "BLOCKS is for specialised builds along the last axis, with vectors"
#endif
#ifndef RUNS
#define RUNS 1
#endif
CLK_WINDOW_FN(window, VACC, VW)
#define NBLK CLK_DIV_UP(VW + TAPS - 1, VW)
#define BLOCK_TAP(k) window(blk[r + (k) / VW], blk[r + min((k) / VW + 1, NBLK - 1)], (k) % VW)
#undef AXIS_ELEMENTS
#define AXIS_ELEMENTS(VECTOR, SCALAR)                                                     \
    const int i0 = get_global_id(0) * (VW * RUNS);                                        \
    const long base = (long)get_global_id(1) * len;                                       \
    if (i0 - shift >= 0 && i0 - shift + (NBLK + RUNS - 1) * VW <= len) {                  \
        __global const SRC_T *p = src + base + (i0 - shift);                              \
        VACC blk[NBLK + RUNS - 1];                                                        \
        _Pragma("unroll")                                                                 \
        for (int b = 0; b < NBLK + RUNS - 1; b++)                                         \
            blk[b] = VLOAD(p, b * VW);                                                    \
        _Pragma("unroll")                                                                 \
        for (int r = 0; r < RUNS; r++) {                                                  \
            VACC sum;                                                                     \
            WINDOW_SUM(BLOCK_TAP)                                                         \
            STORE_LANES(sum, base + i0 + r * VW)                                          \
        }                                                                                 \
    } else {                                                                              \
        ACC_T folded[(NBLK + RUNS - 1) * VW];                                             \
        for (int t = 0; t < VW * RUNS + TAPS - 1; t++)                                    \
            folded[t] = read_tap(src, base, i0 - shift + t, len, 1, cval, false, border); \
        for (int r = 0; r < RUNS && i0 + r * VW < len; r++) {                             \
            VACC sum;                                                                     \
            WINDOW_SUM_LOOP(FOLDED_RUN, EDGE_LOOP)                                        \
            if (i0 + (r + 1) * VW <= len) {                                               \
                STORE_LANES(sum, base + i0 + r * VW)                                      \
            } else {                                                                      \
                STORE_FIRST(sum, base + i0 + r * VW, len - i0 - r * VW)                   \
            }                                                                             \
        }                                                                                 \
    }
/* Tap k of run r of a work-item whose windows cross the line's ends: from the span's
 * elements, folded by the border mode into private memory. */
#define FOLDED_RUN(k) CLK_VLOAD(VW)(0, folded + r * VW + (k))
#endif

__kernel void correlate_axis(__global const SRC_T *src, __global DST_T *dst,
                             __constant ACC_T *w, int len, long inner, ACC_T cval,
                             int taps_, int shift_, int symmetric_, int border)
{
#if GENERIC
    const int taps = taps_, shift = shift_, symmetric = symmetric_;
#endif
    AXIS_ELEMENTS(VECTOR_SUMS, SCALAR_SUM)
}
