/*
 * convolution_generic.cl: the generic tier of clkit.kernels.convolve and gaussian_blur.
 *
 * It computes what convolution_cpu.cl computes (the same correlation of a band of output rows read
 * through rowmap, the same two separable passes; see there), but every choice convolution_cpu.cl
 * bakes in at build time is a run-time argument here: mask size (kh, kw), anchor, channels,
 * border mode, whether taps of weight 0 are left out, and the run geometry. One build per
 * accumulation type (ACC_T, float or double) therefore serves every mask, mode, sigma and image
 * dtype, so a call that needs a variant not yet compiled answers at once with this build while
 * the specialised one compiles in the background (clkit/_build/tiers.py).
 *
 * Images of other types are first converted to ACC_T, as convolution_cpu.cl converts on every
 * load (by to_acc, which -D CONVERT builds alone), so the
 * one filter kernel reads ACC_T only and one build covers every dtype: each build a CPU driver
 * makes is time a first call waits for.
 *
 * Same sums as the specialised builds. A work-item computes CHUNK vectors of GV consecutive
 * elements of one output row, a whole number of the CPU variant's runs (GV * nvec elements),
 * and decides for each run, as that variant does, whether its taps stay inside the row; it
 * assigns each tap to one of two accumulators exactly as the build it stands in for does
 * (`order`):
 *   ORDER_SEQUENTIAL  one accumulator, taps row by row (the GPU variant);
 *   ORDER_CPU         the CPU variant's two accumulators: tap i = t * kw + s goes to
 *                     accumulator i % 2 where the 2-D mask has up to unroll_taps taps (its
 *                     unrolled loops), else s % 2, in every run (so the column pass alternates
 *                     by t): a pixel's sums do not depend on where the image begins or ends.
 * Products and sums then happen in the same order on the same values, so the tiers agree to the
 * bit wherever the compiler contracts multiply-adds alike in both.
 *
 * Defines: ACC_T (float or double, default float), GV (vector width, default 16; the host
 * passes the specialised CPU build's VW), CHUNK (vectors per work-item, default 4), CONVERT
 * (build to_acc only), WITH_CONVERT (build to_acc beside the filter kernels: the quick tier's
 * one build, in which to_acc costs little).
 */
#include "clkit.h"

#ifndef ACC_T
#define ACC_T float
#endif
#ifndef GV
#define GV 16
#endif

#if defined(__clang__)
#define CLK_NOINLINE static __attribute__((noinline))
#else
#define CLK_NOINLINE static
#endif

/* Vectors of GV elements per work-item: on CPUs a whole number of the CPU variant's runs (1 or
 * 2 vectors), so that a weight, once loaded, serves several vectors; on GPUs one short vector,
 * so that neighbouring work-items read neighbouring memory. */
#ifndef CHUNK
#define CHUNK 4
#endif

#define ORDER_SEQUENTIAL 0
#define ORDER_CPU 1

#define gvec CLK_VEC(ACC_T, GV)
#define LOADG(p) CLK_VLOAD(GV)(0, (p))
#define STOREG(v, p) CLK_VSTORE(GV)((v), 0, (p))

#if defined(CONVERT) || defined(WITH_CONVERT)
/* An image of another element type converted to ACC_T, element i per work-item; `type` names
 * the source type (TYPE_* below). One kernel with a uniform switch rather than one per type. */
#define TYPE_CHAR 0
#define TYPE_UCHAR 1
#define TYPE_SHORT 2
#define TYPE_USHORT 3
#define TYPE_INT 4
#define TYPE_UINT 5
#define TYPE_LONG 6
#define TYPE_ULONG 7
#define TYPE_FLOAT 8
#define FROM(T) (ACC_T)((__global const T*)src)[i]
__kernel void to_acc(__global const void* restrict src, __global ACC_T* restrict dst,
                     const int n, const int type)
{
    const int i = (int)get_global_id(0);
    if (i >= n)
        return;
    switch (type) {
    case TYPE_CHAR: dst[i] = FROM(char); break;
    case TYPE_UCHAR: dst[i] = FROM(uchar); break;
    case TYPE_SHORT: dst[i] = FROM(short); break;
    case TYPE_USHORT: dst[i] = FROM(ushort); break;
    case TYPE_INT: dst[i] = FROM(int); break;
    case TYPE_UINT: dst[i] = FROM(uint); break;
    case TYPE_LONG: dst[i] = FROM(long); break;
    case TYPE_ULONG: dst[i] = FROM(ulong); break;
    default: dst[i] = FROM(float); break;
    }
}
#endif

#ifndef CONVERT

/* Taps per block of an edge run's folded span: the span of a vector and a block holds GV + 64
 * elements (on a CPU 80 floats, within the registers and cache a work-item keeps). */
#define SPAN_EXTRA 64

/* The value of element e0 + j of a source row srow (< 0: a row of cval) with the element's
 * pixel folded into the row, as the tap that reads it would fold it: c0 is e0's channel. */
CLK_INLINE ACC_T folded(__global const ACC_T* src, const int srow, const int rowlen,
                        const int width, const int channels, const int border, const ACC_T cval,
                        const int x0, const int c0, const int j)
{
    /* floor division: j may reach left of the row */
    const int t = c0 + j;
    const int dx = t >= 0 ? t / channels : -((channels - 1 - t) / channels);
    const int xs = clk_fold_by(x0 + dx, width, border);
    return (srow < 0 || xs < 0) ? cval
         : src[(size_t)srow * (size_t)rowlen + xs * channels + (t - dx * channels)];
}

/* Runs at the row's ends, and rows of cval: a vector of GV elements at a time, each mask row's
 * source span folded once into private memory (in blocks of taps) and its taps read from there.
 * Element e sums the taps that lane e of the CPU variant's vectors sums, in the same
 * accumulators as the runs inside the row (by (t * kw + s) % 2 where by_tap, else s % 2) and
 * order. Kept out of line: inlined, its loops slow the vector path down by a third (PoCL). */
CLK_NOINLINE void edge_run(__global const ACC_T* src, __global const int* rowmap,
                           __global const ACC_T* mask, __global ACC_T* out,
                           const int width, const ACC_T cval, const int kh, const int kw,
                           const int anchor_x, const int channels, const int border,
                           const int skip_zero, const int order, const int by_tap,
                           const int by_rowmap, const int r, const int e0, const int e1)
{
    const int rowlen = width * channels;
    const int block = max(1, SPAN_EXTRA / channels);  /* taps per span */
    ACC_T span[GV + SPAN_EXTRA];
    for (int e = e0; e < e1; e += GV) {
        const int x0 = e / channels;
        const int c0 = e - x0 * channels;
        gvec acc0 = (gvec)(0), acc1 = (gvec)(0);
        for (int t = 0; t < kh; ++t) {
            const int srow = by_rowmap ? rowmap[r + t] : r;
            __global const ACC_T* w = mask + t * kw;
            for (int s0 = 0; s0 < kw; s0 += block) {
                const int nb = min(block, kw - s0);
                const int first = (s0 - anchor_x) * channels;  /* tap s0's offset from e */
                for (int j = 0; j < (nb - 1) * channels + GV; ++j)
                    span[j] = folded(src, srow, rowlen, width, channels, border, cval, x0, c0,
                                     first + j);
                for (int s = s0; s < s0 + nb; ++s) {
                    const ACC_T ws = w[s];
                    if (skip_zero && ws == 0)
                        continue;
                    const gvec value = CLK_VLOAD(GV)(0, span + (s - s0) * channels);
                    if (order == ORDER_CPU && (((by_tap ? t * kw : 0) + s) & 1))
                        acc1 += ws * value;
                    else
                        acc0 += ws * value;
                }
            }
        }
        const gvec sum = acc0 + acc1;
        if (e + GV <= e1) {
            STOREG(sum, out + e);
        } else {
            CLK_VSTORE(GV)(sum, 0, span);
            for (int i = 0; i < e1 - e; ++i)
                out[e + i] = span[i];
        }
    }
}

/* Tap w0 over the n vectors at x0 into acc0, tap w1 over those at x1 into acc1 (n <= CHUNK, a
 * constant at each call site); with skip_zero a tap of weight 0 is left out. */
CLK_INLINE void tap_pair(gvec acc0[CHUNK], gvec acc1[CHUNK], const int n, const int skip_zero,
                         const ACC_T w0, __global const ACC_T* x0, const ACC_T w1,
                         __global const ACC_T* x1)
{
    if (!skip_zero || w0 != 0)
#pragma unroll
        for (int k = 0; k < n; ++k)
            acc0[k] += w0 * LOADG(x0 + k * GV);
    if (!skip_zero || w1 != 0)
#pragma unroll
        for (int k = 0; k < n; ++k)
            acc1[k] += w1 * LOADG(x1 + k * GV);
}

CLK_INLINE void swap_accs(gvec acc0[CHUNK], gvec acc1[CHUNK], const int n)
{
#pragma unroll
    for (int k = 0; k < n; ++k) {
        const gvec keep = acc0[k];
        acc0[k] = acc1[k];
        acc1[k] = keep;
    }
}

/* n vectors (n <= CHUNK, a constant at each call site) of output row r from element ev on, in
 * runs whose taps stay inside the row: one unaligned load per tap and vector. CPU order: tap
 * (t, s) goes to accumulator (t * kw + s) % 2 where the CPU variant unrolls the mask (by_tap),
 * s % 2 where it does not; sequential order: all to acc0. The taps go in pairs, the first to
 * acc0 and the second to acc1, the two swapped for the rows where t * kw is odd. */
CLK_INLINE void direct_taps(__global const ACC_T* src, __global const int* rowmap,
                            __global const ACC_T* mask, __global ACC_T* out, const int rowlen,
                            const int r, const int ev, const int n, const int kh, const int kw,
                            const int halo_l, const int channels, const int skip_zero,
                            const int order, const int by_tap, const int by_rowmap)
{
    gvec acc0[CHUNK], acc1[CHUNK];
#pragma unroll
    for (int k = 0; k < CHUNK; ++k)
        acc0[k] = acc1[k] = (gvec)(0);
    int t = 0;
    if (kw == 1 && order == ORDER_CPU && by_tap) {
        /* a column of taps (the column pass): tap t goes to accumulator t % 2, so the rows go
         * in pairs with no swap (a third less time for that pass on PoCL) */
#pragma unroll 1
        for (; t + 2 <= kh; t += 2) {
            const size_t r0 = (size_t)(by_rowmap ? rowmap[r + t] : r);
            const size_t r1 = (size_t)(by_rowmap ? rowmap[r + t + 1] : r);
            tap_pair(acc0, acc1, n, skip_zero, mask[t], src + r0 * (size_t)rowlen + ev - halo_l,
                     mask[t + 1], src + r1 * (size_t)rowlen + ev - halo_l);
        }
    }
#pragma unroll 1
    for (; t < kh; ++t) {
        const int srow = by_rowmap ? rowmap[r + t] : r;
        __global const ACC_T* row = src + (size_t)srow * (size_t)rowlen + ev - halo_l;
        __global const ACC_T* w = mask + t * kw;
        const int swap = order == ORDER_CPU && by_tap && ((t * kw) & 1);
        if (swap)
            swap_accs(acc0, acc1, n);
        int s = 0;
        if (order == ORDER_CPU) {
#pragma unroll 1
            for (; s + 2 <= kw; s += 2) {
                __global const ACC_T* x = row + s * channels;
                tap_pair(acc0, acc1, n, skip_zero, w[s], x, w[s + 1], x + channels);
            }
        }
#pragma unroll 1
        for (; s < kw; ++s) {
            const ACC_T ws = w[s];
            if (!skip_zero || ws != 0)
#pragma unroll
                for (int k = 0; k < n; ++k)
                    acc0[k] += ws * LOADG(row + s * channels + k * GV);
        }
        if (swap)
            swap_accs(acc0, acc1, n);
    }
#pragma unroll
    for (int k = 0; k < n; ++k)
        STOREG(acc0[k] + acc1[k], out + ev + k * GV);
}

/* Output row r, elements [c0, c0 + CHUNK * GV): a whole number of the CPU variant's runs of
 * GV * nvec elements, each summed as that variant sums it (see convolve_generic). */
CLK_INLINE void correlate(__global const ACC_T* src, __global const int* rowmap,
                          __global const ACC_T* mask, __global ACC_T* dst,
                          const int width, const int out_rows, const ACC_T cval,
                          const int kh, const int kw, const int anchor_x, const int channels,
                          const int border, const int skip_zero, const int nvec,
                          const int order, const int unroll_taps, const int by_rowmap)
{
    const int rowlen = width * channels;
    const int c0 = (int)get_global_id(0) * CHUNK * GV;
    const int r = (int)get_global_id(1);
    if (c0 >= rowlen || r >= out_rows)
        return;
    const int halo_l = anchor_x * channels;
    const int halo_r = (kw - 1 - anchor_x) * channels;
    /* the CPU variant's test for a run [e0, e0 + run) whose taps stay inside the row:
     * e0 >= left and e0 + run + right <= rowlen */
    const int left = CLK_DIV_UP(halo_l, GV) * GV;
    const int right = CLK_DIV_UP(halo_r, GV) * GV;
    int rows_inside = 1;
    if (border == BORDER_CONSTANT && by_rowmap)
        for (int t = 0; t < kh; ++t)
            rows_inside = rows_inside && rowmap[r + t] >= 0;
    const int by_tap = kh * kw <= unroll_taps;
    __global ACC_T* out = dst + (size_t)r * (size_t)rowlen;
    if (rows_inside && c0 >= left && c0 + CHUNK * GV + right <= rowlen) {
        /* every run of the chunk is inside: CHUNK vectors per load of a weight */
        direct_taps(src, rowmap, mask, out, rowlen, r, c0, CHUNK, kh, kw, halo_l, channels,
                    skip_zero, order, by_tap, by_rowmap);
        return;
    }
    const int run = GV * nvec;
    for (int e0 = c0; e0 < min(c0 + CHUNK * GV, rowlen); e0 += run) {
        if (rows_inside && e0 >= left && e0 + run + right <= rowlen) {
            for (int v = 0; v < nvec; ++v)
                direct_taps(src, rowmap, mask, out, rowlen, r, e0 + v * GV, 1, kh, kw, halo_l,
                            channels, skip_zero, order, by_tap, by_rowmap);
        } else {
            edge_run(src, rowmap, mask, out, width, cval, kh, kw, anchor_x, channels, border,
                     skip_zero, order, by_tap, by_rowmap, r, e0, min(e0 + run, rowlen));
        }
    }
}

/*
 * The one filter kernel, for the three passes of convolution_cpu.cl (vectorised by hand: the hint
 * keeps a work-group vectoriser from widening it again, as in convolution_cpu.cl):
 *   convolve_2d    kh x kw mask, rows through rowmap (by_rowmap = 1);
 *   convolve_rows  kh = 1, output row r from src row r (by_rowmap = 0; rowmap is not read);
 *   convolve_cols  kw = 1, anchor_x = 0, rows of tmp through rowmap, unroll_taps >= kh: a
 *                  column of taps alternates accumulators by t, as the CPU variant's column
 *                  pass does.
 * Global size: (ceil(width * channels / (CHUNK * GV)), out_rows), each rounded up to the local
 * size; any local size.
 */
__kernel __attribute__((vec_type_hint(gvec)))
void convolve_generic(__global const ACC_T* restrict src, __global const int* restrict rowmap,
                      __global const ACC_T* restrict mask, __global ACC_T* restrict dst,
                      const int width, const int out_rows, const ACC_T cval, const int kh,
                      const int kw, const int anchor_x, const int channels, const int border,
                      const int skip_zero, const int nvec, const int order,
                      const int unroll_taps, const int by_rowmap)
{
    correlate(src, rowmap, mask, dst, width, out_rows, cval, kh, kw, anchor_x, channels,
              border, skip_zero, nvec, order, unroll_taps, by_rowmap);
}

#endif /* CONVERT */
