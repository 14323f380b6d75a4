/*
 * mandelbrot.cl -- escape-time counts of the Mandelbrot set on a width x height grid.
 *
 * Build-time defines
 *   T    precision of the arithmetic: float (default) or double (needs cl_khr_fp64).
 *   PPW  pixels per work-item, side by side in one row: 1 (default, for GPUs: one pixel per
 *        SIMT lane), 2, 4, 8 or 16. On a CPU use one SIMD register's worth (AVX-512: 16 float,
 *        8 double): PoCL 3.1 cannot vectorise this data-dependent loop across work-items.
 *
 * Launch (2-D)
 *   global size = (ceil(width / PPW), rows), each rounded up to a multiple of the local size
 *   in that dimension; any local size (e.g. 16 x 16, or 64 x 1).
 *   counts: int32, rows * width, C order: the band of image rows row0 .. row0 + rows - 1.
 *           (row0 = 0, rows = height for the whole image; bands let several devices share it.)
 *   Coordinates, all of type T, exactly as numpy.linspace(T(min), T(max), num) computes them:
 *     dx = (xmax - xmin) / (width - 1) and dy = (ymax - ymin) / (height - 1), computed by the
 *     host in precision T (0 when width or height is 1). Column u has real part u*dx + xmin,
 *     except the last column, which is exactly xmax; row v (0 = top of the array) has imaginary
 *     part v*dy + ymin, except the last row, exactly ymax. The host computes the steps because
 *     OpenCL float division need not be correctly rounded (GPUs default to 2.5 ulp); numpy's is.
 *
 * Result per pixel: the number n of iterations z <- z*z + c, from z = 0, after which |z| > 2
 * first holds (so |c| > 2 gives 1), or max_iter if |z| stays <= 2 for max_iter iterations.
 *
 * Mapping: work-item (i, r) computes pixels u = i*PPW .. i*PPW + PPW - 1 of band row r, x
 * fastest, so a warp writes a contiguous run of counts. The kernel is compute-bound. With PPW = 1
 * each work-item loops until its pixel escapes (a GPU warp runs as long as its slowest pixel).
 * With PPW > 1 the PPW pixels iterate in lockstep as one vector, like a warp: a mask freezes the
 * count of each pixel once it has escaped (its z keeps iterating harmlessly, inf/NaN included,
 * and is never read again), and the loop ends when all have escaped or at max_iter. Columns
 * past width in the last work-item of a row are computed and not stored.
 *
 * Exactness: every operation is a single IEEE operation in the order of the numpy reference
 *   zi = (zr + zr) * zi + ci;  zr = (zr2 - zi2) + cr;  zr2 = zr*zr;  zi2 = zi*zi;
 *   escaped when zr2 + zi2 > 4
 * and contraction into fma is switched off, so a device reproduces numpy bit for bit: OpenCL
 * requires add, subtract and multiply to be correctly rounded (a device that flushes denormals
 * may differ on the rare pixel whose values pass through one).
 */

#ifndef T
#define T float
#endif

#include "clkit.h"
#define IS_DOUBLE_double 1

#pragma OPENCL FP_CONTRACT OFF

#ifndef PPW
#define PPW 1
#endif
#if PPW != 1 && PPW != 2 && PPW != 4 && PPW != 8 && PPW != 16
#error "mandelbrot.cl: PPW must be 1, 2, 4, 8 or 16"
#endif

#if PPW > 1
/* Comparisons of T vectors yield masks of the same lane width: int for float, long for double. */
#if CLK_CAT(IS_DOUBLE_, T)
#define VM CLK_CAT(long, PPW)
#else
#define VM CLK_CAT(int, PPW)
#endif
#define VT CLK_CAT(T, PPW)
#define VI CLK_CAT(int, PPW)
#if PPW == 2
#define LANES (VM)(0, 1)
#elif PPW == 4
#define LANES (VM)(0, 1, 2, 3)
#elif PPW == 8
#define LANES (VM)(0, 1, 2, 3, 4, 5, 6, 7)
#else
#define LANES (VM)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)
#endif
#endif

__kernel void mandelbrot(__global int* restrict counts,
                         const int width,
                         const int height,
                         const int row0,
                         const int rows,
                         const T xmin,
                         const T xmax,
                         const T dx,
                         const T ymin,
                         const T ymax,
                         const T dy,
                         const int max_iter)
{
    const int r = get_global_id(1);
    const int v = row0 + r;
    const int first = get_global_id(0) * PPW;
    if (first >= width || r >= rows)
        return;
    const T ci = (v == height - 1 && height > 1) ? ymax : (T)v * dy + ymin;
    __global int* out = counts + (size_t)r * width;

#if PPW == 1
    const int u = first;
    const T cr = (u == width - 1 && width > 1) ? xmax : (T)u * dx + xmin;
    T zr = 0, zi = 0, zr2 = 0, zi2 = 0;
    int n = 0;
    while (n < max_iter) {
        zi = (zr + zr) * zi + ci;
        zr = (zr2 - zi2) + cr;
        zr2 = zr * zr;
        zi2 = zi * zi;
        ++n;
        if (zr2 + zi2 > (T)4)
            break;
    }
    out[u] = n;
#else
    const VM u = (VM)first + LANES;
    const VT cr = select(CLK_CAT(convert_, VT)(u) * dx + xmin, (VT)xmax,
                         (u == (VM)(width - 1)) & (VM)(width > 1 ? -1 : 0));
    const VT civ = (VT)ci;
    VT zr = 0, zi = 0, zr2 = 0, zi2 = 0;
    VM n = 0, active = (VM)(-1);
    for (int it = 0; it < max_iter; ++it) {
        zi = (zr + zr) * zi + civ;
        zr = (zr2 - zi2) + cr;
        zr2 = zr * zr;
        zi2 = zi * zi;
        n -= active;
        active &= (zr2 + zi2 <= (VT)4);
        if (!any(active))
            break;
    }
    /* A row starts at any multiple of width, so the store is only element-aligned (vstore);
     * counts are a tiny fraction of the work. */
    const VI nn = CLK_CAT(convert_, VI)(n);
    if (first + PPW <= width) {
        CLK_CAT(vstore, PPW)(nn, 0, out + first);
    } else {
        const int* lane_n = (const int*)&nn;
        for (int k = 0; k < width - first; ++k)
            out[first + k] = lane_n[k];
    }
#endif
}
