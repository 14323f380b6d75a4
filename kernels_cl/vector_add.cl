/*
 * vector_add.cl -- out[i] = a[i] + b[i], element-wise: one kernel per element type, all in one
 * program.
 *
 * Kernels: vector_add_T for T = char uchar short ushort int uint long ulong float, and double
 * where the device has cl_khr_fp64. No build-time defines.
 *
 * Integer overflow wraps modulo 2^bits, as numpy's does: signed operands are reinterpreted as
 * their unsigned type UT (as_*) for the addition, where wrap-around is defined, not undefined
 * behaviour; the scalar tail casts the sum back to UT, undoing C's promotion of char and short
 * operands to int. Floats pass through as_float, which changes nothing.
 *
 * Why one program: a driver that compiles each kernel at its first launch (PoCL) then pays for a
 * new dtype only that kernel's compile, not a whole new program's (measured on PoCL 3.1 with
 * empty caches: 41-65 ms against about 220 ms). Drivers that compile at build time (NVIDIA)
 * build the ten small kernels at once, once, and keep the binary.
 *
 * Launch (1-D), for the kernel of type T with VW = 16 / sizeof(T) elements per work-item:
 *   n = element count of all three buffers.
 *   global size = ceil(n / VW), rounded up to a multiple of the local size; any local size.
 *   Buffers start at a buffer's (or an aligned sub-buffer's) origin, which OpenCL aligns to
 *   CL_DEVICE_MEM_BASE_ADDR_ALIGN (at least 128 bytes), as every cl_mem argument does.
 *
 * Mapping: work-item i owns the VW consecutive elements [i*VW, i*VW + VW) and moves them as one
 * 16-byte vector per buffer: the widest load of a GPU thread (on PoCL with AVX-512, 16, 32 and 64
 * bytes measured the same: memory-bound). Neighbouring work-items touch neighbouring 16-byte
 * blocks, so a GPU warp reads and writes one contiguous span (fully coalesced) and a CPU gets
 * whole SIMD vectors. The one work-item whose block straddles n finishes element by element;
 * work-items past n (from rounding the global size up) return at once. So any n works, 1 and
 * primes included.
 *
 * The vectors are accessed through a vector-typed pointer rather than vloadN/vstoreN: block i
 * starts at i * 16 bytes from an aligned origin, so it is aligned to the vector's own size, and
 * the compiler may emit one aligned wide access. vloadN/vstoreN promise only element alignment;
 * PoCL 3.1 splits vstore16 of uchar into 16 byte stores (measured: 3-5x slower), and GPU
 * compilers may split them too.
 */

#include "clkit.h"

#define VECTOR_ADD(T, UT, VW)                                                                  \
__kernel void vector_add_##T(__global const T* restrict a,                                     \
                             __global const T* restrict b,                                     \
                             __global T* restrict out,                                         \
                             const ulong n)                                                    \
{                                                                                              \
    const ulong i = get_global_id(0);                                                          \
    const ulong first = i * VW;                                                                \
    if (first + VW <= n) {                                                                     \
        ((__global T##VW*)out)[i] = as_##T##VW(as_##UT##VW(((__global const T##VW*)a)[i])      \
                                             + as_##UT##VW(((__global const T##VW*)b)[i]));    \
    } else {                                                                                   \
        for (ulong k = first; k < n; ++k)                                                      \
            out[k] = as_##T((UT)(as_##UT(a[k]) + as_##UT(b[k])));                              \
    }                                                                                          \
}

VECTOR_ADD(char, uchar, 16)
VECTOR_ADD(uchar, uchar, 16)
VECTOR_ADD(short, ushort, 8)
VECTOR_ADD(ushort, ushort, 8)
VECTOR_ADD(int, uint, 4)
VECTOR_ADD(uint, uint, 4)
VECTOR_ADD(long, ulong, 2)
VECTOR_ADD(ulong, ulong, 2)
VECTOR_ADD(float, float, 4)
#if defined(cl_khr_fp64)
VECTOR_ADD(double, double, 2)
#endif
