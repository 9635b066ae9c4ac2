// Recursive Gaussian along lines: Deriche's 4th-order filter as two parallel 2nd-order
// sections, causal then anticausal, clamp-to-edge. One work-item filters one whole line.
//
// Follows Deriche (INRIA RR-1893, 1993) with the Farnebäck–Westin normalisation; the section
// ("delta") form and its coefficients are derived in src/filter/gaussian.rs, and src/cpu/reference.rs runs the
// same operations in the same order, which is what the tests compare against.
//
// A line is `len` samples `elem_stride` apart; line `l` of plane `p` starts at
// `p * plane_stride + l * line_stride`. With elem_stride = width and line_stride = 1 each
// work-item walks down a column and neighbouring work-items touch neighbouring addresses (the
// coalesced "column pass"); with elem_stride = 1 and line_stride = width it is the row pass of
// version 1 in "Tuning Performance on the GPU", where they do not.
//
// coef: per section n0 n1 m1 m2 eps q anticausal_gain (pad), 8 floats each; q = 1 - r^2.

__kernel void recursive_line(__global const float *src, __global float *dst,
                             __constant float *coef, uint len, uint lines,
                             uint elem_stride, uint line_stride, uint plane_stride)
{
    const uint line = get_global_id(0);
    if (line >= lines)
        return;
    const size_t base = (size_t)get_global_id(1) * plane_stride + (size_t)line * line_stride;
    __global const float *in = src + base;
    __global float *out = dst + base;

    const float n0a = coef[0], n1a = coef[1], m1a = coef[2], m2a = coef[3];
    const float epsa = coef[4], qa = coef[5], ga = coef[6];
    const float n0b = coef[8], n1b = coef[9], m1b = coef[10], m2b = coef[11];
    const float epsb = coef[12], qb = coef[13], gb = coef[14];

    // The first sample is subtracted so that the start-up state is exactly zero and a
    // constant line comes out unchanged.
    const float x0 = in[0];

    float ya = 0.0f, da = 0.0f, yb = 0.0f, db = 0.0f, xp = 0.0f;
    size_t at = 0;
    for (uint i = 0; i < len; i++, at += elem_stride) {
        const float x = in[at] - x0;
        float t = n0a * x + n1a * xp - epsa * ya + (da - qa * da);
        da = t;
        ya += t;
        t = n0b * x + n1b * xp - epsb * yb + (db - qb * db);
        db = t;
        yb += t;
        out[at] = ya + yb;
        xp = x;
    }

    // Anticausal half, started in its steady state for the clamped last sample.
    const float xl = in[(size_t)(len - 1) * elem_stride] - x0;
    ya = ga * xl;
    yb = gb * xl;
    da = 0.0f;
    db = 0.0f;
    float x1 = xl, x2 = xl;
    at = (size_t)(len - 1) * elem_stride;
    for (uint i = len; i-- > 0; at -= elem_stride) {
        float t = m1a * x1 + m2a * x2 - epsa * ya + (da - qa * da);
        da = t;
        ya += t;
        t = m1b * x1 + m2b * x2 - epsb * yb + (db - qb * db);
        db = t;
        yb += t;
        out[at] = out[at] + (ya + yb) + x0;
        x2 = x1;
        x1 = in[at] - x0;
    }
}
