/*
 * vector_add.cl -- out[i] = a[i] + b[i], element-wise: one kernel for every element type.
 *
 * Kernel: vector_add, told the element type T by a number (`type`, T_* below; the host's
 * TYPE_CODES in clkit/kernels/_dispatch.py): char uchar short ushort int uint long ulong float,
 * and double where the device has cl_khr_fp64. Define: PER (below).
 *
 * Integer overflow wraps modulo 2^bits, as numpy's does: signed operands are reinterpreted as
 * their unsigned type UT (as_*) for the addition, where wrap-around is defined, not undefined
 * behaviour; the scalar tail casts the sum back to UT, undoing C's promotion of char and short
 * operands to int. Floats pass through as_float, which changes nothing.
 *
 * Why one kernel: a driver that compiles each kernel at its first launch (PoCL) compiled a
 * kernel per type at the first array of that type (and a program per type took longer still);
 * one kernel is compiled once, at the first call. The
 * switch on `type` is the same for every work-item; made once per PER vectors, it costs the
 * memory-bound addition nothing measurable.
 *
 * Launch (1-D), for elements of type T with VW = 16 / sizeof(T) elements per 16-byte vector and
 * PER vectors per work-item (a define, default 1):
 *   n = element count of all three buffers.
 *   global size = ceil(n / (VW * PER)), rounded up to a multiple of the local size; any local
 *   size.
 *   Buffers start at a buffer's (or an aligned sub-buffer's) origin, which OpenCL aligns to
 *   CL_DEVICE_MEM_BASE_ADDR_ALIGN (at least 128 bytes), as every cl_mem argument does.
 *
 * Mapping: work-item i owns the PER * VW consecutive elements from i * PER * VW and moves them
 * as PER 16-byte vectors per buffer: the widest load of a GPU thread (on PoCL with AVX-512, 16,
 * 32 and 64 bytes measured the same: memory-bound). With PER 1 (GPUs) neighbouring work-items
 * touch neighbouring 16-byte blocks, so a warp reads and writes one contiguous span (fully
 * coalesced); a CPU gets whole SIMD vectors. The one work-item whose block straddles n finishes
 * element by element; work-items past n (from rounding the global size up) do nothing. So any
 * n works, 1 and primes included.
 *
 * The vectors are accessed through a vector-typed pointer rather than vloadN/vstoreN: each
 * starts at a multiple of 16 bytes from an aligned origin, so it is aligned to the vector's own
 * size, and the compiler may emit one aligned wide access. vloadN/vstoreN promise only element
 * alignment; PoCL 3.1 splits vstore16 of uchar into 16 slower byte stores, and
 * GPU compilers may split them too.
 */

#include "clkit.h"

/* The numbers of the element types (TYPE_CODES in clkit/kernels/_dispatch.py) */
#define T_CHAR 0
#define T_UCHAR 1
#define T_SHORT 2
#define T_USHORT 3
#define T_INT 4
#define T_UINT 5
#define T_LONG 6
#define T_ULONG 7
#define T_FLOAT 8
#define T_DOUBLE 9

/* PER 16-byte vectors per work-item: one on GPUs (neighbouring work-items read neighbouring
 * memory), more on CPUs (the host's PER_CPU), so that the switch on the type is made once per
 * PER * 16 bytes */
#ifndef PER
#define PER 1
#endif

/* Work-item i's PER vectors of VW elements of type T; past n, element by element (work-items
 * wholly past n do nothing) */
#define ADD(T, UT, VW)                                                                         \
    {                                                                                          \
        const ulong first = i * PER * VW;                                                      \
        if (first + PER * VW <= n) {                                                           \
            for (int k = 0; k < PER; ++k)                                                      \
                ((__global T##VW*)out)[i * PER + k] =                                          \
                    as_##T##VW(as_##UT##VW(((__global const T##VW*)a)[i * PER + k])            \
                               + as_##UT##VW(((__global const T##VW*)b)[i * PER + k]));        \
        } else {                                                                               \
            for (ulong k = first; k < n; ++k)                                                  \
                ((__global T*)out)[k] = as_##T((UT)(as_##UT(((__global const T*)a)[k])         \
                                                    + as_##UT(((__global const T*)b)[k])));     \
        }                                                                                      \
        break;                                                                                 \
    }

__kernel void vector_add(__global const void* restrict a, __global const void* restrict b,
                         __global void* restrict out, const ulong n, const int type)
{
    const ulong i = get_global_id(0);
    switch (type) {
    case T_CHAR: ADD(char, uchar, 16)
    case T_UCHAR: ADD(uchar, uchar, 16)
    case T_SHORT: ADD(short, ushort, 8)
    case T_USHORT: ADD(ushort, ushort, 8)
    case T_INT: ADD(int, uint, 4)
    case T_UINT: ADD(uint, uint, 4)
    case T_LONG: ADD(long, ulong, 2)
    case T_ULONG: ADD(ulong, ulong, 2)
#if defined(cl_khr_fp64)
    case T_DOUBLE: ADD(double, double, 2)
#endif
    default: ADD(float, float, 4)
    }
}
