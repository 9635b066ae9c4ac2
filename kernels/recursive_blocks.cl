// Block-parallel recursive Gaussian down columns, with the transpose fused into the output.
//
// One work-item per column cannot fill a GPU: a 4096-wide image gives 4096 work-items against
// the hundreds of thousands a large GPU keeps in flight. Following Nehab, Maximo, Lima & Hoppe,
// "GPU-Efficient Recursive Filtering and Summed-Area Tables" (SIGGRAPH Asia 2011), each column
// is cut into chunks of CHUNK rows, and the filter of src/filter/gaussian.rs (two 2nd-order sections
// in delta form, causal + anticausal, in the difference form: the sections' poles filter the
// first differences x[y] - x[y-1], their numerators weigh the poles' state, and each output is
// its input plus the weighted states) runs in three kernels:
//
//   block_summary  every chunk filtered from a zero state: the causal state it hands to the
//                  next chunk and the anticausal state it hands to the previous one, both
//                  weighted sums of the chunk's inputs (no walk);
//   block_carry    per column, a short sequential walk over the chunks that turns those into
//                  each chunk's true incoming states: in[k+1] = T^CHUNK in[k] + zero_state[k],
//                  T being a section's homogeneous (y, d) transition, T^n computed on the host;
//   block_final    every chunk filtered again from its true states; its CHUNK×TILE tile goes
//                  through local memory and is written transposed, so two passes (y, then x)
//                  blur both axes and end in the original orientation.
//
// Pixels. A pixel is CH interleaved channels (CH = 1..4) filtered together as one OpenCL
// vector, which gives each work-item CH independent recursions to overlap. Without IN_U8 /
// OUT_U8 the source and destination hold f32 samples; with IN_U8 the source holds 8-bit
// samples (gray, gray+alpha, RGB, RGBA by CH) converted as they are read (DECODE: 1/255
// scaling, or sRGB decoding through `lut` with U8_LUT), colour then premultiplied by alpha
// for CH = 2 and 4. OUT_U8 does the inverse as the last pass writes: unpremultiply, sRGB
// encoding with LINEAR, clamp and round. So an 8-bit image goes up as bytes, is blurred
// through one f32 intermediate, and comes back as bytes: a quarter of the transfer, and no
// f32 copy of the image on the host.
//
// Layout: plane p, column x, row y of src at pixel p * plane + y * width + x (planes > 1 only
// for planar f32 images, CH = 1); dst is the transposed plane, pixel p * plane + x * height + y.
// Summaries: 8 pixels per (plane, chunk, column), each a row of `width` pixels: causal
// (ya, da, yb, db) then anticausal (ya, da, yb, db).
// coef: the 16-float block of recursive_gaussian.cl (the difference form's). carry: per section T^CHUNK then
// T^last (row-major 2×2), where `last` is the length of the final chunk.
//
// CHUNK sets the length of the carry's sequential walk (chunks = height / CHUNK steps) against
// the summaries' size (8 pixels per CHUNK pixels); TILE × GROUP_CHUNKS work-items share a
// local tile of GROUP_CHUNKS × CHUNK × (TILE + 1) pixels, sized by the host.

#ifndef CHUNK
#define CHUNK 64
#endif
#ifndef TILE
#define TILE 32
#endif
#ifndef GROUP_CHUNKS
#define GROUP_CHUNKS 4
#endif
#ifndef CH
#define CH 1
#endif
// Floats per tile row: TILE + 1 puts a column's rows in different banks; with SAMPLES the
// transposed store reads TILE / CH rows of CH neighbouring samples at once, which TILE + CH
// spreads over every bank.
#ifdef SAMPLES
#define TILE_STRIDE (TILE + CH)
#else
#define TILE_STRIDE (TILE + 1)
#endif

// SAMPLES (block_overlap only): each work-item walks one sample column of the interleaved
// image, a width × CH plane of single floats (`width` counts samples), and a tile of TILE
// sample columns holds TILE / CH whole pixels; only the conversions and the transposed store
// see pixels. Against a pixel per work-item (CH floats of registers and local memory each), it
// keeps an RGBA image's work-groups as full and as many as a gray one's.
#if CH == 1 || defined(SAMPLES)
typedef float pixel;
#define VLOAD(i, p) ((p)[i])
#define VSTORE(v, i, p) ((p)[i] = (v))
#elif CH == 2
typedef float2 pixel;
#define VLOAD(i, p) vload2(i, p)
#define VSTORE(v, i, p) vstore2(v, i, p)
#elif CH == 3
typedef float3 pixel;
#define VLOAD(i, p) vload3(i, p)
#define VSTORE(v, i, p) vstore3(v, i, p)
#else
typedef float4 pixel;
#define VLOAD(i, p) vload4(i, p)
#define VSTORE(v, i, p) vstore4(v, i, p)
#endif

// One 8-bit sample to f32: sRGB-decoded through `lut` (made on the host by the same Rust
// function as the host conversion) with U8_LUT, else scaled as pixels::u8_to_f32 does, with
// the same f32 rounding. The scaling is no table on purpose: neighbouring work-items look up
// different entries, which constant memory serves one address at a time; RGBA8's overlapped y
// pass took 1.32 ms through the table and 0.68 ms without (H100, 16 MP). Making the float
// from the byte's bits (2^23 + b - 2^23) instead of a conversion took 1.05 ms. Whole RGBA
// pixels (the carried kernels) are the exception, below.
#define U8_TO_F32(b) ((float)(b) * (1.0f / 255.0f))
#ifdef U8_LUT
#define DECODE(b) lut[b]
#else
#define DECODE(b) U8_TO_F32(b)
#endif

#ifdef IN_U8
typedef uchar src_t;
#ifdef SAMPLES
// Sample i, channel `chan` of its pixel, to premultiplied f32 (pixels::to_planar): colour
// times the pixel's alpha, the last sample of the pixel, for CH = 2 and 4.
#if CH == 2 || CH == 4
// The whole pixel in one load (the samples beside it read the same word), little-endian:
// against a byte load for the sample and another for its alpha, RGBA8's overlapped c128 blur
// went from 1.040 to 0.931 ms (H100, 16 MP).
inline float load_sample(__global const uchar *p, size_t i, uint chan, __constant float *lut)
{
#if CH == 4
    const uint px = ((__global const uint *)p)[i >> 2];
#else
    const uint px = ((__global const ushort *)p)[i >> 1];
#endif
    const float a = U8_TO_F32(px >> (8 * (CH - 1)));
    return chan == CH - 1 ? a : DECODE((px >> (8 * chan)) & 0xff) * a;
}
#else
inline float load_sample(__global const uchar *p, size_t i, uint chan, __constant float *lut)
{
    return DECODE(p[i]);
}
#endif
#define load_src(p, i, lut) load_sample(p, i, chan, lut)
#else
// 8-bit samples to premultiplied f32 (the maths of pixels::to_planar).
inline pixel load_src(__global const uchar *p, size_t i, __constant float *lut)
{
#if CH == 1
    return DECODE(p[i]);
#elif CH == 2
    const uchar2 u = vload2(i, p);
    const float a = U8_TO_F32(u.y);
    return (float2)(DECODE(u.x) * a, a);
#elif CH == 3
    const uchar3 u = vload3(i, p);
    return (float3)(DECODE(u.x), DECODE(u.y), DECODE(u.z));
#else
    // Through the table even without U8_LUT (it then holds the scaling): for these loads it
    // was the faster, 0.100-0.108 ms against 0.118-0.122 for RGBA8's y summaries (H100, 16 MP).
    const uchar4 u = vload4(i, p);
    const float a = U8_TO_F32(u.w);
    return (float4)(lut[u.x] * a, lut[u.y] * a, lut[u.z] * a, a);
#endif
}
#endif
#else
typedef float src_t;
#define load_src(p, i, lut) VLOAD(i, p)
#endif

#ifdef OUT_U8
typedef uchar dst_t;
// Colour back from linear light (pixels::linear_to_srgb).
inline float encode_colour(float v)
{
#ifdef LINEAR
    return v <= 0.0031308f ? v * 12.92f : 1.055f * pow(v, 1.0f / 2.4f) - 0.055f;
#else
    return v;
#endif
}
// pixels::f32_to_u8
inline uchar to_u8(float v)
{
    return (uchar)(clamp(v, 0.0f, 1.0f) * 255.0f + 0.5f);
}
#ifndef SAMPLES
// Premultiplied f32 to 8-bit samples (the maths of pixels::finish_planar and from_planar).
inline void store_dst(pixel v, size_t i, __global uchar *p)
{
#if CH == 1
    p[i] = to_u8(encode_colour(v));
#elif CH == 2
    const float g = v.y > 1e-7f ? v.x / v.y : 0.0f;
    vstore2((uchar2)(to_u8(encode_colour(g)), to_u8(v.y)), i, p);
#elif CH == 3
    vstore3((uchar3)(to_u8(encode_colour(v.x)), to_u8(encode_colour(v.y)),
                     to_u8(encode_colour(v.z))),
            i, p);
#else
    const float a = v.w;
    const float3 c = a > 1e-7f ? v.xyz / a : (float3)(0.0f);
    vstore4((uchar4)(to_u8(encode_colour(c.x)), to_u8(encode_colour(c.y)),
                     to_u8(encode_colour(c.z)), to_u8(a)),
            i, p);
#endif
}
#endif
// SAMPLES: channel `chan` of a pixel whose premultiplied channels are row[0 .. CH - 1].
inline uchar sample_to_u8(__local const float *row, uint chan)
{
#if CH == 2 || CH == 4
    const float a = row[CH - 1];
    if (chan == CH - 1)
        return to_u8(a);
    return to_u8(encode_colour(a > 1e-7f ? row[chan] / a : 0.0f));
#else
    return to_u8(encode_colour(row[chan]));
#endif
}
#define STORE_SAMPLE(row, chan, i, p) ((p)[i] = sample_to_u8(row, chan))
#else
typedef float dst_t;
#define store_dst(v, i, p) VSTORE(v, i, p)
#define STORE_SAMPLE(row, chan, i, p) ((p)[i] = (row)[chan])
#endif

// The output weights of each section's all-pole state (causal cw, cd; anticausal aw, ad) and
// its poles.
#define LOAD_COEF                                                                           \
    const float cwa = coef[0], cda = coef[1], awa = coef[2], ada = coef[3];                 \
    const float epsa = coef[4], qa = coef[5];                                               \
    const float cwb = coef[8], cdb = coef[9], awb = coef[10], adb = coef[11];               \
    const float epsb = coef[12], qb = coef[13];

// The input of row R (unsigned, it may pass the column's end): its difference from the row
// above, rows clamped to the column, so that it is 0 at row 0 and past the end (the clamped
// edges repeat the end rows), and exactly 0 wherever the column is constant. Needs src, base,
// width, height and lut.
#define DIFF_AT(R)                                                                          \
    (load_src(src, base + (size_t)min((uint)(R), height - 1) * width, lut) -                \
     load_src(src, base + (size_t)min((R) > 0 ? (uint)(R) - 1 : 0u, height - 1) * width, lut))

// One step of both sections' poles (state ya, da and yb, db); identical operations to
// recursive_line.
#define STEP(IN)                                                                            \
    {                                                                                       \
        pixel t = (IN) - epsa * ya + (da - qa * da);                                        \
        da = t;                                                                             \
        ya += t;                                                                            \
        t = (IN) - epsb * yb + (db - qb * db);                                              \
        db = t;                                                                             \
        yb += t;                                                                            \
    }
// Both sections' outputs, causal and anticausal.
#define CAUSAL_OUT ((cwa * ya + cda * da) + (cwb * yb + cdb * db))
#define ANTICAUSAL_OUT ((awa * ya + ada * da) + (awb * yb + adb * db))

// The walks along a chunk load BATCH rows before stepping through them, so that a work-item
// has BATCH loads in flight instead of one (the steps form a dependent chain; the loads do
// not). AFTER(i) runs after the step of chunk row i, with xr the sample of that row; the walks
// need base, y0, n, width, src, lut, the state (ya, da, yb, db) and the inputs next to the
// walk (xr, below) in scope.
#ifndef BATCH
#define BATCH 16
#endif

// Loads rows ROW(j) (j = 0 .. BATCH - 1, an expression in j) into V.
#define LOAD_ROWS(V, ROW)                                                                   \
    for (uint j = 0; j < BATCH; j++)                                                        \
        V[j] = load_src(src, base + (size_t)(ROW) * width, lut);

// One causal step on sample XV of the next row: its difference from xr (the row above); one
// anticausal step on sample XV of the next row up: the difference of xr (the row below) from
// it. Either leaves xr = XV.
#define CAUSAL_ROW(XV)                                                                      \
    {                                                                                       \
        const pixel dv = (XV) - xr;                                                         \
        STEP(dv)                                                                            \
        xr = (XV);                                                                          \
    }
#define ANTICAUSAL_ROW(XV)                                                                  \
    {                                                                                       \
        const pixel dv = xr - (XV);                                                         \
        STEP(dv)                                                                            \
        xr = (XV);                                                                          \
    }

// Steps through a loaded batch V: causally over chunk rows I .. I + BATCH - 1, anticausally
// over I - 1 down to I - BATCH.
#define CAUSAL_BATCH(V, I, AFTER)                                                           \
    for (uint j = 0; j < BATCH; j++) {                                                      \
        CAUSAL_ROW(V[j])                                                                    \
        AFTER(I + j)                                                                        \
    }
#define ANTICAUSAL_BATCH(V, I, AFTER)                                                       \
    for (uint j = 0; j < BATCH; j++) {                                                      \
        ANTICAUSAL_ROW(V[j])                                                                \
        AFTER(I - 1 - j)                                                                    \
    }

// The rows a whole batch does not cover (fewer than BATCH, in a short last chunk), as one
// partial batch: their loads are all issued before the steps, as in a whole batch, instead of
// one dependent load per step.
#define CAUSAL_TAIL(AFTER)                                                                  \
    if (i < n) {                                                                            \
        pixel v[BATCH];                                                                     \
        for (uint j = 0; j < BATCH; j++)                                                    \
            if (i + j < n)                                                                  \
                v[j] = load_src(src, base + (size_t)(y0 + i + j) * width, lut);             \
        for (uint j = 0; j < BATCH && i + j < n; j++) {                                     \
            CAUSAL_ROW(v[j])                                                                \
            AFTER(i + j)                                                                    \
        }                                                                                   \
    }
#define ANTICAUSAL_TAIL(AFTER)                                                              \
    if (i > 0) {                                                                            \
        pixel v[BATCH];                                                                     \
        for (uint j = 0; j < BATCH; j++)                                                    \
            if (j < i)                                                                      \
                v[j] = load_src(src, base + (size_t)(y0 + i - 1 - j) * width, lut);         \
        for (uint j = 0; j < BATCH && j < i; j++) {                                         \
            ANTICAUSAL_ROW(v[j])                                                            \
            AFTER(i - 1 - j)                                                                \
        }                                                                                   \
    }

// With PREFETCH the walks are double-buffered: the next BATCH rows are loaded before the
// current ones are stepped through, so loads stay in flight during the steps too (H100, 16 MP,
// 1 ch f32 with BATCH 32: the final passes 0.079 / 0.075 -> 0.073 / 0.069 ms per axis). It
// holds 2 × BATCH pixels in registers; the host sets it for the carried final walks of
// 1-channel f32 and 8-bit sources, not for block_overlap's (faster without it on an H200).
// Causal: down rows y0 .. y0 + n - 1, with xr the sample above the first. Anticausal: up rows
// y0 + n - 1 .. y0, with xr the sample below the last.
#ifdef PREFETCH
#define CAUSAL_WALK(AFTER)                                                                  \
    {                                                                                       \
        uint i = 0;                                                                         \
        pixel v[BATCH], w[BATCH];                                                           \
        if (n >= BATCH)                                                                     \
            LOAD_ROWS(v, y0 + j)                                                            \
        for (; i + BATCH <= n; i += BATCH) {                                                \
            if (i + 2 * BATCH <= n)                                                         \
                LOAD_ROWS(w, y0 + i + BATCH + j)                                            \
            CAUSAL_BATCH(v, i, AFTER)                                                       \
            for (uint j = 0; j < BATCH; j++)                                                \
                v[j] = w[j];                                                                \
        }                                                                                   \
        CAUSAL_TAIL(AFTER)                                                                  \
    }
#define ANTICAUSAL_WALK(AFTER)                                                              \
    {                                                                                       \
        uint i = n;                                                                         \
        pixel v[BATCH], w[BATCH];                                                           \
        if (n >= BATCH)                                                                     \
            LOAD_ROWS(v, y0 + n - 1 - j)                                                    \
        for (; i >= BATCH; i -= BATCH) {                                                    \
            if (i >= 2 * BATCH)                                                             \
                LOAD_ROWS(w, y0 + i - BATCH - 1 - j)                                        \
            ANTICAUSAL_BATCH(v, i, AFTER)                                                   \
            for (uint j = 0; j < BATCH; j++)                                                \
                v[j] = w[j];                                                                \
        }                                                                                   \
        ANTICAUSAL_TAIL(AFTER)                                                              \
    }
#else
#define CAUSAL_WALK(AFTER)                                                                  \
    {                                                                                       \
        uint i = 0;                                                                         \
        for (; i + BATCH <= n; i += BATCH) {                                                \
            pixel v[BATCH];                                                                 \
            LOAD_ROWS(v, y0 + i + j)                                                        \
            CAUSAL_BATCH(v, i, AFTER)                                                       \
        }                                                                                   \
        CAUSAL_TAIL(AFTER)                                                                  \
    }
#define ANTICAUSAL_WALK(AFTER)                                                              \
    {                                                                                       \
        uint i = n;                                                                         \
        for (; i >= BATCH; i -= BATCH) {                                                    \
            pixel v[BATCH];                                                                 \
            LOAD_ROWS(v, y0 + i - 1 - j)                                                    \
            ANTICAUSAL_BATCH(v, i, AFTER)                                                   \
        }                                                                                   \
        ANTICAUSAL_TAIL(AFTER)                                                              \
    }
#endif

// The zero-state summaries as weighted sums of the chunk's inputs, without a walk: a chain of
// dependent steps per chunk is what bounded this kernel (halving its reads did not speed it
// up), while a sum's rows are independent. In a section's (y, d) state, with T its transition
// and e = (1, 1) (src/filter/gaussian.rs, anticausal_shares and causal_shares, made on the host in
// f64 from the same f32 coefficients):
// (x being the inputs, the differences of DIFF_AT; the host makes the tables from the poles
// alone, n0 = m1 = 1 and n1 = m2 = 0 (gaussian::pole_block), so the head and tail weigh
// nothing and the kernels leave them out)
//   causal, at the chunk's last row:  sum_i T^(n-1-i) e (n0 x[i] + n1 x[i-1]), so x[n-1-r]
//     weighs n0 g[r] + n1 g[r-1] (g[j] = T^j e), counted from the chunk's end so that one
//     table serves the shorter last chunk, and x[-1], the input before the chunk, n1 g[n-1];
//   anticausal, at its first row:     sum_j T^j e (m1 x[j+1] + m2 x[j+2]), so x[i] weighs
//     m1 g[i-1] + m2 g[i-2] for i = 0 ..= n, and x[n+1] weighs m2 g[n-1].
// gain holds 4 floats per weight (section a's y and d, then section b's): the anticausal
// weights of x[0 ..= CHUNK], the anticausal m2 g[j] for j < CHUNK, the causal weights by
// distance r < CHUNK from the end, then the causal n1 g[j] for j < CHUNK.
#define ANTI_W(i) (gain + 4 * (i))
#define ANTI_TAIL_W(j) (gain + 4 * (CHUNK + 1 + (j)))
#define CAUSAL_W(r) (gain + 4 * (2 * CHUNK + 1 + (r)))
#define CAUSAL_HEAD_W(j) (gain + 4 * (3 * CHUNK + 1 + (j)))

#define SHARE(S, H, X)                                                                      \
    {                                                                                       \
        __constant const float *h = (H);                                                    \
        S[0] += h[0] * (X);                                                                 \
        S[1] += h[1] * (X);                                                                 \
        S[2] += h[2] * (X);                                                                 \
        S[3] += h[3] * (X);                                                                 \
    }

// SPLIT work-items share a chunk, each summing CHUNK / SPLIT of its rows; their partial sums
// meet in local memory. A work-group is SUM_LANES columns × SPLIT parts of one chunk.
#ifndef SPLIT
#define SPLIT 1
#endif
#ifndef SUM_LANES
#define SUM_LANES 64
#endif
#define PART_ROWS (CHUNK / SPLIT)

#ifndef SAMPLES // only block_overlap walks sample columns
__kernel __attribute__((reqd_work_group_size(SUM_LANES, SPLIT, 1))) void
block_summary(__global const src_t *src, __global float *sum, __constant float *coef,
              __constant float *gain, __constant float *lut, uint width, uint height,
              uint chunks)
{
    const uint x = get_global_id(0), k = get_group_id(1), p = get_global_id(2);
    const uint part = get_local_id(1);
    const size_t plane = (size_t)width * height;
    const size_t base = p * plane + x;
    const uint y0 = k * CHUNK, n = min((uint)CHUNK, height - y0);
    // Causal (y, d) of sections a and b, then anticausal.
    pixel c[4] = {0.0f, 0.0f, 0.0f, 0.0f}, a[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    if (x < width) {
        const uint i0 = part * PART_ROWS;
        // The row above the part's first, which its first input is the difference from.
        // Clamped to the column: a part past a short last chunk's end loads a row it never uses.
        pixel above = load_src(
            src, base + (size_t)min(y0 + i0 > 0 ? y0 + i0 - 1 : 0u, height - 1) * width, lut);
        if (n == CHUNK) {
#pragma unroll
            for (uint j = 0; j < PART_ROWS; j++) {
                const uint i = i0 + j;
                const pixel xv = load_src(src, base + (size_t)(y0 + i) * width, lut);
                const pixel v = xv - above;
                above = xv;
                SHARE(c, CAUSAL_W(CHUNK - 1 - i), v)
                SHARE(a, ANTI_W(i), v)
            }
        } else {
            for (uint i = i0; i < min(i0 + PART_ROWS, n); i++) {
                const pixel xv = load_src(src, base + (size_t)(y0 + i) * width, lut);
                const pixel v = xv - above;
                above = xv;
                SHARE(c, CAUSAL_W(n - 1 - i), v)
                SHARE(a, ANTI_W(i), v)
            }
        }
        // The poles alone take no input from before the chunk causally (its head weighs
        // nothing), and anticausally one from after it, 0 past the image's end.
        if (part == SPLIT - 1) {
            const pixel xn = DIFF_AT(y0 + n);
            SHARE(a, ANTI_W(n), xn)
        }
    }
    const size_t s = ((size_t)(p * chunks + k) * 8) * width + x;
#if SPLIT == 1
    if (x < width)
        for (uint e = 0; e < 4; e++) {
            VSTORE(c[e], s + e * width, sum);
            VSTORE(a[e], s + (4 + e) * width, sum);
        }
#else
    __local pixel parts[8][SPLIT][SUM_LANES];
    const uint lx = get_local_id(0);
    for (uint e = 0; e < 4; e++) {
        parts[e][part][lx] = c[e];
        parts[4 + e][part][lx] = a[e];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (x < width)
        for (uint e = part; e < 8; e += SPLIT) {
            pixel t = parts[e][0][lx];
            for (uint q = 1; q < SPLIT; q++)
                t += parts[e][q][lx];
            VSTORE(t, s + e * width, sum);
        }
#endif
}
#endif

// (y, d) <- M (y, d) + (zy, zd), M row-major.
#define APPLY(M, Y, D, ZY, ZD)                                                              \
    {                                                                                       \
        const pixel ny = (M)[0] * (Y) + (M)[1] * (D) + (ZY);                                \
        const pixel nd = (M)[2] * (Y) + (M)[3] * (D) + (ZD);                                \
        Y = ny;                                                                             \
        D = nd;                                                                             \
    }

// Chunks whose summaries the carry loads before applying them.
#define CARRY_BATCH 4

// One work-item per (column, plane, direction): dimension 2 picks the causal walk down the
// chunks (0) or the anticausal walk back up (1), which are independent. A walk is a chain of
// dependent steps, but the summaries it consumes are not: CARRY_BATCH chunks' summaries are
// loaded before they are applied, so their latencies overlap.
#ifndef SAMPLES // only block_overlap walks sample columns
__kernel void block_carry(__global const src_t *src, __global float *sum,
                          __constant float *coef, __constant float *carry,
                          __constant float *lut, uint width, uint height, uint chunks)
{
    const uint x = get_global_id(0), p = get_global_id(1), anticausal = get_global_id(2);
    if (x >= width)
        return;
    __constant float *full_a = carry, *last_a = carry + 4, *full_b = carry + 8,
                     *last_b = carry + 12;
    const size_t s = (size_t)p * chunks * 8 * width + x + anticausal * 4 * width;

    // Both walks start from a zero state: past the clamped edges every difference is 0.
    pixel ya = 0.0f, da = 0.0f, yb = 0.0f, db = 0.0f;
    // Causal: chunks 0, 1, ...; anticausal: chunks - 1, chunks - 2, ... (the first of which
    // is the last chunk, with its own length).
    for (uint done = 0; done < chunks; done += CARRY_BATCH) {
        pixel z[CARRY_BATCH][4];
        for (uint j = 0; j < CARRY_BATCH; j++) {
            const uint step = min(done + j, chunks - 1);
            const uint k = anticausal ? chunks - 1 - step : step;
            const size_t c = s + (size_t)k * 8 * width;
            for (uint e = 0; e < 4; e++)
                z[j][e] = VLOAD(c + e * width, sum);
        }
        for (uint j = 0; j < CARRY_BATCH && done + j < chunks; j++) {
            const uint step = done + j;
            const uint k = anticausal ? chunks - 1 - step : step;
            const size_t c = s + (size_t)k * 8 * width;
            VSTORE(ya, c, sum);
            VSTORE(da, c + width, sum);
            VSTORE(yb, c + 2 * width, sum);
            VSTORE(db, c + 3 * width, sum);
            const bool last = anticausal && step == 0;
            APPLY(last ? last_a : full_a, ya, da, z[j][0], z[j][1])
            APPLY(last ? last_b : full_b, yb, db, z[j][2], z[j][3])
        }
    }
}
#endif

// The final walks' outputs: the causal one into the tile, the anticausal one added to it and
// the sum to the row's own sample xr (the filter's output: the input plus the sections' sums,
// which vanish where the column is constant), and the tile, once every work-item of
// the group has filled its chunk, written transposed: rows lx, lx + TILE, ... of this
// work-item's chunk along the transposed rows, so consecutive work-items write consecutive
// pixels.
#define CAUSAL_TO_TILE(i) tile[ly][i][lx] = CAUSAL_OUT;
#define ANTICAUSAL_TO_TILE(i) tile[ly][i][lx] = xr + (tile[ly][i][lx] + ANTICAUSAL_OUT);
#ifdef SAMPLES
// Pixel column xbase + q of the tile is row xbase + q of the transposed image, where this
// chunk's rows are CH × n consecutive samples: consecutive work-items write consecutive ones.
#define STORE_TILE_TRANSPOSED                                                               \
    if (k < chunks) {                                                                       \
        const uint xbase = get_group_id(0) * (TILE / CH), n = min((uint)CHUNK, height - y0); \
        for (uint q = 0; q < TILE / CH && xbase + q < width / CH; q++)                      \
            for (uint e = lx; e < n * CH; e += TILE) {                                      \
                const uint r = e / CH, c = e % CH;                                          \
                STORE_SAMPLE(&tile[ly][r][q * CH], c,                                       \
                             ((size_t)(xbase + q) * height + y0 + r) * CH + c, dst);        \
            }                                                                               \
    }
#else
#define STORE_TILE_TRANSPOSED                                                               \
    if (k < chunks) {                                                                       \
        const uint xbase = get_group_id(0) * TILE;                                          \
        for (uint r = lx; r < CHUNK && y0 + r < height; r += TILE)                          \
            for (uint j = 0; j < TILE && xbase + j < width; j++)                            \
                store_dst(tile[ly][r][j], p * plane + (size_t)(xbase + j) * height + y0 + r, \
                          dst);                                                             \
    }
#endif

// The ids of a tiled walk (block_final, block_overlap): column x, chunk k, plane p; its place
// lx, ly in the work-group's tile; the chunk's first row y0.
#define TILE_IDS                                                                            \
    const uint x = get_global_id(0), k = get_global_id(1), p = get_global_id(2);           \
    const uint lx = get_local_id(0), ly = get_local_id(1);                                  \
    const size_t plane = (size_t)width * height;                                            \
    const uint y0 = k * CHUNK;
// What a walk of column x needs first: the coefficients and the column's base index.
#define COLUMN_START                                                                        \
    LOAD_COEF                                                                               \
    const size_t base = p * plane + x;

#ifndef SAMPLES // only block_overlap walks sample columns
__kernel __attribute__((reqd_work_group_size(TILE, GROUP_CHUNKS, 1))) void
block_final(__global const src_t *src, __global dst_t *dst, __global const float *sum,
            __constant float *coef, __constant float *lut, uint width, uint height,
            uint chunks)
{
    __local pixel tile[GROUP_CHUNKS][CHUNK][TILE_STRIDE];
    TILE_IDS
    if (x < width && k < chunks) {
        COLUMN_START
        const uint n = min((uint)CHUNK, height - y0);
        const size_t s = ((size_t)(p * chunks + k) * 8) * width + x;

        pixel ya = VLOAD(s, sum), da = VLOAD(s + width, sum);
        pixel yb = VLOAD(s + 2 * width, sum), db = VLOAD(s + 3 * width, sum);
        pixel xr = load_src(src, base + (size_t)(k == 0 ? 0 : y0 - 1) * width, lut);
        CAUSAL_WALK(CAUSAL_TO_TILE)

        ya = VLOAD(s + 4 * width, sum);
        da = VLOAD(s + 5 * width, sum);
        yb = VLOAD(s + 6 * width, sum);
        db = VLOAD(s + 7 * width, sum);
        xr = load_src(src, base + (size_t)min(y0 + n, height - 1) * width, lut);
        ANTICAUSAL_WALK(ANTICAUSAL_TO_TILE)
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    STORE_TILE_TRANSPOSED
}
#endif

// Overlapped chunks: no summaries and no carries. Each chunk finds its incoming states itself
// from the REACH rows on either side of it (gaussian::settle_rows): the causal state entering
// it is the zero-state causal summary of the REACH rows above, the anticausal one that of the
// REACH rows below, both weighted sums like block_summary's (no walk). What the truncation
// leaves out is the states' response to rows further away, which has decayed below the
// tolerance by the chunk's first row. Both halves run on the differences, which are exactly 0
// on the clamped rows beyond either end, so those weigh nothing: a reach to the column's end
// is exact, whatever sigma. Per axis the image is read
// once from memory (the overlaps are the neighbours' rows, read at about the same time) and
// written once, in one kernel, against the carried pipeline's three kernels and second read;
// the price is 2 × REACH rows of sums per chunk, about 10 sigma each way, which is why the
// host uses it at small sigmas.
#ifndef REACH
#define REACH 1
#endif
#define OVER_CAUSAL_W(r) (gain + 4 * (r))
#define OVER_CAUSAL_HEAD_W (gain + 4 * REACH)
#define OVER_ANTI_W(i) (gain + 4 * (REACH + (i)))
#define OVER_ANTI_TAIL_W (gain + 4 * (2 * REACH + 1))

// Row R of the column, clamped to its last.
#define ROW_AT(R) load_src(src, base + (size_t)min((uint)(R), height - 1) * width, lut)

// Adds REACH weighted differences into the summary S, WEIGHT(r) their weights: difference r is
// DIFF(M(r), M(r + 1)) of the rows M(0) .. M(REACH) (M a macro of one row index), each loaded once
// and BATCH of them loaded before they are summed. Neighbouring differences share a row, so
// this reads REACH + 1 rows where DIFF_AT would read 2 × REACH, the same values subtracted in
// the same order.
#define REACH_SUM(S, M, DIFF, WEIGHT)                                                       \
    {                                                                                       \
        pixel m0 = ROW_AT(M(0));                                                            \
        for (uint r0 = 0; r0 < REACH; r0 += BATCH) {                                        \
            pixel v[BATCH];                                                                 \
            for (uint j = 0; j < BATCH; j++)                                                \
                if (r0 + j < REACH) {                                                       \
                    const uint i = r0 + j + 1;                                              \
                    v[j] = ROW_AT(M(i));                                                    \
                }                                                                           \
            for (uint j = 0; j < BATCH; j++)                                                \
                if (r0 + j < REACH) {                                                       \
                    SHARE(S, WEIGHT(r0 + j), DIFF(m0, v[j]))                                \
                    m0 = v[j];                                                              \
                }                                                                           \
        }                                                                                   \
    }

// A walk's incoming state (ya, da, yb, db): REACH_SUM's differences of the rows M(i) (the
// poles alone read no row past them: the table's head and tail weigh nothing).
#define STATE_FROM_REACH(M, DIFF, WEIGHT)                                                   \
    {                                                                                       \
        pixel s[4] = {0.0f, 0.0f, 0.0f, 0.0f};                                              \
        REACH_SUM(s, M, DIFF, WEIGHT)                                                       \
        ya = s[0];                                                                          \
        da = s[1];                                                                          \
        yb = s[2];                                                                          \
        db = s[3];                                                                          \
    }

// Upward, difference r is row ABOVE(r) less the row above it, ABOVE(r + 1) (row 0 less
// itself once the column's first row is reached); downward, row BELOW(r + 1) less the row
// above it.
#define UPWARD(A, B) ((A) - (B))
#define DOWNWARD(A, B) ((B) - (A))

__kernel __attribute__((reqd_work_group_size(TILE, GROUP_CHUNKS, 1))) void
block_overlap(__global const src_t *src, __global dst_t *dst, __constant float *coef,
              __constant float *gain, __constant float *lut, uint width, uint height,
              uint chunks)
{
    __local pixel tile[GROUP_CHUNKS][CHUNK][TILE_STRIDE];
    TILE_IDS
    const uint chan = x % CH;
    if (x < width && k < chunks) {
        COLUMN_START
        const uint n = min((uint)CHUNK, height - y0), end = y0 + n;
        // Rows above the column read as its first (whose difference from itself is 0); rows
        // below it ROW_AT clamps to its last.
#define ABOVE(r) (y0 > (r) ? y0 - 1 - (r) : 0)
#define BELOW(i) (end + (i))
        pixel ya, da, yb, db;
        STATE_FROM_REACH(ABOVE, UPWARD, OVER_CAUSAL_W)
        pixel xr = load_src(src, base + (size_t)ABOVE(0) * width, lut);
        CAUSAL_WALK(CAUSAL_TO_TILE)

#define ANTI_ROW_W(r) OVER_ANTI_W((r) + 1)
        STATE_FROM_REACH(BELOW, DOWNWARD, ANTI_ROW_W)
        xr = load_src(src, base + (size_t)min(end, height - 1) * width, lut);
        ANTICAUSAL_WALK(ANTICAUSAL_TO_TILE)
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    STORE_TILE_TRANSPOSED
}
