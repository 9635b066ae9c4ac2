// Out-of-place transpose of a stack of planes: plane p of `src` is `width`×`height` (rows of
// `width`), plane p of `dst` is `height`×`width`. Dimension 2 of the NDRange is the plane.
//
// The strategies of the GPU tuning chapter "Tuning Performance on the GPU" and of Ruetsch &
// Micikevicius, "Optimizing Matrix Transpose in CUDA" (NVIDIA, 2009):
//   transpose_naive          read a row, write a column: the writes are strided.
//   transpose_local          a TILE×TILE tile through local memory: both sides coalesced.
//   transpose_skewed         the local tile with diagonal work-group order, so that
//                            concurrently running groups write to different memory
//                            partitions ("partition camping").
//   transpose_padded         tile rows padded by one float, so reading a tile column hits
//                            TILE different local-memory banks.
//   transpose_padded_skewed  both.
//   transpose_tile32         32×32 padded tile moved by 32×8 work-items, 4 rows each: fewer,
//                            busier work-items (Ruetsch & Micikevicius's final kernel).
//   transpose_tile32_skewed  that, with diagonal order.
// Edges: the NDRange is rounded up to whole tiles and out-of-range work-items only take part
// in the barrier, so any width and height work.

#ifndef TILE
#define TILE 16
#endif
#ifndef TILE32_ROWS
#define TILE32_ROWS 8
#endif

__kernel void transpose_naive(__global const float *src, __global float *dst, uint width,
                              uint height)
{
    const uint x = get_global_id(0), y = get_global_id(1);
    const size_t plane = (size_t)get_global_id(2) * width * height;
    if (x < width && y < height)
        dst[plane + (size_t)x * height + y] = src[plane + (size_t)y * width + x];
}

// Diagonal reordering: group (bx, by) takes tile row (by + bx) % groups_y. For a fixed bx this
// permutes the rows, so every tile is still visited exactly once, square grid or not.
#define TILE_ROW(skew) ((skew) ? (get_group_id(1) + get_group_id(0)) % get_num_groups(1) \
                               : get_group_id(1))

#define DEFINE_TILE_TRANSPOSE(NAME, PAD, SKEW)                                              \
    __kernel __attribute__((reqd_work_group_size(TILE, TILE, 1))) void NAME(                 \
        __global const float *src, __global float *dst, uint width, uint height)            \
    {                                                                                       \
        __local float tile[TILE][TILE + (PAD)];                                             \
        const uint bx = get_group_id(0), by = TILE_ROW(SKEW);                               \
        const uint lx = get_local_id(0), ly = get_local_id(1);                              \
        const size_t plane = (size_t)get_global_id(2) * width * height;                     \
        uint x = bx * TILE + lx, y = by * TILE + ly;                                        \
        if (x < width && y < height)                                                        \
            tile[ly][lx] = src[plane + (size_t)y * width + x];                              \
        barrier(CLK_LOCAL_MEM_FENCE);                                                       \
        x = by * TILE + lx; /* column of dst = row of src */                                \
        y = bx * TILE + ly;                                                                 \
        if (x < height && y < width)                                                        \
            dst[plane + (size_t)y * height + x] = tile[lx][ly];                             \
    }

DEFINE_TILE_TRANSPOSE(transpose_local, 0, 0)
DEFINE_TILE_TRANSPOSE(transpose_skewed, 0, 1)
DEFINE_TILE_TRANSPOSE(transpose_padded, 1, 0)
DEFINE_TILE_TRANSPOSE(transpose_padded_skewed, 1, 1)

#define DEFINE_TILE32_TRANSPOSE(NAME, SKEW)                                                 \
    __kernel __attribute__((reqd_work_group_size(32, TILE32_ROWS, 1))) void NAME(            \
        __global const float *src, __global float *dst, uint width, uint height)            \
    {                                                                                       \
        __local float tile[32][33];                                                         \
        const uint bx = get_group_id(0), by = TILE_ROW(SKEW);                               \
        const uint lx = get_local_id(0), ly = get_local_id(1);                              \
        const size_t plane = (size_t)get_global_id(2) * width * height;                     \
        uint x = bx * 32 + lx;                                                              \
        for (uint j = ly; j < 32; j += TILE32_ROWS) {                                       \
            const uint y = by * 32 + j;                                                     \
            if (x < width && y < height)                                                    \
                tile[j][lx] = src[plane + (size_t)y * width + x];                           \
        }                                                                                   \
        barrier(CLK_LOCAL_MEM_FENCE);                                                       \
        x = by * 32 + lx;                                                                   \
        for (uint j = ly; j < 32; j += TILE32_ROWS) {                                       \
            const uint y = bx * 32 + j;                                                     \
            if (x < height && y < width)                                                    \
                dst[plane + (size_t)y * height + x] = tile[lx][j];                          \
        }                                                                                   \
    }

DEFINE_TILE32_TRANSPOSE(transpose_tile32, 0)
DEFINE_TILE32_TRANSPOSE(transpose_tile32_skewed, 1)
