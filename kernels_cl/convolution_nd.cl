/*
 * convolution_nd.cl: scipy.ndimage.correlate with any N-D weights (those the separable passes
 * of convolution_axis.cl do not take).
 *
 * One work-item per output element (see ndimage.h for the mapping). The host lists the used
 * taps (weights above DBL_EPSILON in magnitude, in C order, as scipy keeps them); the sum
 * starts from 0 and adds weight * value tap by tap, scipy's order. Elements far enough from
 * every border read their taps at fixed distances in memory; the others fold each coordinate
 * by the border mode. Defines: NDIM, the types, and NTAPS and BORDER in specialised builds
 * (generic ones, GENERIC=1, take `ntaps` and `border` as arguments).
 */
#include "ndimage.h"

#if !GENERIC
#define ntaps NTAPS
#endif

__kernel void correlate_nd(__global const SRC_T *src, __global DST_T *dst,
                           __constant ACC_T *w, __constant int *offs, __constant long *flat,
                           __constant int *shape, __constant int *lo, __constant int *hi,
                           ACC_T cval, int ntaps_, int border)
{
#if GENERIC
    const int ntaps = ntaps_;
#endif
    if (get_global_id(0) >= shape[NDIM - 1])
        return;
    int c[NDIM];
    bool inside;
    const long g = clk_coords(shape, lo, hi, c, &inside);
    ACC_T sum = 0;
    if (inside) {
        for (int t = 0; t < ntaps; t++)
            sum += w[t] * LOAD(src, g + flat[t]);
    } else {
        for (int t = 0; t < ntaps; t++) {
            long idx = clk_tap_index(c, offs, t, shape, border);
            sum += w[t] * (idx < 0 ? cval : LOAD(src, idx));
        }
    }
    clk_store(dst, g, sum);
}
