// Separable convolution with a sampled Gaussian (FIR), clamp-to-edge: the accurate choice at
// small sigma, where every recursive filter drifts from the Gaussian (GEGL switches below
// sigma 1, Blender below 3). One work-item per output sample; work-items along dimension 0
// are neighbours in x, so both passes read and write coalesced.
//
// Same arithmetic, in the same order, as fir_line in src/cpu/reference.rs: each output is its
// input plus the taps' weighted differences from it, so a constant region comes out bit for bit.
// `input_weight` is the taps' sum (1 for the Gaussian; 0, or the small sum of scipy's sampled
// kernel, for a derivative's).

// Horizontal: along rows of `width`.
__kernel void fir_x(__global const float *src, __global float *dst, __constant float *taps,
                    uint radius, uint width, uint height, float input_weight)
{
    const uint x = get_global_id(0), y = get_global_id(1);
    if (x >= width || y >= height)
        return;
    const size_t row = ((size_t)get_global_id(2) * height + y) * width;
    const float centre = src[row + x];
    float acc = 0.0f;
    for (uint k = 0; k <= 2 * radius; k++) {
        const int j = clamp((int)x + (int)k - (int)radius, 0, (int)width - 1);
        acc += taps[k] * (src[row + j] - centre);
    }
    dst[row + x] = acc + input_weight * centre;
}

// Vertical: along columns of a `width`×`height` plane.
__kernel void fir_y(__global const float *src, __global float *dst, __constant float *taps,
                    uint radius, uint width, uint height, float input_weight)
{
    const uint x = get_global_id(0), y = get_global_id(1);
    if (x >= width || y >= height)
        return;
    const size_t plane = (size_t)get_global_id(2) * height * width;
    const float centre = src[plane + (size_t)y * width + x];
    float acc = 0.0f;
    for (uint k = 0; k <= 2 * radius; k++) {
        const int j = clamp((int)y + (int)k - (int)radius, 0, (int)height - 1);
        acc += taps[k] * (src[plane + (size_t)j * width + x] - centre);
    }
    dst[plane + (size_t)y * width + x] = acc + input_weight * centre;
}
