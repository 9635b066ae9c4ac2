// The device's yardsticks (the peak kernels of the GPU tuning chapter "Tuning Performance on
// the GPU"): a plain copy, one float or one float4 per work-item, and the copy with a chain of
// dependent multiply-adds per element, which stays memory-bound until the chain is long
// enough to make the kernel compute-bound.
// `n` counts floats for copy_float and float4s for the others.

#ifndef MAD_COUNT
#define MAD_COUNT 3
#endif

__kernel void copy_float(__global const float *src, __global float *dst, uint n)
{
    const uint i = get_global_id(0);
    if (i < n)
        dst[i] = src[i];
}

__kernel void copy_float4(__global const float4 *src, __global float4 *dst, uint n)
{
    const uint i = get_global_id(0);
    if (i < n)
        dst[i] = src[i];
}

// MAD_COUNT dependent multiply-adds on each of the 4 lanes: 2 * MAD_COUNT flops per float.
// The factors keep values bounded, so the result is checkable on the host.
__kernel void copy_mad(__global const float4 *src, __global float4 *dst, uint n)
{
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    float4 v = src[i];
    for (int k = 0; k < MAD_COUNT; k++)
        v = mad(v, (float4)(0.5f), (float4)(0.25f));
    dst[i] = v;
}
