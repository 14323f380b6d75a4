/* convolution_streamed.h: the GPU variant's separable passes streamed through registers, for
 * images summed in float: convolve_rows where ROW_SX is defined, convolve_cols where COL_SY is
 * (convolution_gpu.cl has the tiles' passes for the others). */
#ifndef CLKIT_CONVOLUTION_STREAMED_H
#define CLKIT_CONVOLUTION_STREAMED_H

#if defined(ROW_SX) != defined(COL_SY)
#error "the streamed passes go together: they share tmp's row pitch"
#endif
/* The row pitch of tmp between the streamed passes: the image's rows padded to a multiple of 4
 * elements, so that both passes move tmp in whole aligned vectors whatever the image's width
 * (the host allocates tmp so; the row pass writes the padding too). */
#define TMP_PITCH(rowlen) (((rowlen) + 3) & ~3)

#ifdef ROW_SX
#if ROW_SX % 4
#error "ROW_SX must be a multiple of 4: the row pass stores whole vectors"
#endif
/* elements of a work-item's span left of its first output: the halo, rounded up to vectors */
#define ROW_HL4 ((HALO_L + 3) / 4 * 4)
/* vectors of a work-item's span */
#define ROW_NV ((ROW_HL4 + ROW_SX + HALO_R + 3) / 4)
/*
 * The row pass streamed through registers (ROW_SX; images summed in float, masks taller than
 * the one-kernel filter takes). Work-item (i, r) computes the ROW_SX row elements from
 * i * ROW_SX of row r: it reads its span (the outputs and the halo on either side) once, 4
 * elements at a time, and adds each element into every output that takes it. Output j takes its
 * taps in the order s = 0 .. KW - 1 in one accumulator, as the tiles do: the same sums. The
 * tiles' row pass reads local memory once per multiply-add, which bounds it at a quarter of the
 * multiply-add rate. Spans inside a row are read as vectors where ROW_VECTORS allows (see
 * convolution.h); the others (a row's first and last work-items) element by element, folded.
 * Global size: (ceil(rowlen / ROW_SX), n_rows), the first rounded up to ROW_LX; local (ROW_LX, 1).
 */
__kernel __attribute__((reqd_work_group_size(ROW_LX, 1, 1)))
void convolve_rows(__global const SRC_T* restrict src,
                   MASK_SPACE const float* restrict mask,
                   __global float* restrict tmp,
                   const int width, const int n_rows, const float cval)
{
    MASK_SPACE const float* w = MASK_ROW_OF(mask);
    const int rowlen = width * CHANNELS;
    const int e = (int)get_global_id(0) * ROW_SX;
    const int r = (int)get_global_id(1);
    if (e >= rowlen || r >= n_rows)
        return;
    const int x0 = e - ROW_HL4;  /* the span's first element: a multiple of 4 */
    __global const SRC_T* row = src + (size_t)r * (size_t)rowlen;
#if ROW_ALIGNED
    const int inside = ROW_VECTORS(rowlen) && x0 >= 0 && x0 + 4 * ROW_NV <= rowlen;
#else
    /* Rows of other lengths: each vector of the span is made of two aligned loads, each load
     * serving two vectors (an H200, float32, sigma 5, 7681 wide: this pass 0.13 ms, against 0.22
     * with vectors of 4 one-element loads and 0.09 at 7680). */
    const int inside = x0 >= 0 && x0 + 4 * ROW_NV + ROW_SLACK <= rowlen;
    const int s = VECTOR_SHIFT(row, x0);
    __global const SRC_T* aligned = row + x0 - s;
    float4 next = inside ? LOAD_SRC4(aligned) : (float4)(0);
#endif
    float acc[ROW_SX];
#pragma unroll
    for (int j = 0; j < ROW_SX; ++j)
        acc[j] = 0;
    GPU_UNROLL
    for (int b = 0; b < ROW_NV; ++b) {
        float4 v;
        if (inside) {
#if ROW_ALIGNED
            v = LOAD_ROW4(row + x0 + 4 * b);
#else
            v = next_shifted4(aligned, b, s, &next);
#endif
        } else {
            const int x = x0 + 4 * b;
            v = (float4)(folded_src(src, r, x, width, cval), folded_src(src, r, x + 1, width, cval),
                         folded_src(src, r, x + 2, width, cval),
                         folded_src(src, r, x + 3, width, cval));
        }
        const float lanes[4] = {v.s0, v.s1, v.s2, v.s3};
#pragma unroll
        for (int l = 0; l < 4; ++l) {
#pragma unroll
            for (int j = 0; j < ROW_SX; ++j) {
                /* output e + j takes tap s from element e + j + s * CHANNELS - HALO_L */
                const int d = 4 * b + l - ROW_HL4 - j + HALO_L;
                if (d >= 0 && d % CHANNELS == 0 && d / CHANNELS < KW)
                    IF_TAP_USED(MASK_ROW, w, d / CHANNELS)
                    acc[j] += w[d / CHANNELS] * lanes[l];
            }
        }
    }
    /* the padding past the row's end takes the folded elements' sums: defined, never stored */
    const int pitch = TMP_PITCH(rowlen);
    __global float* out = tmp + (size_t)r * (size_t)pitch + e;
#pragma unroll
    for (int j = 0; j < ROW_SX; j += 4)
        if (e + j < pitch)
            *(__global float4*)(out + j) = (float4)(acc[j], acc[j + 1], acc[j + 2], acc[j + 3]);
}

#endif /* ROW_SX */

#ifdef COL_SY
/*
 * The column pass streamed through registers (COL_SY; images summed in float, masks taller
 * than the one-kernel filter takes). Work-item (i, j) computes the four row elements from 4i of
 * COL_SY output rows from j * COL_SY: it reads each of the COL_SY + KH - 1 rows of tmp they need
 * once, 16 bytes per row (a warp reads 512 consecutive bytes), and adds it into every output it
 * feeds. Output o takes its taps in the order t = 0 .. KH - 1 in one accumulator, as the tiles
 * do, so both give the same sums. No local memory: the tiles' column pass reads local memory
 * once per multiply-add, which bounds it at a quarter of the multiply-add rate.
 * Global size: (ceil(rowlen / 4), ceil(out_rows / COL_SY)), each rounded up to the local size
 * (COL_LX, 1).
 */
__kernel __attribute__((reqd_work_group_size(COL_LX, 1, 1)))
void convolve_cols(__global const float* restrict tmp,
                   __global const int* restrict rowmap,
                   MASK_SPACE const float* restrict mask,
                   __global OUT_T* restrict dst,
                   const int width, const int out_rows, const float cval)
{
    MASK_SPACE const float* w = MASK_COL_OF(mask);
    const int rowlen = width * CHANNELS;
    const int e = (int)get_global_id(0) * 4;
    const int p0 = (int)get_global_id(1) * COL_SY;
    if (e >= rowlen || p0 >= out_rows)
        return;
    const int last_p = out_rows + KH - 2;
    const int pitch = TMP_PITCH(rowlen);
    /* whole aligned vectors: rows of a multiple of 4 elements, all but a row's last vector */
    const int whole = (rowlen & 3) == 0 || e + 4 <= (rowlen & ~3);
    float4 acc[COL_SY];
#pragma unroll
    for (int o = 0; o < COL_SY; ++o)
        acc[o] = (float4)(0);
    GPU_UNROLL
    for (int q = 0; q < COL_SY + KH - 1; ++q) {
        const int srow = rowmap[min(p0 + q, last_p)];
        __global const float* row = tmp + (size_t)max(srow, 0) * (size_t)pitch + e;
        const float4 v = srow < 0 ? (float4)(cval) : *(__global const float4*)row;
#pragma unroll
        for (int o = 0; o < COL_SY; ++o) {
            const int t = q - o;
            if (t >= 0 && t < KH)
                IF_TAP_USED(MASK_COL, w, t)
                acc[o] += w[t] * v;
        }
    }
#pragma unroll
    for (int o = 0; o < COL_SY; ++o) {
        if (p0 + o >= out_rows)
            break;
        __global OUT_T* out = dst + (size_t)(p0 + o) * (size_t)rowlen + e;
        const CLK_VEC(OUT_T, 4) sum = CLK_CONVERT(CLK_VEC(OUT_T, 4))(acc[o]);
        if (whole && (rowlen & 3) == 0) {
            *(__global CLK_VEC(OUT_T, 4)*)out = sum;
        } else if (whole) {
            vstore4(sum, 0, out);
        } else {
            out[0] = sum.s0;
            if (e + 1 < rowlen)
                out[1] = sum.s1;
            if (e + 2 < rowlen)
                out[2] = sum.s2;
        }
    }
}
#endif /* COL_SY */

#endif /* CLKIT_CONVOLUTION_STREAMED_H */
