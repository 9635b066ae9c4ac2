// Constant edges, set afresh before a pass: an array extended once by one sample of a constant
// at both ends of an axis (`gpu::host_array`) has those samples filtered along the other axes
// with the rest of it, where scipy extends each pass's input by the constant anew. The
// Gaussian leaves a constant as it is; a derivative takes it to 0 (its weights sum to 0), so
// before an axis's pass follows another's derivative, its edge samples are the constant again.
//
// The array is `outer` blocks of `n` rows of `inner` samples along the axis; work-item
// (c, o, e) writes row 0 (e = 0) or row n - 1 (e = 1) of block o, column c, where `ends`
// says that end is the array's own (bit 0 the start, bit 1 the end: a slab of the array
// holds only some of them).

__kernel void constant_edges(__global float *data, float value, uint n, uint inner, uint ends)
{
    const uint c = get_global_id(0), e = get_global_id(2);
    if (c >= inner || !(ends & (1u << e)))
        return;
    const size_t row = (size_t)get_global_id(1) * n + (e == 0 ? 0 : n - 1);
    data[row * inner + c] = value;
}
