//! The unsharp mask: out = in + amount · (in − G_σ ∗ in), applied only where the difference
//! is larger than the threshold. The blur is gblur's Gaussian on any path and device, so the
//! cost is the blur's: the same at any radius.
//!
//! It runs on the premultiplied planar working image that every path blurs (`Keep::Planar`),
//! in the blur's units (linear light with `--linear`): colour is blurred premultiplied by
//! alpha and sharpened as straight values (premultiplied ÷ alpha), and alpha keeps the
//! input's (sharpening coverage would cut holes into soft edges). An image without alpha,
//! linear light or a selection is sharpened in place by the banded blur's rows pass instead
//! (`cpu::banded::Unsharp`), luma alone too. With `luminance` only Rec. 709 luma is sharpened: the same difference is
//! added to red, green and blue, which leaves the colour differences (Cb, Cr) as they were,
//! so edges gain no colour fringes (vips sharpens its L channel alone for the same reason).
//! Integer outputs are clipped when the image is converted back; float outputs keep every
//! value, overshoot included.

// The pixel loop indexes several planes in step.
#![allow(clippy::needless_range_loop)]

use crate::cpu::banded::luma;
use crate::pixels::planar::Planar;
use crate::pixels::Layout;
use rayon::prelude::*;

/// How much to sharpen, and where.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sharpen {
    /// The weight of the difference from the blur: 1 doubles it, 0 changes nothing.
    pub amount: f32,
    /// Differences no larger than this (a fraction of full scale for 8- and 16-bit images, the
    /// value itself for float ones) are left alone: noise and smooth skin stay as they were.
    pub threshold: f32,
    /// Sharpen luma alone (RGB images; gray images have nothing else).
    pub luminance: bool,
}

impl Sharpen {
    /// The banded blur's form of it for samples of `color` (the threshold in levels).
    pub fn unsharp(&self, color: image::ColorType) -> crate::cpu::banded::Unsharp {
        let full = match crate::pixels::sample_bits(color) {
            8 => 255.0,
            16 => 65535.0,
            _ => 1.0,
        };
        crate::cpu::banded::Unsharp {
            amount: self.amount,
            threshold: self.threshold * full,
            luminance: self.luminance,
        }
    }

    /// Whether a job may sharpen in place on the Rust path (`work::blur::blur` decides per
    /// image): linear light and a selection need planar f32.
    pub fn in_place(&self, linear: bool, selection: bool) -> bool {
        !linear && !selection
    }

    /// What the report says ran.
    pub fn describe(&self) -> String {
        let luma = if self.luminance { ", luminance" } else { "" };
        format!(
            "sharpened (amount {}, threshold {}{luma})",
            self.amount, self.threshold
        )
    }

    /// Makes `blurred` (the blur of `original`, both in `layout`) the sharpened image.
    pub fn apply(&self, original: &Planar, blurred: &mut Planar, layout: Layout) {
        assert_eq!(original.data.len(), blurred.data.len(), "the same image");
        let plane = original.plane_len();
        if plane == 0 {
            return;
        }
        let alpha = layout.has_alpha();
        let colour = original.channels - alpha as usize;
        let by_luma = self.luminance && colour == 3;
        let unsharp = crate::cpu::banded::Unsharp {
            amount: self.amount,
            threshold: self.threshold,
            luminance: self.luminance,
        };
        let sharp = move |o: f32, b: f32| unsharp.apply(o, b);
        // Colour without alpha: the working values are premultiplied; where no coverage
        // is left the colour is undefined and the input's stands.
        let straight = |p: f32, a: f32, or: f32| if a > 1e-7 { p / a } else { or };
        const CHUNK: usize = 4096;
        let orig = &original.data;
        // Each worker takes pixels `start .. start + CHUNK` of every plane.
        pixels_of_planes(&mut blurred.data, plane, CHUNK)
            .into_par_iter()
            .enumerate()
            .for_each(|(k, mut chunk)| {
                let start = k * CHUNK;
                let n = chunk[0].len();
                let at = |c: usize, i: usize| orig[c * plane + start + i];
                for i in 0..n {
                    let (ao, ab) = match alpha {
                        true => (at(colour, i), chunk[colour][i]),
                        false => (1.0, 1.0),
                    };
                    if by_luma {
                        let o: [f32; 3] = std::array::from_fn(|c| straight(at(c, i), ao, 0.0));
                        let b: [f32; 3] = std::array::from_fn(|c| straight(chunk[c][i], ab, o[c]));
                        let dy = sharp(luma(o), luma(b)) - luma(o);
                        for c in 0..3 {
                            chunk[c][i] = (o[c] + dy) * ao;
                        }
                    } else {
                        for c in 0..colour {
                            let o = straight(at(c, i), ao, 0.0);
                            let b = straight(chunk[c][i], ab, o);
                            chunk[c][i] = sharp(o, b) * ao;
                        }
                    }
                    if alpha {
                        // Alpha keeps the input's.
                        chunk[colour][i] = ao;
                    }
                }
            });
    }
}

/// The planes of `plane` samples each in `data` cut into runs of `chunk` pixels: run `k`
/// holds pixels `k·chunk ..` of every plane, in plane order.
fn pixels_of_planes(data: &mut [f32], plane: usize, chunk: usize) -> Vec<Vec<&mut [f32]>> {
    let mut runs: Vec<Vec<&mut [f32]>> = (0..plane.div_ceil(chunk)).map(|_| Vec::new()).collect();
    for p in data.chunks_mut(plane) {
        for (k, run) in p.chunks_mut(chunk).enumerate() {
            runs[k].push(run);
        }
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::*;
    use image::ColorType;

    fn layout(color: ColorType) -> Layout {
        Layout {
            color,
            linear: false,
        }
    }

    #[test]
    fn the_formula_with_its_threshold_and_alpha_kept() {
        let original = Planar::from_fn(4, 1, 2, |x, _, c| match c {
            0 => [0.2, 0.5, 0.5, 0.9][x],
            _ => 0.5,
        });
        let mut blurred = Planar::from_fn(4, 1, 2, |x, _, c| match c {
            0 => [0.3, 0.5, 0.48, 0.7][x],
            _ => 0.4,
        });
        let s = Sharpen {
            amount: 1.5,
            threshold: 0.05,
            luminance: false,
        };
        s.apply(&original, &mut blurred, layout(ColorType::La8));
        // Colour as straight values (premultiplied ÷ alpha): the input's over 0.5, the blur's
        // over 0.4; the sharpened colour premultiplied again by the input's alpha.
        let got: Vec<f32> = blurred.data[..4].to_vec();
        let (o, b) = ([0.4, 1.0, 1.0, 1.8], [0.75, 1.25, 1.2, 1.75]);
        let want: Vec<f32> = (0..4)
            .map(|i| {
                let d: f32 = o[i] - b[i];
                let c = if d.abs() > 0.05 { o[i] + 1.5 * d } else { o[i] };
                c * 0.5
            })
            .collect();
        for (g, w) in got.iter().zip(&want) {
            assert!((g - w).abs() < 1e-6, "{got:?} against {want:?}");
        }
        assert_eq!(got[3], 0.9, "a difference under the threshold is left");
        assert!(blurred.data[4..].iter().all(|&a| a == 0.5), "alpha kept");
    }

    #[test]
    fn luminance_moves_every_channel_by_the_same_amount() {
        let original = Planar::from_fn(3, 1, 3, |x, _, c| (x * 3 + c) as f32 / 10.0);
        let mut blurred = Planar::from_fn(3, 1, 3, |x, _, c| (x * 3 + c) as f32 / 10.0 - 0.05);
        let s = Sharpen {
            amount: 2.0,
            threshold: 0.0,
            luminance: true,
        };
        s.apply(&original, &mut blurred, layout(ColorType::Rgb8));
        for x in 0..3 {
            let d: Vec<f32> = (0..3)
                .map(|c| blurred.at(x, 0, c) - original.at(x, 0, c))
                .collect();
            assert!(d.iter().all(|v| (v - 0.1).abs() < 1e-6), "{d:?}");
        }
    }
}
