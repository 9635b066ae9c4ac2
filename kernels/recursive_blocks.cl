// Block-parallel recursive Gaussian down columns, with the transpose fused into the output.
//
// One work-item per column cannot fill a GPU: a 4096-wide image gives 4096 work-items against
// the hundreds of thousands a large GPU keeps in flight. Following Nehab, Maximo, Lima & Hoppe,
// "GPU-Efficient Recursive Filtering and Summed-Area Tables" (SIGGRAPH Asia 2011), each column
// is cut into chunks of CHUNK rows, and the filter of src/gaussian.rs (two 2nd-order sections
// in delta form, causal + anticausal, first sample subtracted) runs in three kernels:
//
//   block_summary  every chunk filtered from a zero state: the causal state it hands to the
//                  next chunk and the anticausal state it hands to the previous one;
//   block_carry    per column, a short sequential walk over the chunks that turns those into
//                  each chunk's true incoming states: in[k+1] = T^CHUNK in[k] + zero_state[k],
//                  T being a section's homogeneous (y, d) transition, T^n computed on the host;
//   block_final    every chunk filtered again from its true states; its CHUNK×TILE tile goes
//                  through local memory and is written transposed, so two passes (y, then x)
//                  blur both axes and end in the original orientation.
//
// Layout: plane p, column x, row y of src at src[p * plane + y * width + x]; dst is the
// transposed plane, dst[p * plane + x * height + y]. Summaries: 8 floats per (plane, chunk,
// column): causal (ya, da, yb, db) then anticausal (ya, da, yb, db).
// coef: the 16-float block of recursive_gaussian.cl. carry: per section T^CHUNK then
// T^last (row-major 2×2), where `last` is the length of the final chunk.
//
// CHUNK sets the length of the carry's sequential walk (chunks = height / CHUNK steps, each
// waiting on a memory load) against the summaries' size (8 floats per CHUNK samples).

#ifndef CHUNK
#define CHUNK 64
#endif
#ifndef TILE
#define TILE 32
#endif
#ifndef GROUP_CHUNKS
#define GROUP_CHUNKS 4
#endif

#define LOAD_COEF                                                                           \
    const float n0a = coef[0], n1a = coef[1], m1a = coef[2], m2a = coef[3];                 \
    const float epsa = coef[4], qa = coef[5], ga = coef[6];                                 \
    const float n0b = coef[8], n1b = coef[9], m1b = coef[10], m2b = coef[11];               \
    const float epsb = coef[12], qb = coef[13], gb = coef[14];

// One step of both sections; identical operations to recursive_line.
#define STEP(IN0, IN1, C0A, C1A, C0B, C1B)                                                  \
    {                                                                                       \
        float t = C0A * (IN0) + C1A * (IN1) - epsa * ya + (da - qa * da);                   \
        da = t;                                                                             \
        ya += t;                                                                            \
        t = C0B * (IN0) + C1B * (IN1) - epsb * yb + (db - qb * db);                         \
        db = t;                                                                             \
        yb += t;                                                                            \
    }

__kernel void block_summary(__global const float *src, __global float *sum,
                            __constant float *coef, uint width, uint height, uint chunks)
{
    const uint x = get_global_id(0), k = get_global_id(1), p = get_global_id(2);
    if (x >= width || k >= chunks)
        return;
    LOAD_COEF
    const size_t plane = (size_t)width * height;
    __global const float *in = src + p * plane + x;
    const float x0 = in[0];
    const uint y0 = k * CHUNK, n = min((uint)CHUNK, height - y0);

    float ya = 0.0f, da = 0.0f, yb = 0.0f, db = 0.0f;
    float xp = k == 0 ? 0.0f : in[(size_t)(y0 - 1) * width] - x0;
    for (uint i = 0; i < n; i++) {
        const float xv = in[(size_t)(y0 + i) * width] - x0;
        STEP(xv, xp, n0a, n1a, n0b, n1b)
        xp = xv;
    }
    __global float *s = sum + ((size_t)(p * chunks + k) * 8) * width + x;
    s[0] = ya;
    s[width] = da;
    s[2 * width] = yb;
    s[3 * width] = db;

    ya = da = yb = db = 0.0f;
    float x1 = in[(size_t)min(y0 + n, height - 1) * width] - x0;
    float x2 = in[(size_t)min(y0 + n + 1, height - 1) * width] - x0;
    for (uint i = n; i-- > 0;) {
        STEP(x1, x2, m1a, m2a, m1b, m2b)
        x2 = x1;
        x1 = in[(size_t)(y0 + i) * width] - x0;
    }
    s[4 * width] = ya;
    s[5 * width] = da;
    s[6 * width] = yb;
    s[7 * width] = db;
}

// (y, d) <- M (y, d) + (zy, zd), M row-major.
#define APPLY(M, Y, D, ZY, ZD)                                                              \
    {                                                                                       \
        const float ny = (M)[0] * (Y) + (M)[1] * (D) + (ZY);                                \
        const float nd = (M)[2] * (Y) + (M)[3] * (D) + (ZD);                                \
        Y = ny;                                                                             \
        D = nd;                                                                             \
    }

// One work-item per (column, plane): the causal walk down the chunks, then the anticausal
// walk back up.
__kernel void block_carry(__global const float *src, __global float *sum,
                          __constant float *coef, __constant float *carry, uint width,
                          uint height, uint chunks)
{
    const uint x = get_global_id(0), p = get_global_id(1);
    if (x >= width)
        return;
    const float ga = coef[6], gb = coef[14];
    __constant float *full_a = carry, *last_a = carry + 4, *full_b = carry + 8,
                     *last_b = carry + 12;
    const size_t plane = (size_t)width * height;
    __global float *s = sum + (size_t)p * chunks * 8 * width + x;

    // Causal: the state entering chunk 0 is zero (first sample subtracted).
    float ya = 0.0f, da = 0.0f, yb = 0.0f, db = 0.0f;
    for (uint k = 0; k < chunks; k++) {
        __global float *c = s + (size_t)k * 8 * width;
        const float za = c[0], zda = c[width], zb = c[2 * width], zdb = c[3 * width];
        c[0] = ya;
        c[width] = da;
        c[2 * width] = yb;
        c[3 * width] = db;
        APPLY(full_a, ya, da, za, zda)
        APPLY(full_b, yb, db, zb, zdb)
    }

    // Anticausal: the state entering the last chunk is the steady state of the clamped edge.
    __global const float *in = src + p * plane + x;
    const float xl = in[(size_t)(height - 1) * width] - in[0];
    ya = ga * xl;
    yb = gb * xl;
    da = db = 0.0f;
    for (uint k = chunks; k-- > 0;) {
        __global float *c = s + (size_t)k * 8 * width + 4 * width;
        const float za = c[0], zda = c[width], zb = c[2 * width], zdb = c[3 * width];
        c[0] = ya;
        c[width] = da;
        c[2 * width] = yb;
        c[3 * width] = db;
        if (k == chunks - 1) {
            APPLY(last_a, ya, da, za, zda)
            APPLY(last_b, yb, db, zb, zdb)
        } else {
            APPLY(full_a, ya, da, za, zda)
            APPLY(full_b, yb, db, zb, zdb)
        }
    }
}

__kernel __attribute__((reqd_work_group_size(TILE, GROUP_CHUNKS, 1))) void
block_final(__global const float *src, __global float *dst, __global const float *sum,
            __constant float *coef, uint width, uint height, uint chunks)
{
    __local float tile[GROUP_CHUNKS][CHUNK][TILE + 1];
    const uint x = get_global_id(0), k = get_global_id(1), p = get_global_id(2);
    const uint lx = get_local_id(0), ly = get_local_id(1);
    const size_t plane = (size_t)width * height;
    const uint y0 = k * CHUNK;
    if (x < width && k < chunks) {
        LOAD_COEF
        __global const float *in = src + p * plane + x;
        const float x0 = in[0];
        const uint n = min((uint)CHUNK, height - y0);
        __global const float *s = sum + ((size_t)(p * chunks + k) * 8) * width + x;

        float ya = s[0], da = s[width], yb = s[2 * width], db = s[3 * width];
        float xp = k == 0 ? 0.0f : in[(size_t)(y0 - 1) * width] - x0;
        for (uint i = 0; i < n; i++) {
            const float xv = in[(size_t)(y0 + i) * width] - x0;
            STEP(xv, xp, n0a, n1a, n0b, n1b)
            tile[ly][i][lx] = ya + yb;
            xp = xv;
        }

        ya = s[4 * width];
        da = s[5 * width];
        yb = s[6 * width];
        db = s[7 * width];
        float x1 = in[(size_t)min(y0 + n, height - 1) * width] - x0;
        float x2 = in[(size_t)min(y0 + n + 1, height - 1) * width] - x0;
        for (uint i = n; i-- > 0;) {
            STEP(x1, x2, m1a, m2a, m1b, m2b)
            tile[ly][i][lx] = tile[ly][i][lx] + (ya + yb) + x0;
            x2 = x1;
            x1 = in[(size_t)(y0 + i) * width] - x0;
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    // Rows lx, lx + TILE, ... of this work-item's chunk, written along the transposed rows:
    // consecutive work-items write consecutive addresses.
    if (k < chunks) {
        const uint xbase = get_group_id(0) * TILE;
        for (uint r = lx; r < CHUNK && y0 + r < height; r += TILE)
            for (uint j = 0; j < TILE && xbase + j < width; j++)
                dst[p * plane + (size_t)(xbase + j) * height + y0 + r] = tile[ly][r][j];
    }
}
