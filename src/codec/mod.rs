//! Files in and out: decoding by content (not by extension) under a memory limit, with EXIF
//! orientation applied and the metadata kept (`metadata`: ICC profile, EXIF, XMP); choosing the output colour type the output
//! format can hold; encoding into memory and writing through a temporary file that is renamed
//! over OUT, so a failure never leaves a partial file or destroys an existing one.

pub mod jpeg;
pub mod metadata;
pub mod png;

use image::codecs::jpeg::JpegEncoder;
use image::codecs::png::{CompressionType, FilterType, PngEncoder};
use image::codecs::tiff::TiffEncoder;
use image::codecs::webp::WebPEncoder;
use image::metadata::Orientation;
use image::{
    ColorType, DynamicImage, GenericImageView, ImageDecoder, ImageEncoder, ImageError, ImageFormat,
    ImageReader, Limits,
};
use std::io::{self, Cursor, Write};
use std::path::{Path, PathBuf};
use thiserror::Error;

#[derive(Debug, Error)]
pub enum ImageIoError {
    #[error("{}: cannot read: {cause}", path.display())]
    Open { path: PathBuf, cause: io::Error },
    #[error("{}: not an image format gblur can read ({detail})", path.display())]
    Unsupported { path: PathBuf, detail: String },
    #[error("{}: cannot decode: {detail}", path.display())]
    Decode { path: PathBuf, detail: String },
    #[error("{}: decoding needs more than the memory limit of {limit_mib} MiB (raise it with --max-memory)", path.display())]
    OverLimit { path: PathBuf, limit_mib: u64 },
    #[error("{}: cannot encode as {format}: {detail}", path.display())]
    Encode {
        path: PathBuf,
        format: String,
        detail: String,
    },
    #[error("{}: cannot write: {cause}", path.display())]
    Write { path: PathBuf, cause: io::Error },
    #[error("{}: {detail}", path.display())]
    BadOutput { path: PathBuf, detail: String },
    /// The extension an edge mode needs is over the memory limit.
    #[error("{}: {detail} (raise it with --max-memory)", path.display())]
    EdgesOverLimit { path: PathBuf, detail: String },
}

/// A decoded input, already turned the way its EXIF orientation says.
pub struct DecodedFile {
    pub image: DynamicImage,
    pub format: ImageFormat,
    /// Its ICC profile, EXIF and XMP.
    pub meta: metadata::Metadata,
    /// How a JPEG input was written (None for other formats).
    pub jpeg: Option<jpeg::JpegTraits>,
}

/// `-`, which stands for stdin as an input and for stdout as an output.
pub fn is_stdio(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// Decodes the file at `path`: the file-system checks, then `decode_bytes` on its content.
pub fn decode(path: &Path, max_memory_mib: u64) -> Result<DecodedFile, ImageIoError> {
    let open_err = |cause| ImageIoError::Open {
        path: path.into(),
        cause,
    };
    let meta = std::fs::metadata(path).map_err(open_err)?;
    if meta.is_dir() {
        return Err(open_err(io::Error::new(
            io::ErrorKind::IsADirectory,
            "is a directory",
        )));
    }
    if meta.len() == 0 {
        return Err(ImageIoError::Decode {
            path: path.into(),
            detail: "the file is empty (0 bytes)".into(),
        });
    }
    // A file is decoded as it is read, so a large PNG or TIFF is never held twice; only a
    // JPEG, whose end marker must be checked, is read whole, through `decode_bytes`.
    let sniffed = sniff(path).map_err(open_err)?;
    if sniffed == Some(ImageFormat::Jpeg) {
        let bytes = std::fs::read(path).map_err(open_err)?;
        return decode_bytes(path, &bytes, max_memory_mib);
    }
    let format = recognise(path, sniffed)?;
    let file = std::fs::File::open(path).map_err(open_err)?;
    decode_from(path, io::BufReader::new(file), format, max_memory_mib, None)
}

/// The input's format: what its content announces, or TGA (which has no signature) on its
/// file extension alone.
fn recognise(path: &Path, sniffed: Option<ImageFormat>) -> Result<ImageFormat, ImageIoError> {
    match (sniffed, ImageFormat::from_path(path)) {
        (Some(f), _) => Ok(f),
        (None, Ok(ImageFormat::Tga)) => Ok(ImageFormat::Tga),
        _ => Err(ImageIoError::Unsupported {
            path: path.into(),
            detail: "the content matches no known image format".into(),
        }),
    }
}

/// Reads all of stdin (a pipe, a redirected file) into memory.
pub fn read_stdin() -> Result<Vec<u8>, ImageIoError> {
    use std::io::Read;
    let mut bytes = Vec::new();
    io::stdin()
        .lock()
        .read_to_end(&mut bytes)
        .map_err(|cause| ImageIoError::Open {
            path: "stdin".into(),
            cause,
        })?;
    Ok(bytes)
}

/// Decodes an image held in memory, recognised by its content, under the memory limit;
/// `name` is what errors call it (a path, or `stdin`).
pub fn decode_bytes(
    name: &Path,
    bytes: &[u8],
    max_memory_mib: u64,
) -> Result<DecodedFile, ImageIoError> {
    let path = name;
    if bytes.is_empty() {
        return Err(ImageIoError::Decode {
            path: path.into(),
            detail: "the input is empty (0 bytes)".into(),
        });
    }
    let format = recognise(path, image::guess_format(bytes).ok())?;
    // The JPEG decoder fills a truncated file's missing rows with gray and reports success;
    // gblur refuses it like every other truncated file (the fault drills check it).
    if format == ImageFormat::Jpeg && !jpeg_complete(bytes) {
        return Err(ImageIoError::Decode {
            path: path.into(),
            detail: "the file is truncated (no JPEG end-of-image marker)".into(),
        });
    }
    let jpeg = (format == ImageFormat::Jpeg).then_some(bytes);
    decode_from(path, Cursor::new(bytes), format, max_memory_mib, jpeg)
}

/// Decodes `reader` as `format` under the memory limit, with EXIF orientation applied and
/// the ICC profile kept; `path` is what errors call it. A JPEG's whole bytes, `jpeg`, go to
/// the faster JPEG decoder for the pixels where it takes the file; the `image` crate's
/// decoder reads the header and metadata either way.
fn decode_from(
    path: &Path,
    reader: impl io::BufRead + io::Seek,
    format: ImageFormat,
    max_memory_mib: u64,
    jpeg: Option<&[u8]>,
) -> Result<DecodedFile, ImageIoError> {
    let (decoder, orientation, meta) = open_decoder(path, reader, format, max_memory_mib)?;
    let (w, h) = decoder.dimensions();
    let limit = max_memory_mib.saturating_mul(1 << 20);
    let mut image = match jpeg.and_then(|bytes| jpeg::decode_pixels(bytes, limit)) {
        Some(image) if image.dimensions() == (w, h) => image,
        _ => {
            DynamicImage::from_decoder(decoder).map_err(|e| image_error(path, e, max_memory_mib))?
        }
    };
    image.apply_orientation(orientation);
    Ok(DecodedFile {
        image,
        format,
        meta,
        jpeg: jpeg.map(jpeg::JpegTraits::read),
    })
}

/// The `image` crate's decoder for `reader`, with the header read and checked (size, memory
/// limit), and the orientation and metadata it declares.
fn open_decoder<'a, R: io::BufRead + io::Seek + 'a>(
    path: &Path,
    mut reader: R,
    format: ImageFormat,
    max_memory_mib: u64,
) -> Result<(impl ImageDecoder + 'a, Orientation, metadata::Metadata), ImageIoError> {
    // `image` reads no EXIF from a TIFF (it lives in the file's own directories), nor from a
    // PNG's legacy text chunks.
    let from_file = metadata::read_container(format, &mut reader);
    io::Seek::rewind(&mut reader).map_err(|cause| ImageIoError::Open {
        path: path.into(),
        cause,
    })?;
    let mut reader = ImageReader::with_format(reader, format);
    let mut limits = Limits::default();
    limits.max_alloc = Some(max_memory_mib.saturating_mul(1 << 20));
    reader.limits(limits);
    let map = |e: ImageError| image_error(path, e, max_memory_mib);
    let mut decoder = reader
        .into_decoder()
        .map_err(|e| match gray_float_tiff(&e) {
            Some(detail) => ImageIoError::Unsupported {
                path: path.into(),
                detail: detail.into(),
            },
            None => map(e),
        })?;
    // Not every decoder checks max_alloc against the image it is about to allocate.
    if decoder.total_bytes() > max_memory_mib.saturating_mul(1 << 20) {
        return Err(ImageIoError::OverLimit {
            path: path.into(),
            limit_mib: max_memory_mib,
        });
    }
    // A GIF may declare a 6176 × 0 screen, and decoders hand such images over; with no pixel
    // there is nothing to blur, and the planar split cannot cut planes of zero samples.
    let (w, h) = decoder.dimensions();
    if w == 0 || h == 0 {
        return Err(ImageIoError::Decode {
            path: path.into(),
            detail: format!("the image has no pixels ({w} × {h})"),
        });
    }
    let orientation = decoder.orientation().map_err(map)?;
    let meta = metadata::Metadata::read(&mut decoder, from_file).map_err(map)?;
    Ok((decoder, orientation, meta))
}

/// A colour JPEG held in memory as its YCbCr planes in layout `chroma`, with its metadata,
/// after the checks `decode_bytes` makes; None where the planes do not stand for the picture
/// as it is to be shown (an EXIF orientation other than upright) or the file is not plain
/// YCbCr in that layout: `decode_bytes` then decodes it as pixels.
pub fn decode_jpeg_planes(
    name: &Path,
    bytes: &[u8],
    chroma: jpeg::Chroma,
    max_memory_mib: u64,
) -> Result<Option<(jpeg::YccPlanes, metadata::Metadata)>, ImageIoError> {
    if bytes.is_empty() || image::guess_format(bytes).ok() != Some(ImageFormat::Jpeg) {
        return Ok(None);
    }
    if !jpeg_complete(bytes) {
        return Err(ImageIoError::Decode {
            path: name.into(),
            detail: "the file is truncated (no JPEG end-of-image marker)".into(),
        });
    }
    let (_, orientation, meta) =
        open_decoder(name, Cursor::new(bytes), ImageFormat::Jpeg, max_memory_mib)?;
    if orientation != Orientation::NoTransforms {
        return Ok(None);
    }
    let limit = max_memory_mib.saturating_mul(1 << 20);
    Ok(jpeg::decode_planes(bytes, chroma, limit).map(|planes| (planes, meta)))
}

/// The reason for a float TIFF the `image` crate refuses: it decodes 32-bit float TIFF as RGB
/// or RGBA only, and names a gray one's layout by its bits alone (`Unknown(32)`).
fn gray_float_tiff(e: &ImageError) -> Option<&'static str> {
    use image::error::{ImageFormatHint, UnsupportedErrorKind};
    use image::ExtendedColorType::Unknown;
    let ImageError::Unsupported(u) = e else {
        return None;
    };
    match (u.format_hint(), u.kind()) {
        (ImageFormatHint::Exact(ImageFormat::Tiff), UnsupportedErrorKind::Color(Unknown(32))) => {
            Some("a gray 32-bit float TIFF; float TIFF is read as RGB or RGBA only")
        }
        (ImageFormatHint::Exact(ImageFormat::Tiff), UnsupportedErrorKind::Color(Unknown(64))) => {
            Some("a gray+alpha 32-bit float TIFF; float TIFF is read as RGB or RGBA only")
        }
        _ => None,
    }
}

/// Whether a JPEG's marker structure reaches its end-of-image marker (EOI). Segments are
/// skipped by their length, so thumbnails inside APP segments do not count, and in
/// entropy-coded data only `FF` followed by a marker byte other than stuffing (`00`) and
/// restarts (`D0`–`D7`) is a marker. Bytes after the EOI (motion photos append a video) are
/// fine.
pub fn jpeg_complete(b: &[u8]) -> bool {
    let mut i = 2;
    loop {
        while i < b.len() && b[i] != 0xFF {
            i += 1;
        }
        while i < b.len() && b[i] == 0xFF {
            i += 1;
        }
        let Some(&marker) = b.get(i) else {
            return false;
        };
        i += 1;
        match marker {
            0xD9 => return true,
            0x00 | 0x01 | 0xD0..=0xD7 => {}
            _ => {
                let Some(len) = b.get(i..i + 2) else {
                    return false;
                };
                i += u16::from_be_bytes([len[0], len[1]]) as usize;
            }
        }
    }
}

/// The format the first bytes of `path` announce, if any.
pub fn sniff(path: &Path) -> io::Result<Option<ImageFormat>> {
    use std::io::Read;
    let mut head = Vec::with_capacity(64);
    std::fs::File::open(path)?.take(64).read_to_end(&mut head)?;
    Ok(image::guess_format(&head).ok())
}

/// A decoder's message on one line: some end theirs with a newline, which would break the
/// one-line error promise (the `decode_blur_encode` fuzz target feeds such JPEGs).
fn one_line(detail: &str) -> String {
    detail.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn image_error(path: &Path, e: ImageError, limit_mib: u64) -> ImageIoError {
    match e {
        ImageError::Limits(_) => ImageIoError::OverLimit {
            path: path.into(),
            limit_mib,
        },
        ImageError::Unsupported(u) => ImageIoError::Unsupported {
            path: path.into(),
            detail: one_line(&u.to_string()),
        },
        ImageError::IoError(source) if source.kind() == io::ErrorKind::UnexpectedEof => {
            ImageIoError::Decode {
                path: path.into(),
                detail: "the file is truncated".into(),
            }
        }
        ImageError::IoError(cause) => ImageIoError::Open {
            path: path.into(),
            cause,
        },
        other => ImageIoError::Decode {
            path: path.into(),
            detail: one_line(&other.to_string()),
        },
    }
}

/// The colour types each writable format's encoder accepts (image 0.25).
fn writable(format: ImageFormat) -> &'static [ColorType] {
    use ColorType::*;
    match format {
        ImageFormat::Png => &[L8, La8, Rgb8, Rgba8, L16, La16, Rgb16, Rgba16],
        ImageFormat::Jpeg => &[L8, Rgb8],
        ImageFormat::Tiff => &[L8, Rgb8, Rgba8, L16, Rgb16, Rgba16, Rgb32F, Rgba32F],
        ImageFormat::WebP | ImageFormat::Bmp | ImageFormat::Tga => &[L8, La8, Rgb8, Rgba8],
        ImageFormat::Gif | ImageFormat::Qoi => &[Rgb8, Rgba8],
        ImageFormat::OpenExr => &[Rgb32F, Rgba32F],
        ImageFormat::Hdr => &[Rgb32F],
        _ => &[],
    }
}

/// Whether gblur can write `format`.
pub fn can_write(format: ImageFormat) -> bool {
    !writable(format).is_empty()
}

/// Checks OUT before any work is done: a format gblur writes (`format`, else OUT's
/// extension's), an existing folder, not IN.
pub fn check_output(
    input: &Path,
    output: &Path,
    format: Option<ImageFormat>,
) -> Result<ImageFormat, ImageIoError> {
    let bad = |detail: String| ImageIoError::BadOutput {
        path: output.into(),
        detail,
    };
    let format = format
        .or_else(|| ImageFormat::from_path(output).ok())
        .filter(|f| !writable(*f).is_empty())
        .ok_or_else(|| bad("unknown or unwritable output format: use .png, .jpg, .tif, .webp, .bmp, .tga, .gif, .qoi, .exr or .hdr".into()))?;
    let parent = match output.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if !parent.is_dir() {
        return Err(bad(format!(
            "the output folder {} does not exist",
            parent.display()
        )));
    }
    if output.is_dir() {
        return Err(bad("is a directory".into()));
    }
    if let (Ok(a), Ok(b)) = (input.canonicalize(), output.canonicalize()) {
        if a == b {
            return Err(bad(
                "is the input file; gblur never overwrites its input".into()
            ));
        }
    }
    Ok(format)
}

/// The colour type to write `source` as in `format`, and what was given up, if anything.
pub fn output_color(source: ColorType, format: ImageFormat) -> (ColorType, Option<String>) {
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
    let note = (!lost.is_empty()).then(|| {
        format!(
            "{format:?} cannot hold {source:?}: wrote {best:?} ({})",
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
    pub png_compression: CompressionType,
    /// Add TPDF dither before rounding to fewer bits than the input has (`pixels::quantise`).
    pub dither: bool,
}

/// Encodes into memory, returning the bytes and a note when the ICC profile could not be kept.
pub fn encode(
    image: &DynamicImage,
    format: ImageFormat,
    icc: Option<&[u8]>,
    (opts, jpeg): (EncodeOptions, jpeg::JpegSettings),
    path: &Path,
) -> Result<(Vec<u8>, Option<String>), ImageIoError> {
    let failed = |detail: String| ImageIoError::Encode {
        path: path.into(),
        format: format!("{format:?}"),
        detail,
    };
    if let Some(ours) = encode_own(image, format, icc, (opts, jpeg)) {
        return ours.map(|bytes| (bytes, None)).map_err(failed);
    }
    encode_with_image_crate(image, format, icc, (opts, jpeg))
        .map_err(|e| failed(one_line(&e.to_string())))
}

/// gblur's own encoders, where they take the image: PNG (filtered and compressed in stripes
/// on every core, or streamed at `fast`) and 8-bit gray or RGB JPEG (stripes joined by
/// restart markers). None for everything else.
fn encode_own(
    image: &DynamicImage,
    format: ImageFormat,
    icc: Option<&[u8]>,
    (opts, jpeg): (EncodeOptions, jpeg::JpegSettings),
) -> Option<Result<Vec<u8>, String>> {
    match (format, image) {
        (ImageFormat::Png, _) => match opts.png_compression {
            CompressionType::Fast => png::encode_fast(image, icc),
            CompressionType::Best => png::encode(image, 9, icc),
            _ => png::encode(image, 6, icc),
        },
        (ImageFormat::Jpeg, DynamicImage::ImageLuma8(_) | DynamicImage::ImageRgb8(_)) => {
            let color = match image {
                DynamicImage::ImageLuma8(_) => jpeg::JpegColor::Gray,
                _ => jpeg::JpegColor::Rgb,
            };
            let dims = (image.width(), image.height());
            Some(jpeg::encode(
                image.as_bytes(),
                dims,
                color,
                (jpeg.quality, jpeg.chroma),
                icc,
            ))
        }
        _ => None,
    }
}

/// The `image` crate's encoder for `format`, with the ICC profile where the format carries it.
fn encode_with_image_crate(
    image: &DynamicImage,
    format: ImageFormat,
    icc: Option<&[u8]>,
    (opts, jpeg): (EncodeOptions, jpeg::JpegSettings),
) -> Result<(Vec<u8>, Option<String>), ImageError> {
    let mut out = Cursor::new(Vec::new());
    let mut note = None;
    fn with_icc<E: ImageEncoder>(
        mut e: E,
        icc: Option<&[u8]>,
        note: &mut Option<String>,
        img: &DynamicImage,
    ) -> Result<(), ImageError> {
        if let Some(p) = icc {
            if e.set_icc_profile(p.to_vec()).is_err() {
                *note = Some(
                    "the output format cannot carry the input's ICC profile; it was not written"
                        .into(),
                );
            }
        }
        img.write_with_encoder(e)
    }
    match format {
        ImageFormat::Png => with_icc(
            PngEncoder::new_with_quality(&mut out, opts.png_compression, FilterType::Adaptive),
            icc,
            &mut note,
            image,
        ),
        ImageFormat::Jpeg => with_icc(
            JpegEncoder::new_with_quality(&mut out, jpeg.quality),
            icc,
            &mut note,
            image,
        ),
        ImageFormat::WebP => with_icc(WebPEncoder::new_lossless(&mut out), icc, &mut note, image),
        ImageFormat::Tiff => with_icc(TiffEncoder::new(&mut out), icc, &mut note, image),
        other => {
            if icc.is_some() {
                note = Some(format!(
                    "{other:?} cannot carry the input's ICC profile; it was not written"
                ));
            }
            image.write_to(&mut out, other)
        }
    }?;
    Ok((out.into_inner(), note))
}

/// Writes `bytes` to stdout in one piece, and flushes it.
pub fn write_stdout(bytes: &[u8]) -> Result<(), ImageIoError> {
    let mut out = io::stdout().lock();
    out.write_all(bytes)
        .and_then(|()| out.flush())
        .map_err(|cause| ImageIoError::Write {
            path: "stdout".into(),
            cause,
        })
}

/// Writes `bytes` to `path` through a temporary file in the same folder and a rename, keeping
/// the permissions of the file it replaces (or 0644 for a new one).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), ImageIoError> {
    let mut tmp = temp_beside(path)?;
    let _removed_on_ctrl_c = crate::interrupt::writing(tmp.path());
    tmp.write_all(bytes).map_err(write_error(path))?;
    persist(tmp, path)
}

pub fn write_error(path: &Path) -> impl Fn(io::Error) -> ImageIoError + '_ {
    move |cause| ImageIoError::Write {
        path: path.into(),
        cause,
    }
}

/// A temporary file in `path`'s folder, for `persist` to rename over it (removed if dropped
/// first). The caller registers it with `interrupt::writing` while it writes.
pub fn temp_beside(path: &Path) -> Result<tempfile::NamedTempFile, ImageIoError> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    tempfile::Builder::new()
        .prefix(".gblur-")
        .suffix(".tmp")
        .tempfile_in(dir)
        // tempfile's message names the random temporary path; the kind is what matters.
        .map_err(|e| write_error(path)(io::Error::from(e.kind())))
}

/// Syncs the fully written `tmp` and renames it over `path`, with the permissions of the
/// file it replaces (or 0644 for a new one).
pub fn persist(tmp: tempfile::NamedTempFile, path: &Path) -> Result<(), ImageIoError> {
    let err = write_error(path);
    tmp.as_file().sync_all().map_err(&err)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let perms = std::fs::metadata(path)
            .map(|m| m.permissions())
            .unwrap_or_else(|_| std::fs::Permissions::from_mode(0o644));
        tmp.as_file().set_permissions(perms).map_err(&err)?;
    }
    tmp.persist(path).map_err(|e| err(e.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jpeg_drops_alpha_and_depth_and_says_so() {
        let (c, note) = output_color(ColorType::Rgba16, ImageFormat::Jpeg);
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
            assert_eq!(output_color(c, ImageFormat::Png), (c, None));
        }
        assert_eq!(
            output_color(ColorType::Rgba32F, ImageFormat::Png).0,
            ColorType::Rgba16
        );
        assert_eq!(
            output_color(ColorType::Rgb32F, ImageFormat::Tiff),
            (ColorType::Rgb32F, None)
        );
        assert_eq!(
            output_color(ColorType::L8, ImageFormat::Gif),
            (ColorType::Rgb8, None)
        );
        assert_eq!(
            output_color(ColorType::La8, ImageFormat::Tiff),
            (ColorType::Rgba8, None)
        );
        assert_eq!(
            output_color(ColorType::Rgb8, ImageFormat::OpenExr),
            (ColorType::Rgb32F, None)
        );
    }
}
