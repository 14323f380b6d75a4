/*
 * take_axis.cl -- dst = src taken along one axis by an index: clkit.dask's window gathers.
 *
 * Kernel: take_axis, for elements of type T (a define: any type of the element's size, since
 * it only moves them). src is viewed as (outer, m_in, inner) and dst as (outer, m_out, inner),
 * both C-contiguous: dst[o, i, r] = src[o, index[i], r].
 *
 * Launch (1-D): global size = outer * m_out * inner, one work-item per element of dst; any
 * local size (the guard drops the work-items of a rounded-up global size).
 *
 * Mapping: consecutive work-items write consecutive elements of dst and read consecutive
 * elements of one row of src (r is the fastest index), so a warp reads and writes contiguous
 * spans wherever inner > 1. Gathers run only at the blocks of a chained filter whose windows
 * differ between filters (where a later filter wraps around the array), so this is a copy,
 * not a hot path.
 */
__kernel void take_axis(__global const T *src, __global T *dst, __global const long *index,
                        const long m_in, const long m_out, const long inner, const long total)
{
    long g = get_global_id(0);
    if (g >= total)
        return;
    long r = g % inner;
    long rest = g / inner;
    long i = rest % m_out;
    long o = rest / m_out;
    dst[g] = src[(o * m_in + index[i]) * inner + r];
}
