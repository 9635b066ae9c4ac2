//! Decoding an input into pixels upright, with its metadata: the format recognised by content,
//! the file handed to its codec (`Codec::decode`) behind a guard that turns a decoder's panic
//! into a one-line error, and the pixels turned as the metadata says (`Metadata::read`), for
//! every format alike. Also what the codecs share: the `image` crate's decoder with the
//! header checked and the metadata read (`open_decoder`, `with_image_crate`), CMYK's notes and
//! profiles, and the `image` crate's errors in gblur's words.

use super::format::FileToDecode;
use super::read::{self, Content, Input};
use super::source::Seekable;
use super::{guard, icc, jpeg, metadata, one_line, ImageIoError};
use image::{DynamicImage, ImageDecoder, ImageError, ImageFormat, ImageReader, Limits};
use std::io::{self, Cursor};
use std::path::Path;

/// A decoded input, already turned the way its orientation says.
pub struct DecodedFile {
    pub image: DynamicImage,
    pub format: ImageFormat,
    /// Its ICC profile, EXIF and XMP.
    pub meta: metadata::Metadata,
    /// How a JPEG input was written (None for other formats).
    pub jpeg: Option<jpeg::JpegTraits>,
    /// A TIFF input's Compression tag (None for other formats).
    pub tiff_compression: Option<u16>,
    /// The input is a lossless WebP (`webp::is_lossless`).
    pub webp_lossless: bool,
    /// The image is gray 32-bit float held as RGB(A) with three equal channels (`DynamicImage`
    /// has no gray float); the encoders write it back as gray.
    pub gray_float: bool,
    /// What the report should say about the decode (a damaged file recovered).
    pub notes: Vec<String>,
}

impl DecodedFile {
    /// `image` decoded from a file in `format` with `meta`, nothing else to say of it.
    pub fn new(image: DynamicImage, format: ImageFormat, meta: metadata::Metadata) -> DecodedFile {
        DecodedFile {
            image,
            format,
            meta,
            jpeg: None,
            tiff_compression: None,
            webp_lossless: false,
            gray_float: false,
            notes: Vec::new(),
        }
    }
}

/// Decodes the file at `path` (`-`: stdin) within `max_memory_mib`, everything read counted.
pub fn decode(path: &Path, max_memory_mib: u64) -> Result<DecodedFile, ImageIoError> {
    decode_input(&read::open(path, max_memory_mib)?, max_memory_mib)
}

/// Decodes an opened input within `max_memory_mib`: bytes in memory as they are, a JPEG, HEIF
/// or JPEG XL file read into memory (their decoders take bytes), any other file as it is read.
pub fn decode_input(input: &Input, max_memory_mib: u64) -> Result<DecodedFile, ImageIoError> {
    let in_memory = input.sniffed.is_some_and(|f| super::of(f).decodes_bytes());
    match &input.content {
        Content::File { .. } if !in_memory => {
            let format = recognise(&input.name, input.sniffed)?;
            decode_from(
                &input.name,
                &mut *input.reader(),
                format,
                max_memory_mib,
                None,
            )
        }
        _ => decode_bytes(&input.name, &input.whole(max_memory_mib)?, max_memory_mib),
    }
}

/// The input's format: what its content announces, or TGA (which has no signature) on its
/// file extension alone.
pub fn recognise(path: &Path, sniffed: Option<ImageFormat>) -> Result<ImageFormat, ImageIoError> {
    match (sniffed, ImageFormat::from_path(path)) {
        (Some(f), _) => Ok(f),
        (None, Ok(ImageFormat::Tga)) => Ok(ImageFormat::Tga),
        _ => Err(ImageIoError::Unsupported {
            path: path.into(),
            detail: "the content matches no known image format".into(),
        }),
    }
}

/// Decodes an image held in memory, recognised by its content, within the memory limit (the
/// bytes held count); `name` is what errors call it (a path, or `stdin`).
pub fn decode_bytes(
    name: &Path,
    bytes: &[u8],
    max_memory_mib: u64,
) -> Result<DecodedFile, ImageIoError> {
    if bytes.is_empty() {
        return Err(ImageIoError::Decode {
            path: name.into(),
            detail: "the input is empty (0 bytes)".into(),
        });
    }
    let format = recognise(name, read::guess(bytes))?;
    let left = max_memory_mib.saturating_sub(bytes.len() as u64 >> 20);
    decode_from(name, &mut Cursor::new(bytes), format, left, Some(bytes))
}

/// Decodes `reader` as `format` within the memory limit, behind the decoder guard, turned
/// upright, by the format's codec; `bytes`: the whole file, where it is in memory (a codec
/// that `decodes_bytes` is always handed it).
fn decode_from(
    path: &Path,
    reader: &mut dyn Seekable,
    format: ImageFormat,
    max_memory_mib: u64,
    bytes: Option<&[u8]>,
) -> Result<DecodedFile, ImageIoError> {
    let decoded = guard::catch(|| {
        if crate::fault::is(crate::fault::Fault::DecoderPanic) {
            panic!("assertion failed: an injected decoder fault");
        }
        let file = FileToDecode {
            path,
            reader,
            bytes,
            max_memory_mib,
        };
        let mut decoded = super::of(format).decode(file)?;
        decoded.image.apply_orientation(decoded.meta.orientation());
        decoded
            .notes
            .extend(cmyk_profile_dropped(&mut decoded.meta));
        Ok(decoded)
    });
    decoded.unwrap_or_else(|panic| {
        Err(ImageIoError::Decode {
            path: path.into(),
            detail: format!("the decoder failed ({panic})"),
        })
    })
}

/// A file the `image` crate decodes whole, with its metadata: the codecs' `decode` where
/// gblur adds nothing to the crate's decoder.
pub(super) fn with_image_crate(
    format: ImageFormat,
    file: FileToDecode<'_>,
) -> Result<DecodedFile, ImageIoError> {
    let (path, max_memory_mib) = (file.path, file.max_memory_mib);
    let (decoder, meta) = open_decoder(path, file.reader, format, max_memory_mib)?;
    let image =
        DynamicImage::from_decoder(decoder).map_err(|e| image_error(path, e, max_memory_mib))?;
    Ok(DecodedFile::new(image, format, meta))
}

/// The inks read (or why they were not) as sRGB through `meta`'s CMYK profile, which the
/// output then goes without (its pixels are sRGB), with a note. None where the inks could not
/// be read or the colour engine refuses the profile: the profile is dropped then too, and the
/// note says why the decoder's formula converts the colours instead.
pub(super) fn through_profile(
    inks: Result<(u32, u32, &icc::Inks), String>,
    meta: &mut metadata::Metadata,
    notes: &mut Vec<String>,
) -> Option<DynamicImage> {
    let profile = meta.icc.take()?;
    let converted = inks.and_then(|(w, h, inks)| icc::cmyk_to_srgb(w, h, inks, &profile));
    match converted {
        Ok((rgb, intent)) => {
            notes.push(format!(
                "the input is CMYK: converted to sRGB through its ICC profile ({intent}), and the CMYK profile not kept"
            ));
            Some(rgb)
        }
        Err(why) => {
            notes.push(format!(
                "the input is CMYK, but its ICC profile could not be applied ({why}): its colours were converted to RGB by formula (approximate), and the profile was not kept"
            ));
            None
        }
    }
}

/// Drops an ICC profile for other colours than CMYK from `meta`, where the pixels are CMYK
/// (the `format`'s four components): it does not describe them, nor the RGB the formula makes
/// of them. The note says so.
pub(super) fn foreign_profile_dropped(
    meta: &mut metadata::Metadata,
    format: &str,
) -> Option<String> {
    if cmyk_profile(meta).is_some() {
        return None;
    }
    let space = icc::data_space(meta.icc.as_deref()?)
        .map(|s| String::from_utf8_lossy(s).trim().to_string());
    meta.icc = None;
    Some(format!(
        "the {format} is CMYK with an ICC profile for other colours ({}): the profile was not kept",
        space.unwrap_or_default()
    ))
}

/// The note for a CMYK input without a CMYK profile (`format`: JPEG or TIFF).
pub(super) fn cmyk_by_formula_note(format: &str) -> String {
    format!("the {format} is CMYK without an ICC profile: its colours were converted to RGB by formula (approximate)")
}

/// The colour space (`CMYK` or `CMY`) of `meta`'s ICC profile, where it is one of those: the
/// profile's data colour space field, bytes 16 to 20 of its header.
pub(super) fn cmyk_profile(meta: &metadata::Metadata) -> Option<String> {
    let space = icc::data_space(meta.icc.as_deref()?)?;
    matches!(space, b"CMYK" | b"CMY ").then(|| String::from_utf8_lossy(space).trim().to_string())
}

/// Drops an ICC profile for CMYK (or CMY) from `meta`: the decoders hand over RGB or gray
/// pixels, which the profile does not describe, and a reader that trusted it would show wrong
/// colours. The note says the colours were converted without the profile.
fn cmyk_profile_dropped(meta: &mut metadata::Metadata) -> Option<String> {
    let space = cmyk_profile(meta)?;
    meta.icc = None;
    Some(format!(
        "the input is {space} with an ICC profile for {space}: its colours were converted to RGB without the profile (approximate), and the profile was not kept"
    ))
}

/// Back to the start of `reader` (the file `path`), for the next reader of it.
pub(super) fn rewind(path: &Path, reader: &mut dyn Seekable) -> Result<(), ImageIoError> {
    reader.rewind().map_err(|cause| ImageIoError::Open {
        path: path.into(),
        cause,
    })
}

/// The `image` crate's decoder for `reader`, with the header read and checked (size, memory
/// limit), and the metadata the file holds.
pub(super) fn open_decoder<'a>(
    path: &Path,
    reader: &'a mut dyn Seekable,
    format: ImageFormat,
    max_memory_mib: u64,
) -> Result<(Box<dyn ImageDecoder + 'a>, metadata::Metadata), ImageIoError> {
    // `image` reads no EXIF from a TIFF (it lives in the file's own directories), nor from a
    // PNG's eXIf after the pixels or legacy text chunks, nor a BMP's ICC profile.
    let from_file = super::of(format).read_metadata(reader);
    rewind(path, reader)?;
    let map = |e: ImageError| image_error(path, e, max_memory_mib);
    let mut decoder: Box<dyn ImageDecoder + 'a> = match format {
        // libjpeg is gblur's JPEG library; the header and metadata are read without another.
        ImageFormat::Jpeg => {
            let head =
                jpeg::libjpeg::header_segments(&mut io::BufReader::new(reader)).map_err(map)?;
            Box::new(jpeg::JpegHead::read(head).map_err(map)?)
        }
        _ => {
            let mut image_reader = ImageReader::with_format(reader, format);
            let mut limits = Limits::default();
            limits.max_alloc = Some(max_memory_mib.saturating_mul(1 << 20));
            image_reader.limits(limits);
            Box::new(image_reader.into_decoder().map_err(map)?)
        }
    };
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
    let meta = metadata::Metadata::read(Some(&mut decoder), from_file).map_err(map)?;
    Ok((decoder, meta))
}

/// A colour JPEG held in memory as its YCbCr planes in layout `chroma`, turned upright by its
/// EXIF orientation, with its metadata, after the checks the JPEG codec makes; None where the
/// file is not plain YCbCr in that layout or its planes are not `YccPlanes::turnable`:
/// `decode_bytes` then decodes it as pixels.
pub fn decode_jpeg_planes(
    name: &Path,
    bytes: &[u8],
    chroma: jpeg::Chroma,
    max_memory_mib: u64,
) -> Result<Option<(jpeg::YccPlanes, metadata::Metadata)>, ImageIoError> {
    if bytes.is_empty() || read::guess(bytes) != Some(ImageFormat::Jpeg) {
        return Ok(None);
    }
    jpeg::check_end(name, bytes)?;
    let planes = guard::catch(|| {
        let head = jpeg::libjpeg::header_segments(&mut &bytes[..])
            .map_err(|e| image_error(name, e, max_memory_mib))?;
        let mut head = Cursor::new(head);
        let (decoder, meta) = open_decoder(name, &mut head, ImageFormat::Jpeg, max_memory_mib)?;
        let (w, h) = decoder.dimensions();
        let turn = meta.orientation();
        // Decoded as planes only where they can be turned (else as pixels, which always can).
        if !jpeg::YccPlanes::turnable(chroma, (w, h), turn) {
            return Ok(None);
        }
        // The turn holds a plane and its turned copy at once: the largest, Y, twice.
        let limit = max_memory_mib.saturating_mul(1 << 20);
        let turning = (meta.orientation.is_some() as u64) * w as u64 * h as u64;
        let Some(mut planes) = jpeg::decode_planes(bytes, chroma, limit.saturating_sub(turning))
        else {
            return Ok(None);
        };
        // Turned upright as the pixels' decode turns them; the planes then stand for the
        // picture as it is shown, and the EXIF written says Orientation 1, as for pixels.
        Ok(planes.turn(turn).then_some((planes, meta)))
    });
    planes.unwrap_or_else(|panic| {
        Err(ImageIoError::Decode {
            path: name.into(),
            detail: format!("the decoder failed ({panic})"),
        })
    })
}

/// The reason for a TIFF of one or two channels the `image` crate refuses and gblur does not
/// read itself (`Quirks::gray_float` takes black-is-zero gray float): the crate names its
/// layout by its bits alone (`Unknown(32)`).
fn gray_float_tiff(e: &ImageError) -> Option<&'static str> {
    use image::error::{ImageFormatHint, UnsupportedErrorKind};
    use image::ExtendedColorType::Unknown;
    let ImageError::Unsupported(u) = e else {
        return None;
    };
    match (u.format_hint(), u.kind()) {
        (ImageFormatHint::Exact(ImageFormat::Tiff), UnsupportedErrorKind::Color(Unknown(32))) => {
            Some("a TIFF of 32 bits a pixel in one channel that gblur does not read (gray 32-bit float is read where black is zero)")
        }
        (ImageFormatHint::Exact(ImageFormat::Tiff), UnsupportedErrorKind::Color(Unknown(64))) => {
            Some("a TIFF of 64 bits a pixel in one or two channels that gblur does not read (64-bit samples, or gray and alpha 32-bit float where white is zero)")
        }
        _ => None,
    }
}

pub fn image_error(path: &Path, e: ImageError, limit_mib: u64) -> ImageIoError {
    use image::error::{ImageFormatHint, UnsupportedErrorKind};
    if let Some(detail) = gray_float_tiff(&e) {
        return ImageIoError::Unsupported {
            path: path.into(),
            detail: detail.into(),
        };
    }
    match e {
        ImageError::Limits(_) => ImageIoError::OverLimit {
            path: path.into(),
            limit_mib,
        },
        // What gblur's own JPEG header reader refuses says it in its own words.
        ImageError::Unsupported(u) => ImageIoError::Unsupported {
            path: path.into(),
            detail: match (u.format_hint(), u.kind()) {
                (
                    ImageFormatHint::Exact(ImageFormat::Jpeg),
                    UnsupportedErrorKind::GenericFeature(what),
                ) => what,
                _ => one_line(&u.to_string()),
            },
        },
        ImageError::IoError(source) if source.kind() == io::ErrorKind::UnexpectedEof => {
            ImageIoError::Decode {
                path: path.into(),
                detail: "the file is truncated".into(),
            }
        }
        ImageError::IoError(source) if source.kind() == io::ErrorKind::InvalidData => {
            ImageIoError::Decode {
                path: path.into(),
                detail: one_line(&source.to_string()),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A CMYK JPEG with stray bytes between its header segments (which libjpeg skips) is read
    /// as CMYK, by its frame as libjpeg reads it, not refused as over the memory limit.
    #[test]
    fn a_cmyk_jpeg_with_stray_bytes_in_its_header_is_read_as_cmyk() {
        let (w, h) = (32u32, 16u32);
        let stored: Vec<u8> = (0..w * h * 4).map(|i| 255 - (i % 4 * 60) as u8).collect();
        let jpeg = jpeg::encode(
            &stored,
            (w, h),
            jpeg::JpegColor::Cmyk { adobe_marker: true },
            jpeg::JpegSettings {
                quality: 95,
                chroma: jpeg::Chroma::S444,
            },
            None,
        )
        .unwrap();
        let sof = jpeg.windows(2).position(|w| w == [0xFF, 0xC0]).unwrap();
        let stray = [&jpeg[..sof], &[0x00, 0x00, 0x00][..], &jpeg[sof..]].concat();
        for bytes in [&jpeg, &stray] {
            let decoded = decode_bytes(Path::new("cmyk.jpg"), bytes, 64).unwrap();
            assert_eq!((decoded.image.width(), decoded.image.height()), (w, h));
            // Inks 0, 60, 120, 180 by formula: (255, 195, 135) × (75 / 255).
            let px = decoded.image.to_rgb8().get_pixel(5, 5).0;
            for (got, want) in px.iter().zip([75u8, 57, 39]) {
                assert!(got.abs_diff(want) <= 3, "{px:?}");
            }
            assert!(
                decoded.notes.iter().any(|n| n.contains("by formula")),
                "{:?}",
                decoded.notes
            );
        }
    }

    #[test]
    fn a_cmyk_profile_is_dropped_with_a_note() {
        let profile = |space: &[u8; 4]| {
            let mut p = vec![0u8; 128];
            p[16..20].copy_from_slice(space);
            p
        };
        for (space, dropped) in [
            (b"CMYK", true),
            (b"CMY ", true),
            (b"RGB ", false),
            (b"GRAY", false),
            (b"\x07\x07\x07\x07", false),
        ] {
            let mut meta = metadata::Metadata {
                icc: Some(profile(space)),
                ..Default::default()
            };
            let note = cmyk_profile_dropped(&mut meta);
            assert_eq!(note.is_some(), dropped);
            assert_eq!(meta.icc.is_none(), dropped);
        }
        let mut none = metadata::Metadata::default();
        assert_eq!(cmyk_profile_dropped(&mut none), None);
    }
}
