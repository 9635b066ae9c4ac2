//! The inverse DCT of libjpeg's default method (`JDCT_ISLOW`: Loeffler, Ligtenberg and
//! Moschytz's factorisation in 13-bit fixed point, two fractional bits kept between the
//! passes), bit for bit as libjpeg-turbo computes it. Its C code and its SIMD code (16-bit
//! lanes) agree wherever no intermediate value leaves 16 bits and no sample lands far outside
//! 0-255, which holds for every block an encoder writes from a picture; a block where that
//! fails (damaged or contrived data) is reported, and the file is left to libjpeg itself.

const FIX_0_298631336: i32 = 2446;
const FIX_0_390180644: i32 = 3196;
const FIX_0_541196100: i32 = 4433;
const FIX_0_765366865: i32 = 6270;
const FIX_0_899976223: i32 = 7373;
const FIX_1_175875602: i32 = 9633;
const FIX_1_501321110: i32 = 12299;
const FIX_1_847759065: i32 = 15137;
const FIX_1_961570560: i32 = 16069;
const FIX_2_053119869: i32 = 16819;
const FIX_2_562915447: i32 = 20995;
const FIX_3_072711026: i32 = 25172;

type Rows = [[i32; 8]; 8];

/// Whether a value fits in 16 bits, where libjpeg's SIMD code holds it.
#[inline(always)]
fn fits(v: i32) -> bool {
    v == v as i16 as i32
}

/// The 1-D inverse DCT of eight lanes at once: `x[k]` holds coefficient k of every lane;
/// the result's row n holds sample n, rounded and shifted right by `shift`; false in `exact`
/// where a sum libjpeg's SIMD code forms in 16 bits does not fit in them.
#[inline(always)]
fn one_dimension(x: &Rows, shift: u32, exact: &mut bool) -> Rows {
    let mut out = [[0i32; 8]; 8];
    let round = 1i32 << (shift - 1);
    let mut fit = true;
    for l in 0..8 {
        // Even part.
        let (z2, z3) = (x[2][l], x[6][l]);
        let z1 = z2.wrapping_add(z3).wrapping_mul(FIX_0_541196100);
        let tmp2 = z1.wrapping_sub(z3.wrapping_mul(FIX_1_847759065));
        let tmp3 = z1.wrapping_add(z2.wrapping_mul(FIX_0_765366865));
        let (sum, difference) = (x[0][l].wrapping_add(x[4][l]), x[0][l].wrapping_sub(x[4][l]));
        let tmp0 = sum.wrapping_shl(13);
        let tmp1 = difference.wrapping_shl(13);
        let (tmp10, tmp13) = (tmp0.wrapping_add(tmp3), tmp0.wrapping_sub(tmp3));
        let (tmp11, tmp12) = (tmp1.wrapping_add(tmp2), tmp1.wrapping_sub(tmp2));
        // Odd part.
        let (t0, t1, t2, t3) = (x[7][l], x[5][l], x[3][l], x[1][l]);
        let z1 = t0.wrapping_add(t3);
        let z2 = t1.wrapping_add(t2);
        let z3 = t0.wrapping_add(t2);
        let z4 = t1.wrapping_add(t3);
        fit &= fits(sum) & fits(difference) & fits(z3) & fits(z4);
        let z5 = z3.wrapping_add(z4).wrapping_mul(FIX_1_175875602);
        let t0 = t0.wrapping_mul(FIX_0_298631336);
        let t1 = t1.wrapping_mul(FIX_2_053119869);
        let t2 = t2.wrapping_mul(FIX_3_072711026);
        let t3 = t3.wrapping_mul(FIX_1_501321110);
        let z1 = z1.wrapping_mul(-FIX_0_899976223);
        let z2 = z2.wrapping_mul(-FIX_2_562915447);
        let z3 = z3.wrapping_mul(-FIX_1_961570560).wrapping_add(z5);
        let z4 = z4.wrapping_mul(-FIX_0_390180644).wrapping_add(z5);
        let t0 = t0.wrapping_add(z1).wrapping_add(z3);
        let t1 = t1.wrapping_add(z2).wrapping_add(z4);
        let t2 = t2.wrapping_add(z2).wrapping_add(z3);
        let t3 = t3.wrapping_add(z1).wrapping_add(z4);
        let out_of = |v: i32| v.wrapping_add(round) >> shift;
        out[0][l] = out_of(tmp10.wrapping_add(t3));
        out[7][l] = out_of(tmp10.wrapping_sub(t3));
        out[1][l] = out_of(tmp11.wrapping_add(t2));
        out[6][l] = out_of(tmp11.wrapping_sub(t2));
        out[2][l] = out_of(tmp12.wrapping_add(t1));
        out[5][l] = out_of(tmp12.wrapping_sub(t1));
        out[3][l] = out_of(tmp13.wrapping_add(t0));
        out[4][l] = out_of(tmp13.wrapping_sub(t0));
    }
    *exact &= fit;
    out
}

#[inline(always)]
fn transposed(x: &Rows) -> Rows {
    let mut t: Rows = [[0; 8]; 8];
    for (r, row) in t.iter_mut().enumerate() {
        for (c, v) in row.iter_mut().enumerate() {
            *v = x[c][r];
        }
    }
    t
}

/// The 8×8 samples of `block` (coefficients in natural order; `ac`: whether any but the
/// first is not zero) dequantised by `quant`, written to `out` row by row; false where libjpeg's C and SIMD code could
/// disagree on them (see the module's documentation).
#[inline(always)]
pub fn islow(block: &[i16; 64], ac: bool, quant: &[u16; 64], out: &mut [[u8; 8]; 8]) -> bool {
    // A block of one level (no AC coefficient, common in smooth pictures): both passes
    // reduce to the DC term, scaled and rounded as they scale and round it.
    if !ac {
        let first = (block[0] as i32).wrapping_mul(quant[0] as i32);
        let level = (first << 2).wrapping_add(1 << 4) >> 5;
        let exact = fits(first) && fits(first << 2) && (-512..512).contains(&level);
        let sample = (level.clamp(-128, 127) + 128) as u8;
        *out = [[sample; 8]; 8];
        return exact;
    }
    let mut exact = true;
    // Columns first: lane c of row k is coefficient (k, c).
    let mut x: Rows = [[0; 8]; 8];
    for (k, row) in x.iter_mut().enumerate() {
        for (c, v) in row.iter_mut().enumerate() {
            *v = (block[8 * k + c] as i32).wrapping_mul(quant[8 * k + c] as i32);
        }
    }
    exact &= x.iter().flatten().fold(true, |ok, &v| ok & fits(v));
    let columns = one_dimension(&x, 13 - 2, &mut exact);
    exact &= columns.iter().flatten().fold(true, |ok, &v| ok & fits(v));
    // Then rows: lane r of row k is the first pass's value (r, k).
    let samples = transposed(&one_dimension(
        &transposed(&columns),
        13 + 2 + 3,
        &mut exact,
    ));
    // libjpeg's C code wraps samples beyond 512 levels from mid-gray; its SIMD code saturates.
    exact &= samples
        .iter()
        .flatten()
        .fold(true, |ok, &v| ok & (-512..512).contains(&v));
    for (line, row) in out.iter_mut().zip(&samples) {
        for (o, &v) in line.iter_mut().zip(row) {
            *o = (v.clamp(-128, 127) + 128) as u8;
        }
    }
    exact
}
