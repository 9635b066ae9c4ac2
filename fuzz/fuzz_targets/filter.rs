//! Arbitrary sigma / size / channel combinations → the coefficients (f64 design, f32 block,
//! FIR taps) and the Rust filter over an image of arbitrary samples.
//!
//! Sigmas are what the command line accepts (`filter::check_sigma`); samples go
//! through gblur's sample policy first (non-finite → 0, magnitudes clamped), as decoded
//! float images do. Then: coefficients finite, the output finite and within the input's
//! range (up to the recursive design's overshoot), and a constant image stays constant.
#![no_main]

use arbitrary::Arbitrary;
use gblur::filter::gaussian::{self, RecursiveGaussian};
use gblur::filter::{Blur2d, LineFilter, Method};
use gblur::pixels::planar::Planar;
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
struct Input {
    sigma_x: f64,
    sigma_y: f64,
    method: u8,
    width: u8,
    height: u8,
    channels: u8,
    constant: bool,
    samples: Vec<f32>,
}

/// Maps any f64 into the range the CLI accepts, keeping every such value reachable.
fn valid_sigma(s: f64) -> Option<f64> {
    gblur::filter::check_sigma(s).ok()
}

fuzz_target!(|input: Input| {
    let (Some(sx), Some(sy)) = (valid_sigma(input.sigma_x), valid_sigma(input.sigma_y)) else {
        return;
    };
    let method = [Method::Auto, Method::Recursive, Method::Fir][input.method as usize % 3];
    for sigma in [sx, sy] {
        let g = RecursiveGaussian::new(sigma);
        let block = g.to_f32_block();
        assert!(
            block.iter().all(|v| v.is_finite()),
            "sigma {sigma}: {block:?}"
        );
        let dc: f64 = g
            .sections
            .iter()
            .map(|s| s.causal_gain() + s.anticausal_gain())
            .sum();
        assert!((dc - 1.0).abs() < 1e-9, "sigma {sigma}: dc gain {dc}");
    }
    // As the command line builds it: a FIR wider than sigma 1000 is refused there (the
    // fifth run stopped on a 1.28-million-tap FIR, a rounding property, before this check).
    let Ok(blur) = Blur2d::checked(method, sx, sy) else {
        return;
    };
    for f in [&blur.x, &blur.y] {
        if let LineFilter::Fir { taps, .. } = f {
            assert_eq!(taps.len(), 2 * gaussian::fir_radius(f.sigma()) + 1);
            let sum: f64 = taps.iter().map(|&t| t as f64).sum();
            assert!((sum - 1.0).abs() < 1e-4, "taps sum {sum}");
        }
    }

    let (w, h) = (
        1 + input.width as usize % 48,
        1 + input.height as usize % 48,
    );
    let c = 1 + input.channels as usize % 4;
    let mut img = Planar::new(w, h, c);
    if !input.samples.is_empty() {
        for (i, v) in img.data.iter_mut().enumerate() {
            *v = if input.constant {
                input.samples[0]
            } else {
                input.samples[i % input.samples.len()]
            };
        }
    }
    gblur::pixels::sanitize_samples(&mut img.data);
    let (lo, hi) = img
        .data
        .iter()
        .fold((f32::INFINITY, f32::NEG_INFINITY), |(l, h), &v| {
            (l.min(v), h.max(v))
        });
    let (out, _) = gblur::cpu::reference::blur(&img, &blur);
    // The FIR sums n f32 products per pass, so it is exact only to the worst-case rounding
    // of those sums, n·ε relative; the absolute floor is for subnormal constants (the third
    // run stopped on 1.8e-42, which 81 taps cannot reproduce in f32).
    let taps = |f: &LineFilter| match f {
        LineFilter::Fir { taps, .. } => taps.len(),
        LineFilter::Recursive { .. } => 0,
    };
    let n = (taps(&blur.x) + taps(&blur.y)) as f64;
    let big = lo.abs().max(hi.abs()) as f64;
    let rounding = n * f32::EPSILON as f64 * big + 1e-30;
    // Deriche's fit overshoots by at most its design error (< 1e-3 of the range); f32
    // rounding adds a few ulps of the largest magnitude per pass.
    let range = (hi as f64 - lo as f64).max(0.0);
    let slack = 2e-3 * range + 1e-5 * big + rounding;
    for (i, &v) in out.data.iter().enumerate() {
        assert!(v.is_finite(), "sample {i} is {v}");
        assert!(
            (v as f64) >= lo as f64 - slack && (v as f64) <= hi as f64 + slack,
            "sample {i} = {v} outside [{lo}, {hi}] ± {slack}"
        );
    }
    if input.constant || lo == hi {
        // The recursive filter keeps a constant to the last bit (it filters the difference
        // from the line's first sample); the FIR to its rounding.
        let tol = if n == 0.0 { 0.0 } else { rounding as f32 };
        assert!(
            out.data.iter().all(|&v| (v - lo).abs() <= tol),
            "a constant image changed"
        );
    }
});
