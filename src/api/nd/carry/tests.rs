//! Chunked filtering against the whole array: every mode, sigmas from 2 to 200 (reaches far
//! beyond a chunk and beyond the whole axis), uneven chunks, every axis of a 3-D array.

use super::*;
use crate::api::nd::Filter;
use crate::filter::Method;

const MODES: [EdgeMode; 5] = [
    EdgeMode::Clamp,
    EdgeMode::Constant(0.0),
    EdgeMode::Reflect,
    EdgeMode::Reflect101,
    EdgeMode::Wrap,
];

fn noise(len: usize, seed: u32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(747796405).wrapping_add(2891336453);
    (0..len)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            (s >> 8) as f32 / (1u32 << 24) as f32
        })
        .collect()
}

/// Where `shape` seen along `axis` splits: `(outer, n, inner)`.
fn along(shape: &[usize], axis: usize) -> (usize, usize, usize) {
    (
        shape[..axis].iter().product(),
        shape[axis],
        shape[axis + 1..].iter().product(),
    )
}

/// Positions `a..b` along `axis` of `data`.
fn take(data: &[f32], shape: &[usize], axis: usize, a: usize, b: usize) -> Vec<f32> {
    let (outer, n, inner) = along(shape, axis);
    let mut out = Vec::new();
    for o in 0..outer {
        out.extend_from_slice(&data[(o * n + a) * inner..(o * n + b) * inner]);
    }
    out
}

/// `parts` (each `shape` with extent `extents[k]` along `axis`) joined along `axis`.
fn join(parts: &[Vec<f32>], shape: &[usize], axis: usize, extents: &[usize]) -> Vec<f32> {
    let (outer, _, inner) = along(shape, axis);
    let mut out = Vec::new();
    for o in 0..outer {
        for (p, &e) in parts.iter().zip(extents) {
            out.extend_from_slice(&p[o * e * inner..(o + 1) * e * inner]);
        }
    }
    out
}

/// The three steps over the chunks of `lengths` along `axis`.
fn chunked(
    carry: &Carry,
    data: &[f32],
    shape: &[usize],
    axis: usize,
    lengths: &[usize],
) -> Vec<f32> {
    let with = |e: usize| {
        let mut s = shape.to_vec();
        s[axis] = e;
        s
    };
    let mut chunks = Vec::new();
    let mut a = 0;
    for &len in lengths {
        chunks.push(take(data, shape, axis, a, a + len));
        a += len;
    }
    let summaries: Vec<Vec<f32>> = chunks
        .iter()
        .zip(lengths)
        .map(|(c, &len)| {
            let mut s = vec![0f32; c.len() / len.max(1) * SUMMARY];
            if len == 0 {
                s = vec![0f32; with(SUMMARY).iter().product()];
            }
            carry.summarize(c, &with(len), axis, &mut s).unwrap();
            s
        })
        .collect();
    let column = join(&summaries, shape, axis, &vec![SUMMARY; lengths.len()]);
    let mut incoming = vec![0f32; column.len() / SUMMARY * INCOMING];
    carry
        .carry(
            &column,
            &with(SUMMARY * lengths.len()),
            axis,
            lengths,
            &mut incoming,
        )
        .unwrap();
    let outputs: Vec<Vec<f32>> = chunks
        .iter()
        .zip(lengths)
        .enumerate()
        .map(|(k, (c, &len))| {
            let state = take(
                &incoming,
                &with(INCOMING * lengths.len()),
                axis,
                k * INCOMING,
                (k + 1) * INCOMING,
            );
            let mut out = vec![0f32; c.len()];
            carry.filter(c, &with(len), axis, &state, &mut out).unwrap();
            out
        })
        .collect();
    join(&outputs, shape, axis, lengths)
}

/// The recursive filter along `axis` alone, on the whole array, extended by `mode` for
/// `margin` samples each side (any mode, periodic ones as far as asked) and clamped beyond:
/// with a margin past the filter's reach to f32 precision, the exact result.
fn extended_reference(
    data: &[f32],
    shape: &[usize],
    axis: usize,
    sigma: f64,
    mode: EdgeMode,
    cval: f32,
    margin: usize,
) -> Vec<f32> {
    let (outer, n, inner) = along(shape, axis);
    let m = n + 2 * margin;
    let mut ext = vec![0f32; outer * m * inner];
    for o in 0..outer {
        for j in 0..m {
            for i in 0..inner {
                let k = j as i64 - margin as i64;
                ext[(o * m + j) * inner + i] = match mode.source(k, n as i64) {
                    Some(s) => data[(o * n + s) * inner + i],
                    None => cval,
                };
            }
        }
    }
    let mut sigmas = vec![0.0; shape.len()];
    sigmas[axis] = sigma;
    let mut ext_shape = shape.to_vec();
    ext_shape[axis] = m;
    Filter::new(&sigmas)
        .unwrap()
        .method(Method::Recursive)
        .mode(EdgeMode::Clamp)
        .apply(&mut ext, &ext_shape)
        .unwrap();
    take(&ext, &ext_shape, axis, margin, margin + n)
}

fn worst(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

/// Uneven chunks adding up to `n`: sizes cycling through 1, 7, 3, 12, ...
fn uneven(n: usize, seed: usize) -> Vec<usize> {
    let sizes = [1, 7, 3, 12, 5, 16, 2];
    let mut out = Vec::new();
    let (mut left, mut k) = (n, seed);
    while left > 0 {
        let s = sizes[k % sizes.len()].min(left);
        out.push(s);
        left -= s;
        k += 1;
    }
    out
}

#[test]
fn chunks_give_the_exact_extension_of_every_mode() {
    let shape = [3, 41, 5];
    let data = noise(shape.iter().product(), 3);
    for (m, &mode) in MODES.iter().enumerate() {
        for &sigma in &[2.0, 10.0, 40.0, 200.0] {
            for axis in 0..3 {
                let cval = 0.3f32;
                let carry = Carry::new(sigma).unwrap().mode(mode).cval(cval as f64);
                let lengths = uneven(shape[axis], m + axis);
                let got = chunked(&carry, &data, &shape, axis, &lengths);
                let margin = (9.5 * sigma) as usize + 3;
                let want = extended_reference(&data, &shape, axis, sigma, mode, cval, margin);
                let err = worst(&got, &want);
                assert!(
                    err < 2e-5,
                    "{mode:?} sigma {sigma} axis {axis} chunks {lengths:?}: {err}"
                );
            }
        }
    }
}

#[test]
fn chunks_agree_with_the_whole_array_filter() {
    let shape = [29, 4, 33];
    let data = noise(shape.iter().product(), 9);
    for &mode in &MODES {
        for &sigma in &[2.0, 7.5, 60.0] {
            for axis in [0, 2] {
                let carry = Carry::new(sigma).unwrap().mode(mode).cval(0.5);
                let got = chunked(&carry, &data, &shape, axis, &uneven(shape[axis], axis));
                let mut sigmas = vec![0.0; 3];
                sigmas[axis] = sigma;
                let mut whole = data.clone();
                Filter::new(&sigmas)
                    .unwrap()
                    .method(Method::Recursive)
                    .mode(mode)
                    .cval(0.5)
                    .apply(&mut whole, &shape)
                    .unwrap();
                // The whole-array filter cuts a periodic extension where its weights fall
                // under 5e-5 (on data of range 1); the clamped edges it meets exactly.
                let budget = match mode {
                    EdgeMode::Clamp | EdgeMode::Constant(_) => 2e-5,
                    _ => 1e-4,
                };
                let err = worst(&got, &whole);
                assert!(err < budget, "{mode:?} sigma {sigma} axis {axis}: {err}");
            }
        }
    }
}

#[test]
fn one_chunk_or_many_and_empty_chunks_between() {
    let shape = [50];
    let data = noise(50, 5);
    for &mode in &MODES {
        let carry = Carry::new(12.0).unwrap().mode(mode);
        let one = chunked(&carry, &data, &shape, 0, &[50]);
        let many = chunked(&carry, &data, &shape, 0, &[20, 0, 1, 29, 0]);
        assert!(worst(&one, &many) < 2e-6, "{mode:?}");
    }
    // Lines of one sample, and an axis of one sample, in every mode.
    for &mode in &MODES {
        let carry = Carry::new(3.0).unwrap().mode(mode).cval(0.0);
        let got = chunked(&carry, &[0.25], &[1], 0, &[1]);
        let want = extended_reference(&[0.25], &[1], 0, 3.0, mode, 0.0, 40);
        assert!(worst(&got, &want) < 1e-6, "{mode:?}: {got:?} {want:?}");
    }
}

#[test]
fn buffers_that_do_not_fit_their_shapes_are_refused() {
    let carry = Carry::new(4.0).unwrap();
    let mut s = vec![0f32; SUMMARY * 3];
    assert!(carry.summarize(&[0.0; 12], &[4, 3], 2, &mut s).is_err());
    assert!(carry.summarize(&[0.0; 12], &[4, 4], 0, &mut s).is_err());
    assert!(carry
        .summarize(&[0.0; 12], &[4, 3], 0, &mut s[..5])
        .is_err());
    let mut inc = vec![0f32; INCOMING * 3 * 2];
    assert!(carry
        .carry(&s, &[SUMMARY, 3], 0, &[2, 2], &mut inc)
        .is_err());
    assert!(carry
        .filter(&[0.0; 12], &[4, 3], 0, &inc[..5], &mut [0.0; 12])
        .is_err());
    assert!(Carry::new(f64::NAN).is_err() && Carry::new(-1.0).is_err());
    let s = vec![0f32; SUMMARY * 3];
    let nan = Carry::new(4.0).unwrap().cval(f64::NAN);
    assert!(nan
        .carry(&s, &[SUMMARY, 3], 0, &[4], &mut [0f32; INCOMING * 3])
        .is_err());
}
