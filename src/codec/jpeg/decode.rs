//! JPEG pixels through libjpeg (libjpeg-turbo's C code with its SIMD, built by the `mozjpeg`
//! crate): every 8-bit gray, YCbCr or RGB file, with any warning of damaged data (a restart
//! interval that does not match the data, corrupt Huffman codes, a file cut short) made an
//! error instead of gray rows. What it does not take (CMYK, YCCK, 12-bit) goes to the `image`
//! crate's zune-jpeg in strict mode (`decode_strict`); what libjpeg finds damaged, to libjpeg
//! again in its tolerant mode (`libjpeg::recover`).

use super::header::{is_progressive, Frame};
use super::errors::{run, strict_errors};
use super::pieces::Pieces;
use rayon::prelude::*;
use image::{ColorType, DynamicImage, GrayAlphaImage, GrayImage, RgbImage, RgbaImage};
use mozjpeg_sys::J_COLOR_SPACE;
use zune_core::bytestream::ZCursor;
use zune_core::colorspace::ColorSpace as ZuneColor;
use zune_core::options::DecoderOptions;

/// The 8-bit frame of a gray or three-component JPEG, if libjpeg can decode it within
/// `max_bytes`: `extra` bytes a pixel beside what libjpeg itself holds, which for a
/// progressive file is every coefficient of the image (two bytes a sample).
pub(super) fn frame_within(bytes: &[u8], extra: u64, max_bytes: u64) -> Option<Frame> {
    let frame = Frame::read(&mut std::io::Cursor::new(bytes))?;
    if frame.precision != 8 || !matches!(frame.components, 1 | 3) {
        return None;
    }
    let padded = (frame.width as u64 + 15) * (frame.height as u64 + 15);
    let coefficients = match is_progressive(bytes) {
        true => padded * frame.components as u64 * 2,
        false => 0,
    };
    (padded * extra + coefficients <= max_bytes).then_some(frame)
}

/// The pixels of an 8-bit gray, YCbCr or RGB JPEG, as 8-bit gray or RGB: `Ok(None)` for a
/// file it does not take (CMYK, YCCK, 12-bit, over `max_bytes` of working memory), which
/// another decoder reads; `Err` for a file whose data it finds damaged (a warning or an error
/// while decoding), which libjpeg then recovers or refuses (`libjpeg::recover`).
pub fn decode_pixels(bytes: &[u8], max_bytes: u64) -> Result<Option<DynamicImage>, String> {
    let Some(frame) = frame_within(bytes, 3, max_bytes) else {
        return Ok(None);
    };
    let header = run(|| mozjpeg::Decompress::with_err(strict_errors()).from_mem(bytes).map(|d| d.color_space()));
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
        return Err(std::io::Error::other("libjpeg reads another size than its header"));
    }
    started.read_scanlines_into(out)?;
    started.finish()
}

/// The pixels of `bytes` as the `image` crate's decoder (zune-jpeg) gives them, as `color`
/// (what that decoder's header announced), but with zune-jpeg's strict mode on: damaged
/// entropy-coded data is an error instead of gray rows. At most `max_bytes` of pixels.
pub fn decode_strict(
    bytes: &[u8],
    color: ColorType,
    max_bytes: u64,
) -> Result<DynamicImage, String> {
    let out = match color {
        ColorType::L8 => ZuneColor::Luma,
        ColorType::La8 => ZuneColor::LumaA,
        ColorType::Rgba8 => ZuneColor::RGBA,
        _ => ZuneColor::RGB,
    };
    let (mut decoder, (w, h)) = strict_decoder(bytes, out)?;
    if (w * h * out.num_components()) as u64 > max_bytes {
        return Err("over the memory limit".into());
    }
    let pixels = decoder.decode().map_err(|e| e.to_string())?;
    let (w, h) = (w as u32, h as u32);
    let image = match out {
        ZuneColor::Luma => GrayImage::from_raw(w, h, pixels).map(DynamicImage::from),
        ZuneColor::LumaA => GrayAlphaImage::from_raw(w, h, pixels).map(DynamicImage::from),
        ZuneColor::RGBA => RgbaImage::from_raw(w, h, pixels).map(DynamicImage::from),
        _ => RgbImage::from_raw(w, h, pixels).map(DynamicImage::from),
    };
    image.ok_or_else(|| "fewer pixels than the header declares".into())
}

/// zune-jpeg's decoder over bytes in memory.
type Strict<'a> = zune_jpeg::JpegDecoder<ZCursor<&'a [u8]>>;

/// zune-jpeg in strict mode (damaged entropy-coded data is an error, not gray rows), giving
/// `out`, with the header read: the decoder and the frame's size.
fn strict_decoder(bytes: &[u8], out: ZuneColor) -> Result<(Strict<'_>, (usize, usize)), String> {
    let options = DecoderOptions::default()
        .set_strict_mode(true)
        .set_max_width(usize::MAX)
        .set_max_height(usize::MAX)
        .jpeg_set_out_colorspace(out);
    let mut decoder = zune_jpeg::JpegDecoder::new_with_options(ZCursor::new(bytes), options);
    decoder.decode_headers().map_err(|e| e.to_string())?;
    let size = decoder.dimensions().ok_or("no frame header")?;
    Ok((decoder, size))
}

/// The inks of a four-component JPEG (CMYK or YCCK), four 8-bit samples a pixel from 0 (no
/// ink) to 255, read by zune-jpeg in strict mode: `adobe` is the transform of the file's Adobe
/// segment (`JpegTraits::adobe`), 2 for YCCK. The samples are taken as stored inverted (255 is
/// no ink), as Photoshop writes them and as zune-jpeg's own conversion and Pillow take every
/// CMYK JPEG, so that the profile's path and the formula's agree on any file. At most
/// `max_bytes` of samples.
pub fn decode_inks(bytes: &[u8], adobe: Option<u8>, max_bytes: u64) -> Result<(u32, u32, Vec<u8>), String> {
    let ycck = adobe == Some(2);
    let out = if ycck { ZuneColor::YCCK } else { ZuneColor::CMYK };
    let (mut decoder, (w, h)) = strict_decoder(bytes, out)?;
    if decoder.input_colorspace() != Some(out) {
        return Err(format!("the decoder reads it as {:?}", decoder.input_colorspace()));
    }
    if (w * h * 4) as u64 > max_bytes {
        return Err("over the memory limit".into());
    }
    let mut samples = decoder.decode().map_err(|e| e.to_string())?;
    if samples.len() != w * h * 4 {
        return Err("fewer pixels than the header declares".into());
    }
    for px in samples.chunks_exact_mut(4) {
        if ycck {
            // libjpeg's YCCK to CMYK: the YCC triple to RGB (JFIF), whose complement is the
            // stored (inverted) C, M and Y; the ink is the complement of that: R, G and B.
            let (y, cb, cr) = (px[0] as f32, px[1] as f32 - 128.0, px[2] as f32 - 128.0);
            let rgb = [y + 1.402 * cr, y - 0.344_136 * cb - 0.714_136 * cr, y + 1.772 * cb];
            for (s, v) in px.iter_mut().zip(rgb) {
                *s = v.round().clamp(0.0, 255.0) as u8;
            }
            px[3] = 255 - px[3];
        } else {
            for s in px.iter_mut() {
                *s = 255 - *s;
            }
        }
    }
    Ok((w as u32, h as u32, samples))
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

    fn encode_with_image(img: &DynamicImage, quality: u8) -> Vec<u8> {
        let mut out = std::io::Cursor::new(Vec::new());
        img.write_with_encoder(image::codecs::jpeg::JpegEncoder::new_with_quality(
            &mut out, quality,
        ))
        .unwrap();
        out.into_inner()
    }

    /// The inks of an Adobe CMYK and an Adobe YCCK file, put through the formula the `image`
    /// crate's decoder applies (R = (255 − C)(255 − K) / 255, ...), give that decoder's RGB:
    /// the inversion and the YCC conversion are the ones it makes.
    #[test]
    fn inks_are_the_formula_decoders_own() {
        for name in ["cmyk/profiled.jpg", "cmyk_64x48.jpg"] {
            let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
            let bytes = std::fs::read(&path).unwrap();
            let traits = crate::codec::jpeg::JpegTraits::read(&bytes);
            assert!(traits.adobe.is_some(), "{name}: an Adobe segment");
            let (w, h, inks) = decode_inks(&bytes, traits.adobe, 1 << 30).unwrap();
            let rgb = image::load_from_memory(&bytes).unwrap().to_rgb8();
            assert_eq!((w, h), rgb.dimensions());
            let mut worst = 0;
            for (ink, px) in inks.chunks_exact(4).zip(rgb.pixels()) {
                for c in 0..3 {
                    let v = (255 - ink[c] as u32) * (255 - ink[3] as u32) / 255;
                    worst = worst.max((v as i32 - px[c] as i32).abs());
                }
            }
            assert!(worst <= 2, "{name}: {worst} levels from the formula decoder");
        }
    }

    /// The same picture as the `image` crate's decoder, within the spread two conforming
    /// decoders' chroma upsampling and IDCT rounding allow.
    #[test]
    fn decodes_like_the_image_crate() {
        for (w, h, factors) in [(67, 45, (2, 2)), (33, 80, (2, 1)), (16, 16, (2, 2))] {
            let jpeg = written(&photo(w, h), 85, factors);
            let ours = decode_pixels(&jpeg, 1 << 30)
                .unwrap()
                .expect("a plain JPEG");
            let theirs = image::load_from_memory(&jpeg).unwrap();
            assert_eq!(ours.color(), theirs.color());
            assert_eq!(ours.dimensions(), theirs.dimensions());
            let worst = ours
                .as_bytes()
                .iter()
                .zip(theirs.as_bytes())
                .map(|(a, b)| a.abs_diff(*b))
                .max()
                .unwrap();
            assert!(worst <= 8, "{worst}");
        }
    }

    #[test]
    fn gray_and_every_chroma_layout_are_taken() {
        let rgb = photo(40, 24);
        let luma = DynamicImage::from(rgb.clone()).to_luma8();
        let gray = encode_with_image(&DynamicImage::from(luma.clone()), 90);
        let decoded = decode_pixels(&gray, 1 << 30).unwrap().expect("gray");
        assert_eq!(decoded.color(), image::ColorType::L8);
        for factors in [(1, 1), (2, 1), (2, 2), (4, 1)] {
            let jpeg = written(&rgb, 75, factors);
            assert!(decode_pixels(&jpeg, 1 << 30).unwrap().is_some(), "{factors:?}");
        }
    }

    #[test]
    fn damaged_files_are_errors_and_files_over_the_limit_left_to_others() {
        let jpeg = encode_with_image(&DynamicImage::from(photo(64, 64)), 90);
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
        let settings = crate::codec::jpeg::JpegSettings { quality: 90, chroma };
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
                let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
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
            encode_with_image(&DynamicImage::from(img.to_luma8()), 70),
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
