// Looks for NaN and infinity in `n` samples of `data` from sample `at`, for arrays that go up
// straight from the caller's page-locked memory (`gpu::volume::direct`): the host never reads
// them, so the device says whether the staged route, which treats them as the host does,
// must blur them instead. A work-item that meets one sets `found[0]`; nothing clears it, so
// the writers' races leave it set. Each work-item takes every `get_global_size(0)`-th sample,
// so neighbouring work-items read neighbouring samples.

__kernel void flag_non_finite(__global const float *data, ulong at, ulong n, __global uint *found)
{
    for (size_t i = get_global_id(0); i < n; i += get_global_size(0))
        if (!isfinite(data[at + i]))
            found[0] = 1u;
}
