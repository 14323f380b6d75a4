/*
 * ndimage.h: element access and scipy.ndimage's conversions for the clkit.ndimage kernels.
 *
 * Build defines:
 *   SRC_T, DST_T   the input's and the output's element types as stored (bool as uchar,
 *                  float16 as half, read and written with vload_half / vstore_half)
 *   SRC_HALF, DST_HALF   1 where that array is float16
 *   ACC_T          the type the filter computes in: double where the device has fp64, else
 *                  float (float for float32 and float16 data)
 *   OUT_KIND       how a computed value becomes an output element, as scipy.ndimage's C cast
 *                  does on x86-64: 0 float (rounded to nearest), 1 bool (its low byte nonzero), 2 int8 to
 *                  uint16 and int32 (truncated to int, then its low bits), 3 uint32 (truncated
 *                  to long, its low bits), 4 int64, 5 uint64 (see clk_store)
 *   BORDER         the border mode (clkit.h)
 */
#ifndef CLKIT_NDIMAGE_H
#define CLKIT_NDIMAGE_H

#include "clkit.h"

/* scipy sums in double with separate multiplies and adds: no fused multiply-add, so that integer
 * results truncate exactly as scipy's do. float32 sums may fuse (they round anyway). */
#if defined(ACC_DOUBLE)
#pragma OPENCL FP_CONTRACT OFF
#endif

#if SRC_HALF
#define LOAD(p, i) CLK_CONVERT(ACC_T)(vload_half((i), (p)))
#define LOAD_RAW(p, i) vload_half((i), (p))
#define RAW_T float
#else
#define LOAD(p, i) CLK_CONVERT(ACC_T)((p)[i])
#define LOAD_RAW(p, i) ((p)[i])
#define RAW_T SRC_T
#endif

/* x86-64's truncating conversions (cvttsd2si), which scipy's C casts compile to: a value out of
 * the integer's range, or NaN, gives its smallest value. Spelled out, so that every device
 * (a GPU's conversions saturate) gives scipy's results. */
CLK_INLINE int clk_cvt_int(ACC_T v)
{
    return (v >= (ACC_T)-2147483648.0 && v < (ACC_T)2147483648.0) ? convert_int(v) : INT_MIN;
}

CLK_INLINE long clk_cvt_long(ACC_T v)
{
    return (v >= (ACC_T)-9223372036854775808.0 && v < (ACC_T)9223372036854775808.0)
        ? convert_long(v) : LONG_MIN;
}

CLK_INLINE void clk_store(__global DST_T *p, long i, ACC_T v)
{
#if DST_HALF
    vstore_half(convert_float(v), i, p);
#elif OUT_KIND == 0
    p[i] = CLK_CONVERT(DST_T)(v);
#elif OUT_KIND == 1
    p[i] = (uchar)clk_cvt_int(v) != 0;  /* numpy's bool is a byte: the cast keeps the low one */
#elif OUT_KIND == 2
    p[i] = (DST_T)clk_cvt_int(v);
#elif OUT_KIND == 3
    p[i] = (DST_T)clk_cvt_long(v);
#elif OUT_KIND == 4
    p[i] = clk_cvt_long(v);
#else
    /* from 2**63 up through long after subtracting 2**63, as C compiles it */
    const ACC_T two63 = (ACC_T)9223372036854775808.0;
    p[i] = v >= two63 ? as_ulong(clk_cvt_long(v - two63)) ^ 0x8000000000000000UL
                      : as_ulong(clk_cvt_long(v));
#endif
}

/* Two builds of each kernel. A specialised one takes the window (TAPS or NTAPS, SHIFT, the
 * border mode BORDER, SYMMETRIC) as defines, for unrolled loops and no run-time tests; a
 * generic one (GENERIC=1), for small arrays, takes them as the kernel's arguments, so that
 * one build per element type serves every window and mode. Kernels take both and use one. */
/* Index i of a line of n folded by the border mode (`border` in generic builds): as it is
 * inside the line, which spares the taps inside it the fold's division. */
#define FOLD(i, n) fold_index((i), (n), border)
CLK_INLINE int fold_index(int i, int n, int border)
{
    if (i >= 0 && i < n)
        return i;
#if GENERIC
    return clk_fold_by(i, n, border);
#else
    return clk_fold(i, n);
#endif
}

/* Element `j` of the line starting at `base` with stride `inner`, folded by the border mode
 * unless the whole window lies inside the line (`inside`); cval outside in constant mode. */
CLK_INLINE ACC_T read_tap(__global const SRC_T *src, long base, int j, int len, long inner,
                          ACC_T cval, bool inside, int border)
{
    if (!inside) {
        j = FOLD(j, len);
        if (j < 0)
            return cval;
    }
    return LOAD(src, base + (long)j * inner);
}

/* The 1-D kernels along an axis (convolution_axis.cl, rank_filter_axis.cl): the array is
 * (outer, len, inner), `len` elements along the axis and `inner` the product of the following
 * dimensions (the axis's stride). A work-item computes VW neighbouring output elements: along
 * the axis itself when it is the last one (LAST=1: global size (ceil(len / VW), outer)), else
 * along `inner` (global size (ceil(inner / VW), len, outer)), so that its loads are vectors of
 * VW neighbours (on CPUs; VW=1 on GPUs, whose neighbouring work-items coalesce). Where all
 * VW windows lie inside the line, the sums run on vectors with no folding; elsewhere element
 * by element, folding each tap. Both give the same sums, lane by lane. */
#ifndef VW
#define VW 1
#endif
#if LAST
#define STRIDE 1
#else
#define STRIDE inner
#endif
#if VW == 1
#define VACC ACC_T
#define VLOAD(p, off) CLK_CONVERT(ACC_T)(LOAD_RAW((p), (off)))
#define VSTORE_ACC(v, a) ((a)[0] = (v))
#elif SRC_HALF
#define VACC CLK_VEC(ACC_T, VW)
#define VLOAD(p, off) CLK_CONVERT(VACC)(CLK_CAT(vload_half, VW)(0, (p) + (off)))
#define VSTORE_ACC(v, a) CLK_VSTORE(VW)((v), 0, (a))
#else
#define VACC CLK_VEC(ACC_T, VW)
#define VLOAD(p, off) CLK_CONVERT(VACC)(CLK_VLOAD(VW)(0, (p) + (off)))
#define VSTORE_ACC(v, a) CLK_VSTORE(VW)((v), 0, (a))
#endif

/* Runs BODY(i, base, p, step) for the work-item's elements: VECTOR for its VW elements at once
 * where their windows lie inside the line (p: the first window's first tap, step: the stride
 * of taps), SCALAR(i, base) element by element otherwise. */
#if LAST
#define AXIS_ELEMENTS(VECTOR, SCALAR)                                                     \
    const int i0 = get_global_id(0) * VW;                                                 \
    const long base = (long)get_global_id(1) * len;                                       \
    if (i0 + VW <= len && i0 - shift >= 0 && i0 + VW - 1 - shift + taps <= len) {         \
        __global const SRC_T *p = src + base + (i0 - shift);                              \
        VECTOR(base + i0, p, 1)                                                           \
    } else {                                                                              \
        for (int j = 0; j < VW && i0 + j < len; j++) {                                    \
            SCALAR(i0 + j, base)                                                          \
        }                                                                                 \
    }
#else
#define AXIS_ELEMENTS(VECTOR, SCALAR)                                                     \
    const long x0 = (long)get_global_id(0) * VW;                                          \
    const int i = get_global_id(1);                                                       \
    const long line = (long)get_global_id(2) * len * inner;                               \
    if (x0 + VW <= inner && i - shift >= 0 && i - shift + taps <= len) {                  \
        __global const SRC_T *p = src + line + x0 + (long)(i - shift) * inner;            \
        VECTOR(line + x0 + (long)i * inner, p, inner)                                     \
    } else {                                                                              \
        for (int j = 0; j < VW && x0 + j < inner; j++) {                                  \
            SCALAR(i, line + x0 + j)                                                      \
        }                                                                                 \
    }
#endif

#ifdef NDIM
/* The N-D kernels: the global size is (shape[NDIM - 1], the product of the other sizes), so
 * that work-items of dimension 0 are neighbours along the last axis. Tap t reads the element
 * at offsets offs[t * NDIM + d] from the work-item's coordinates, `flat[t]` elements away in
 * memory; where the coordinates lie at least lo[d] from the start and hi[d] from the end of
 * every axis, all taps read the array itself, at g + flat[t]. clk_coords fills the
 * coordinates and returns the element's index, with `inside`; clk_line_coords those of the
 * work-item's line alone. */
/* The coordinates of the work-item's line (every axis but the last, from global id 1) into
 * c[0 .. NDIM - 2], and whether they lie at least lo[d] from the start and hi[d] from the end
 * of those axes. */
CLK_INLINE bool clk_line_coords(__constant const int *shape, __constant const int *lo,
                                __constant const int *hi, int *c)
{
    int r = get_global_id(1);
    bool in = true;
    for (int d = NDIM - 2; d >= 0; d--) {
        int q = r / shape[d];
        c[d] = r - q * shape[d];
        r = q;
        in = in && c[d] >= lo[d] && c[d] < shape[d] - hi[d];
    }
    return in;
}

CLK_INLINE long clk_coords(__constant const int *shape, __constant const int *lo,
                           __constant const int *hi, int *c, bool *inside)
{
    const int x = get_global_id(0);
    c[NDIM - 1] = x;
    const bool line_inside = clk_line_coords(shape, lo, hi, c);
    *inside = line_inside && x >= lo[NDIM - 1] && x < shape[NDIM - 1] - hi[NDIM - 1];
    return (long)get_global_id(1) * shape[NDIM - 1] + x;
}

/* The folded index of tap t of the element at coordinates c, or -1 (cval). */
CLK_INLINE long clk_tap_index(const int *c, __constant const int *offs, int t,
                              __constant const int *shape, int border)
{
    long idx = 0;
    for (int d = 0; d < NDIM; d++) {
        int j = FOLD(c[d] + offs[t * NDIM + d], shape[d]);
        if (j < 0)
            return -1;
        idx = idx * shape[d] + j;
    }
    return idx;
}
#endif

#endif /* CLKIT_NDIMAGE_H */
