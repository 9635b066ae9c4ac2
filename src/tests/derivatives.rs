//! The Gaussian's derivatives (`nd::Filter::order`) against scipy's definition computed in
//! f64: the input extended by each edge mode far past the kernel's reach, convolved with the
//! sampled, normalised derivative (`filter::derivative::sampled_derivative`).

use crate::filter::derivative::sampled_derivative;
use crate::nd::Filter;
use crate::EdgeMode;

const MODES: [EdgeMode; 5] = [
    EdgeMode::Reflect,
    EdgeMode::Reflect101,
    EdgeMode::Wrap,
    EdgeMode::Clamp,
    EdgeMode::Constant(0.0),
];

/// Noise with a step and a ramp in it: a derivative has edges, slopes and texture to follow.
fn test_line(n: usize, seed: u64) -> Vec<f32> {
    let noise = super::common::noise(n, 1, 1, seed).data;
    (0..n)
        .map(|i| {
            let step = if i > n / 3 { 40.0 } else { 0.0 };
            step + 0.5 * i as f32 + 20.0 * noise[i]
        })
        .collect()
}

/// scipy's result on one line, in f64: the extended input convolved with the sampled kernel,
/// cut where scipy's default `truncate` cuts it where gblur runs that FIR (sigma below 2), and
/// uncut where gblur runs the recursive filter (which follows the whole kernel).
fn exact_line(x: &[f32], sigma: f64, order: u8, mode: EdgeMode, cval: f64) -> Vec<f64> {
    let n = x.len() as i64;
    let radius = match sigma < 2.0 {
        true => (4.0 * sigma + 0.5) as usize,
        false => (12.0 * sigma).ceil() as usize + 4,
    };
    let kernel = sampled_derivative(sigma, radius, order);
    let r = radius as i64;
    (0..n)
        .map(|i| {
            (-r..=r)
                .map(|m| {
                    let v = mode.source(i - m, n).map_or(cval, |s| x[s] as f64);
                    kernel[(m + r) as usize] * v
                })
                .sum()
        })
        .collect()
}

/// The largest difference relative to the exact result's range.
fn relative_error(got: &[f32], want: &[f64]) -> f64 {
    let (lo, hi) = want
        .iter()
        .fold((f64::MAX, f64::MIN), |(l, h), &v| (l.min(v), h.max(v)));
    let worst = got
        .iter()
        .zip(want)
        .fold(0.0f64, |m, (&g, &w)| m.max((g as f64 - w).abs()));
    worst / (hi - lo)
}

#[test]
fn first_and_second_derivatives_follow_scipy_in_every_mode() {
    for (k, &mode) in MODES.iter().enumerate() {
        for sigma in [1.2, 2.0, 3.5, 9.0, 40.0] {
            for order in [1u8, 2] {
                let x = test_line(157, (k * 10 + order as usize) as u64);
                let mut got = x.clone();
                Filter::new(&[sigma])
                    .unwrap()
                    .order(&[order])
                    .mode(mode)
                    .cval(3.0)
                    .apply(&mut got, &[x.len()])
                    .unwrap();
                let want = exact_line(&x, sigma, order, mode, 3.0);
                let e = relative_error(&got, &want);
                // The recursive design is within 7e-6 (first) and 3e-5 (second) of the
                // kernel's range on an impulse; a step's or a ramp's response sums the
                // kernel's error over it (for the second derivative of this line's ramp and
                // step, up to 5e-4 of the result's range). The FIR (below sigma 2) is scipy's
                // kernel itself, to float32 rounding.
                let bound = match (sigma < 2.0, order) {
                    (true, _) => 5e-5,
                    (false, 1) => 5e-5,
                    (false, _) => 6e-4,
                };
                assert!(
                    e <= bound,
                    "{mode:?} sigma {sigma} order {order}: {e:.2e} of the range"
                );
            }
        }
    }
}

#[test]
fn a_derivative_of_a_constant_is_exactly_zero() {
    // The recursive filters and the odd FIR; scipy's sampled second derivative at small sigma
    // sums to a little more than 0, and so does its FIR here, as scipy's does.
    for (order, sigma) in [
        (1u8, 1.0),
        (1, 5.0),
        (1, 300.0),
        (2, 2.0),
        (2, 5.0),
        (2, 300.0),
    ] {
        {
            let mut flat = vec![1234.5f32; 64 * 48];
            Filter::new(&[sigma, sigma])
                .unwrap()
                .order(&[order, 0])
                .mode(EdgeMode::Clamp)
                .apply(&mut flat, &[64, 48])
                .unwrap();
            assert!(
                flat.iter().all(|&v| v == 0.0),
                "order {order} sigma {sigma}"
            );
        }
    }
}

#[test]
fn orders_combine_per_axis_as_separable_filters() {
    // (y, x) = (24, 157): an x derivative, smoothed along y, and the mixed second derivative.
    let (h, w) = (24usize, 157usize);
    // Texture along both axes: each row its own noise, a step and a slope down the columns.
    let image: Vec<f32> = (0..h)
        .flat_map(|r| {
            let down = if r > h / 2 { 30.0 } else { 0.0 } + 0.3 * r as f32;
            test_line(w, r as u64 + 7)
                .into_iter()
                .map(move |v| v + down)
        })
        .collect();
    for orders in [[0u8, 1], [1, 1], [2, 0]] {
        let mut got = image.clone();
        let sigma = [3.0, 6.0];
        Filter::new(&sigma)
            .unwrap()
            .order(&orders)
            .mode(EdgeMode::Reflect)
            .apply(&mut got, &[h, w])
            .unwrap();
        // Rows first, then columns, in f64.
        let rows: Vec<f64> = image
            .chunks(w)
            .flat_map(|row| exact_line(row, sigma[1], orders[1], EdgeMode::Reflect, 0.0))
            .collect();
        let mut want = vec![0.0; h * w];
        for c in 0..w {
            let column: Vec<f32> = (0..h).map(|r| rows[r * w + c] as f32).collect();
            let column = exact_line(&column, sigma[0], orders[0], EdgeMode::Reflect, 0.0);
            for r in 0..h {
                want[r * w + c] = column[r];
            }
        }
        let e = relative_error(&got, &want);
        assert!(e <= 3e-4, "orders {orders:?}: {e:.2e} of the range");
    }
}

#[test]
fn orders_are_checked() {
    let mut a = vec![0f32; 16];
    let too_high = Filter::new(&[2.0]).unwrap().order(&[3]);
    assert!(too_high.apply(&mut a, &[16]).is_err());
    let wrong_rank = Filter::new(&[2.0]).unwrap().order(&[1, 1]);
    assert!(wrong_rank.apply(&mut a, &[16]).is_err());
}

/// 16-bit outputs take scipy's cut kernel up to `EXACT_16_BIT_SIGMA`: within one level of
/// scipy's float64 result rounded, on a full-range step and on noise, where the recursive
/// filter would be up to 17 levels off.
#[test]
fn sixteen_bit_outputs_are_within_a_level_of_scipys_rounded_result() {
    let n = 700;
    let noise = super::common::noise(n, 1, 1, 5).data;
    let lines: [Vec<u16>; 2] = [
        (0..n).map(|i| if i < n / 2 { 0 } else { 65535 }).collect(),
        noise
            .iter()
            .map(|&v| (v * 65535.0).round() as u16)
            .collect(),
    ];
    for line in &lines {
        let x: Vec<f32> = line.iter().map(|&v| v as f32).collect();
        for sigma in [0.5, 2.0, 3.5, 9.0, 20.0, 50.0] {
            for mode in [EdgeMode::Reflect, EdgeMode::Wrap] {
                let radius = (4.0 * sigma + 0.5) as usize;
                let kernel = sampled_derivative(sigma, radius, 0);
                let r = radius as i64;
                let want: Vec<f64> = (0..n as i64)
                    .map(|i| {
                        let sum: f64 = (-r..=r)
                            .map(|m| {
                                kernel[(m + r) as usize]
                                    * x[mode.source(i - m, n as i64).unwrap()] as f64
                            })
                            .sum();
                        sum.round().clamp(0.0, 65535.0)
                    })
                    .collect();
                let mut got = line.clone();
                Filter::new(&[sigma])
                    .unwrap()
                    .mode(mode)
                    .apply(&mut got, &[n])
                    .unwrap();
                let worst = got
                    .iter()
                    .zip(&want)
                    .map(|(&g, &w)| (g as f64 - w).abs())
                    .fold(0.0, f64::max);
                assert!(worst <= 1.0, "sigma {sigma} {mode:?}: {worst} levels");
            }
        }
    }
}
