//! Files in and out: reading within the memory budget (`read`), decoding by content (not by
//! extension) behind a guard against decoders' panics, upright, with the metadata kept
//! (`decode`, `metadata`: ICC profile, EXIF, XMP); choosing the output colour type the output
//! format can hold; encoding into memory and writing through a temporary file that is renamed
//! over OUT, so a failure never leaves a partial file or destroys an existing one.

mod decode;
pub mod format;
pub mod formats;
pub mod guard;
pub mod heif;
pub mod icc;
mod ico;
pub mod inks;
pub mod jpeg;
pub mod jxl;
pub mod metadata;
mod plain;
pub mod png;
pub mod read;
pub mod rows;
pub mod shared_library;
pub mod source;
pub mod tiff;
pub mod webp;
mod write;

pub use decode::{decode, decode_bytes, decode_input, decode_jpeg_planes, DecodedFile};
pub use format::Codec;
pub use read::sniff;
pub use write::{
    check_output, persist_with, temp_beside, write_atomic, write_error, write_output, Replace,
};

use image::codecs::png::CompressionType;
use image::{ColorType, DynamicImage, ImageFormat};
use std::io;
use std::path::{Path, PathBuf};
use thiserror::Error;

/// Why an image could not be read or written. Every variant names the file (`path`); its
/// message is the one line the command prints.
#[derive(Debug, Error)]
pub enum ImageIoError {
    /// The file could not be opened or read.
    #[error("{}: cannot read: {cause}", path.display())]
    Open {
        /// The input.
        path: PathBuf,
        /// The system's error.
        cause: io::Error,
    },
    /// The file is not an image gblur reads (its format, or a feature of it).
    #[error("{}: gblur does not read this image ({detail})", path.display())]
    Unsupported {
        /// The input.
        path: PathBuf,
        /// What is not read.
        detail: String,
    },
    /// The decoder failed: a truncated or corrupt file.
    #[error("{}: cannot decode: {detail}", path.display())]
    Decode {
        /// The input.
        path: PathBuf,
        /// The decoder's words.
        detail: String,
    },
    /// The format is read through a system library that is not installed.
    #[error("{}: {detail}", path.display())]
    NeedsLibrary {
        /// The input.
        path: PathBuf,
        /// Which library, and how to install it.
        detail: String,
    },
    /// The decoded image would not fit in the memory budget.
    #[error("{}: decoding needs more than the memory limit of {limit_mib} MiB ({})", path.display(), crate::memory::limit_hint(*limit_mib))]
    OverLimit {
        /// The input.
        path: PathBuf,
        /// The budget, in MiB.
        limit_mib: u64,
    },
    /// The file itself is larger than the memory budget, where it must be read whole.
    #[error("{}: more than the memory limit of {limit_mib} MiB to read ({})", path.display(), crate::memory::limit_hint(*limit_mib))]
    ReadOverLimit {
        /// The input.
        path: PathBuf,
        /// The budget, in MiB.
        limit_mib: u64,
    },
    /// The encoder refused the image or failed.
    #[error("{}: cannot encode as {format}: {detail}", path.display())]
    Encode {
        /// The output.
        path: PathBuf,
        /// The output's format.
        format: String,
        /// The encoder's words.
        detail: String,
    },
    /// The output could not be written or moved into place.
    #[error("{}: cannot write: {cause}", path.display())]
    Write {
        /// The output.
        path: PathBuf,
        /// The system's error.
        cause: io::Error,
    },
    /// The output cannot be what was asked (a format gblur does not write, a name taken).
    #[error("{}: {detail}", path.display())]
    BadOutput {
        /// The output.
        path: PathBuf,
        /// Why.
        detail: String,
    },
    /// A file appeared at the output path after the batch was planned, and is left as it is
    /// (the main command words it for `--no-clobber`: `job::run`).
    #[error("{}: appeared while the batch ran (another writer's?); left as it is (--overwrite replaces it)", path.display())]
    Appeared {
        /// The output.
        path: PathBuf,
    },
    /// The extension an edge mode needs is over the memory limit.
    #[error("{}: {detail} (raise it with --max-memory)", path.display())]
    EdgesOverLimit {
        /// The input.
        path: PathBuf,
        /// How much the extension needs.
        detail: String,
    },
}

/// The codec of `format` (`format::Codec`).
pub fn of(format: ImageFormat) -> &'static dyn Codec {
    match format {
        ImageFormat::Jpeg => &jpeg::Jpeg,
        ImageFormat::Png => &png::Png,
        ImageFormat::Tiff => &tiff::Tiff,
        ImageFormat::WebP => &webp::WebP,
        heif::HEIF => &heif::Heif,
        jxl::JXL => &jxl::Jxl,
        ImageFormat::Ico => &ico::Ico,
        ImageFormat::Bmp => &plain::Bmp,
        other => plain::of(other),
    }
}

/// `-`, which stands for stdin as an input and for stdout as an output.
pub fn is_stdio(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// Whether a JPEG's marker structure reaches its end-of-image marker (EOI). Bytes after the
/// EOI (motion photos append a video) are fine.
pub fn jpeg_complete(b: &[u8]) -> bool {
    jpeg_end(b, 2).is_ok()
}

/// Walks a JPEG's markers from `at` (just after the start-of-image marker, or where an
/// earlier walk stopped): `Ok` with the offset just past the end-of-image marker (EOI), or
/// `Err` with where to walk on from once more bytes are read. Segments are skipped by their
/// length, so thumbnails inside APP segments do not count, and in entropy-coded data only
/// `FF` followed by a marker byte other than stuffing (`00`) and restarts (`D0`–`D7`) is a
/// marker.
pub fn jpeg_end(b: &[u8], mut at: usize) -> Result<usize, usize> {
    loop {
        // The next FF: a 100 MP photo's scan is tens of megabytes walked here on one core.
        if let Some(rest) = b.get(at..) {
            at += memchr::memchr(0xFF, rest).unwrap_or(rest.len());
        }
        let marker_at = at;
        while at < b.len() && b[at] == 0xFF {
            at += 1;
        }
        let Some(&marker) = b.get(at) else {
            return Err(marker_at);
        };
        at += 1;
        match marker {
            0xD9 => return Ok(at),
            0x00 | 0x01 | 0xD0..=0xD7 => {}
            _ => {
                let Some(len) = b.get(at..at + 2) else {
                    return Err(marker_at);
                };
                at += u16::from_be_bytes([len[0], len[1]]) as usize;
            }
        }
    }
}

/// A decoder's message on one line: some end theirs with a newline, which would break the
/// one-line error promise (the `decode_blur_encode` fuzz target feeds such JPEGs).
fn one_line(detail: &str) -> String {
    detail.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The colour types `format`'s encoder takes (`Codec::writable`).
pub(crate) fn writable(format: ImageFormat) -> &'static [ColorType] {
    of(format).writable()
}

/// What reports call `format`: the `image` crate's name, except for the HEIF family, which
/// gblur carries under AVIF's (`heif::HEIF`).
pub fn format_name(format: ImageFormat) -> String {
    of(format).name()
}

/// Why a format `name` (an extension, or a prefix such as `heic:`) names is not written, where
/// it names one gblur reads but does not write: PNM, ICO, JPEG XL; HEIC where libheif has no
/// HEVC encoder. None for a name of no format, or of one gblur writes.
pub fn unwritten_name(name: &str) -> Option<String> {
    let lower = name.to_ascii_lowercase();
    if is_heic_name(&lower) {
        return heif::encoder(heif::Coding::Hevc)
            .err()
            .map(|why| format!("HEIC output: {why}"));
    }
    if matches!(lower.as_str(), "jxl") {
        return Some(
            "gblur reads JPEG XL but does not write it: write .avif, .webp, .jpg, .png, ...".into(),
        );
    }
    // The variant JPEG XL is carried as names no format of its own here (`.ff`).
    let format =
        ImageFormat::from_extension(&lower).filter(|f| !can_write(*f) && *f != jxl::JXL)?;
    Some(format!(
        "gblur reads {} but does not write it: write .png, .jpg, .tif, ...",
        format_name(format)
    ))
}

/// Whether an extension names HEIC, which gblur writes as `heif::HEIF` coded with HEVC.
pub fn is_heic_name(extension: &str) -> bool {
    matches!(
        extension.to_ascii_lowercase().as_str(),
        "heic" | "heif" | "hif"
    )
}

/// Whether `format`'s files hold several pages (`Codec::holds_pages`): TIFF.
pub fn holds_pages(format: ImageFormat) -> bool {
    of(format).holds_pages()
}

/// Whether `format`'s files hold CMYK inks, which a CMYK input keeps (`Codec::holds_inks`):
/// JPEG and TIFF.
pub fn holds_inks(format: ImageFormat) -> bool {
    of(format).holds_inks()
}

/// Whether gblur can write `format`: AVIF where libheif loads with an AV1 encoder.
pub fn can_write(format: ImageFormat) -> bool {
    of(format).can_write()
}

/// A colour type as reports name it: gray float held as RGB(A) (`gray_float`) is `L32F` or
/// `La32F`, as the file holds it.
pub fn color_name(color: ColorType, gray_float: bool) -> String {
    match (color, gray_float) {
        (ColorType::Rgb32F, true) => "L32F".into(),
        (ColorType::Rgba32F, true) => "La32F".into(),
        (c, _) => format!("{c:?}"),
    }
}

/// Gray float held as RGB(A) and converted to the 8- or 16-bit RGB(A) type `output_color`
/// chose: its first channel (and alpha) as the gray type of that depth, where `format`
/// writes it; None where it does not, or the image is of another type.
pub fn gray_of(image: &DynamicImage, format: ImageFormat) -> Option<DynamicImage> {
    use image::{ImageBuffer, Luma, LumaA};
    fn take<P: image::Pixel, Q: image::Pixel<Subpixel = P::Subpixel>>(
        i: &ImageBuffer<P, Vec<P::Subpixel>>,
        alpha: bool,
    ) -> ImageBuffer<Q, Vec<P::Subpixel>> {
        let n = P::CHANNEL_COUNT as usize;
        let samples = i.as_raw().chunks_exact(n);
        let raw = match alpha {
            true => samples.flat_map(|p| [p[0], p[n - 1]]).collect(),
            false => samples.map(|p| p[0]).collect(),
        };
        ImageBuffer::from_raw(i.width(), i.height(), raw).expect("one gray pixel per pixel")
    }
    gray_written(image.color(), format)?;
    Some(match image {
        DynamicImage::ImageRgb8(i) => take::<_, Luma<u8>>(i, false).into(),
        DynamicImage::ImageRgba8(i) => take::<_, LumaA<u8>>(i, true).into(),
        DynamicImage::ImageRgb16(i) => take::<_, Luma<u16>>(i, false).into(),
        DynamicImage::ImageRgba16(i) => take::<_, LumaA<u16>>(i, true).into(),
        _ => unreachable!("gray_written takes these only"),
    })
}

/// The gray type of 8- or 16-bit RGB(A) `color`'s depth, where `format` writes it.
fn gray_written(color: ColorType, format: ImageFormat) -> Option<ColorType> {
    use ColorType::*;
    let gray = match color {
        Rgb8 => L8,
        Rgba8 => La8,
        Rgb16 => L16,
        Rgba16 => La16,
        _ => return None,
    };
    writable(format).contains(&gray).then_some(gray)
}

/// The colour type to write `source` as in `format`, and what was given up, if anything.
/// Gray float held as RGB(A) (`gray_float`) is converted to that type and then taken as gray
/// where the format writes gray of its depth (`gray_of`); the note names what is written.
pub fn output_color(
    source: ColorType,
    gray_float: bool,
    format: ImageFormat,
) -> (ColorType, Option<String>) {
    let ok = writable(format);
    let depth = |c: ColorType| match c {
        ColorType::Rgb32F | ColorType::Rgba32F => 3,
        c if c.bytes_per_pixel() / c.channel_count() == 2 => 2,
        _ => 1,
    };
    // Cheapest loss first: colour is never given up, then alpha, then precision; gray→RGB and
    // deeper samples cost (almost) nothing.
    let cost = |c: ColorType| {
        let alpha_lost = (source.has_alpha() && !c.has_alpha()) as i32 * 100;
        let alpha_added = (!source.has_alpha() && c.has_alpha()) as i32 * 5;
        let (ds, dc) = (depth(source), depth(c));
        let depth_cost = if dc < ds { (ds - dc) * 20 } else { dc - ds };
        let colour_added = (!source.has_color() && c.has_color()) as i32;
        let colour_lost = (source.has_color() && !c.has_color()) as i32 * 1000;
        colour_lost + alpha_lost + alpha_added + depth_cost + colour_added
    };
    let best = *ok
        .iter()
        .min_by_key(|c| cost(**c))
        .expect("format is writable");
    let mut lost = Vec::new();
    if source.has_alpha() && !best.has_alpha() {
        lost.push("alpha dropped");
    }
    if depth(best) < depth(source) {
        lost.push(if depth(source) == 3 {
            "float samples clamped to [0, 1] and quantised"
        } else {
            "16-bit samples reduced to 8-bit"
        });
    }
    let written = match gray_float {
        true => match gray_written(best, format) {
            Some(gray) => format!("{gray:?}"),
            None => color_name(best, of(format).holds_gray_float()),
        },
        false => format!("{best:?}"),
    };
    let note = (!lost.is_empty()).then(|| {
        format!(
            "{format:?} cannot hold {}: wrote {written} ({})",
            color_name(source, gray_float),
            lost.join(", ")
        )
    });
    (best, note)
}

/// Encoder settings from the command line.
#[derive(Clone, Copy, Debug)]
pub struct EncodeOptions {
    /// `--quality` and `--subsampling`, resolved per image against its input.
    pub jpeg: jpeg::JpegOptions,
    /// A PNG's compression level.
    pub png_compression: CompressionType,
    /// Add TPDF dither before rounding to fewer bits than the input has (`pixels::quantise`).
    pub dither: bool,
    /// The JPEG quality was asked for (`--quality`): an output that is not a JPEG is then a
    /// usage error, not a quality silently ignored.
    pub quality_given: bool,
    /// The input is a lossless WebP (resolved per image, `work::save`): without `--quality`
    /// a WebP output is then lossless too.
    pub webp_lossless_input: bool,
    /// `--tiff-compression`, resolved per image against a TIFF input's own.
    pub tiff: tiff::TiffCompression,
    /// The TIFF compression was asked for: an output that is not a TIFF is a usage error.
    pub tiff_given: bool,
    /// `--subsampling` and `--png-compression` were given, likewise.
    pub subsampling_given: bool,
    /// Whether `--png-compression` was given (an output of another format refuses it).
    pub png_given: bool,
}

/// The command line's defaults: JPEG quality 90 and the input's subsampling, WebP lossy at 75
/// (lossless from a lossless WebP), fast PNG compression, a TIFF's own compression, no dither.
impl Default for EncodeOptions {
    fn default() -> Self {
        EncodeOptions {
            jpeg: jpeg::JpegOptions::default(),
            png_compression: CompressionType::Fast,
            dither: false,
            quality_given: false,
            webp_lossless_input: false,
            tiff: tiff::TiffCompression::default(),
            tiff_given: false,
            subsampling_given: false,
            png_given: false,
        }
    }
}

impl EncodeOptions {
    /// The encoder options the user gave, each with the output formats it applies to and
    /// their names: given for an output of another format, each is refused, never ignored.
    pub fn given(&self) -> Vec<(&'static str, &'static [ImageFormat], &'static str)> {
        use ImageFormat::{Avif, Jpeg, Png, Tiff, WebP};
        let lossless = self.jpeg.quality == jpeg::Quality::Lossless;
        let (quality_formats, quality_name) = match lossless {
            true => (&[WebP][..], "WebP"),
            false => (&[Jpeg, WebP, Avif][..], "JPEG, WebP, AVIF or HEIC"),
        };
        [
            (
                self.quality_given,
                "--quality",
                quality_formats,
                quality_name,
            ),
            (self.subsampling_given, "--subsampling", &[Jpeg][..], "JPEG"),
            (self.png_given, "--png-compression", &[Png][..], "PNG"),
            (self.tiff_given, "--tiff-compression", &[Tiff][..], "TIFF"),
        ]
        .into_iter()
        .filter(|(given, ..)| *given)
        .map(|(_, flag, formats, name)| (flag, formats, name))
        .collect()
    }

    /// Why the `--quality` given does not apply to an output in `format`: `same` reads a JPEG
    /// input's quantisation tables for a JPEG output, and WebP has no such thing to keep;
    /// `lossless` is WebP's lossless coding.
    pub fn quality_refused(&self, format: ImageFormat) -> Option<String> {
        let quality = self.quality_given.then_some(self.jpeg.quality);
        match (quality, format) {
            (Some(jpeg::Quality::Same), ImageFormat::WebP) => Some(format!("--quality same keeps a JPEG input's quality in a JPEG output; for WebP give 1 to 100 or lossless, or leave --quality out ({}, or lossless from a lossless WebP)", webp::DEFAULT_QUALITY)),
            (Some(jpeg::Quality::Same), heif::HEIF) => Some(format!("--quality same keeps a JPEG input's quality in a JPEG output; for AVIF and HEIC give 1 to 100, or leave --quality out ({})", heif::DEFAULT_QUALITY)),
            (Some(jpeg::Quality::Lossless), ImageFormat::Jpeg | heif::HEIF) => Some("--quality lossless is WebP's lossless coding; for JPEG, AVIF and HEIC give 1 to 100".into()),
            _ => None,
        }
    }

    /// The quality of an AVIF: `--quality N` given, else `heif::DEFAULT_QUALITY`.
    pub fn avif_quality(&self) -> u8 {
        match (self.quality_given, self.jpeg.quality) {
            (true, jpeg::Quality::Fixed(q)) => q,
            _ => heif::DEFAULT_QUALITY,
        }
    }

    /// The quality of a WebP, None for lossless: `--quality N` or `lossless` as given; without
    /// it, lossless for a lossless WebP input (`webp_lossless_input`) and
    /// `webp::DEFAULT_QUALITY` for any other, as libvips writes it.
    pub fn webp_quality(&self) -> Option<u8> {
        match (self.quality_given, self.jpeg.quality) {
            (true, jpeg::Quality::Fixed(q)) => Some(q),
            (true, _) => None,
            (false, _) if self.webp_lossless_input => None,
            (false, _) => Some(webp::DEFAULT_QUALITY),
        }
    }
}

/// The note for an ICC profile that does not describe the samples written (`colour`: RGB
/// ones), which is then not written: a gray profile over RGB samples, an RGB one over gray.
/// A reader that trusted it would show wrong colours.
pub fn foreign_profile(icc: Option<&[u8]>, colour: bool) -> Option<String> {
    let (profile, samples) = match (icc::data_space(icc?)?, colour) {
        (b"GRAY", true) => ("gray", "RGB"),
        (b"RGB ", false) => ("RGB", "gray"),
        _ => return None,
    };
    Some(format!("the input's ICC profile is for {profile}, and the output holds {samples}: it was not written"))
}

/// Encodes into memory, returning the bytes and a note when the ICC profile could not be kept.
/// `gray_float`: the image is gray float held as RGB(A) with three equal channels, which TIFF
/// writes as gray (other formats as the RGB they hold). `blobs`: the EXIF and XMP for AVIF,
/// whose encoder writes them (every other format's go in after, `metadata::embed`).
pub fn encode(
    (image, gray_float): (&DynamicImage, bool),
    format: ImageFormat,
    (icc, blobs): (Option<&[u8]>, metadata::Blobs),
    (opts, jpeg): (EncodeOptions, jpeg::JpegSettings),
    path: &Path,
) -> Result<(Vec<u8>, Option<String>), ImageIoError> {
    let failed = |detail: String| ImageIoError::Encode {
        path: path.into(),
        format: format_name(format),
        detail,
    };
    // Gray is written as RGB where the format's encoders take gray as RGB (WebP, AVIF), gray
    // float as gray.
    let codec = of(format);
    let colour = (image.color().has_color() && !gray_float) || codec.gray_as_colour();
    if let Some(note) = foreign_profile(icc, colour) {
        let (bytes, more) = encode(
            (image, gray_float),
            format,
            (None, blobs),
            (opts, jpeg),
            path,
        )?;
        let note = more.map_or(note.clone(), |more| format!("{note}; {more}"));
        return Ok((bytes, Some(note)));
    }
    let encoding = format::ImageToEncode {
        image,
        gray_float,
        icc,
        blobs,
        options: opts,
        jpeg,
        path,
    };
    codec.encode(encoding).map_err(failed)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every format gblur recognises: the `image` crate's, with HEIF and JPEG XL under their
    /// stand-ins.
    fn recognised() -> Vec<ImageFormat> {
        ImageFormat::all().collect()
    }

    #[test]
    fn every_format_has_a_codec_of_its_own() {
        for format in recognised() {
            let codec = of(format);
            assert_eq!(codec.format(), format);
            assert_eq!(codec.name(), format_name(format));
            // A format that holds inks, pages or IPTC holds metadata at all.
            if codec.holds_inks() || codec.holds_pages() || codec.holds_iptc() {
                assert!(codec.holds_metadata(), "{format:?}");
            }
        }
        let read: Vec<_> = recognised()
            .into_iter()
            .filter(|f| of(*f).reads_rows())
            .collect();
        let written: Vec<_> = recognised()
            .into_iter()
            .filter(|f| of(*f).writes_rows())
            .collect();
        let streamed = [ImageFormat::Jpeg, ImageFormat::Png, ImageFormat::Tiff];
        assert_eq!((&read[..], &written[..]), (&streamed[..], &streamed[..]));
        assert_eq!(of(heif::HEIF).name(), heif::NAME);
        assert_eq!(of(jxl::JXL).name(), jxl::NAME);
    }

    /// What each codec writes, through `encode`, its own codec reads back: the size, and the
    /// format recognised from the bytes.
    #[test]
    fn what_every_codec_writes_it_reads_back() {
        let gradient =
            image::RgbImage::from_fn(24, 16, |x, y| image::Rgb([x as u8 * 10, y as u8 * 15, 99]));
        let mut written = Vec::new();
        for format in recognised().into_iter().filter(|f| can_write(*f)) {
            let codec = of(format);
            let color = match codec.writable().contains(&ColorType::Rgb8) {
                true => ColorType::Rgb8,
                false => codec.writable()[0],
            };
            let image = crate::pixels::convert(DynamicImage::ImageRgb8(gradient.clone()), color);
            let jpeg = jpeg::JpegSettings {
                quality: 90,
                chroma: jpeg::Chroma::S444,
            };
            let path = Path::new("out.avif");
            let blobs = metadata::Blobs::default();
            let (bytes, _) = encode(
                (&image, false),
                format,
                (None, blobs),
                (EncodeOptions::default(), jpeg),
                path,
            )
            .unwrap_or_else(|e| panic!("{format:?}: {e}"));
            let name = Path::new("written");
            let decoded = match read::guess(&bytes) {
                Some(_) => decode_bytes(name, &bytes, 64),
                // TGA has no signature: recognised by its name.
                None => decode_bytes(Path::new("written.tga"), &bytes, 64),
            };
            let decoded = decoded.unwrap_or_else(|e| panic!("{format:?}: {e}"));
            assert_eq!(decoded.format, format);
            assert_eq!(
                (decoded.image.width(), decoded.image.height()),
                (24, 16),
                "{format:?}"
            );
            written.push(format);
        }
        for format in [
            ImageFormat::Png,
            ImageFormat::Jpeg,
            ImageFormat::Tiff,
            ImageFormat::WebP,
            ImageFormat::Bmp,
            ImageFormat::Gif,
            ImageFormat::Tga,
            ImageFormat::Qoi,
            ImageFormat::OpenExr,
            ImageFormat::Hdr,
        ] {
            assert!(written.contains(&format), "{format:?} was not written");
        }
    }

    #[test]
    fn jpeg_drops_alpha_and_depth_and_says_so() {
        let (c, note) = output_color(ColorType::Rgba16, false, ImageFormat::Jpeg);
        assert_eq!(c, ColorType::Rgb8);
        let note = note.unwrap();
        assert!(
            note.contains("alpha dropped") && note.contains("8-bit"),
            "{note}"
        );
    }

    #[test]
    fn png_keeps_everything_it_can() {
        for c in [
            ColorType::L8,
            ColorType::La16,
            ColorType::Rgb16,
            ColorType::Rgba8,
        ] {
            assert_eq!(output_color(c, false, ImageFormat::Png), (c, None));
        }
        assert_eq!(
            output_color(ColorType::Rgba32F, false, ImageFormat::Png).0,
            ColorType::Rgba16
        );
        assert_eq!(
            output_color(ColorType::Rgb32F, false, ImageFormat::Tiff),
            (ColorType::Rgb32F, None)
        );
        assert_eq!(
            output_color(ColorType::L8, false, ImageFormat::Gif),
            (ColorType::Rgb8, None)
        );
        assert_eq!(
            output_color(ColorType::La8, false, ImageFormat::Tiff),
            (ColorType::La8, None)
        );
        assert_eq!(
            output_color(ColorType::Rgb8, false, ImageFormat::OpenExr),
            (ColorType::Rgb32F, None)
        );
    }
}
