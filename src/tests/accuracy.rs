//! Accuracy against an exact Gaussian: the relative L1 distance between each path's impulse
//! response and the normalised sampled Gaussian, which bounds the relative error of any output.

use super::common;

use crate::cpu::reference;
use crate::filter::gaussian;
use crate::filter::{Blur2d, Method};
use crate::gpu::pipeline;
use crate::gpu::plan::Pipeline;
use crate::gpu::transpose::TransposeKind;
use crate::pixels::planar::Planar;

const SIGMAS: [f64; 12] = [
    0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0, 30.0, 100.0, 200.0, 400.0,
];

/// A 1×n column holding a unit impulse in the middle: the x pass sees rows of one sample,
/// which it must pass through unchanged, so the result is the y filter's impulse response.
fn impulse(sigma: f64) -> (Planar, usize) {
    let r = (10.0 * sigma).ceil() as usize + 16;
    let mut p = Planar::new(1, 2 * r + 1, 1);
    p.data[r] = 1.0;
    (p, r)
}

fn l1_error(response: &[f32], sigma: f64, r: usize) -> f64 {
    let g = gaussian::sampled_gaussian(sigma, r);
    response
        .iter()
        .zip(&g)
        .map(|(a, b)| (*a as f64 - b).abs())
        .sum()
}

#[test]
fn rust_path_is_within_1e3_of_the_gaussian() {
    for sigma in SIGMAS {
        for method in [Method::Auto, Method::Recursive, Method::Fir] {
            let (img, r) = impulse(sigma);
            let (out, _) = reference::blur(&img, &Blur2d::new(method, sigma, sigma));
            let e = l1_error(&out.data, sigma, r);
            println!("rust   sigma {sigma:>6} {method:?}: {e:.2e}");
            assert!(e <= 1e-3, "rust sigma {sigma} {method:?}: {e}");
        }
    }
}

#[test]
fn opencl_path_is_within_1e3_of_the_gaussian() {
    let ctx = common::context();
    for sigma in SIGMAS {
        for method in [Method::Auto, Method::Recursive, Method::Fir] {
            for pipe in [
                Pipeline::Transpose(TransposeKind::DEFAULT),
                Pipeline::BLOCKED,
            ] {
                let (img, r) = impulse(sigma);
                let blur = Blur2d::new(method, sigma, sigma);
                let (out, _) = pipeline::blur(&ctx, img, &blur, pipe).unwrap();
                let e = l1_error(&out.data, sigma, r);
                println!(
                    "opencl {} sigma {sigma:>6} {method:?}: {e:.2e}",
                    pipe.describe()
                );
                assert!(e <= 1e-3, "opencl sigma {sigma} {method:?}: {e}");
                if method == Method::Auto && sigma >= 2.0 {
                    // Deriche's 4th-order fit itself is 5.3e-4..5.7e-4 off; f32 adds nothing visible.
                    assert!(e <= 6e-4, "sigma {sigma}: {e}");
                }
            }
        }
    }
}

#[test]
fn constant_image_stays_constant_on_every_path() {
    let ctx = common::context();
    for sigma in [0.6, 5.0, 80.0, 5000.0] {
        let img = Planar::from_fn(23, 41, 2, |_, _, c| [0.25, 0.8][c]);
        let blur = Blur2d::new(Method::Auto, sigma, sigma * 0.5);
        let (out, _) = reference::blur(&img, &blur);
        assert!(out.max_abs_diff(&img) <= 1e-6, "rust sigma {sigma}");
        for pipe in [
            Pipeline::Direct,
            Pipeline::Transpose(TransposeKind::DEFAULT),
        ] {
            let (out, _) = pipeline::blur(&ctx, img.clone(), &blur, pipe).unwrap();
            assert!(out.max_abs_diff(&img) <= 1e-6, "opencl sigma {sigma}");
        }
    }
}

/// The weights that an exact Gaussian of `sigma`, sampled and normalised over all integers,
/// gives the samples of a line of `n` whose ends are clamped: `w[i][j]` for output `i`. The
/// clamped extension beyond each end weighs on the end sample, `sum(g(d), d >= dist)`, which
/// is `(1 + g(0)) / 2 - sum(g(d), 0 <= d < dist)` by symmetry. Exact in f64 for sigma >= 1,
/// where the sampled Gaussian's sum over all integers is sigma·sqrt(2π) to the last bit.
fn clamped_gaussian(sigma: f64, n: usize) -> Vec<Vec<f64>> {
    let g = |d: usize| {
        (-0.5 * (d as f64 / sigma).powi(2)).exp() / (sigma * std::f64::consts::TAU.sqrt())
    };
    let beyond = |dist: usize| (1.0 + g(0)) / 2.0 - (0..dist).map(g).sum::<f64>();
    (0..n)
        .map(|i| {
            let mut w: Vec<f64> = (0..n).map(|j| g(i.abs_diff(j))).collect();
            if n == 1 {
                w[0] = 1.0;
            } else {
                w[0] = beyond(i);
                w[n - 1] = beyond(n - 1 - i);
            }
            w
        })
        .collect()
}

/// `img` (one channel) blurred by the exact clamped Gaussian in f64, down columns then rows.
fn exact_blur(img: &Planar, sigma: f64) -> Vec<f64> {
    let (w, h) = (img.width, img.height);
    let (wy, wx) = (clamped_gaussian(sigma, h), clamped_gaussian(sigma, w));
    let at = |x: usize, y: usize| img.data[y * w + x] as f64;
    let cols: Vec<f64> = (0..h)
        .flat_map(|y| (0..w).map(move |x| (x, y)))
        .map(|(x, y)| (0..h).map(|k| wy[y][k] * at(x, k)).sum())
        .collect();
    (0..h)
        .flat_map(|y| (0..w).map(move |x| (x, y)))
        .map(|(x, y)| (0..w).map(|k| wx[x][k] * cols[y * w + k]).sum())
        .collect()
}

#[test]
fn sigma_larger_than_the_image_gives_the_clamped_mean() {
    // With clamped edges and sigma far beyond the image, each line tends to the mean of its
    // two end samples, and the image to the mean of its four corners: the blur must get
    // there, not merely stay inside the input's range. Each axis is within the design's
    // relative L1 error of the exact Gaussian, 5.7e-4, so the 2-D result is within
    // (2·5.7e-4 + 5.7e-4²)·(hi - lo)/2 (the error kernels sum to zero); 1e-3·(hi - lo) leaves
    // room for f32 rounding. An unblurred image is 0.53 away, and a sigma 10% short 4.3e-3
    // (at sigma 10).
    let img = common::noise(7, 5, 1, 3);
    let (lo, hi) = img
        .data
        .iter()
        .fold((1f32, 0f32), |(l, h), &v| (l.min(v), h.max(v)));
    let bound = 1e-3 * (hi - lo) as f64;
    let ctx = common::context();
    for sigma in [10.0, 100.0, 1e4, 1e6] {
        let want = exact_blur(&img, sigma);
        let blur = Blur2d::new(Method::Auto, sigma, sigma);
        let mut results = vec![("rust".to_string(), reference::blur(&img, &blur).0)];
        for pipe in [Pipeline::Direct, Pipeline::BLOCKED] {
            let (out, _) = pipeline::blur(&ctx, img.clone(), &blur, pipe).unwrap();
            results.push((pipe.describe(), out));
        }
        for (path, out) in results {
            assert!(
                out.data
                    .iter()
                    .all(|v| v.is_finite() && *v >= lo - 1e-4 && *v <= hi + 1e-4),
                "{path} sigma {sigma}: outside the input's range"
            );
            let err = out
                .data
                .iter()
                .zip(&want)
                .map(|(a, b)| (*a as f64 - b).abs())
                .fold(0.0, f64::max);
            println!("{path:>10} sigma {sigma:>7}: {err:.2e} from the exact clamped Gaussian");
            assert!(
                err <= bound,
                "{path} sigma {sigma}: {err:.2e} from the exact clamped Gaussian (bound {bound:.2e})"
            );
        }
    }
}

#[test]
fn without_the_policy_one_nan_would_poison_the_whole_image() {
    // Why the policy exists: the recursive filter carries a NaN into every later sample of its
    // line, and the second pass into every line.
    let mut p = crate::pixels::planar::Planar::new(16, 16, 1);
    p.data[0] = f32::NAN;
    let blur = crate::filter::Blur2d::new(crate::filter::Method::Recursive, 3.0, 3.0);
    let (raw, _) = crate::cpu::reference::blur(&p, &blur);
    assert!(raw.data.iter().filter(|v| v.is_nan()).count() > 200);
    assert_eq!(crate::pixels::sanitize_samples(&mut p.data), 1);
    let (clean, _) = crate::cpu::reference::blur(&p, &blur);
    assert!(clean.data.iter().all(|&v| v == 0.0));
}
