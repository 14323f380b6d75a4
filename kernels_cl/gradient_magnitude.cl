/*
 * gradient_magnitude.cl: the elementwise steps with which scipy.ndimage combines its 1-D
 * derivatives (laplace, gaussian_laplace, gaussian_gradient_magnitude), in the result's type T
 * as numpy computes them there: `acc += x` (add_into), `acc = acc * acc` (square) and
 * `acc = sqrt(acc)` (sqrt_into, truncated towards zero for integer types, as numpy's unsafe
 * cast does). One work-item per element.
 *
 * T is the type as stored; HALF=1 for float16 (read and written with vload_half / vstore_half,
 * computed in float, as numpy computes float16); BOOL=1 for bool (stored as uchar: + is or,
 * * is and). SQRT_T: the type numpy's sqrt takes for T (float or double).
 */
#include "clkit.h"

#if HALF
#define GET(p, i) vload_half((i), (p))
#define PUT(p, i, v) vstore_half((v), (i), (p))
#else
#define GET(p, i) ((p)[i])
#define PUT(p, i, v) ((p)[i] = (v))
#endif

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
