//! The banded blur against the reference: every layout and odd sizes, 8-bit rounding at large
//! sigma, the bounds the module doc states, and what the band sums leave out.

use super::*;
use crate::cpu::reference;
use crate::filter::gaussian::RecursiveGaussian;
use crate::filter::Method;
use image::{ColorType, ImageBuffer};

fn noise(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (s >> 40) as f32 / (1u64 << 24) as f32
        })
        .collect()
}

fn image_of(color: ColorType, w: u32, h: u32, seed: u64) -> DynamicImage {
    let c = color.channel_count() as usize;
    let v = noise(w as usize * h as usize * c, seed);
    let f = ImageBuffer::<image::Rgba<f32>, _>::from_fn(w, h, |x, y| {
        let i = (y as usize * w as usize + x as usize) * c;
        image::Rgba(std::array::from_fn(|k| v[i + k.min(c - 1)]))
    });
    let f = DynamicImage::ImageRgba32F(f);
    crate::pixels::convert(f, color)
}

/// The banded blur of every layout at odd sizes, with each of `blurs` (sigma x, y; 0 leaves
/// an axis alone) in sRGB and linear light, against the reference: floats agree to
/// rounding, integers to one step of rounding either way. `seed` varies the images.
fn matches_the_reference(blurs: &[(f64, f64)], seed: usize) {
    let sizes = [(1, 1), (1, 9), (13, 1), (17, 5), (70, 133), (301, 77)];
    let colors = [
        ColorType::L8,
        ColorType::La8,
        ColorType::Rgb8,
        ColorType::Rgba8,
        ColorType::L16,
        ColorType::Rgb16,
        ColorType::Rgba16,
        ColorType::Rgb32F,
        ColorType::Rgba32F,
    ];
    for (i, &(w, h)) in sizes.iter().enumerate() {
        for (j, &color) in colors.iter().enumerate() {
            for &(sx, sy) in blurs {
                for linear in [false, true] {
                    let src = image_of(color, w, h, (i * seed + j) as u64);
                    let blur = Blur2d::checked(Method::Recursive, sx, sy).unwrap();
                    let want = reference::blur_image(&src, &blur, linear);
                    let mut got = src.clone();
                    blur_image(&mut got, &blur, linear).expect("the banded blur applies");
                    let tol = match color {
                        ColorType::Rgb32F | ColorType::Rgba32F => 1e-5,
                        ColorType::L16 | ColorType::Rgb16 | ColorType::Rgba16 => 1.01 / 65535.0,
                        _ => 1.01 / 255.0,
                    };
                    let d = reference::max_difference(&want, &got);
                    assert!(
                        d <= tol,
                        "{color:?} {w}x{h} sigma {sx}/{sy} linear={linear}: {d}"
                    );
                }
            }
        }
    }
}

#[test]
fn matches_the_reference_on_every_layout_and_odd_sizes() {
    matches_the_reference(&[(2.5, 2.5), (5.0, 40.0)], 31);
}

#[test]
fn one_axis_matches_the_reference_on_every_layout_and_odd_sizes() {
    // x alone runs the bands with y's filter skipped; y alone the column walks of
    // `columns_only`, which store their rows without a rows pass.
    matches_the_reference(&[(4.0, 0.0), (0.0, 4.0), (0.0, 60.0)], 29);
}

#[test]
fn band_sums_leave_out_only_negligible_weights() {
    // Per component, what the sums leave out against the sum of all weights' sizes: far
    // below f32's rounding (2^-24), and at small sigma most of the band is left out.
    for sigma in [0.5, 1.0, 2.0, 3.0, 5.0, 8.0, 13.0, 20.0, 50.0] {
        let k = RecursiveGaussian::new(sigma).to_f32_block();
        let sums = BandSums::new(&k, BAND_ROWS);
        for f in 0..4 {
            let size = |w: &[[f32; 4]]| w.iter().map(|w| w[f].abs() as f64).sum::<f64>();
            let left = size(&sums.weights[sums.reach..]) / size(&sums.weights);
            assert!(
                left < 2f64.powi(-26),
                "sigma {sigma}, component {f}: {left:e}"
            );
        }
        if sigma <= 5.0 {
            assert!(
                sums.reach < BAND_ROWS / 2 + 8,
                "sigma {sigma}: {}",
                sums.reach
            );
        }
    }
}

#[test]
fn eight_bit_levels_round_as_the_reference_at_large_sigma() {
    // 8-bit samples are filtered in levels (0..=255), the reference in [0, 1]; across many
    // bands and at large sigma they must still round the same nearly everywhere.
    let src = image_of(ColorType::Rgb8, 133, 700, 3);
    for (sx, sy) in [(250.0, 250.0), (1.5, 600.0), (40.0, 3.0)] {
        let blur = Blur2d::new(Method::Recursive, sx, sy);
        let want = reference::blur_image(&src, &blur, false);
        let mut got = src.clone();
        blur_image(&mut got, &blur, false).unwrap();
        let (w, g) = (want.as_bytes(), got.as_bytes());
        let off: Vec<i32> = w
            .iter()
            .zip(g)
            .map(|(&a, &b)| a as i32 - b as i32)
            .collect();
        let differ = off.iter().filter(|&&d| d != 0).count();
        assert!(off.iter().all(|d| d.abs() <= 1), "sigma {sx}/{sy}");
        assert!(
            differ * 1000 < off.len(),
            "sigma {sx}/{sy}: {differ} differ"
        );
    }
}

#[test]
fn constant_image_stays_constant() {
    let mut img: DynamicImage =
        image::RgbImage::from_pixel(90, 300, image::Rgb([7, 128, 255])).into();
    let before = img.clone();
    blur_image(&mut img, &Blur2d::new(Method::Recursive, 30.0, 30.0), false).unwrap();
    assert_eq!(img, before);
}

#[test]
fn fir_axes_are_left_to_the_reference() {
    let mut img: DynamicImage = image::RgbImage::new(4, 4).into();
    assert!(blur_image(&mut img, &Blur2d::new(Method::Fir, 1.0, 1.0), false).is_none());
}

#[test]
fn agrees_with_the_reference_to_a_few_roundings() {
    // Poles first, numerator on their state: the same filter, rounded differently. What
    // it measured: f32 2.4e-7 at σ ≤ 30 and 1.6e-6 at σ = 400; 8-bit 4–13 samples in
    // 632 100 one step off at σ ≤ 120 and 79 at σ = 400. 700 rows: five 128-row bands
    // with boundary states and a short last one.
    let (src, src8) = (
        image_of(ColorType::Rgb32F, 150, 700, 7),
        image_of(ColorType::Rgb8, 301, 700, 3),
    );
    for (sigma, f32_bound, differ_bound) in [
        (1.0, 5e-7, 30),
        (2.0, 5e-7, 30),
        (5.0, 5e-7, 30),
        (11.0, 5e-7, 30),
        (30.0, 5e-7, 30),
        (120.0, 1.5e-6, 40),
        (400.0, 4e-6, 200),
    ] {
        let blur = Blur2d::new(Method::Recursive, sigma, sigma);
        let want = reference::blur_image(&src, &blur, false);
        let mut got = src.clone();
        blur_image(&mut got, &blur, false).unwrap();
        let d = reference::max_difference(&want, &got);
        assert!(d <= f32_bound, "sigma {sigma}: f32 {d:e}");
        let want = reference::blur_image(&src8, &blur, false);
        let mut got = src8.clone();
        blur_image(&mut got, &blur, false).unwrap();
        let (w, g) = (want.as_bytes(), got.as_bytes());
        let differ = w.iter().zip(g).filter(|(a, b)| a != b).count();
        assert!(
            differ <= differ_bound,
            "sigma {sigma}: 8-bit {differ} differ"
        );
    }
}

/// A selection with runs of 0 and of 1 (whole 16-sample blocks and parts of them) and grey
/// values between, as a mask with a feathered edge has.
fn selection(w: usize, h: usize, seed: u64) -> Vec<f32> {
    let grey = noise(w * h, seed);
    (0..w * h)
        .map(|i| match (i % w / 11 + i / w / 7) % 4 {
            0 => 0.0,
            1 => 1.0,
            2 => grey[i],
            _ => (grey[i] * 3.0 - 1.0).clamp(0.0, 1.0),
        })
        .collect()
}

/// Every sample of `got` is `Sample::mix` of `src`'s and `blurred`'s by its pixel's selection;
/// returns how many were mixed by a grey value.
fn mixed_samples<T: Sample + PartialEq + std::fmt::Debug>(
    (src, blurred, got): (&[T], &[T], &[T]),
    select: &[f32],
    what: &str,
) -> usize {
    let c = src.len() / select.len().max(1);
    for (q, ((a, b), g)) in src.iter().zip(blurred).zip(got).enumerate() {
        assert_eq!(*g, T::mix(*a, *b, select[q / c]), "{what}: sample {q}");
    }
    (0..src.len())
        .filter(|q| select[q / c] > 0.0 && select[q / c] < 1.0)
        .count()
}

#[test]
fn mixing_as_the_rows_are_written_is_the_blend_of_the_blur_bit_for_bit() {
    let colors = [
        ColorType::L8,
        ColorType::La8,
        ColorType::Rgb8,
        ColorType::Rgba8,
        ColorType::L16,
        ColorType::Rgb16,
        ColorType::Rgb32F,
        ColorType::Rgba32F,
    ];
    for (i, &(w, h)) in [(1, 1), (13, 5), (70, 133), (301, 270)].iter().enumerate() {
        for (j, &color) in colors.iter().enumerate() {
            let src = image_of(color, w, h, (i * 17 + j) as u64);
            let select = selection(w as usize, h as usize, j as u64);
            let blurs = [(6.0, 9.0), (0.0, 9.0), (6.0, 0.0)];
            for (linear, (sx, sy)) in [false, true]
                .into_iter()
                .flat_map(|l| blurs.map(|b| (l, b)))
            {
                let blur = Blur2d::checked(Method::Recursive, sx, sy).unwrap();
                let mut blurred = src.clone();
                blur_image(&mut blurred, &blur, linear).unwrap();
                let mut got = src.clone();
                blur_image_mixed(&mut got, &blur, linear, Some(&select)).unwrap();
                let what = format!("{color:?} {w}x{h} linear {linear} sigma {sx}/{sy}");
                macro_rules! check {
                    ($($v:ident),*) => {
                        match (&src, &blurred, &got) {
                            $((DynamicImage::$v(a), DynamicImage::$v(b), DynamicImage::$v(g)) => {
                                mixed_samples((a.as_raw(), b.as_raw(), g.as_raw()), &select, &what)
                            })*
                            _ => unreachable!("{what}"),
                        }
                    };
                }
                let mixed = check!(
                    ImageLuma8,
                    ImageLumaA8,
                    ImageRgb8,
                    ImageRgba8,
                    ImageLuma16,
                    ImageRgb16,
                    ImageRgb32F,
                    ImageRgba32F
                );
                assert!(
                    w * h < 100 || mixed > 0,
                    "{what}: the selection has grey values"
                );
            }
        }
    }
}

/// Many threads filter several bands' rows at once (`MOST_BANDS_AT_ONCE`): the same samples,
/// bit for bit, as one band at a time on one thread, for every band count's remainder, with
/// and without a selection mixed in.
#[test]
fn bands_at_once_on_many_threads_give_the_samples_of_one_band_at_a_time() {
    let pool = |n| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .unwrap()
    };
    let blur = Blur2d::checked(Method::Recursive, 3.0, 2.0).unwrap();
    for (w, h) in [
        (37, 3 * BAND_ROWS + 5),
        (64, 9 * BAND_ROWS),
        (5, BAND_ROWS - 3),
    ] {
        for (color, seed) in [
            (ColorType::Rgb8, 1),
            (ColorType::Rgba16, 2),
            (ColorType::Rgb32F, 3),
        ] {
            let src = image_of(color, w, h as u32, seed);
            let run = |threads| {
                let mut got = src.clone();
                pool(threads).install(|| blur_image(&mut got, &blur, false).expect("applies"));
                got
            };
            let one = run(1);
            for threads in [9, 17, 40] {
                assert!(
                    run(threads) == one,
                    "{color:?} {w}×{h} on {threads} threads"
                );
            }
        }
    }
    let (w, h) = (40usize, 5 * BAND_ROWS + 7);
    let mix = selection(w, h, 4);
    let src: Vec<u8> = noise(w * h * 3, 5)
        .iter()
        .map(|v| (v * 255.0) as u8)
        .collect();
    let px = Pixels {
        channels: 3,
        alpha: false,
        linear: None,
        mix: Some(&mix),
        sharpen: None,
    };
    let (kx, ky) = recursive_blocks(&blur).unwrap();
    let run = |threads| {
        let mut got = src.clone();
        pool(threads).install(|| blur_in_place(&mut got, (w, h), &px, kx, ky));
        got
    };
    let one = run(1);
    assert!(run(24) == one, "with a selection");
}

/// Blurred from a source into another buffer (whose old samples are nothing to the blur),
/// every layout gives the samples the blur in place gives, on one thread and on many; with
/// one axis, or a selection, through the copy.
#[test]
fn blurred_into_another_buffer_gives_the_samples_blurred_in_place() {
    fn check<T: Sample + PartialEq + std::fmt::Debug>(
        src: &[T],
        (w, h): (usize, usize),
        channels: usize,
        alpha: bool,
    ) {
        let pool = |n| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(n)
                .build()
                .unwrap()
        };
        let blur = Blur2d::checked(Method::Recursive, 3.0, 2.0).unwrap();
        let (kx, ky) = recursive_blocks(&blur).unwrap();
        let mix = selection(w, h, 9);
        // 1 and 7 threads: every band and pairs of bands a group; 9: three, the last group short.
        for threads in [1, 7, 9] {
            for axes in [(Some(kx), Some(ky)), (None, Some(ky)), (Some(kx), None)] {
                for mix in [None, Some(&mix[..])] {
                    let px = Pixels {
                        channels,
                        alpha,
                        linear: None,
                        mix,
                        sharpen: None,
                    };
                    let mut want = src.to_vec();
                    pool(threads).install(|| blur_axes_in_place(&mut want, (w, h), &px, axes));
                    // The buffer's old samples: anything.
                    let mut got = src.iter().rev().copied().collect::<Vec<T>>();
                    pool(threads).install(|| blur_axes_into(src, &mut got, (w, h), &px, axes));
                    assert!(got == want, "{w}×{h}×{channels} on {threads} threads");
                }
            }
        }
    }
    for (w, h) in [(37, 3 * BAND_ROWS + 5), (5, BAND_ROWS - 3)] {
        let v = noise(w * h * 4, 11);
        let u8s: Vec<u8> = v[..w * h * 3].iter().map(|x| (x * 255.0) as u8).collect();
        let u16s: Vec<u16> = v.iter().map(|x| (x * 65535.0) as u16).collect();
        check(&u8s, (w, h), 3, false);
        check(&u16s, (w, h), 4, true);
        check(&v[..w * h], (w, h), 1, false);
    }
}

/// A blur along y alone on many threads, each allocating its column buffer on every core the
/// first time (a worker waiting on that allocation takes up another walk on the same thread):
/// the samples of one thread, and no walk finds its thread's buffer in use.
#[test]
fn columns_alone_on_many_threads_give_the_samples_of_one_thread() {
    let blur = Blur2d::checked(Method::Recursive, 0.0, 4.0).unwrap();
    for (w, h, seed) in [(300u32, 3000u32, 7), (700, 1500, 8)] {
        let src = image_of(ColorType::L16, w, h, seed);
        let run = |threads| {
            let mut got = src.clone();
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            pool.install(|| blur_image(&mut got, &blur, false).expect("applies"));
            got
        };
        let one = run(1);
        for threads in [8, 32] {
            assert!(run(threads) == one, "{w}×{h} on {threads} threads");
        }
    }
}
