//! Accuracy against an exact Gaussian: the relative L1 distance between each path's impulse
//! response and the normalised sampled Gaussian, which bounds the relative error of any output.

mod common;

use gblur::cpu::reference;
use gblur::filter::gaussian;
use gblur::filter::{Blur2d, Method};
use gblur::gpu::pipeline;
use gblur::gpu::plan::Pipeline;
use gblur::gpu::transpose::TransposeKind;
use gblur::pixels::planar::Planar;

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
    let Some(ctx) = common::context() else { return };
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
        if let Some(ctx) = &ctx {
            for pipe in [
                Pipeline::Direct,
                Pipeline::Transpose(TransposeKind::DEFAULT),
            ] {
                let (out, _) = pipeline::blur(ctx, img.clone(), &blur, pipe).unwrap();
                assert!(out.max_abs_diff(&img) <= 1e-6, "opencl sigma {sigma}");
            }
        }
    }
}

#[test]
fn sigma_larger_than_the_image_gives_the_clamped_mean() {
    // With clamp-to-edge and sigma far beyond the image, every output tends to the mean of
    // the two edge samples' extensions; what matters is that it stays finite and bounded.
    let img = common::noise(7, 5, 1, 3);
    let (lo, hi) = img
        .data
        .iter()
        .fold((1f32, 0f32), |(l, h), &v| (l.min(v), h.max(v)));
    for sigma in [100.0, 1e4, 1e6] {
        let (out, _) = reference::blur(&img, &Blur2d::new(Method::Auto, sigma, sigma));
        assert!(
            out.data
                .iter()
                .all(|v| v.is_finite() && *v >= lo - 1e-4 && *v <= hi + 1e-4),
            "sigma {sigma}"
        );
    }
}
