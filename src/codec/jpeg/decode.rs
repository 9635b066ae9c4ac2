//! JPEG pixels through libjpeg (libjpeg-turbo's C code with its SIMD, built by the `mozjpeg`
//! crate): every 8-bit gray, YCbCr or RGB file, with any warning of damaged data (a restart
//! interval that does not match the data, corrupt Huffman codes, a file cut short) made an
//! error instead of gray rows; CMYK and YCCK files as their inks (`decode_inks`), which go
//! through the file's ICC profile or a formula to RGB. What libjpeg finds damaged goes to
//! libjpeg again in its tolerant mode (`libjpeg::recover`).

use super::errors::{run, strict_errors};
use super::header::{is_progressive, Frame};
use super::pieces::Pieces;
use image::{DynamicImage, GrayImage, RgbImage};
use mozjpeg_sys::J_COLOR_SPACE;
use rayon::prelude::*;

/// The 8-bit frame of a gray or three-component JPEG, if libjpeg can decode it within
/// `max_bytes`: `extra` bytes a pixel beside what libjpeg itself holds, which for a
/// progressive file is every coefficient of the image (two bytes a sample).
pub fn frame_within(bytes: &[u8], extra: u64, max_bytes: u64) -> Option<Frame> {
    let frame = Frame::read(&mut std::io::Cursor::new(bytes))?;
    if frame.precision != 8 || !matches!(frame.components, 1 | 3) {
        return None;
    }
    (working_bytes(bytes, frame, extra) <= max_bytes).then_some(frame)
}

/// What decoding `bytes`, whose frame is `frame`, holds beside libjpeg's own small state:
/// `extra` bytes a pixel (padded to whole blocks) for what the caller keeps, and for a
/// progressive file every coefficient of the image (two bytes a sample of each component).
pub fn working_bytes(bytes: &[u8], frame: Frame, extra: u64) -> u64 {
    let padded = (frame.width as u64 + 15) * (frame.height as u64 + 15);
    let coefficients = match is_progressive(bytes) {
        true => padded * frame.components as u64 * 2,
        false => 0,
    };
    padded * extra + coefficients
}

/// The pixels of an 8-bit gray, YCbCr or RGB JPEG, as 8-bit gray or RGB: `Ok(None)` for a
/// file it does not take (CMYK, YCCK, 12-bit, over `max_bytes` of working memory), which
/// another decoder reads; `Err` for a file whose data it finds damaged (a warning or an error
/// while decoding), which libjpeg then recovers or refuses (`libjpeg::recover`).
pub fn decode_pixels(bytes: &[u8], max_bytes: u64) -> Result<Option<DynamicImage>, String> {
    let Some(frame) = frame_within(bytes, 3, max_bytes) else {
        return Ok(None);
    };
    let header = run(|| {
        mozjpeg::Decompress::with_err(strict_errors())
            .from_mem(bytes)
            .map(|d| d.color_space())
    });
    let gray = match header? {
        J_COLOR_SPACE::JCS_GRAYSCALE => true,
        J_COLOR_SPACE::JCS_YCbCr | J_COLOR_SPACE::JCS_RGB => false,
        _ => return Ok(None),
    };
    let (w, h) = (frame.width, frame.height);
    let row = w as usize * if gray { 1 } else { 3 };
    let mut pixels = vec![0u8; row * h as usize];
    match Pieces::cut(bytes).filter(|p| !p.blends_rows()) {
        None => run(|| pixels_into(bytes, gray, &mut pixels))?,
        Some(pieces) => {
            let mut parts = Vec::with_capacity(pieces.len());
            let mut rest = &mut pixels[..];
            for i in 0..pieces.len() {
                let (part, after) = rest.split_at_mut(pieces.rows(i).len() * row);
                parts.push(part);
                rest = after;
            }
            parts
                .into_par_iter()
                .enumerate()
                .try_for_each(|(i, part)| run(|| pixels_into(&pieces.jpeg(i), gray, part)))?;
        }
    }
    Ok(match gray {
        true => GrayImage::from_raw(w, h, pixels).map(DynamicImage::from),
        false => RgbImage::from_raw(w, h, pixels).map(DynamicImage::from),
    })
}

/// Decodes `jpeg` (a whole file or one of its pieces) to gray or RGB, filling `out`, which
/// holds exactly its rows.
fn pixels_into(jpeg: &[u8], gray: bool, out: &mut [u8]) -> std::io::Result<()> {
    let decompress = mozjpeg::Decompress::with_err(strict_errors()).from_mem(jpeg)?;
    let mut started = match gray {
        true => decompress.grayscale()?,
        false => decompress.rgb()?,
    };
    let channels = if gray { 1 } else { 3 };
    if started.width() * started.height() * channels != out.len() {
        return Err(std::io::Error::other(
            "libjpeg reads another size than its header",
        ));
    }
    started.read_scanlines_into(out)?;
    started.finish()
}

/// The inks of a four-component JPEG (CMYK, or YCCK, which libjpeg turns to CMYK), four 8-bit
/// samples a pixel from 0 (no ink) to 255, read by libjpeg with every warning of damaged data
/// an error. The samples are taken as stored inverted (255 is no ink), as Photoshop writes
/// them and as libjpeg-based readers (Pillow, vips) take every CMYK JPEG, so that the
/// profile's path and the formula's agree on any file. At most `max_bytes` of samples.
pub fn decode_inks(bytes: &[u8], max_bytes: u64) -> Result<(u32, u32, Vec<u8>), String> {
    let frame = Frame::read(&mut std::io::Cursor::new(bytes)).ok_or("no frame header")?;
    if frame.components != 4 {
        return Err(format!("{} components, not four", frame.components));
    }
    let (w, h) = (frame.width, frame.height);
    if w as u64 * h as u64 * 4 > max_bytes {
        return Err("over the memory limit".into());
    }
    let mut samples = vec![0u8; w as usize * h as usize * 4];
    run(|| {
        let decompress = mozjpeg::Decompress::with_err(strict_errors()).from_mem(bytes)?;
        let mut started = decompress.to_colorspace(J_COLOR_SPACE::JCS_CMYK)?;
        if started.width() * started.height() * 4 != samples.len() {
            return Err(std::io::Error::other(
                "libjpeg reads another size than its header",
            ));
        }
        started.read_scanlines_into(&mut samples)?;
        started.finish()
    })?;
    for s in samples.iter_mut() {
        *s = 255 - *s;
    }
    Ok((w, h, samples))
}

/// RGB from inks (`decode_inks`) by the formula that assumes no profile: R = (255 − C)(255 − K)
/// / 255, and so for G and B: approximate, as every reader's conversion without a profile is,
/// and the one the TIFF decoder applies to CMYK TIFFs.
pub fn inks_by_formula(w: u32, h: u32, inks: &[u8]) -> Option<RgbImage> {
    let rgb = inks
        .chunks_exact(4)
        .flat_map(|p| {
            let white = 255 - p[3] as u32;
            [0, 1, 2].map(|c| ((255 - p[c] as u32) * white / 255) as u8)
        })
        .collect();
    RgbImage::from_raw(w, h, rgb)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::jpeg::compress::{compress_progressive, compress_samples, Written};
    use crate::codec::jpeg::JpegColor;

    /// RGB rows written by libjpeg at `quality` with luma's sampling `factors`.
    fn written(rgb: &RgbImage, quality: u8, factors: (u8, u8)) -> Vec<u8> {
        let how = Written {
            quality,
            luma_factors: factors,
            adobe_marker: false,
            icc: None,
        };
        compress_samples(rgb.as_raw(), rgb.width(), JpegColor::Rgb, how).unwrap()
    }

    fn photo(w: u32, h: u32) -> RgbImage {
        RgbImage::from_fn(w, h, |x, y| {
            image::Rgb([
                (x * 255 / w) as u8,
                (y * 255 / h) as u8,
                ((x * 7 + y * 13) % 256) as u8,
            ])
        })
    }

    /// Gray rows written by libjpeg at `quality`.
    fn written_gray(luma: &GrayImage, quality: u8) -> Vec<u8> {
        let how = Written {
            quality,
            luma_factors: (1, 1),
            adobe_marker: false,
            icc: None,
        };
        compress_samples(luma.as_raw(), luma.width(), JpegColor::Gray, how).unwrap()
    }

    /// Flat patches of known inks, written as Photoshop writes CMYK (inverted, Adobe segment),
    /// come back as those inks, and the formula makes of them what it says.
    #[test]
    fn inks_come_back_and_the_formula_is_the_stated_one() {
        let patches: [[u8; 4]; 4] = [
            [0, 0, 0, 0],
            [255, 0, 0, 0],
            [0, 128, 255, 64],
            [30, 60, 90, 255],
        ];
        let (w, h) = (64u32, 16u32);
        let inks: Vec<u8> = (0..w * h)
            .flat_map(|i| patches[(i % w / 16) as usize])
            .collect();
        let stored: Vec<u8> = inks.iter().map(|v| 255 - v).collect();
        let how = Written {
            quality: 100,
            luma_factors: (1, 1),
            adobe_marker: true,
            icc: None,
        };
        let jpeg =
            compress_samples(&stored, w, JpegColor::Cmyk { adobe_marker: true }, how).unwrap();
        let (dw, dh, back) = decode_inks(&jpeg, 1 << 30).unwrap();
        assert_eq!((dw, dh), (w, h));
        let worst = back
            .iter()
            .zip(&inks)
            .map(|(a, b)| a.abs_diff(*b))
            .max()
            .unwrap();
        assert!(worst <= 2, "{worst} levels from the inks written");
        let rgb = inks_by_formula(w, h, &back).unwrap();
        for (x, want) in [
            (0, [255, 255, 255]),
            (16, [0, 255, 255]),
            (32, [191, 95, 0]),
            (48, [0, 0, 0]),
        ] {
            let got = rgb.get_pixel(x + 8, 8).0;
            for c in 0..3 {
                assert!(
                    got[c].abs_diff(want[c]) <= 2,
                    "patch at {x}: {got:?} for {want:?}"
                );
            }
        }
        assert!(decode_inks(&jpeg, 100).is_err(), "over the memory limit");
        assert!(
            decode_inks(&written(&photo(8, 8), 90, (1, 1)), 1 << 30).is_err(),
            "three components"
        );
    }

    /// The picture that was written, within the error of its quality: libjpeg's IDCT and
    /// upsampling for every layout gblur writes.
    #[test]
    fn decodes_the_picture_that_was_written() {
        let smooth = |w: u32, h: u32| {
            RgbImage::from_fn(w, h, |x, y| {
                image::Rgb([(x * 255 / w) as u8, (y * 255 / h) as u8, 128])
            })
        };
        for (w, h, factors) in [
            (67, 45, (2, 2)),
            (33, 80, (2, 1)),
            (16, 16, (2, 2)),
            (40, 24, (1, 1)),
        ] {
            let source = smooth(w, h);
            let jpeg = written(&source, 95, factors);
            let ours = decode_pixels(&jpeg, 1 << 30)
                .unwrap()
                .expect("a plain JPEG");
            assert_eq!(ours.color(), image::ColorType::Rgb8);
            assert_eq!(ours.dimensions(), (w, h));
            let errors: Vec<u8> = ours
                .as_bytes()
                .iter()
                .zip(source.as_raw())
                .map(|(a, b)| a.abs_diff(*b))
                .collect();
            let worst = *errors.iter().max().unwrap();
            let mean = errors.iter().map(|&e| e as f64).sum::<f64>() / errors.len() as f64;
            // 4:2:0 of a 16 × 16 ramp of 16 levels a pixel is the steepest: mean 1.3, worst 10.
            assert!(
                mean <= 1.5 && worst <= 12,
                "{factors:?}: mean {mean:.3}, worst {worst}"
            );
        }
    }

    #[test]
    fn gray_and_every_chroma_layout_are_taken() {
        let rgb = photo(40, 24);
        let luma = DynamicImage::from(rgb.clone()).to_luma8();
        let gray = written_gray(&luma, 90);
        let decoded = decode_pixels(&gray, 1 << 30).unwrap().expect("gray");
        assert_eq!(decoded.color(), image::ColorType::L8);
        for factors in [(1, 1), (2, 1), (2, 2), (4, 1)] {
            let jpeg = written(&rgb, 75, factors);
            assert!(
                decode_pixels(&jpeg, 1 << 30).unwrap().is_some(),
                "{factors:?}"
            );
        }
    }

    #[test]
    fn damaged_files_are_errors_and_files_over_the_limit_left_to_others() {
        let jpeg = written(&photo(64, 64), 90, (2, 2));
        let sos = jpeg.windows(2).position(|w| w == [0xFF, 0xDA]).unwrap();
        for cut in [sos + 40, jpeg.len() / 2] {
            assert!(
                decode_pixels(&jpeg[..cut], 1 << 30).is_err(),
                "cut at {cut}"
            );
        }
        assert_eq!(decode_pixels(&jpeg[..10], 1 << 30), Ok(None), "no header");
        assert_eq!(
            decode_pixels(&jpeg, 1000),
            Ok(None),
            "over the memory limit"
        );
    }

    /// A tall noisy picture in gblur's own JPEG (restart markers every stripe).
    fn striped(w: u32, h: u32, color: JpegColor, chroma: crate::codec::jpeg::Chroma) -> Vec<u8> {
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        let data: Vec<u8> = (0..w as usize * h as usize * color.channels())
            .map(|i| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                ((i / 7 % 200) as u64 + seed % 56) as u8
            })
            .collect();
        let settings = crate::codec::jpeg::JpegSettings {
            quality: 90,
            chroma,
        };
        crate::codec::jpeg::encode(&data, (w, h), color, settings, None).unwrap()
    }

    /// Decoded in restart pieces, a file gives exactly the whole decode's pixels, on any
    /// number of threads; a 4:2:0 file, whose chroma rows libjpeg blends, decodes whole.
    #[test]
    fn pieces_decode_as_the_whole_file_on_any_number_of_threads() {
        use crate::codec::jpeg::Chroma;
        for (color, chroma) in [
            (JpegColor::Gray, Chroma::S444),
            (JpegColor::Rgb, Chroma::S444),
            (JpegColor::Rgb, Chroma::S420),
            (JpegColor::Rgb, Chroma::S422),
        ] {
            let (w, h) = (203, 1100);
            let file = striped(w, h, color, chroma);
            let pieces = Pieces::cut(&file).expect("restart pieces");
            assert_eq!(pieces.blends_rows(), chroma == Chroma::S420);
            let on = |threads| {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap();
                pool.install(|| decode_pixels(&file, 1 << 30).unwrap().unwrap())
            };
            let cut = on(4);
            assert_eq!(cut, on(1), "{chroma:?}");
            let gray = color == JpegColor::Gray;
            let mut whole = vec![0u8; cut.as_bytes().len()];
            pixels_into(&file, gray, &mut whole).unwrap();
            assert!(cut.as_bytes() == &whole[..], "{chroma:?}");
        }
    }

    /// libjpeg tells a three-component file's colour coding from its JFIF or Adobe segment,
    /// else from its component ids: a piece keeps the segments, so it is decoded as the
    /// whole file is, even where its ids read 'R', 'G', 'B' under a JFIF header (YCbCr).
    #[test]
    fn pieces_keep_how_the_colour_is_coded() {
        let mut file = striped(64, 700, JpegColor::Rgb, crate::codec::jpeg::Chroma::S444);
        let ids = |file: &mut Vec<u8>, marker: u8, first: usize, step: usize| {
            let at = file.windows(2).position(|w| w == [0xFF, marker]).unwrap();
            for (c, id) in [b'R', b'G', b'B'].into_iter().enumerate() {
                file[at + first + step * c] = id;
            }
        };
        ids(&mut file, 0xC0, 10, 3);
        ids(&mut file, 0xDA, 5, 2);
        assert!(Pieces::cut(&file).is_some());
        let cut = decode_pixels(&file, 1 << 30).unwrap().unwrap();
        let mut whole = vec![0u8; cut.as_bytes().len()];
        pixels_into(&file, false, &mut whole).unwrap();
        assert!(cut.as_bytes() == &whole[..]);
    }

    use image::GenericImageView as _;
    use proptest::prelude::*;

    fn seeds() -> Vec<Vec<u8>> {
        let img = DynamicImage::from(photo(40, 24));
        let rgb = img.to_rgb8();
        let progressive = compress_progressive(rgb.as_raw(), 40, 80);
        vec![
            written(&rgb, 90, (2, 1)),
            written_gray(&img.to_luma8(), 70),
            crate::codec::jpeg::encode(
                &rgb,
                (40, 24),
                crate::codec::jpeg::JpegColor::Rgb,
                crate::codec::jpeg::JpegSettings {
                    quality: 75,
                    chroma: crate::codec::jpeg::Chroma::S420,
                },
                None,
            )
            .unwrap(),
            progressive,
            // Tall enough to be cut into restart pieces.
            striped(16, 600, JpegColor::Rgb, crate::codec::jpeg::Chroma::S444),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]
        /// Damaged files (bytes overwritten, cut short, spliced) never panic the decoder, and
        /// what it accepts has the size its header declares.
        #[test]
        fn damaged_files_never_panic(
            which in 0usize..5,
            edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..12),
            cut in any::<prop::sample::Index>(),
            shorten in any::<bool>(),
        ) {
            let mut jpeg = seeds().swap_remove(which);
            for (at, byte) in edits {
                let i = at.index(jpeg.len());
                jpeg[i] = byte;
            }
            if shorten {
                jpeg.truncate(cut.index(jpeg.len()).max(2));
            }
            if let Ok(Some(img)) = decode_pixels(&jpeg, 64 << 20) {
                let frame = Frame::read(&mut std::io::Cursor::new(&jpeg[..])).unwrap();
                prop_assert_eq!((img.width(), img.height()), (frame.width, frame.height));
            }
        }
    }
}
