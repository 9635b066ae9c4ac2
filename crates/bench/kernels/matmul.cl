// C = A·B for row-major A (M×K), B (K×N) and C (M×N): the optimisation ladder of "OpenCL:
// from naive towards more insightful programming" and of a blog article on OpenCL matrix
// multiplication (local tiles, then work per thread), continued with the steps of C. Nugteren's
// "Tutorial: OpenCL SGEMM tuning for Kepler" (wider loads, 2D register blocking). Every rung
// is a separate kernel; every tunable is a -D define with a default, so the file compiles
// alone.
//
// REAL is the element type: float, or int for the blog article's integer variant (-DREAL=int
// -DINTEGER). Indices are 32-bit: the host refuses matrices of 2^31 elements or more.
//
// Rungs 1-8 take any M, N, K and guard every access. Rungs 9 and 10 need M, N and K to be
// multiples of their tiles; the host pads on the device (matrix_pad/matrix_unpad, timed with
// the product) when they are not.

#ifndef REAL
#define REAL float
#endif

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define REAL4 CAT(REAL, 4)

#ifdef INTEGER
#define MAC(acc, a, b) ((acc) += (a) * (b))
#else
// mad: the device's fastest multiply-add (a fused one where the hardware has it).
#define MAC(acc, a, b) ((acc) = mad((a), (b), (acc)))
#endif

// ---- 1. naive: one work-item per element, dimension 0 walks the rows --------------------
// Neighbouring work-items take neighbouring rows: they read A K elements apart and write C N
// elements apart, and every step reads and writes C in global memory.
__kernel void matmul_naive(__global const REAL *A, __global const REAL *B, __global REAL *C,
                           uint M, uint N, uint K)
{
    const uint row = get_global_id(0);
    const uint col = get_global_id(1);
    if (row >= M || col >= N)
        return;
    C[row * N + col] = 0;
    for (uint k = 0; k < K; k++)
        C[row * N + col] += A[row * K + k] * B[k * N + col];
}

// ---- 2. coalesced: dimension 0 walks the columns ----------------------------------------
// The same loop with the index mapping swapped: neighbouring work-items now read neighbouring
// elements of a row of B and write neighbouring elements of C; A's element is shared.
__kernel void matmul_coalesced(__global const REAL *A, __global const REAL *B,
                               __global REAL *C, uint M, uint N, uint K)
{
    const uint col = get_global_id(0);
    const uint row = get_global_id(1);
    if (row >= M || col >= N)
        return;
    C[row * N + col] = 0;
    for (uint k = 0; k < K; k++)
        C[row * N + col] += A[row * K + k] * B[k * N + col];
}

// ---- 3. private accumulator -------------------------------------------------------------
// C may alias A or B as far as the compiler knows, so rungs 1-2 store C on every step. A
// private sum is written once.
__kernel void matmul_private(__global const REAL *A, __global const REAL *B, __global REAL *C,
                             uint M, uint N, uint K)
{
    const uint col = get_global_id(0);
    const uint row = get_global_id(1);
    if (row >= M || col >= N)
        return;
    REAL acc = 0;
    for (uint k = 0; k < K; k++)
        MAC(acc, A[row * K + k], B[k * N + col]);
    C[row * N + col] = acc;
}

// ---- 4. one whole output row per work-item ----------------------------------------------
// Step 2.5 of "OpenCL: from naive towards more insightful programming": M work-items, each
// with N·K multiply-adds. BT is B transposed (N×K), made on the device, so each work-item
// reads both operands in order, as the article does.
__kernel void matmul_row(__global const REAL *A, __global const REAL *BT, __global REAL *C,
                         uint M, uint N, uint K)
{
    const uint row = get_global_id(0);
    if (row >= M)
        return;
    for (uint col = 0; col < N; col++) {
        REAL acc = 0;
        for (uint k = 0; k < K; k++)
            MAC(acc, A[row * K + k], BT[col * K + k]);
        C[row * N + col] = acc;
    }
}

// ---- 5. the row of A in private memory --------------------------------------------------
// KDIM (= K, a build option) sizes the private copy. Private arrays this large do not fit in
// registers: the compiler places them in (cached) per-work-item memory, as the article warns.
#ifndef KDIM
#define KDIM 16
#endif

__kernel void matmul_row_private(__global const REAL *A, __global const REAL *BT,
                                 __global REAL *C, uint M, uint N, uint K)
{
    const uint row = get_global_id(0);
    if (row >= M)
        return;
    REAL arow[KDIM];
    for (uint k = 0; k < KDIM; k++)
        arow[k] = A[row * KDIM + k];
    for (uint col = 0; col < N; col++) {
        REAL acc = 0;
        for (uint k = 0; k < KDIM; k++)
            MAC(acc, arow[k], BT[col * KDIM + k]);
        C[row * N + col] = acc;
    }
}

// ---- 6. the column of B shared through local memory -------------------------------------
// The work-group copies each column of B (a row of BT) into local memory once, and all its
// work-items use it. Work-items past the last row still help copy and meet every barrier.
__kernel void matmul_row_local(__global const REAL *A, __global const REAL *BT,
                               __global REAL *C, uint M, uint N, uint K)
{
    const uint row = get_global_id(0);
    const uint lid = get_local_id(0);
    const uint lsize = get_local_size(0);
    const bool live = row < M;
    __local REAL bcol[KDIM];
    REAL arow[KDIM];
    for (uint k = 0; k < KDIM; k++)
        arow[k] = live ? A[row * KDIM + k] : 0;
    for (uint col = 0; col < N; col++) {
        for (uint k = lid; k < KDIM; k += lsize)
            bcol[k] = BT[col * KDIM + k];
        barrier(CLK_LOCAL_MEM_FENCE);
        REAL acc = 0;
        for (uint k = 0; k < KDIM; k++)
            MAC(acc, arow[k], bcol[k]);
        if (live)
            C[row * N + col] = acc;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}

// ---- 7. square local-memory tiles, one output per work-item -----------------------------
// The blog article's kernel: a TS×TS work-group stages TS×TS tiles of A and B in local
// memory, so each element loaded from global memory is used TS times. Out-of-range elements
// load as 0.
#ifndef TS
#define TS 16
#endif

__kernel __attribute__((reqd_work_group_size(TS, TS, 1)))
void matmul_tiled(__global const REAL *A, __global const REAL *B, __global REAL *C,
                  uint M, uint N, uint K)
{
    const uint tx = get_local_id(0);
    const uint ty = get_local_id(1);
    const uint col = get_group_id(0) * TS + tx;
    const uint row = get_group_id(1) * TS + ty;
    __local REAL As[TS][TS];
    __local REAL Bs[TS][TS];
    REAL acc = 0;
    for (uint t = 0; t < K; t += TS) {
        As[ty][tx] = (row < M && t + tx < K) ? A[row * K + t + tx] : 0;
        Bs[ty][tx] = (t + ty < K && col < N) ? B[(t + ty) * N + col] : 0;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (uint k = 0; k < TS; k++)
            MAC(acc, As[ty][k], Bs[k][tx]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (row < M && col < N)
        C[row * N + col] = acc;
}

// ---- 8. tiles plus work per thread ------------------------------------------------------
// TSW×TSW tiles moved by TSW × (TSW/WPT) work-items; each computes WPT outputs of one column,
// RTS rows apart, so one value of B in a register serves WPT multiply-adds.
#ifndef TSW
#define TSW 32
#endif
#ifndef WPT
#define WPT 8
#endif
#define RTS (TSW / WPT)

__kernel __attribute__((reqd_work_group_size(TSW, RTS, 1)))
void matmul_wpt(__global const REAL *A, __global const REAL *B, __global REAL *C,
                uint M, uint N, uint K)
{
    const uint tx = get_local_id(0);
    const uint ty = get_local_id(1);
    const uint col = get_group_id(0) * TSW + tx;
    const uint row0 = get_group_id(1) * TSW + ty;
    __local REAL As[TSW][TSW];
    __local REAL Bs[TSW][TSW];
    REAL acc[WPT];
#pragma unroll
    for (uint w = 0; w < WPT; w++)
        acc[w] = 0;
    for (uint t = 0; t < K; t += TSW) {
#pragma unroll
        for (uint w = 0; w < WPT; w++) {
            const uint r = ty + w * RTS;
            As[r][tx] = (row0 + w * RTS < M && t + tx < K) ? A[(row0 + w * RTS) * K + t + tx] : 0;
            Bs[r][tx] = (t + r < K && col < N) ? B[(t + r) * N + col] : 0;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (uint k = 0; k < TSW; k++) {
            const REAL b = Bs[k][tx];
#pragma unroll
            for (uint w = 0; w < WPT; w++)
                MAC(acc[w], As[ty + w * RTS][k], b);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
#pragma unroll
    for (uint w = 0; w < WPT; w++)
        if (row0 + w * RTS < M && col < N)
            C[(row0 + w * RTS) * N + col] = acc[w];
}

// ---- 9. wider types: float4 or float8 loads and multiply-adds ---------------------------
// The float4 and float8 steps of "OpenCL: from naive towards more insightful programming",
// on the tiled kernel (Nugteren's step 4): a TSV×TSV tile, each work-item computing VW
// neighbouring outputs of a row as one vector, loading A and B VW elements at a time. Needs
// M, N, K multiples of TSV (the host pads).
#ifndef TSV
#define TSV 32
#endif
#ifndef VW
#define VW 4
#endif
#define REALV CAT(REAL, VW)
#define VLOAD CAT(vload, VW)
#define VSTORE CAT(vstore, VW)

__kernel __attribute__((reqd_work_group_size(TSV / VW, TSV, 1)))
void matmul_vector(__global const REALV *A, __global const REALV *B, __global REALV *C,
                   uint M, uint N, uint K)
{
    const uint tx = get_local_id(0);
    const uint ty = get_local_id(1);
    const uint row = get_group_id(1) * TSV + ty;
    const uint colv = get_group_id(0) * (TSV / VW) + tx;
    const uint KV = K / VW, NV = N / VW;
    // One column of padding: the TSV/VW work-items of a row read As[ty][k] from different
    // banks than the rows beside them.
    __local REAL As[TSV][TSV + 1];
    __local REALV Bs[TSV][TSV / VW];
    REALV acc = 0;
    for (uint t = 0; t < KV; t += TSV / VW) {
        VSTORE(A[row * KV + t + tx], 0, &As[ty][tx * VW]);
        Bs[ty][tx] = B[(t * VW + ty) * NV + colv];
        barrier(CLK_LOCAL_MEM_FENCE);
        for (uint k = 0; k < TSV; k++)
            MAC(acc, (REALV)(As[ty][k]), Bs[k][tx]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    C[row * NV + colv] = acc;
}

// ---- 10. 2D register blocking, wide loads, double-buffered local memory -----------------
// Nugteren's steps 6-8 and the CUDA SGEMM practice: a TSM×TSN tile of C per work-group of
// (TSN/WPTN)×(TSM/WPTM) work-items, each holding a WPTM×WPTN block of C in registers. Per
// step k it reads WPTM values of A and WPTN of B from local memory (float4 reads) and does
// WPTM·WPTN multiply-adds. A's tile is stored transposed (k-major) so those reads are
// contiguous; its rows are padded by PADA floats against bank conflicts in the transposing
// stores. While one TSK-deep tile is used, the next is loaded from global memory (float4)
// into registers and then into the other local buffer: one barrier per tile.
//
// A work-item owns rows tm*4 + g*(TSM/WPTM)*4 + {0..3} for g < WPTM/4, and likewise columns,
// so neighbouring work-items read neighbouring float4s of B and write neighbouring float4s
// of C. Needs M % TSM == N % TSN == K % TSK == 0 (the host pads).
#ifndef TSM
#define TSM 128
#endif
#ifndef TSN
#define TSN 128
#endif
#ifndef TSK
#define TSK 8
#endif
#ifndef WPTM
#define WPTM 8
#endif
#ifndef WPTN
#define WPTN 8
#endif
#ifndef PADA
#define PADA 4
#endif
#define RTSM (TSM / WPTM)
#define RTSN (TSN / WPTN)
#define WGS (RTSM * RTSN)
// float4 loads per work-item per tile
#define LPTA (TSM * TSK / 4 / WGS)
#define LPTB (TSK * TSN / 4 / WGS)
#define LDA4 ((TSM + PADA) / 4)

#if (TSM * TSK / 4) % WGS != 0 || (TSK * TSN / 4) % WGS != 0 || WPTM % 4 != 0 \
    || WPTN % 4 != 0 || TSK % 4 != 0 || PADA % 4 != 0
#error "matmul_blocked: tile parameters do not divide evenly"
#endif

// Global -> registers: the tile of A at rows offM.., columns t..; of B at rows t.., columns
// offN.. (float4 units throughout).
inline void load_tile(__global const REAL4 *A, __global const REAL4 *B, REAL4 *ra, REAL4 *rb,
                      uint tid, uint offM, uint offN, uint N, uint K, uint t)
{
#pragma unroll
    for (uint p = 0; p < LPTA; p++) {
        const uint l = tid + p * WGS;
        const uint r = l / (TSK / 4), kv = l % (TSK / 4);
        ra[p] = A[((offM + r) * K + t) / 4 + kv];
    }
#pragma unroll
    for (uint p = 0; p < LPTB; p++) {
        const uint l = tid + p * WGS;
        const uint r = l / (TSN / 4), cv = l % (TSN / 4);
        rb[p] = B[((t + r) * N + offN) / 4 + cv];
    }
}

// Registers -> one local buffer: A transposed (k-major), B as it is.
inline void store_tile(__local REAL4 (*as4)[LDA4], __local REAL4 (*bs)[TSN / 4],
                       const REAL4 *ra, const REAL4 *rb, uint tid)
{
    __local REAL *as = (__local REAL *)as4;
#pragma unroll
    for (uint p = 0; p < LPTA; p++) {
        const uint l = tid + p * WGS;
        const uint r = l / (TSK / 4), kv = l % (TSK / 4);
        as[(kv * 4 + 0) * (TSM + PADA) + r] = ra[p].x;
        as[(kv * 4 + 1) * (TSM + PADA) + r] = ra[p].y;
        as[(kv * 4 + 2) * (TSM + PADA) + r] = ra[p].z;
        as[(kv * 4 + 3) * (TSM + PADA) + r] = ra[p].w;
    }
#pragma unroll
    for (uint p = 0; p < LPTB; p++) {
        const uint l = tid + p * WGS;
        const uint r = l / (TSN / 4), cv = l % (TSN / 4);
        bs[r][cv] = rb[p];
    }
}

__kernel __attribute__((reqd_work_group_size(RTSN, RTSM, 1)))
void matmul_blocked(__global const REAL4 *A, __global const REAL4 *B, __global REAL4 *C,
                    uint M, uint N, uint K)
{
    const uint tn = get_local_id(0);
    const uint tm = get_local_id(1);
    const uint tid = tm * RTSN + tn;
    const uint offM = get_group_id(1) * TSM;
    const uint offN = get_group_id(0) * TSN;

    __local REAL4 As[2][TSK][LDA4];
    __local REAL4 Bs[2][TSK][TSN / 4];

    REAL acc[WPTM][WPTN];
#pragma unroll
    for (uint i = 0; i < WPTM; i++)
#pragma unroll
        for (uint j = 0; j < WPTN; j++)
            acc[i][j] = 0;

    REAL4 ra[LPTA];
    REAL4 rb[LPTB];

    load_tile(A, B, ra, rb, tid, offM, offN, N, K, 0);
    store_tile(As[0], Bs[0], ra, rb, tid);
    barrier(CLK_LOCAL_MEM_FENCE);

    const uint tiles = K / TSK;
    for (uint t = 0; t < tiles; t++) {
        const uint buf = t & 1;
        const bool more = t + 1 < tiles;
        if (more) {
            load_tile(A, B, ra, rb, tid, offM, offN, N, K, (t + 1) * TSK);
        }
#pragma unroll
        for (uint k = 0; k < TSK; k++) {
            REAL a[WPTM], b[WPTN];
#pragma unroll
            for (uint g = 0; g < WPTM / 4; g++) {
                const REAL4 v = As[buf][k][g * RTSM + tm];
                a[4 * g] = v.x;
                a[4 * g + 1] = v.y;
                a[4 * g + 2] = v.z;
                a[4 * g + 3] = v.w;
            }
#pragma unroll
            for (uint g = 0; g < WPTN / 4; g++) {
                const REAL4 v = Bs[buf][k][g * RTSN + tn];
                b[4 * g] = v.x;
                b[4 * g + 1] = v.y;
                b[4 * g + 2] = v.z;
                b[4 * g + 3] = v.w;
            }
#pragma unroll
            for (uint i = 0; i < WPTM; i++)
#pragma unroll
                for (uint j = 0; j < WPTN; j++)
                    MAC(acc[i][j], a[i], b[j]);
        }
        if (more) {
            store_tile(As[buf ^ 1], Bs[buf ^ 1], ra, rb, tid);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }

#pragma unroll
    for (uint i = 0; i < WPTM; i++) {
        const uint row = offM + (i / 4) * RTSM * 4 + tm * 4 + i % 4;
#pragma unroll
        for (uint g = 0; g < WPTN / 4; g++) {
            const uint col = offN + g * RTSN * 4 + tn * 4;
            C[(row * N + col) / 4] =
                (REAL4)(acc[i][4 * g], acc[i][4 * g + 1], acc[i][4 * g + 2], acc[i][4 * g + 3]);
        }
    }
}

// ---- padding for rungs 9 and 10 ---------------------------------------------------------
// Bit copies (uint) so one program serves float and int. dst is rows_p × cols_p, zero outside
// the rows × cols source.
__kernel void matrix_pad(__global const uint *src, __global uint *dst, uint rows, uint cols,
                         uint rows_p, uint cols_p)
{
    const uint c = get_global_id(0);
    const uint r = get_global_id(1);
    if (r >= rows_p || c >= cols_p)
        return;
    dst[r * cols_p + c] = (r < rows && c < cols) ? src[r * cols + c] : 0u;
}

// The rows × cols corner of a padded matrix whose rows are cols_p long.
__kernel void matrix_unpad(__global const uint *src, __global uint *dst, uint rows, uint cols,
                           uint cols_p)
{
    const uint c = get_global_id(0);
    const uint r = get_global_id(1);
    if (r >= rows || c >= cols)
        return;
    dst[r * cols + c] = src[r * cols_p + c];
}
