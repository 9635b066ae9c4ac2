//! TIFF as gblur reads and writes it beside the `image` crate: what its decoder gets wrong or
//! cannot read (`read`: tiled planes, reversed bit order, associated alpha), and the writer
//! both engines use (`write`: strips of whole rows, with the tags a reader needs and no
//! others: unassociated alpha declared, no predictor on uncompressed data, gray with alpha),
//! and the strip engine's halves: `rows_in` (a strip at a time from a file) and `rows_out`
//! (strips into a file as the rows come).

mod codec;
pub mod pages;
mod read;
pub mod rows_in;
pub mod rows_out;
pub mod write;

pub use codec::Tiff;
pub use read::{read_image, read_inks, unpremultiply, Quirks};
pub use write::Compression;

use crate::pixels::dispatch::each_buffer;
use image::DynamicImage;

/// What a gblur built without the `zstd` feature says of Zstandard in a TIFF.
pub const ZSTD_MISSING: &str =
    "this gblur was built without Zstandard, the TIFF compression (build it with `--features zstd`)";

/// `--tiff-compression`: one compression, or the input's (`Same`, the default).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TiffCompression {
    /// The input's compression where it is a TIFF's; else LZW.
    #[default]
    Same,
    /// This compression.
    Set(Compression),
}

impl TiffCompression {
    /// `none`, `lzw`, `deflate`, `zstd` or `same`.
    pub fn parse(s: &str) -> Result<TiffCompression, String> {
        Self::parse_in(s, cfg!(feature = "zstd"))
    }

    /// `parse` in a build with Zstandard (`zstd`) or without.
    fn parse_in(s: &str, zstd: bool) -> Result<TiffCompression, String> {
        Ok(match s {
            "same" => TiffCompression::Same,
            "none" => TiffCompression::Set(Compression::None),
            "lzw" => TiffCompression::Set(Compression::Lzw),
            "deflate" => TiffCompression::Set(Compression::Deflate),
            "zstd" if zstd => TiffCompression::Set(Compression::Zstd),
            "zstd" => return Err(format!("zstd: {ZSTD_MISSING}")),
            _ => return Err(format!("{s:?}: give none, lzw, deflate, zstd or same")),
        })
    }

    /// The compression to write for an input whose Compression tag is `input` (None: the
    /// input is no TIFF), and a note where `Same` could not keep it. `Same` keeps the input's
    /// where gblur writes it, writes Deflate (lossless, read everywhere) for a compression it
    /// does not write (PackBits, CCITT, JPEG, ...), and none for an uncompressed TIFF or
    /// another format.
    pub fn resolve(self, input: Option<u16>) -> (TiffCompression, Option<String>) {
        let (compression, note) = match (self, input) {
            (TiffCompression::Set(c), _) => (c, None),
            (TiffCompression::Same, None) => (Compression::None, None),
            (TiffCompression::Same, Some(tag)) => match Compression::from_tag(tag) {
                Some(c) => (c, None),
                None => (
                    Compression::Deflate,
                    Some(format!(
                        "the input TIFF's compression ({}) is not one gblur writes: wrote Deflate (--tiff-compression picks another)",
                        compression_name(tag)
                    )),
                ),
            },
        };
        (TiffCompression::Set(compression), note)
    }

    /// The compression set, none for `Same` unresolved.
    pub fn compression(self) -> Compression {
        match self {
            TiffCompression::Set(c) => c,
            TiffCompression::Same => Compression::None,
        }
    }
}

/// A Compression tag's name, for notes.
fn compression_name(tag: u16) -> String {
    match tag {
        2..=4 => "CCITT fax".into(),
        6 | 7 => "JPEG".into(),
        32773 => "PackBits".into(),
        34925 => "LZMA".into(),
        50001 => "WebP".into(),
        t => format!("Compression {t}"),
    }
}

/// One page to write: its samples, its ICC profile, and whether it is gray float held as
/// RGB(A) with three equal channels (written as gray, or gray and alpha).
#[derive(Clone, Copy)]
pub struct Page<'a> {
    pub image: &'a DynamicImage,
    pub icc: Option<&'a [u8]>,
    pub gray_float: bool,
    /// An RGBA-shaped image whose four samples are CMYK inks, written as CMYK.
    pub inks: bool,
}

/// `page` as a TIFF in memory, its strips compressed as `compression` says; None for a colour
/// type TIFF output does not take (`codec::output_color` converts to one first).
pub fn encode(page: Page, compression: Compression) -> Option<Result<Vec<u8>, String>> {
    encode_pages(&[page], compression)
}

/// `pages` as one TIFF of as many pages, in order; a BigTIFF where the pixels pass what a
/// classic TIFF's offsets reach. None where a page's colour type is one TIFF output does not
/// take.
pub fn encode_pages(pages: &[Page], compression: Compression) -> Option<Result<Vec<u8>, String>> {
    if pages.iter().any(|p| channels(p.image).is_none()) {
        return None;
    }
    let pixel_bytes: u64 = pages.iter().map(|p| p.image.as_bytes().len() as u64).sum();
    // Room for the uncompressed pixels and the directories, so that the buffer is not copied
    // as it grows (pages a compressor leaves unused are never touched).
    let room = usize::try_from(pixel_bytes)
        .unwrap_or(usize::MAX)
        .saturating_add(1 << 16);
    let mut out = std::io::Cursor::new(Vec::with_capacity(room));
    let written = if pixel_bytes > write::BIG_OVER {
        tiff::encoder::TiffEncoder::new_big(&mut out)
            .and_then(|mut e| write_pages(&mut e, pages, compression))
    } else {
        tiff::encoder::TiffEncoder::new(&mut out)
            .and_then(|mut e| write_pages(&mut e, pages, compression))
    };
    Some(
        written
            .map(|()| out.into_inner())
            .map_err(|e| e.to_string()),
    )
}

/// Samples per pixel of a colour type TIFF output takes.
fn channels(image: &DynamicImage) -> Option<u16> {
    use DynamicImage::*;
    Some(match image {
        ImageLuma8(_) | ImageLuma16(_) => 1,
        ImageLumaA8(_) | ImageLumaA16(_) => 2,
        ImageRgb8(_) | ImageRgb16(_) | ImageRgb32F(_) => 3,
        ImageRgba8(_) | ImageRgba16(_) | ImageRgba32F(_) => 4,
        _ => return None,
    })
}

/// The gray (and alpha) samples of gray float held as RGB(A): channel 0 (and 3) of each pixel.
fn gray_samples(image: &DynamicImage) -> Option<Vec<f32>> {
    match image {
        DynamicImage::ImageRgb32F(i) => Some(i.pixels().map(|p| p.0[0]).collect()),
        DynamicImage::ImageRgba32F(i) => Some(i.pixels().flat_map(|p| [p.0[0], p.0[3]]).collect()),
        _ => None,
    }
}

fn write_pages<W: std::io::Write + std::io::Seek, K: tiff::encoder::TiffKind>(
    e: &mut tiff::encoder::TiffEncoder<W, K>,
    pages: &[Page],
    compression: Compression,
) -> tiff::TiffResult<()> {
    for &Page {
        image,
        icc,
        gray_float,
        inks,
    } in pages
    {
        let layout = write::Layout {
            width: image.width(),
            height: image.height(),
            channels: channels(image).expect("checked by encode_pages"),
            icc,
            compression,
            inks: inks
                && matches!(
                    image,
                    DynamicImage::ImageRgba8(_) | DynamicImage::ImageRgba16(_)
                ),
        };
        if let Some(gray) = gray_float.then(|| gray_samples(image)).flatten() {
            let channels = if image.color().has_alpha() { 2 } else { 1 };
            write::write_whole(e, &gray, write::Layout { channels, ..layout })?;
            continue;
        }
        each_buffer!(image, i => write::write_whole(e, i.as_raw(), layout), _ => unreachable!("checked by encode_pages"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zstd_is_a_compression_only_where_it_is_built() {
        assert_eq!(
            TiffCompression::parse_in("zstd", true),
            Ok(TiffCompression::Set(Compression::Zstd))
        );
        let said = TiffCompression::parse_in("zstd", false).unwrap_err();
        assert!(
            said.starts_with("zstd: ") && said.contains("--features zstd"),
            "{said}"
        );
        assert_eq!(
            TiffCompression::parse_in("lzw", false),
            Ok(TiffCompression::Set(Compression::Lzw))
        );
    }
}
