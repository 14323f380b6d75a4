/*
 * vector_add.cl -- out[i] = a[i] + b[i], element-wise, for one element type per build.
 *
 * Build-time defines
 *   T    element type (required): char uchar short ushort int uint long ulong float double.
 *        double needs cl_khr_fp64 (clkit.h enables it where the device has it).
 *   VW   elements per work-item: 1, 2, 4, 8 or 16. Default: as many as fill 16 bytes
 *        (16 chars, 8 shorts, 4 ints or floats, 2 longs or doubles), the widest load of a GPU
 *        thread. On PoCL (AVX-512) 16, 32 and 64 bytes measured the same (memory-bound).
 *
 * Launch (1-D)
 *   n = element count of all three buffers.
 *   global size = ceil(n / VW), rounded up to a multiple of the local size; any local size.
 *   Buffers start at a buffer's (or an aligned sub-buffer's) origin, which OpenCL aligns to
 *   CL_DEVICE_MEM_BASE_ADDR_ALIGN (at least 128 bytes), as every cl_mem argument does.
 *
 * Mapping: work-item i owns the VW consecutive elements [i*VW, i*VW + VW) and moves them as one
 * VW-wide vector per buffer. With the default VW that is one 16-byte access per buffer, and
 * neighbouring work-items touch neighbouring 16-byte blocks, so a GPU warp reads and writes one
 * contiguous span (fully coalesced, widest load instruction) and a CPU gets whole SIMD vectors.
 * The one work-item whose block straddles n finishes element by element; work-items past n (from
 * rounding the global size up) return at once. So any n works, 1 and primes included.
 *
 * The vectors are accessed through a vector-typed pointer rather than vloadN/vstoreN: block i
 * starts at i * VW * sizeof(T) bytes from an aligned origin, so it is aligned to the vector's own
 * size, and the compiler may emit one aligned wide access. vloadN/vstoreN promise only element
 * alignment; PoCL 3.1 splits vstore16 of uchar into 16 byte stores (measured: 3-5x slower), and
 * GPU compilers may split them too.
 *
 * Integer overflow wraps modulo 2^bits, as numpy does: signed operands are reinterpreted as their
 * unsigned type (as_*) for the addition, where wrap-around is defined, not undefined behaviour.
 */

#include "clkit.h"

/* Per-type facts the preprocessor cannot compute from a type name: pasted onto T. */
#define IS_FLOAT_float 1
#define IS_FLOAT_double 1
#define UNSIGNED_char uchar
#define UNSIGNED_uchar uchar
#define UNSIGNED_short ushort
#define UNSIGNED_ushort ushort
#define UNSIGNED_int uint
#define UNSIGNED_uint uint
#define UNSIGNED_long ulong
#define UNSIGNED_ulong ulong
#define WIDTH16_char 16
#define WIDTH16_uchar 16
#define WIDTH16_short 8
#define WIDTH16_ushort 8
#define WIDTH16_int 4
#define WIDTH16_uint 4
#define WIDTH16_float 4
#define WIDTH16_long 2
#define WIDTH16_ulong 2
#define WIDTH16_double 2

#ifndef T
#error "vector_add.cl: define the element type, e.g. -D T=float"
#endif

#ifndef VW
#define VW CLK_CAT(WIDTH16_, T)
#endif

#if VW == 1
#define VT T
#define LOADV(i, p) ((p)[i])
#define STOREV(v, i, p) ((p)[i] = (v))
#elif VW == 2 || VW == 4 || VW == 8 || VW == 16
#define VT CLK_CAT(T, VW)
#define LOADV(i, p) (((__global const VT*)(p))[i])
#define STOREV(v, i, p) (((__global VT*)(p))[i] = (v))
#else
#error "vector_add.cl: VW must be 1, 2, 4, 8 or 16"
#endif

#if CLK_CAT(IS_FLOAT_, T)
#define ADDV(x, y) ((x) + (y))
#define ADDS(x, y) ((x) + (y))
#else
#define UT CLK_CAT(UNSIGNED_, T)
#if VW == 1
#define UVT UT
#else
#define UVT CLK_CAT(UT, VW)
#endif
/* The casts back to the unsigned type undo C's promotion of char/short scalars to int. */
#define ADDV(x, y) CLK_CAT(as_, VT)((UVT)(CLK_CAT(as_, UVT)(x) + CLK_CAT(as_, UVT)(y)))
#define ADDS(x, y) CLK_CAT(as_, T)((UT)(CLK_CAT(as_, UT)(x) + CLK_CAT(as_, UT)(y)))
#endif

__kernel void vector_add(__global const T* restrict a,
                         __global const T* restrict b,
                         __global T* restrict out,
                         const ulong n)
{
    const ulong i = get_global_id(0);
    const ulong first = i * VW;
    if (first + VW <= n) {
        STOREV(ADDV(LOADV(i, a), LOADV(i, b)), i, out);
    } else {
        for (ulong k = first; k < n; ++k)
            out[k] = ADDS(a[k], b[k]);
    }
}
