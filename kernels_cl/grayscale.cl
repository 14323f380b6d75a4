/*
 * grayscale.cl -- luma of an interleaved RGB or RGBA image: gray = wr*R + wg*G + wb*B.
 *
 * Build-time defines
 *   T    component type (required): uchar or float. The output has the same type.
 *   CN   components per input pixel: 3 (RGB, the default) or 4 (RGBA; alpha is loaded, unused).
 *   PPW  pixels per work-item: 1, or a multiple of the vector block (16 pixels for uchar, 4 for
 *        float). Default: one block, which on a GPU means CN 16-byte loads and one 16-byte store
 *        per work-item. On a CPU 16 blocks per work-item (PPW=256 for uchar, 64 for float): fewer
 *        work-items, less per-work-item overhead.
 *   LANES  uchar only: the lanes of the integer arithmetic, 4 (one block at a time, the
 *        default), 8 (blocks in pairs, gray_pair) or 16 (in fours, gray_quad); PPW a multiple of
 *        LANES / 4 blocks. A CPU's native int vector width: fours on AVX-512 (16 lanes), where
 *        they beat pairs; pairs suit AVX2's 8.
 *
 * Launch (1-D)
 *   n = height * width pixels; src holds n*CN components, dst n, both C-contiguous and starting
 *   at a buffer's origin (OpenCL aligns it to at least 128 bytes).
 *   global size = ceil(n / PPW), rounded up to a multiple of the local size; any local size.
 *   wr, wg, wb: the weights (bt601: 0.299, 0.587, 0.114; bt709: 0.2126, 0.7152, 0.0722).
 *
 * Mapping: a per-pixel operation needs no neighbours, so the image is one flat run of n pixels
 * (rows need no padding to any multiple: any width and height work alike); work-item i owns
 * pixels [i*PPW, i*PPW + PPW), processed as PPW / BLOCK vector blocks. A block is read as CN
 * aligned 16-byte vectors and written as one, through vector-typed pointers (block b starts at
 * b * CN * 16 bytes from an aligned origin; vloadN/vstoreN promise only element alignment, and
 * PoCL 3.1 splits uchar vstore16 into 16 slower byte stores). With PPW = BLOCK,
 * neighbouring work-items own neighbouring blocks, so a GPU warp reads and writes contiguous
 * spans. The work-item whose pixels straddle n finishes pixel by pixel; those past n return.
 *
 * uchar arithmetic is OpenCV's, bit for bit (cv::cvtColor RGB2GRAY, 8-bit, checked on all 2^24
 * colours): 15-bit fixed-point coefficients, gray = (R*cr + G*cg + B*cb + 2^14) >> 15, saturated
 * to 0..255. OpenCV's bt601 coefficients (9798, 19235, 3735) are round(w * 2^15) for R and G,
 * and B takes the remainder so that the three sum to round((wr + wg + wb) * 2^15); the same rule
 * turns any weights into coefficients here, so bt601 equals cv2 exactly and other weights use the
 * same scheme. The rule uses only exact or correctly rounded float operations (scaling by 2^15,
 * one addition order, round-half-even), so every device derives the same integers.
 * Valid for |wr| + |wg| + |wb| < 256 (the sums stay within int).
 * float arithmetic: gray = R*wr + G*wg + B*wb, equal to img[..., :3] @ w up to float rounding.
 *
 * Vector code notes. The uchar block is handled in 32-bit words (uint4): channels come out of
 * the words with shifts and masks, and the 16 results are packed back with shifts, so there are
 * no byte shuffles (GPUs have no byte lanes either). Every vector literal joins exactly two
 * parts: Oclgrind 21.10's uninitialised-value check crashes on the partly undefined shuffles
 * that many-part literals compile to (a uchar16 byte-shuffle version gained little on
 * PoCL), and the shuffle2 builtin is slow on PoCL.
 * clamp() takes vector bounds: Oclgrind 21.10 computes the vector-with-scalar integer overloads
 * of min, max and clamp wrongly for every lane but the first.
 */

#include "clkit.h"

#define IS_UCHAR_uchar 1
#define IS_FLOAT_float 1

#ifndef T
#error "grayscale.cl: define the component type, -D T=uchar or -D T=float"
#endif
#ifndef CN
#define CN 3
#endif
#if CN != 3 && CN != 4
#error "grayscale.cl: CN must be 3 (RGB) or 4 (RGBA)"
#endif

#if CLK_CAT(IS_UCHAR_, T)
#define BLOCK 16
#elif CLK_CAT(IS_FLOAT_, T)
#define BLOCK 4
#else
#error "grayscale.cl: T must be uchar or float"
#endif
#if CLK_CAT(IS_UCHAR_, T) && !defined(__ENDIAN_LITTLE__)
#undef PPW
#define PPW 1 /* the uchar vector path reads bytes out of 32-bit words, little-endian */
#endif
#ifndef PPW
#define PPW BLOCK
#endif
#if PPW != 1 && PPW % BLOCK != 0
#error "grayscale.cl: PPW must be 1 or a multiple of 16 (uchar) / 4 (float)"
#endif
#ifndef LANES
#define LANES 4
#endif
#if LANES != 4 && LANES != 8 && LANES != 16
#error "grayscale.cl: LANES must be 4, 8 or 16"
#endif
#if PPW > 1 && PPW % (BLOCK * LANES / 4) != 0
#error "grayscale.cl: PPW must be a multiple of LANES / 4 blocks"
#endif

#if CLK_CAT(IS_UCHAR_, T)
#define FIX_SHIFT 15
#define FIX_ONE 32768.0f
#define FIX_HALF (1 << (FIX_SHIFT - 1))
#define COEFFICIENTS                                                                    \
    const int cr = (int)rint(wr * FIX_ONE);                                              \
    const int cg = (int)rint(wg * FIX_ONE);                                              \
    const int cb = (int)rint((wr + wg + wb) * FIX_ONE) - cr - cg;
#define LUMA_S(r, g, b)                                                                  \
    convert_uchar_sat(((int)(r) * cr + (int)(g) * cg + (int)(b) * cb + FIX_HALF) >> FIX_SHIFT)
/* Byte k (0 = least significant) of each 32-bit lane, as int4. */
#define BYTE(x, k) as_int4(((x) >> (8 * (k))) & 0xffu)
/* Luma of 4 pixels, as uint4 lanes in 0..255. */
#define LUMA4(r, g, b)                                                                   \
    as_uint4(clamp(((r) * cr + (g) * cg + (b) * cb + FIX_HALF) >> FIX_SHIFT, (int4)0, (int4)255))

/* The words of block b (pixels 16b .. 16b+15, 16 * CN bytes, little-endian: byte k at bits 8k),
 * regrouped so that the four pixel groups' channels sit in the same lane j of each word vector:
 * RGB, pixel group j (pixels 4j..4j+3) is words 3j..3j+2 = R0 G0 B0 R1 | G1 B1 R2 G2 | B2 R3 G3
 * B3, and lane j of w[k] holds word 3j+k; RGBA, word m is pixel m, and lane j of w[k] holds
 * pixel 4j+k. */
typedef struct { uint4 w[CN]; } block_words;

inline block_words gather(__global const uchar* restrict src, const uint b)
{
    __global const uint4* v = (__global const uint4*)(src + (size_t)b * (16 * CN));
    block_words g;
#if CN == 3
    const uint4 a = v[0], c = v[1], e = v[2];
    g.w[0] = (uint4)(a.s03, (uint2)(c.s2, e.s1));
    g.w[1] = (uint4)((uint2)(a.s1, c.s0), (uint2)(c.s3, e.s2));
    g.w[2] = (uint4)((uint2)(a.s2, c.s1), e.s03);
#else
    const uint4 p0 = v[0], p1 = v[1], p2 = v[2], p3 = v[3];
    g.w[0] = (uint4)((uint2)(p0.s0, p1.s0), (uint2)(p2.s0, p3.s0));
    g.w[1] = (uint4)((uint2)(p0.s1, p1.s1), (uint2)(p2.s1, p3.s1));
    g.w[2] = (uint4)((uint2)(p0.s2, p1.s2), (uint2)(p2.s2, p3.s2));
    g.w[3] = (uint4)((uint2)(p0.s3, p1.s3), (uint2)(p2.s3, p3.s3));
#endif
    return g;
}

/* The 16 lumas of gathered words W0..W3 (word vectors of any width N, with their BYTE and LUMA
 * of N lanes), packed as the block's output words: lane j = pixels 4j .. 4j+3. */
#if CN == 3
#define PACK_LUMAS(BYTE, LUMA, W0, W1, W2, W3)                                           \
    (LUMA(BYTE(W0, 0), BYTE(W0, 1), BYTE(W0, 2)) |                                       \
     (LUMA(BYTE(W0, 3), BYTE(W1, 0), BYTE(W1, 1)) << 8) |                                \
     (LUMA(BYTE(W1, 2), BYTE(W1, 3), BYTE(W2, 0)) << 16) |                               \
     (LUMA(BYTE(W2, 1), BYTE(W2, 2), BYTE(W2, 3)) << 24))
#else
#define PACK_LUMAS(BYTE, LUMA, W0, W1, W2, W3)                                           \
    (LUMA(BYTE(W0, 0), BYTE(W0, 1), BYTE(W0, 2)) |                                       \
     (LUMA(BYTE(W1, 0), BYTE(W1, 1), BYTE(W1, 2)) << 8) |                                \
     (LUMA(BYTE(W2, 0), BYTE(W2, 1), BYTE(W2, 2)) << 16) |                               \
     (LUMA(BYTE(W3, 0), BYTE(W3, 1), BYTE(W3, 2)) << 24))
#endif

/* Block b: pixels 16b .. 16b+15. */
inline void gray_block(__global const uchar* restrict src, __global uchar* restrict dst,
                       const uint b, const int cr, const int cg, const int cb)
{
    const block_words g = gather(src, b);
    /* RGB has no fourth word, which its PACK_LUMAS leaves unread */
    ((__global uint4*)dst)[b] = PACK_LUMAS(BYTE, LUMA4, g.w[0], g.w[1], g.w[2], g.w[CN - 1]);
}

/* Blocks b and b+1 at once, in 8-lane vectors: block b in the low lanes (on PoCL with AVX2,
 * 8 32-bit lanes, faster than one block at a time). */
#define BYTE8(x, k) as_int8(((x) >> (8 * (k))) & 0xffu)
#define LUMA8(r, g, b)                                                                   \
    as_uint8(clamp(((r) * cr + (g) * cg + (b) * cb + FIX_HALF) >> FIX_SHIFT, (int8)0, (int8)255))
#define WORD8(k) (uint8)(g.w[k], h.w[k])
inline void gray_pair(__global const uchar* restrict src, __global uchar* restrict dst,
                      const uint b, const int cr, const int cg, const int cb)
{
    const block_words g = gather(src, b), h = gather(src, b + 1);
    const uint8 out = PACK_LUMAS(BYTE8, LUMA8, WORD8(0), WORD8(1), WORD8(2), WORD8(CN - 1));
    ((__global uint4*)dst)[b] = out.lo;
    ((__global uint4*)dst)[b + 1] = out.hi;
}

/* Blocks b .. b+3 at once, in 16-lane vectors: the pairs (b, b+1) and (b+2, b+3) side by side.
 * Stored as four 16-byte vectors: numpy memory used in place is aligned to 16 bytes only. */
#define BYTE16(x, k) as_int16(((x) >> (8 * (k))) & 0xffu)
#define LUMA16(r, g, b)                                                                  \
    as_uint16(clamp(((r) * cr + (g) * cg + (b) * cb + FIX_HALF) >> FIX_SHIFT, (int16)0,  \
                    (int16)255))
#define WORD16(k) (uint16)((uint8)(g.w[k], h.w[k]), (uint8)(i.w[k], j.w[k]))
inline void gray_quad(__global const uchar* restrict src, __global uchar* restrict dst,
                      const uint b, const int cr, const int cg, const int cb)
{
    const block_words g = gather(src, b), h = gather(src, b + 1), i = gather(src, b + 2),
                      j = gather(src, b + 3);
    const uint16 out = PACK_LUMAS(BYTE16, LUMA16, WORD16(0), WORD16(1), WORD16(2), WORD16(CN - 1));
    __global uint4* d = (__global uint4*)dst + b;
    d[0] = out.s0123;
    d[1] = out.s4567;
    d[2] = out.s89ab;
    d[3] = out.scdef;
}

#else /* float */
#define COEFFICIENTS                                                                    \
    const float cr = wr, cg = wg, cb = wb;
#define LUMA_S(r, g, b) ((r) * cr + (g) * cg + (b) * cb)

/* Block b: pixels 4b .. 4b+3. */
inline void gray_block(__global const float* restrict src, __global float* restrict dst,
                       const uint b, const float cr, const float cg, const float cb)
{
    __global const float4* v = (__global const float4*)(src + (size_t)b * (4 * CN));
#if CN == 3
    /* 12 floats = 4 RGB pixels: r0 g0 b0 r1 | g1 b1 r2 g2 | b2 r3 g3 b3 */
    const float4 v0 = v[0], v1 = v[1], v2 = v[2];
    const float4 r = (float4)(v0.s03, (float2)(v1.s2, v2.s1));
    const float4 g = (float4)((float2)(v0.s1, v1.s0), (float2)(v1.s3, v2.s2));
    const float4 b_ = (float4)((float2)(v0.s2, v1.s1), v2.s03);
#else
    /* 16 floats = 4 RGBA pixels, one per float4. */
    const float4 v0 = v[0], v1 = v[1], v2 = v[2], v3 = v[3];
    const float4 r = (float4)((float2)(v0.s0, v1.s0), (float2)(v2.s0, v3.s0));
    const float4 g = (float4)((float2)(v0.s1, v1.s1), (float2)(v2.s1, v3.s1));
    const float4 b_ = (float4)((float2)(v0.s2, v1.s2), (float2)(v2.s2, v3.s2));
#endif
    ((__global float4*)dst)[b] = LUMA_S(r, g, b_);
}
#endif

__kernel void grayscale(__global const T* restrict src,
                        __global T* restrict dst,
                        const uint n,
                        const float wr,
                        const float wg,
                        const float wb)
{
    COEFFICIENTS
    const uint first = get_global_id(0) * PPW;

#if PPW > 1
    if (first + PPW <= n) {
#if CLK_CAT(IS_UCHAR_, T) && LANES == 16
        for (uint b = first / BLOCK; b < (first + PPW) / BLOCK; b += 4)
            gray_quad(src, dst, b, cr, cg, cb);
#elif CLK_CAT(IS_UCHAR_, T) && LANES == 8
        for (uint b = first / BLOCK; b < (first + PPW) / BLOCK; b += 2)
            gray_pair(src, dst, b, cr, cg, cb);
#else
        for (uint b = first / BLOCK; b < (first + PPW) / BLOCK; ++b)
            gray_block(src, dst, b, cr, cg, cb);
#endif
        return;
    }
#endif
    for (uint p = first; p < min(first + PPW, n); ++p) {
        __global const T* q = src + (size_t)p * CN;
        dst[p] = LUMA_S(q[0], q[1], q[2]);
    }
}
