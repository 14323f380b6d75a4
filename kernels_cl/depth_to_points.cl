/*
 * depth_to_points.cl -- back-project a depth image through a pinhole camera into 3-D points.
 *
 * For the pixel in column u and row v with depth d:
 *   z = d / depth_scale,  x = (u - cx) * z / fx,  y = (v - cy) * z / fy
 * and the output is (N, 3) float32 points (x, y, z) in row-major pixel order; with RGB, also
 * (N, 3) uchar colours, the rgb image's pixel at the same place. A pixel is invalid when z is 0
 * or not finite (NaN, +-inf).
 *
 * Build-time defines
 *   T             depth type (required): ushort or float.
 *   DROP_INVALID  1 (default): leave invalid pixels out, N = number of valid pixels, order kept.
 *                 0: N = height * width, invalid pixels included (their x, y, z as computed).
 *   RGB           0 (default) or 1: also copy the colours; otherwise rgb and colors are unused
 *                 (pass NULL buffers).
 *   WG            work-group size, a power of two (default 256); launch with exactly this local
 *                 size (the kernels declare it with reqd_work_group_size).
 *   PPW           pixels per work-item: 1, 2, 4, 8 or 16. Default: one 16-byte vector of depths
 *                 (8 for ushort, 4 for float), right for GPUs. On a CPU, WG=16 and PPW=16: PoCL
 *                 runs the scan's barriers by looping over the work-items of a group (fewer,
 *                 fatter work-items pay less).
 *
 * The image is one flat run of n = height * width pixels in row-major order; a block is the
 * WG * PPW consecutive pixels of one work-group, nblocks = ceil(n / (WG * PPW)), and every
 * kernel below runs with global size nblocks * WG (scan: WG) and local size WG. Work-item l of
 * block g owns pixels g*WG*PPW + l*PPW .. + PPW - 1 and reads them as one aligned vector
 * (neighbouring work-items read neighbouring 16-byte vectors: coalesced on a GPU, whole SIMD
 * registers on a CPU); a work-item whose pixels reach past n loads the ones inside singly and
 * takes 0 (invalid) for the rest.
 *
 * Stream compaction on the device (DROP_INVALID=1), three launches, nothing downloaded but N:
 *   1. depth_to_points_count: each work-group counts the valid pixels of its block into
 *      block_offsets[g] (a work-group scan of the per-work-item counts).
 *   2. depth_to_points_scan: one work-group turns block_offsets[0 .. nblocks-1] into their
 *      exclusive prefix sums, in place, and writes the total N to block_offsets[nblocks]
 *      (the buffer holds nblocks + 1 uints). The host reads that one uint, allocates N points.
 *   3. depth_to_points: each work-group recomputes its pixels, scans its work-items' counts
 *      again, and work-item l writes its valid pixels, in order, from index
 *      block_offsets[g] + (valid pixels of work-items 0 .. l-1 of its block).
 * So the output order is the row-major pixel order, and the result does not depend on how the
 * device schedules work-groups. With DROP_INVALID=0 only step 3 runs and pixel p goes to index p
 * (block_offsets unused, may be NULL).
 *
 * Arithmetic is float: z = d / depth_scale exactly as numpy computes it where division is
 * correctly rounded (PoCL; GPUs may differ by a couple of ulp), so validity, hence N, matches
 * numpy; x and y multiply by 1/fx and 1/fy, equal to numpy's (u - cx) * z / fx up to float
 * rounding (about 2 ulp).
 * Requires n < 2^32 - WG * PPW.
 */

#include "clkit.h"

#define DEFAULT_PPW_ushort 8
#define DEFAULT_PPW_float 4

#ifndef T
#error "depth_to_points.cl: define the depth type, -D T=ushort or -D T=float"
#endif
#ifndef DROP_INVALID
#define DROP_INVALID 1
#endif
#ifndef RGB
#define RGB 0
#endif
#ifndef WG
#define WG 256
#endif
#if (WG & (WG - 1)) != 0
#error "depth_to_points.cl: WG must be a power of two"
#endif
#ifndef PPW
#define PPW CLK_CAT(DEFAULT_PPW_, T)
#endif
#if PPW == 1
#define VT T
#define VF float
#elif PPW == 2 || PPW == 4 || PPW == 8 || PPW == 16
#define VT CLK_CAT(T, PPW)
#define VF CLK_CAT(float, PPW)
#else
#error "depth_to_points.cl: PPW must be 1, 2, 4, 8 or 16"
#endif

/* The PPW depths of the work-item whose first pixel is `first` (global id `gid`) as a vector:
 * one aligned load when all are inside the image, else element by element with 0 past n. */
inline VT load_depths(__global const T* depth, const uint gid, const uint first, const uint n)
{
    VT d;
    if (first + PPW <= n) {
        d = ((__global const VT*)depth)[gid];
    } else {
        T* e = (T*)&d;
        for (uint k = 0; k < PPW; ++k)
            e[k] = first + k < n ? depth[first + k] : (T)0;
    }
    return d;
}

inline int is_valid(const float z)
{
    return z != 0.0f && isfinite(z);
}

/* Exclusive prefix sum of x over the work-group (Hillis-Steele in local memory; log2(WG)
 * steps). Afterwards s[WG - 1] holds the group's total, readable by every work-item. Every
 * work-item of the group must call it (it has barriers). */
inline uint group_exclusive_scan(const uint x, __local uint* s)
{
    const uint l = get_local_id(0);
    s[l] = x;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint offset = 1; offset < WG; offset <<= 1) {
        const uint t = l >= offset ? s[l - offset] : 0u;
        barrier(CLK_LOCAL_MEM_FENCE);
        s[l] += t;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    return s[l] - x;
}

/* z = depth / depth_scale for the work-item's PPW pixels (one vector division). */
inline VF depth_to_z(const VT d, const float depth_scale)
{
    return CLK_CAT(convert_, VF)(d) / depth_scale;
}

/* Number of valid pixels among the work-item's PPW pixels. */
inline uint count_valid(const VF z)
{
    const float* e = (const float*)&z;
    uint c = 0;
    for (uint k = 0; k < PPW; ++k)
        c += is_valid(e[k]);
    return c;
}

/* Step 1: block_offsets[g] = valid pixels in block g. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void depth_to_points_count(__global const T* restrict depth,
                           __global uint* restrict block_offsets,
                           const uint n,
                           const float depth_scale)
{
    __local uint s[WG];
    const uint gid = get_global_id(0);
    const uint c = count_valid(depth_to_z(load_depths(depth, gid, gid * PPW, n), depth_scale));
    const uint before = group_exclusive_scan(c, s);
    if (get_local_id(0) == WG - 1)
        block_offsets[get_group_id(0)] = before + c;
}

/* Step 2, one work-group: exclusive scan of block_offsets[0 .. nblocks-1] in place, in chunks
 * of WG carried over; the total goes to block_offsets[nblocks]. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void depth_to_points_scan(__global uint* restrict block_offsets, const uint nblocks)
{
    __local uint s[WG];
    const uint l = get_local_id(0);
    uint carry = 0;
    for (uint base = 0; base < nblocks; base += WG) {
        const uint i = base + l;
        const uint x = i < nblocks ? block_offsets[i] : 0u;
        const uint before = group_exclusive_scan(x, s);
        if (i < nblocks)
            block_offsets[i] = carry + before;
        carry += s[WG - 1];
        barrier(CLK_LOCAL_MEM_FENCE); /* everyone has read s[WG - 1] before it is reused */
    }
    if (l == 0)
        block_offsets[nblocks] = carry;
}

/* Step 3: compute and write the points (and colours). */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void depth_to_points(__global const T* restrict depth,
                     __global const uchar* restrict rgb,
                     __global const uint* restrict block_offsets,
                     __global float* restrict points,
                     __global uchar* restrict colors,
                     const uint width,
                     const uint n,
                     const float fx,
                     const float fy,
                     const float cx,
                     const float cy,
                     const float depth_scale)
{
    const uint gid = get_global_id(0);
    const uint first = gid * PPW;
    const VF zv = depth_to_z(load_depths(depth, gid, first, n), depth_scale);
    const float* zs = (const float*)&zv;

#if DROP_INVALID
    __local uint s[WG];
    uint out = block_offsets[get_group_id(0)] + group_exclusive_scan(count_valid(zv), s);
#else
    uint out = first;
#endif

    /* Multiplying by reciprocals instead of dividing per pixel: within float rounding of
     * (u - cx) * z / fx, and faster on CPUs and GPUs alike. */
    const float rfx = 1.0f / fx, rfy = 1.0f / fy;
    /* Row and column of the first pixel; the others follow by stepping along the row. */
    uint v = first / width;
    uint u = first - v * width;
    for (uint k = 0; k < PPW && first + k < n; ++k) {
        const float z = zs[k];
#if DROP_INVALID
        if (is_valid(z))
#endif
        {
            __global float* p = points + (size_t)out * 3;
            p[0] = ((float)u - cx) * z * rfx;
            p[1] = ((float)v - cy) * z * rfy;
            p[2] = z;
#if RGB
            __global const uchar* src = rgb + (size_t)(first + k) * 3;
            __global uchar* dst = colors + (size_t)out * 3;
            dst[0] = src[0];
            dst[1] = src[1];
            dst[2] = src[2];
#endif
            ++out;
        }
        if (++u == width) {
            u = 0;
            ++v;
        }
    }
}
