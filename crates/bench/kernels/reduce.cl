// The dot product of two float vectors, x·y, three ways (after a tutorial on the scalar
// product of vectors, continued to a bandwidth-bound reduction):
//   dot_products  the device multiplies, the host sums (the tutorial's first version);
//   dot_groups    each work-group sums its LOCAL products in local memory, the host adds the
//                 group sums (the tutorial's second version);
//   dot_stage1 +  the whole sum on the device: every work-item first accumulates many
//   dot_stage2    elements, UNROLL float4 pairs in flight at a time, then each group reduces
//                 in local memory (fully unrolled); a second, one-group kernel adds the
//                 group sums.
// n counts floats; x and y need not be multiples of 4 long.

#ifndef LOCAL
#define LOCAL 256
#endif
#ifndef UNROLL
#define UNROLL 4
#endif

#if (LOCAL & (LOCAL - 1)) != 0
#error "LOCAL must be a power of two"
#endif

__kernel void dot_products(__global const float *x, __global const float *y, __global float *z,
                           uint n)
{
    const uint i = get_global_id(0);
    if (i < n)
        z[i] = x[i] * y[i];
}

// Tree sum of s[0..LOCAL) into s[0]; every work-item of the group must call it.
inline void group_sum(__local float *s, uint lid)
{
#pragma unroll
    for (uint h = LOCAL / 2; h > 0; h >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid < h)
            s[lid] += s[lid + h];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}

__kernel __attribute__((reqd_work_group_size(LOCAL, 1, 1)))
void dot_groups(__global const float *x, __global const float *y, __global float *sums, uint n)
{
    __local float s[LOCAL];
    const uint i = get_global_id(0);
    const uint lid = get_local_id(0);
    s[lid] = i < n ? x[i] * y[i] : 0.0f;
    group_sum(s, lid);
    if (lid == 0)
        sums[get_group_id(0)] = s[0];
}

__kernel __attribute__((reqd_work_group_size(LOCAL, 1, 1)))
void dot_stage1(__global const float *x, __global const float *y, __global float *sums, uint n)
{
    __local float s[LOCAL];
    const uint lid = get_local_id(0);
    const uint gid = get_global_id(0);
    const uint stride = get_global_size(0);
    const uint n4 = n / 4;
    __global const float4 *x4 = (__global const float4 *)x;
    __global const float4 *y4 = (__global const float4 *)y;
    float4 acc = 0.0f;
#ifdef CHUNKED
    // CPU devices run a group's work-items one after another: a contiguous chunk per
    // work-item keeps each one streaming through memory.
    const uint per = (n4 + stride - 1) / stride;
    const uint end = min((gid + 1) * per, n4);
    for (uint i = min(gid * per, n4); i < end; i++)
        acc = mad(x4[i], y4[i], acc);
#else
    // GPUs: neighbouring work-items read neighbouring float4s, and UNROLL independent pairs
    // of 16-byte loads are issued before the first multiply-add.
    uint i = gid;
    for (; i + (UNROLL - 1) * stride < n4; i += UNROLL * stride) {
        float4 xv[UNROLL], yv[UNROLL];
#pragma unroll
        for (uint u = 0; u < UNROLL; u++) {
            xv[u] = x4[i + u * stride];
            yv[u] = y4[i + u * stride];
        }
#pragma unroll
        for (uint u = 0; u < UNROLL; u++)
            acc = mad(xv[u], yv[u], acc);
    }
    for (; i < n4; i += stride)
        acc = mad(x4[i], y4[i], acc);
#endif
    float v = (acc.x + acc.y) + (acc.z + acc.w);
    // The last n % 4 floats.
    if (gid == 0)
        for (uint j = n4 * 4; j < n; j++)
            v = mad(x[j], y[j], v);
    s[lid] = v;
    group_sum(s, lid);
    if (lid == 0)
        sums[get_group_id(0)] = s[0];
}

// One work-group of LOCAL work-items adds the `groups` sums of stage 1 into out[0].
__kernel __attribute__((reqd_work_group_size(LOCAL, 1, 1)))
void dot_stage2(__global const float *sums, __global float *out, uint groups)
{
    __local float s[LOCAL];
    const uint lid = get_local_id(0);
    float v = 0.0f;
    for (uint i = lid; i < groups; i += LOCAL)
        v += sums[i];
    s[lid] = v;
    group_sum(s, lid);
    if (lid == 0)
        out[0] = s[0];
}
