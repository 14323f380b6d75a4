/*
 * clkit.h: helpers shared by the kernels of the clkit library.
 *
 * Everything here is specialised at build time: a kernel file includes this header and the host
 * passes the choices as -D defines, so each combination is its own cached build with no run-time
 * branches on types or modes.
 *
 * Border modes follow scipy.ndimage (names as there; OpenCV's names in brackets), shown for a row
 * a b c d:
 *   BORDER_REFLECT   d c b a | a b c d | d c b a   half-sample symmetric (BORDER_REFLECT)
 *   BORDER_MIRROR      d c b | a b c d | c b a     whole-sample symmetric (BORDER_REFLECT_101)
 *   BORDER_NEAREST   a a a a | a b c d | d d d d   (BORDER_REPLICATE)
 *   BORDER_WRAP      a b c d | a b c d | a b c d   periodic (BORDER_WRAP)
 *   BORDER_CONSTANT  k k k k | a b c d | k k k k   k = cval (BORDER_CONSTANT)
 * Select one with -D BORDER=BORDER_REFLECT (the default).
 */
#ifndef CLKIT_H
#define CLKIT_H

/* Double precision is only legal once the extension is enabled; enabling it where it exists costs
 * nothing, and a kernel asked for double on a device without it fails to build, as it should. */
#if defined(cl_khr_fp64)
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

/* Numbers, not names, so that #if can compare them. */
#define BORDER_REFLECT  0
#define BORDER_MIRROR   1
#define BORDER_NEAREST  2
#define BORDER_WRAP     3
#define BORDER_CONSTANT 4

#ifndef BORDER
#define BORDER BORDER_REFLECT
#endif

#if BORDER < BORDER_REFLECT || BORDER > BORDER_CONSTANT
#error "BORDER must be one of BORDER_REFLECT, BORDER_MIRROR, BORDER_NEAREST, BORDER_WRAP, BORDER_CONSTANT"
#endif

/* Token pasting needs a second level so that macro arguments (ACC_T, VW) expand first. */
#define CLK_CAT_(a, b) a##b
#define CLK_CAT(a, b) CLK_CAT_(a, b)
/* vector type of N elements of T, e.g. CLK_VEC(float, 16) -> float16 */
#define CLK_VEC(T, N) CLK_CAT(T, N)
/* vloadN / vstoreN / convert_T for a width or type given by a macro */
#define CLK_VLOAD(N) CLK_CAT(vload, N)
#define CLK_VSTORE(N) CLK_CAT(vstore, N)
#define CLK_CONVERT(T) CLK_CAT(convert_, T)

/* OpenCL C 1.2 allows static on helper functions; without it a plain `inline` is only an inline
 * definition in C99 terms and some compilers then look for an external one. Clang also gets
 * always_inline: helpers take compile-time constants (mask sizes, flags) as arguments, and only
 * once inlined do their loops have constant trip counts that `#pragma unroll` can honour. */
#if defined(__clang__)
#define CLK_INLINE static inline __attribute__((always_inline))
#else
#define CLK_INLINE static inline
#endif

/* Floor modulo: C's % keeps the sign of the dividend, but folding needs a result in [0, n) for
 * offsets far to the left of the image. */
CLK_INLINE int clk_mod(int i, int n)
{
    int r = i % n;
    return r < 0 ? r + n : r;
}

/* The fold functions map any integer coordinate to [0, n) in closed form, so an offset of several
 * image widths (a mask larger than the image, an image of one pixel) folds as scipy folds it:
 * reflect and mirror are periodic with periods 2n and 2n - 2. Each needs n >= 1. */
CLK_INLINE int clk_fold_reflect(int i, int n)
{
    int m = clk_mod(i, 2 * n);
    return m < n ? m : 2 * n - 1 - m;
}

CLK_INLINE int clk_fold_mirror(int i, int n)
{
    /* a single sample mirrors onto itself; the period 2n - 2 would be 0 */
    if (n == 1)
        return 0;
    int m = clk_mod(i, 2 * n - 2);
    return m < n ? m : 2 * n - 2 - m;
}

CLK_INLINE int clk_fold_nearest(int i, int n)
{
    return clamp(i, 0, n - 1);
}

CLK_INLINE int clk_fold_wrap(int i, int n)
{
    return clk_mod(i, n);
}

/* -1 tells the caller to use cval: there is no image sample to read. */
CLK_INLINE int clk_fold_constant(int i, int n)
{
    return (i >= 0 && i < n) ? i : -1;
}

/* The build's border mode. Returns an index in [0, n), or -1 (constant mode only) for "use cval". */
CLK_INLINE int clk_fold(int i, int n)
{
#if BORDER == BORDER_REFLECT
    return clk_fold_reflect(i, n);
#elif BORDER == BORDER_MIRROR
    return clk_fold_mirror(i, n);
#elif BORDER == BORDER_NEAREST
    return clk_fold_nearest(i, n);
#elif BORDER == BORDER_WRAP
    return clk_fold_wrap(i, n);
#else
    return clk_fold_constant(i, n);
#endif
}

/* A border mode chosen at run time, for the generic builds that take it as an argument (one
 * build for every mode): `border` is one of the BORDER_* numbers, the same for every work-item,
 * so the switch is a uniform branch. Returns what clk_fold returns in a build of that mode. */
CLK_INLINE int clk_fold_by(int i, int n, int border)
{
    switch (border) {
    case BORDER_MIRROR:
        return clk_fold_mirror(i, n);
    case BORDER_NEAREST:
        return clk_fold_nearest(i, n);
    case BORDER_WRAP:
        return clk_fold_wrap(i, n);
    case BORDER_CONSTANT:
        return clk_fold_constant(i, n);
    default:
        return clk_fold_reflect(i, n);
    }
}

#if defined(__clang__)
/* CLK_WINDOW_FN(name, V, N) defines `V name(V a, V b, int d)`: elements [d, d + N) of the 2N
 * elements a:b, for vectors V of N = 4, 8 or 16 lanes and 0 <= d < N. A tap's window formed
 * from the aligned blocks around a run: d is a constant wherever this is inlined into an
 * unrolled tap loop, so the switch folds into one register permute (clang's builtin), where an
 * unaligned load per tap would straddle two cache lines almost every time. */
#define CLK_LANES4(n) n, n + 1, n + 2, n + 3
#define CLK_LANES8(n) CLK_LANES4(n), CLK_LANES4(n + 4)
#define CLK_LANES16(n) CLK_LANES8(n), CLK_LANES8(n + 8)
#define CLK_WCASE4(n) case n: return __builtin_shufflevector(a, b, CLK_LANES4(n));
#define CLK_WCASE8(n) case n: return __builtin_shufflevector(a, b, CLK_LANES8(n));
#define CLK_WCASE16(n) case n: return __builtin_shufflevector(a, b, CLK_LANES16(n));
#define CLK_WCASES_4 CLK_WCASE4(1) CLK_WCASE4(2) CLK_WCASE4(3)
#define CLK_WCASES_8 CLK_WCASE8(1) CLK_WCASE8(2) CLK_WCASE8(3) CLK_WCASE8(4) CLK_WCASE8(5) \
    CLK_WCASE8(6) CLK_WCASE8(7)
#define CLK_WCASES_16 CLK_WCASE16(1) CLK_WCASE16(2) CLK_WCASE16(3) CLK_WCASE16(4)              \
    CLK_WCASE16(5) CLK_WCASE16(6) CLK_WCASE16(7) CLK_WCASE16(8) CLK_WCASE16(9) CLK_WCASE16(10) \
    CLK_WCASE16(11) CLK_WCASE16(12) CLK_WCASE16(13) CLK_WCASE16(14) CLK_WCASE16(15)
#define CLK_WINDOW_FN(name, V, N)                                                         \
    CLK_INLINE V name(V a, V b, int d)                                                    \
    {                                                                                     \
        switch (d) {                                                                      \
        CLK_CAT(CLK_WCASES_, N)                                                           \
        default: return a;                                                                \
        }                                                                                 \
    }
#endif

/* Ceiling division for non-negative operands, for counts of blocks. */
#define CLK_DIV_UP(a, b) (((a) + (b) - 1) / (b))

#endif /* CLKIT_H */
