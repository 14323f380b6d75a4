/*
 * rank_filter_axis.cl: the minimum or maximum of a window along one axis of an N-D array, as
 * scipy.ndimage.minimum_filter1d and maximum_filter1d compute it (and minimum_filter and
 * maximum_filter with a rectangular size, one axis after another).
 *
 * scipy compares in double. The kernels compare in CMP_T: the input's own type (float for
 * float16) where that gives scipy's result, which is wherever cval, in constant mode, is one
 * of the input type's values: converting to double never reverses an order, so the extreme of
 * the converted values is the converted extreme. Otherwise (CMP_ACC=1) they compare in ACC_T.
 * A later value replaces the best so far only where it is strictly smaller (larger), as in
 * scipy. MAXIMUM: 0 or 1. SAME=1: the output type is the input's and stores the compared
 * values unchanged (not float16, nor 64-bit integers, which scipy rounds through double).
 *
 * Two kernels, the window's `taps` and `shift` as in convolution_axis.cl (defines in
 * specialised builds, arguments in generic ones):
 *  - min_or_max_axis: each output element compares its window's `taps` values. Work-items
 *    map to elements as ndimage.h describes (AXIS_ELEMENTS), VW neighbours at once;
 *  - min_or_max_axis_blocks: van Herk and Gil-Werman's method, whose cost does not grow with
 *    the window. A work-item owns a block of `taps` consecutive outputs along the axis (VW
 *    neighbouring lines at once where the axis is not the last). Every window of the block
 *    contains input m, the last of the block's first window: the window's extreme is that of
 *    its part up to m (a running extreme from m backwards, kept in `scratch`) and of its part
 *    after m (a running extreme from m forwards). About three comparisons per element.
 */
#include "ndimage.h"

#if !GENERIC
#define taps TAPS
#define shift SHIFT
#endif

#if MAXIMUM
#define BETTER(v, best) ((v) > (best))
#else
#define BETTER(v, best) ((v) < (best))
#endif

#if CMP_ACC
#define CMP_T ACC_T
#define LOAD_CMP(p, i) LOAD((p), (i))
#elif SRC_HALF
#define CMP_T float
#define LOAD_CMP(p, i) vload_half((i), (p))
#else
#define CMP_T SRC_T
#define LOAD_CMP(p, i) ((p)[i])
#endif

#define SPICK(best, v) (BETTER(v, best) ? (v) : (best))
#if VW == 1
#define VCMP CMP_T
#define VLOAD_CMP(p, off) LOAD_CMP((p), (off))
#define VSTORE_CMP(v, i, p) ((p)[i] = (v))
#define VSTORE_LANES(v, p) ((p)[0] = (v))
#define PICK(best, v) (BETTER(v, best) ? (v) : (best))
#else
#define VCMP CLK_VEC(CMP_T, VW)
#if CMP_ACC
#define VLOAD_CMP(p, off) VLOAD((p), (off))
#elif SRC_HALF
#define VLOAD_CMP(p, off) CLK_CAT(vload_half, VW)(0, (p) + (off))
#else
#define VLOAD_CMP(p, off) CLK_VLOAD(VW)(0, (p) + (off))
#endif
/* VW compared values stored at element i of a global array, through a pointer to a vector
 * aligned like its elements: clang stores it in one instruction, where PoCL's vstoreN of 8-bit
 * types stores byte by byte (a 3x3 minimum of uint8 took twice as long). */
typedef CLK_VEC(CMP_T, VW) __attribute__((aligned(sizeof(CMP_T)))) cmp_vec;
#define VSTORE_CMP(v, i, p) (*(__global cmp_vec *)((p) + (i)) = (v))
#define VSTORE_LANES(v, p) CLK_VSTORE(VW)((v), 0, (p))
#define PICK(best, v) select(best, v, BETTER(v, best))
#endif

/* Element j of the line at `base` (stride `stride`), folded by the border mode (cval outside
 * in constant mode). */
CLK_INLINE CMP_T tap_cmp(__global const SRC_T *src, long base, int j, int len, long stride,
                         CMP_T cval, int border)
{
    j = FOLD(j, len);
    return j < 0 ? cval : LOAD_CMP(src, base + (long)j * stride);
}

/* The window's first line of VW neighbouring elements at index j along the axis, folded. */
CLK_INLINE VCMP vtap_cmp(__global const SRC_T *src, long base, int j, int len, long stride,
                         CMP_T cval, int border)
{
    j = FOLD(j, len);
    return j < 0 ? (VCMP)(cval) : VLOAD_CMP(src, base + (long)j * stride);
}

/* Element i of dst from a compared value: unchanged (SAME), else converted as scipy converts
 * its double. */
#if SAME
#define STORE_CMP(i, v) (dst[i] = (v))
#define VSTORE_OUT(i, v) VSTORE_CMP((v), (i), dst)
#else
#define STORE_CMP(i, v) clk_store(dst, (i), CLK_CONVERT(ACC_T)(v))
#define VSTORE_OUT(i, v)                                                                  \
    {                                                                                     \
        CMP_T lanes_[VW];                                                                 \
        VSTORE_LANES((v), lanes_);                                                        \
        for (int l_ = 0; l_ < VW; l_++)                                                   \
            STORE_CMP((i) + l_, lanes_[l_]);                                              \
    }
#endif

/* The extremes of VW neighbouring windows at once, whose taps all lie in the line. */
#define VECTOR_EXTREMES(out, p, step)                                                     \
    {                                                                                     \
        const long step_ = (step);                                                        \
        VCMP best = VLOAD_CMP(p, 0);                                                      \
        for (int k = 1; k < taps; k++) {                                                  \
            VCMP v = VLOAD_CMP(p, (long)k * step_);                                       \
            best = PICK(best, v);                                                         \
        }                                                                                 \
        VSTORE_OUT((out), best);                                                          \
    }
#define SCALAR_EXTREME(i, base)                                                           \
    {                                                                                     \
        const long base_ = (base);                                                        \
        const int start_ = (i) - shift;                                                   \
        CMP_T best = tap_cmp(src, base_, start_, len, STRIDE, cv, border);                \
        for (int k = 1; k < taps; k++) {                                                  \
            CMP_T v = tap_cmp(src, base_, start_ + k, len, STRIDE, cv, border);           \
            if (BETTER(v, best))                                                          \
                best = v;                                                                 \
        }                                                                                 \
        STORE_CMP(base_ + (long)(i) * STRIDE, best);                                      \
    }

#if LAST && VW > 1 && !GENERIC
/* Along the last axis, a work-item whose windows cross the line's ends folds its span into
 * private memory once and compares vectors from there: element by element, each tap folded,
 * such work-items took a third to a half of the pass (PoCL, 3840x2160 uint8, windows of 3 to
 * 9). */
#undef AXIS_ELEMENTS
#define AXIS_ELEMENTS(VECTOR, SCALAR)                                                     \
    const int i0 = get_global_id(0) * VW;                                                 \
    const long base = (long)get_global_id(1) * len;                                       \
    if (i0 + VW <= len && i0 - shift >= 0 && i0 + VW - 1 - shift + taps <= len) {         \
        VECTOR(base + i0, src + base + (i0 - shift), 1)                                   \
    } else {                                                                              \
        CMP_T span[VW + TAPS - 1];                                                        \
        for (int t = 0; t < VW + TAPS - 1; t++)                                           \
            span[t] = tap_cmp(src, base, i0 - shift + t, len, 1, cv, border);             \
        VCMP best = CLK_VLOAD(VW)(0, span);                                               \
        for (int k = 1; k < TAPS; k++)                                                    \
            best = PICK(best, CLK_VLOAD(VW)(0, span + k));                                \
        CMP_T lanes[VW];                                                                  \
        VSTORE_LANES(best, lanes);                                                        \
        for (int l = 0; l < VW && i0 + l < len; l++)                                      \
            STORE_CMP(base + i0 + l, lanes[l]);                                           \
    }
#endif

__kernel void min_or_max_axis(__global const SRC_T *src, __global DST_T *dst, int len,
                              long inner, ACC_T cval, int taps_, int shift_, int border)
{
#if GENERIC
    const int taps = taps_, shift = shift_;
#endif
    const CMP_T cv = (CMP_T)cval;
    AXIS_ELEMENTS(VECTOR_EXTREMES, SCALAR_EXTREME)
}

/* One block: outputs i0 .. i0 + n - 1 (n <= taps) of the line at `base`, VW lines at once
 * (T = VCMP, LOAD a folded read) or one (T = CMP_T). The running extreme backwards from m
 * goes to scratch at the outputs' places; the one forwards is combined with it. */
#define BLOCK(T, PICK_, LOAD, STORE_SCRATCH, LOAD_SCRATCH, STORE)                             \
    {                                                                                     \
        const int m = i0 - shift + taps - 1;                                              \
        T best = LOAD(m);                                                                 \
        for (int t = taps - 1; t >= 0; t--) {                                             \
            if (t < taps - 1) {                                                           \
                T v = LOAD(m - (taps - 1 - t));                                           \
                best = PICK_(best, v);                                                    \
            }                                                                             \
            if (t < n)                                                                    \
                STORE_SCRATCH(t, best);                                                   \
        }                                                                                 \
        STORE(0, LOAD_SCRATCH(0));                                                        \
        if (n > 1) {                                                                      \
            T after = LOAD(m + 1);                                                        \
            for (int t = 1;; t++) {                                                       \
                T back = LOAD_SCRATCH(t);                                                 \
                STORE(t, PICK_(back, after));                                              \
                if (t + 1 >= n)                                                           \
                    break;                                                                \
                T v = LOAD(m + t + 1);                                                    \
                after = PICK_(after, v);                                                  \
            }                                                                             \
        }                                                                                 \
    }

__kernel void min_or_max_axis_blocks(__global const SRC_T *src, __global DST_T *dst,
                                     __global CMP_T *scratch, int len, long inner,
                                     ACC_T cval, int taps_, int shift_, int border)
{
#if GENERIC
    const int taps = taps_, shift = shift_;
#endif
    const CMP_T cv = (CMP_T)cval;
#if LAST
    const int i0 = get_global_id(0) * taps;
    const long base = (long)get_global_id(1) * len;
    if (i0 >= len)
        return;
    const int n = min(taps, len - i0);
    const bool inside = i0 - shift >= 0 && i0 - shift + 2 * taps - 1 <= len;
    __global const SRC_T *line = src + base;
    __global CMP_T *h = scratch + base + i0;
#define S_LOAD(j) (inside ? LOAD_CMP(line, (j)) : tap_cmp(src, base, (j), len, 1, cv, border))
#define S_STORE_SCRATCH(t, v) (h[t] = (v))
#define S_LOAD_SCRATCH(t) h[t]
#define S_STORE(t, v) STORE_CMP(base + i0 + (t), (v))
    BLOCK(CMP_T, SPICK, S_LOAD, S_STORE_SCRATCH, S_LOAD_SCRATCH, S_STORE)
#else
    const long x0 = (long)get_global_id(0) * VW;
    const int i0 = get_global_id(1) * taps;
    const long line = (long)get_global_id(2) * len * inner;
    if (i0 >= len || x0 >= inner)
        return;
    const int n = min(taps, len - i0);
    if (x0 + VW <= inner) {
        const long base = line + x0;
#define V_LOAD(j) vtap_cmp(src, base, (j), len, inner, cv, border)
#define V_STORE_SCRATCH(t, v) VSTORE_CMP((v), base + (long)(i0 + (t)) * inner, scratch)
#define V_LOAD_SCRATCH(t) VLOAD_CMP_SCRATCH(base + (long)(i0 + (t)) * inner)
#define V_STORE(t, v) VSTORE_OUT(base + (long)(i0 + (t)) * inner, (v))
#if VW == 1
#define VLOAD_CMP_SCRATCH(off) scratch[off]
#else
#define VLOAD_CMP_SCRATCH(off) CLK_VLOAD(VW)(0, scratch + (off))
#endif
        BLOCK(VCMP, PICK, V_LOAD, V_STORE_SCRATCH, V_LOAD_SCRATCH, V_STORE)
    } else {
        for (long x = x0; x < inner; x++) {
            const long base = line + x;
#define C_LOAD(j) tap_cmp(src, base, (j), len, inner, cv, border)
#define C_STORE_SCRATCH(t, v) (scratch[base + (long)(i0 + (t)) * inner] = (v))
#define C_LOAD_SCRATCH(t) scratch[base + (long)(i0 + (t)) * inner]
#define C_STORE(t, v) STORE_CMP(base + (long)(i0 + (t)) * inner, (v))
            BLOCK(CMP_T, SPICK, C_LOAD, C_STORE_SCRATCH, C_LOAD_SCRATCH, C_STORE)
        }
    }
#endif
}
