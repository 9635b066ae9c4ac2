// Recursive Gaussian along lines: Deriche's 4th-order filter as two parallel 2nd-order
// sections, causal then anticausal, clamp-to-edge. One work-item filters one whole line.
//
// Follows Deriche (INRIA RR-1893, 1993) with the Farnebäck–Westin normalisation; the section
// ("delta") form, its difference form and their coefficients are derived in
// src/filter/gaussian.rs, and src/cpu/reference.rs runs the same operations in the same order,
// which is what the tests compare against.
//
// A line is `len` samples `elem_stride` apart; line `l` of plane `p` starts at
// `p * plane_stride + l * line_stride`. With elem_stride = width and line_stride = 1 each
// work-item walks down a column and neighbouring work-items touch neighbouring addresses (the
// coalesced "column pass"); with elem_stride = 1 and line_stride = width it is the row pass of
// version 1 in "Tuning Performance on the GPU", where they do not.
//
// coef: the difference form's block (RecursiveGaussian::to_f32_difference_block), per section
// cw cd aw ad eps q (pad), 8 floats each; q = 1 - r^2; slot 6 holds the input's own weight in
// the output (1 for the Gaussian, 0 for a derivative, whose kernel sums to 0).
//
// With -D ACCUMULATE the kernel adds its sections' output to what dst holds (the input's weight
// left out): a derivative's 8th-order filter is two 4th-order blocks on the same input, the
// second run after the first on the same queue. The sections' poles filter the first
// differences x[i] - x[i-1] (all-pole state w and its step d), their numerators weigh that
// state (cw w + cd d causally, aw w + ad d anticausally), and the output is the input plus the
// four: the clamped edges feed zero differences (both halves start from a zero state), and a
// constant stretch feeds exact zeros, so it comes out unchanged bit for bit.

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

    const float cwa = coef[0], cda = coef[1], awa = coef[2], ada = coef[3];
    const float epsa = coef[4], qa = coef[5];
    const float cwb = coef[8], cdb = coef[9], awb = coef[10], adb = coef[11];
    const float epsb = coef[12], qb = coef[13];
#ifdef ACCUMULATE
    const float input_weight = 0.0f;
#else
    const float input_weight = coef[6];
#endif

    // Causal, on the difference from the sample before (the first sample before the line).
    float wa = 0.0f, da = 0.0f, wb = 0.0f, db = 0.0f, xp = in[0];
    size_t at = 0;
    for (uint i = 0; i < len; i++, at += elem_stride) {
        const float xr = in[at];
        const float x = xr - xp;
        float t = x - epsa * wa + (da - qa * da);
        da = t;
        wa += t;
        t = x - epsb * wb + (db - qb * db);
        db = t;
        wb += t;
        const float causal = (cwa * wa + cda * da) + (cwb * wb + cdb * db);
#ifdef ACCUMULATE
        out[at] += causal;
#else
        out[at] = causal;
#endif
        xp = xr;
    }

    // Anticausal, on the difference after each sample (0 past the line's end).
    wa = 0.0f;
    wb = 0.0f;
    da = 0.0f;
    db = 0.0f;
    float x1 = 0.0f;
    at = (size_t)(len - 1) * elem_stride;
    for (uint i = len; i-- > 0; at -= elem_stride) {
        float t = x1 - epsa * wa + (da - qa * da);
        da = t;
        wa += t;
        t = x1 - epsb * wb + (db - qb * db);
        db = t;
        wb += t;
        const float xr = in[at];
        out[at] = input_weight * xr + (out[at] + ((awa * wa + ada * da) + (awb * wb + adb * db)));
        x1 = xr - in[i > 0 ? at - elem_stride : at]; // 0 before the line's start
    }
}
