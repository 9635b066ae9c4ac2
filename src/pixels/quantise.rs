//! Working values (full scale 1.0) to integer samples: rounding, clipping to the output's
//! range, and optional dither.
//!
//! The dither is TPDF (triangular) noise of ±1 step added before rounding: the difference of
//! two independent uniform variables in [0, 1) steps. With it the rounding error's mean is 0
//! and its variance (1/4 step²) is the same for every input value, so a smooth gradient
//! becomes an even, fine grain instead of bands, and the local mean of the output follows the
//! input to a fraction of a step. Rectangular (±½ step) noise would leave the error's variance
//! depending on the signal (noise modulation), and an ordered or blue-noise pattern needs a
//! texture and shows a structure of its own; TPDF is the standard choice for requantisation
//! (Lipshitz, Wannamaker & Vanderkooy, "Quantization and dither: a theoretical survey",
//! JAES 1992).
//!
//! The noise is a hash of the output sample's index (its position in the interleaved output,
//! `(y × width + x) × channels + c`) and a fixed seed, so the same image always gives the same
//! bytes whatever the number of threads.

use rayon::prelude::*;

/// Seed of the dither noise: any constant; fixed so that outputs are reproducible.
const SEED: u64 = 0x6762_6c75_725f_6474; // "gblur_dt"

/// SplitMix64's finaliser (Steele, Lea & Flood 2014): a bijective mix whose output bits pass
/// BigCrush for consecutive inputs, which is how the sample indices come.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The dither noise of output sample `index`, in steps: triangular on (-1, 1), mean 0.
pub fn tpdf(index: usize) -> f32 {
    let h = mix((index as u64).wrapping_add(SEED));
    let unit = |bits: u64| (bits & 0xFF_FFFF) as f32 * (1.0 / (1u32 << 24) as f32);
    unit(h >> 40) - unit(h >> 8)
}

/// A working value as a sample of `max` steps (255 or 65535), with `noise` steps added
/// before rounding; values outside [0, 1] saturate.
#[inline]
pub fn to_steps(v: f32, max: f32, noise: f32) -> f32 {
    ((v * max + noise).clamp(0.0, max) + 0.5).floor()
}

/// The noise of sample `index` when dithering, else 0.
#[inline]
pub fn noise(dither: bool, index: usize) -> f32 {
    if dither {
        tpdf(index)
    } else {
        0.0
    }
}

/// Interleaved float samples as 8-bit ones, each dithered by its own index when `dither`.
pub fn quantise_u8(src: &[f32], dither: bool) -> Vec<u8> {
    quantise(src, |v, i| to_steps(v, 255.0, noise(dither, i)) as u8)
}

/// Interleaved float samples as 16-bit ones, each dithered by its own index when `dither`.
pub fn quantise_u16(src: &[f32], dither: bool) -> Vec<u16> {
    quantise(src, |v, i| to_steps(v, 65535.0, noise(dither, i)) as u16)
}

fn quantise<T: Copy + Default + Send>(src: &[f32], f: impl Fn(f32, usize) -> T + Sync) -> Vec<T> {
    const CHUNK: usize = 1 << 16;
    let mut out = vec![T::default(); src.len()];
    out.par_chunks_mut(CHUNK)
        .zip(src.par_chunks(CHUNK))
        .enumerate()
        .for_each(|(k, (o, s))| {
            for (i, (o, &v)) in o.iter_mut().zip(s).enumerate() {
                *o = f(v, k * CHUNK + i);
            }
        });
    out
}

/// How many samples lie outside [0, 1], the range an integer output holds.
pub fn count_outside(src: &[f32]) -> usize {
    src.par_iter().filter(|v| !(0.0..=1.0).contains(*v)).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tpdf_is_triangular_with_mean_zero() {
        let n = 1 << 20;
        let v: Vec<f32> = (0..n).map(tpdf).collect();
        let mean = v.iter().map(|&x| x as f64).sum::<f64>() / n as f64;
        let var = v.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / n as f64;
        assert!(v.iter().all(|x| x.abs() < 1.0));
        // A triangular density on (-1, 1) has mean 0 and variance 1/6; the middle half of
        // its mass lies within ±(1 - 1/√2).
        assert!(mean.abs() < 2e-3, "mean {mean}");
        assert!((var - 1.0 / 6.0).abs() < 2e-3, "variance {var}");
        let inner = v.iter().filter(|x| x.abs() < 1.0 - 0.5f32.sqrt()).count();
        assert!((inner as f64 / n as f64 - 0.5).abs() < 5e-3, "{inner}");
    }

    #[test]
    fn dither_keeps_the_mean_of_a_constant_between_steps() {
        // 0.3 steps above level 100: undithered it always rounds to 100.
        let v = (100.3f32) / 255.0;
        let src = vec![v; 100_000];
        let plain = quantise_u8(&src, false);
        assert!(plain.iter().all(|&q| q == 100));
        let d = quantise_u8(&src, true);
        let mean = d.iter().map(|&q| q as f64).sum::<f64>() / d.len() as f64;
        assert!((mean - 100.3).abs() < 0.01, "mean {mean}");
        assert!(d.iter().all(|&q| (99..=102).contains(&q)));
    }

    #[test]
    fn out_of_range_saturates_and_is_counted() {
        let src = [-3.0, 0.0, 0.5, 1.0, 1e4];
        assert_eq!(quantise_u8(&src, false), [0, 0, 128, 255, 255]);
        assert_eq!(quantise_u16(&src, true)[4], 65535);
        assert_eq!(count_outside(&src), 2);
    }
}
