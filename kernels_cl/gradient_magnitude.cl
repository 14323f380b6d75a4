/*
 * gradient_magnitude.cl: the elementwise steps with which scipy.ndimage combines its 1-D
 * derivatives (laplace, gaussian_laplace, gaussian_gradient_magnitude), in the result's type T
 * as numpy computes them there: `acc += x` (add_into), `acc = acc * acc` (square) and
 * `acc = sqrt(acc)` (sqrt_into, truncated towards zero for integer types, as numpy's unsafe
 * cast does), and `acc += x * x` with, for the first axis, acc squared first and, for the
 * last, the square root (add_square: one pass over memory for numpy's four, each operation
 * rounded to T as numpy rounds it). One work-item per element.
 *
 * T is the type as stored; HALF=1 for float16 (read and written with vload_half / vstore_half,
 * computed in float, as numpy computes float16); BOOL=1 for bool (stored as uchar: + is or,
 * * is and). SQRT_T: the type numpy's sqrt takes for T (float or double).
 */
#include "clkit.h"

/* numpy rounds the product before the sum: no fused multiply-add */
#pragma OPENCL FP_CONTRACT OFF

#if HALF
#define GET(p, i) vload_half((i), (p))
#define PUT(p, i, v) vstore_half((v), (i), (p))
#else
#define GET(p, i) ((p)[i])
#define PUT(p, i, v) ((p)[i] = (v))
#endif

#if HALF
/* v rounded to float16, as numpy rounds the result of each float16 operation */
CLK_INLINE float to_half(float v)
{
    ushort h;
    vstore_half(v, 0, (__private half *)&h);
    return vload_half(0, (__private const half *)&h);
}
#endif

/* acc += x * x, with acc = acc * acc before where `first` (the second axis of a gradient
 * magnitude: the first's derivative is squared here) and acc = sqrt(acc) after where `root`
 * (the last axis) */
__kernel void add_square(__global T *acc, __global const T *x, long n, int first, int root)
{
    const long i = get_global_id(0);
    if (i >= n)
        return;
#if BOOL
    acc[i] = acc[i] || x[i];
#elif HALF
    const float a = first ? to_half(GET(acc, i) * GET(acc, i)) : GET(acc, i);
    const float s = to_half(to_half(GET(x, i) * GET(x, i)) + a);
    PUT(acc, i, root ? sqrt(s) : s);
#else
    const T a = first ? acc[i] * acc[i] : acc[i];
    const T s = a + x[i] * x[i];
    if (root) {
        SQRT_T r = sqrt((SQRT_T)s);
        acc[i] = (T)r;
    } else {
        acc[i] = s;
    }
#endif
}

__kernel void add_into(__global T *acc, __global const T *x, long n)
{
    const long i = get_global_id(0);
    if (i >= n)
        return;
#if BOOL
    acc[i] = acc[i] || x[i];
#else
    PUT(acc, i, GET(acc, i) + GET(x, i));
#endif
}

__kernel void square(__global T *acc, long n)
{
    const long i = get_global_id(0);
    if (i >= n)
        return;
#if BOOL
    acc[i] = acc[i] != 0;
#else
    PUT(acc, i, GET(acc, i) * GET(acc, i));
#endif
}

__kernel void sqrt_into(__global T *acc, long n)
{
    const long i = get_global_id(0);
    if (i >= n)
        return;
#if BOOL
    acc[i] = acc[i] != 0;
#elif HALF
    PUT(acc, i, sqrt(GET(acc, i)));
#else
    SQRT_T r = sqrt((SQRT_T)acc[i]);
    acc[i] = (T)r;
#endif
}
