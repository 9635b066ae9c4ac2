// gblur bench: the 2-D convolution the blur pipelines are set against.

// Full 2D convolution with the (2r+1)² Gaussian taps[j]·taps[i]: the "2D convolution" row of
// the algorithm table in "Tuning Performance on the GPU", whose cost grows with sigma squared.
__kernel void conv2d(__global const float *src, __global float *dst, __constant float *taps,
                     uint radius, uint width, uint height)
{
    const uint x = get_global_id(0), y = get_global_id(1);
    if (x >= width || y >= height)
        return;
    const size_t plane = (size_t)get_global_id(2) * height * width;
    float acc = 0.0f;
    for (uint j = 0; j <= 2 * radius; j++) {
        const int yy = clamp((int)y + (int)j - (int)radius, 0, (int)height - 1);
        float row = 0.0f;
        for (uint i = 0; i <= 2 * radius; i++) {
            const int xx = clamp((int)x + (int)i - (int)radius, 0, (int)width - 1);
            row += taps[i] * src[plane + (size_t)yy * width + xx];
        }
        acc += taps[j] * row;
    }
    dst[plane + (size_t)y * width + x] = acc;
}
