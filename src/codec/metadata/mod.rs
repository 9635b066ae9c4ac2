//! The metadata carried from input to output: the ICC profile, EXIF (a TIFF structure, as
//! JPEG's APP1, PNG's eXIf and WebP's EXIF chunk hold it), XMP (an XML packet) and IPTC-IIM
//! records (keywords, caption, credit: a JPEG's Photoshop resource 0x0404 in APP13, a TIFF's
//! tag 33723). Read from the decoder (`image` reads the first three from JPEG, PNG and WebP,
//! and XMP from TIFF; a TIFF's EXIF is gathered here from its own directories, and IPTC from
//! the file), adjusted to the written pixels (orientation 1, since the decoder turned the
//! pixels; pixel dimensions of the output), and written into the encoded file where its
//! format can hold it; a note names what it cannot.

mod bmp;
mod containers;
pub mod ifd;
mod png_text;
mod tiff;
mod xmp;

use super::ImageIoError;
use image::metadata::Orientation;
use image::{ImageDecoder, ImageFormat};
use std::path::Path;

/// What an image carries besides its pixels.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Metadata {
    pub icc: Option<Vec<u8>>,
    /// A TIFF structure starting with its header (`II*\0` or `MM\0*`), without JPEG's
    /// `Exif\0\0` prefix.
    pub exif: Option<Vec<u8>>,
    /// The XMP packet, as bytes (UTF-8 XML).
    pub xmp: Option<Vec<u8>>,
    /// IPTC-IIM records (keywords, caption, credit), as the bytes of their datasets.
    pub iptc: Option<Vec<u8>>,
    /// Notes for the report on what was present but is not carried: what could not be read,
    /// a TIFF's overviews (where the strip engine reads the file), and the EXIF thumbnail
    /// (`THUMBNAIL_DROPPED`).
    pub unread: Vec<String>,
    /// How the stored pixels are turned for display (None: upright), from the EXIF, else the
    /// file's own tag (TIFF), else the XMP: what every decoder applies, and what the written
    /// EXIF and XMP then reset to 1.
    pub orientation: Option<Orientation>,
    /// The stored colour is premultiplied by alpha (a TIFF's associated alpha): the decoder
    /// divides it out.
    pub associated_alpha: bool,
}

/// Which kinds of metadata a job writes (`--strip`, `--keep`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeepMetadata {
    /// The ICC profile.
    pub icc: bool,
    /// EXIF.
    pub exif: bool,
    /// XMP.
    pub xmp: bool,
    /// IPTC.
    pub iptc: bool,
}

impl KeepMetadata {
    /// Everything the output format can hold.
    pub const ALL: KeepMetadata = KeepMetadata {
        icc: true,
        exif: true,
        xmp: true,
        iptc: true,
    };
    /// Nothing.
    pub const NONE: KeepMetadata = KeepMetadata {
        icc: false,
        exif: false,
        xmp: false,
        iptc: false,
    };
}

impl Metadata {
    /// Only the kinds `keep` names.
    pub fn select(self, keep: KeepMetadata) -> Metadata {
        Metadata {
            icc: self.icc.filter(|_| keep.icc),
            exif: self.exif.filter(|_| keep.exif),
            xmp: self.xmp.filter(|_| keep.xmp),
            iptc: self.iptc.filter(|_| keep.iptc),
            ..self
        }
    }

    /// Reads what `decoder` offers (where the `image` crate decodes the file), and what
    /// the codec's `read_metadata` gathered from the file (which `image` reads for no format where it
    /// reads the same kind itself, but a PNG's eXIf chunk comes before a legacy text chunk).
    /// An unreadable ICC profile fails the decode (as it always has); unreadable EXIF or XMP
    /// is left out and noted.
    pub fn read(
        mut decoder: Option<&mut dyn ImageDecoder>,
        file: FromFile,
    ) -> image::ImageResult<Metadata> {
        let icc = match (file.icc, &mut decoder) {
            (Some(icc), _) => Some(icc),
            (None, Some(d)) => d.icc_profile()?,
            (None, None) => None,
        };
        let mut unread = Vec::new();
        let mut kept = |what: &str, read: image::ImageResult<Option<Vec<u8>>>| {
            read.unwrap_or_else(|e| {
                let e = super::one_line(&e.to_string());
                unread.push(format!(
                    "the input's {what} could not be read ({e}); it was not kept"
                ));
                None
            })
        };
        let exif = match &mut decoder {
            Some(d) => kept("EXIF", d.exif_metadata()),
            None => None,
        };
        let exif = exif.or(file.exif);
        let xmp = match (file.xmp, decoder) {
            (Some(xmp), _) => Some(xmp),
            (None, Some(d)) if !file.xmp_read => kept("XMP", d.xmp_metadata()),
            (None, _) => None,
        };
        let xmp = xmp.filter(|x| !x.is_empty());
        let exif = exif.and_then(|b| {
            let normal = normalise_exif(b);
            if normal.is_none() {
                unread.push("the input's EXIF is not a TIFF structure; it was not kept".into());
            }
            normal
        });
        let exif = exif.map(|mut b| {
            if without_thumbnail(&mut b) {
                unread.push(THUMBNAIL_DROPPED.into());
            }
            b
        });
        let orientation = exif
            .as_deref()
            .and_then(exif_orientation)
            .or(file.orientation)
            .or_else(|| xmp.as_deref().and_then(xmp::orientation))
            .and_then(Orientation::from_exif)
            .filter(|o| *o != Orientation::NoTransforms);
        Ok(Metadata {
            icc,
            exif,
            xmp,
            iptc: file.iptc.filter(|i| !i.is_empty()),
            unread,
            orientation,
            associated_alpha: file.associated_alpha,
        })
    }

    /// Whether it holds EXIF, XMP or IPTC: what is written after the pixels (`embed`).
    pub fn has_blobs(&self) -> bool {
        self.exif.is_some() || self.xmp.is_some() || self.iptc.is_some()
    }

    /// The note for IPTC that an output in `format` does not hold (all but JPEG and TIFF).
    pub fn iptc_lost(&self, format: ImageFormat) -> Option<String> {
        let holds = crate::codec::of(format).holds_iptc();
        (self.iptc.is_some() && !holds).then(|| {
            format!("{format:?} holds no IPTC-IIM records (keywords, caption, credit); the input's were not written (photo applications keep the same fields in the XMP too)")
        })
    }

    /// How the decoded pixels are to be turned to stand upright.
    pub fn orientation(&self) -> Orientation {
        self.orientation.unwrap_or(Orientation::NoTransforms)
    }
}

/// The Orientation value (1 to 8) of an EXIF structure's first directory.
fn exif_orientation(blob: &[u8]) -> Option<u8> {
    let (order, first) = ifd::header(blob)?;
    let (entries, _) = ifd::read_ifd(&mut &blob[..], order, first)?;
    let entry = entries.iter().find(|e| e.tag == ifd::ORIENTATION)?;
    u8::try_from(entry.number(order)?)
        .ok()
        .filter(|v| (1..=8).contains(v))
}

/// EXIF as a bare TIFF structure: some writers keep JPEG's `Exif\0\0` prefix in PNG and WebP
/// too. None when what is left has no TIFF header or no readable first directory.
fn normalise_exif(mut blob: Vec<u8>) -> Option<Vec<u8>> {
    if blob.starts_with(b"Exif\0\0") {
        blob.drain(..6);
    }
    let (order, first) = ifd::header(&blob)?;
    ifd::read_ifd(&mut blob.as_slice(), order, first)?;
    Some(blob)
}

/// The note for an input whose EXIF held a thumbnail: a picture of the unblurred image.
pub const THUMBNAIL_DROPPED: &str = "the input's EXIF thumbnail (unblurred) was dropped";

/// Removes the EXIF structure's thumbnail, its second directory (IFD1) with the image it
/// locates, and any directory chained after it (`ifd::drop_following`): every output of gblur
/// is blurred, and the thumbnail shows the input as it was. Returns whether there was one.
fn without_thumbnail(blob: &mut Vec<u8>) -> bool {
    match ifd::header(blob) {
        Some((order, first)) => ifd::drop_following(blob, order, first),
        None => false,
    }
}

pub use tiff::FromFile;

/// The metadata written after the pixels, as the output holds it: EXIF (adjusted to the
/// output), XMP and IPTC-IIM records.
#[derive(Clone, Copy, Debug, Default)]
pub struct Blobs<'a> {
    pub exif: Option<&'a [u8]>,
    pub xmp: Option<&'a [u8]>,
    pub iptc: Option<&'a [u8]>,
}

/// A TIFF's EXIF (gathered from its first directory and the EXIF and GPS directories it points
/// to, as a TIFF structure of its own), ICC profile, XMP, orientation, alpha kind and IPTC.
pub fn read_tiff(reader: &mut dyn crate::codec::source::Seekable) -> FromFile {
    tiff::read(&mut ifd::Reader(reader))
}

/// A PNG's EXIF in an eXIf chunk after the pixels or a legacy `Raw profile type exif` text
/// chunk.
pub fn read_png(reader: &mut dyn crate::codec::source::Seekable) -> FromFile {
    FromFile {
        exif: png_text::read_exif(&mut ifd::Reader(reader)),
        ..FromFile::default()
    }
}

/// A BMP's embedded ICC profile.
pub fn read_bmp(reader: &mut dyn crate::codec::source::Seekable) -> FromFile {
    FromFile {
        icc: bmp::read_icc(&mut ifd::Reader(reader)),
        ..FromFile::default()
    }
}

/// A JPEG's IPTC-IIM records.
pub fn read_jpeg(reader: &mut dyn crate::codec::source::Seekable) -> FromFile {
    FromFile {
        iptc: containers::jpeg_iptc(&mut ifd::Reader(reader)),
        ..FromFile::default()
    }
}

/// A JPEG with `blobs` in its APP segments after the JFIF one.
pub fn into_jpeg(bytes: Vec<u8>, blobs: Blobs, notes: &mut Vec<String>) -> Result<Vec<u8>, String> {
    containers::jpeg(bytes, blobs, notes)
}

/// A PNG with `blobs`' EXIF and XMP in chunks before its pixels.
pub fn into_png(bytes: Vec<u8>, blobs: Blobs) -> Result<Vec<u8>, String> {
    match (blobs.exif, blobs.xmp) {
        (None, None) => Ok(bytes),
        (exif, xmp) => containers::png(bytes, exif, xmp),
    }
}

/// A WebP with `blobs`' EXIF and XMP in their chunks.
pub fn into_webp(bytes: Vec<u8>, blobs: Blobs) -> Result<Vec<u8>, String> {
    match (blobs.exif, blobs.xmp) {
        (None, None) => Ok(bytes),
        (exif, xmp) => containers::webp(bytes, None, exif, xmp),
    }
}

/// A TIFF with `blobs` in its first directory.
pub fn into_tiff(bytes: Vec<u8>, blobs: Blobs, notes: &mut Vec<String>) -> Result<Vec<u8>, String> {
    tiff::merge(bytes, blobs, notes)
}

/// EXIF and XMP adjusted to the pixels written, `size` (width, height): orientation 1 (the
/// decoder has turned the pixels already), the pixel dimensions of the output, and no EXIF
/// thumbnail (`Metadata::read` dropped the input's; this holds for metadata made otherwise).
fn for_output(meta: &Metadata, (w, h): (u32, u32)) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
    let exif = meta.exif.clone().map(|mut b| {
        without_thumbnail(&mut b);
        if let Some((order, first)) = ifd::header(&b) {
            ifd::patch_number(&mut b, order, first, ifd::ORIENTATION, 1);
            if let Some(sub) = ifd::pointer(&b, order, first, ifd::EXIF_IFD) {
                ifd::patch_number(&mut b, order, sub, ifd::PIXEL_X_DIMENSION, w);
                ifd::patch_number(&mut b, order, sub, ifd::PIXEL_Y_DIMENSION, h);
            }
        }
        b
    });
    let xmp = meta.xmp.as_deref().map(|x| xmp::for_output(x, (w, h)));
    (exif, xmp)
}

impl Metadata {
    /// Says in the EXIF, where there is one, that the pixels are sRGB (ColorSpace 1), once
    /// they were converted to it: a camera's Adobe RGB mode writes 0xFFFF (uncalibrated),
    /// which readers that follow DCF take for Adobe RGB where no profile says otherwise.
    pub fn exif_in_srgb(&mut self) {
        let Some(b) = self.exif.as_mut() else {
            return;
        };
        if let Some((order, first)) = ifd::header(b) {
            if let Some(sub) = ifd::pointer(b, order, first, ifd::EXIF_IFD) {
                ifd::patch_number(b, order, sub, ifd::COLOR_SPACE, 1);
            }
        }
    }
}

/// `meta`'s EXIF, XMP and IPTC as an output of some size holds them: EXIF and XMP adjusted
/// (`for_output`), IPTC as it is; `blobs` lends them.
pub struct ForOutput<'a> {
    exif: Option<Vec<u8>>,
    xmp: Option<Vec<u8>>,
    iptc: Option<&'a [u8]>,
}

impl<'a> ForOutput<'a> {
    pub fn of(meta: &'a Metadata, size: (u32, u32)) -> ForOutput<'a> {
        let (exif, xmp) = for_output(meta, size);
        ForOutput {
            exif,
            xmp,
            iptc: meta.iptc.as_deref(),
        }
    }

    pub fn blobs(&self) -> Blobs<'_> {
        Blobs {
            exif: self.exif.as_deref(),
            xmp: self.xmp.as_deref(),
            iptc: self.iptc,
        }
    }
}

/// `meta`'s EXIF and XMP as PNG chunks (type, data) for an image of `size`, adjusted to the
/// output as `embed` adjusts them: what a PNG written row by row puts before its pixels.
pub fn png_chunks(meta: &Metadata, size: (u32, u32)) -> Vec<([u8; 4], Vec<u8>)> {
    let (exif, xmp) = for_output(meta, size);
    containers::png_chunks(exif.as_deref(), xmp.as_deref())
}

/// Adds `meta`'s EXIF, XMP and IPTC to `bytes`, an image of `size` (width, height) already
/// encoded as `format` by `codec::encode` (which wrote the pixels and the ICC profile), where
/// the format can hold them; notes say what it could not hold. `path` is what errors call the
/// output.
pub fn embed(
    bytes: Vec<u8>,
    format: ImageFormat,
    meta: &Metadata,
    size: (u32, u32),
    path: &Path,
) -> Result<(Vec<u8>, Vec<String>), ImageIoError> {
    let mut notes = Vec::new();
    if !meta.has_blobs() {
        return Ok((bytes, notes));
    }
    let adjusted = ForOutput::of(meta, size);
    let blobs = adjusted.blobs();
    let codec = crate::codec::of(format);
    if !codec.holds_metadata() {
        let what: Vec<_> = [
            (blobs.exif.is_some(), "EXIF"),
            (blobs.xmp.is_some(), "XMP"),
            (blobs.iptc.is_some(), "IPTC"),
        ]
        .into_iter()
        .filter_map(|(held, name)| held.then_some(name))
        .collect();
        notes.push(format!(
            "{format:?} cannot carry the input's {}; it was not written",
            what.join(" or ")
        ));
        return Ok((bytes, notes));
    }
    notes.extend(meta.iptc_lost(format));
    let bytes = codec
        .write_metadata(bytes, blobs, &mut notes)
        .map_err(|detail| ImageIoError::Encode {
            path: path.into(),
            format: format!("{format:?}"),
            detail,
        })?;
    Ok((bytes, notes))
}

/// `bytes`, a WebP file, with `icc` in an `ICCP` chunk (for an encoder that writes none).
pub fn webp_icc(bytes: Vec<u8>, icc: &[u8]) -> Result<Vec<u8>, String> {
    containers::webp(bytes, Some(icc), None, None)
}

/// Adds each page's EXIF, XMP and IPTC to `bytes`, a TIFF of as many pages as `pages` (each
/// page's metadata and size) encoded by `tiff::encode_pages`; notes say what could not be
/// written, once each.
pub fn embed_pages(
    mut bytes: Vec<u8>,
    pages: &[(&Metadata, (u32, u32))],
    path: &Path,
) -> Result<(Vec<u8>, Vec<String>), ImageIoError> {
    let mut notes = Vec::new();
    for (page, &(meta, size)) in pages.iter().enumerate() {
        if !meta.has_blobs() {
            continue;
        }
        let adjusted = ForOutput::of(meta, size);
        bytes = tiff::merge_page(bytes, page, adjusted.blobs(), &mut notes).map_err(|detail| {
            ImageIoError::Encode {
                path: path.into(),
                format: "Tiff".into(),
                detail,
            }
        })?;
    }
    notes.dedup();
    Ok((bytes, notes))
}

/// Runs every metadata parser over `bytes` as if they were each kind of input gblur reads:
/// an EXIF blob (bare and with JPEG's prefix), an XMP packet, a TIFF, PNG and BMP file's
/// container, and an encoded file to embed metadata into. None of them may panic, whatever
/// the bytes (the `metadata` fuzz target and the property test below).
#[doc(hidden)]
#[cfg(any(test, feature = "unstable-internals"))]
pub fn parse_all(bytes: &[u8]) {
    let exif = normalise_exif(bytes.to_vec());
    let prefixed = normalise_exif([b"Exif\0\0".as_slice(), bytes].concat());
    let _ = exif_orientation(bytes);
    for mut blob in [exif.clone(), prefixed.clone(), Some(bytes.to_vec())]
        .into_iter()
        .flatten()
    {
        without_thumbnail(&mut blob);
    }
    let _ = xmp::orientation(bytes);
    let _ = xmp::for_output(bytes, (3, 5));
    let mut from = Vec::new();
    for format in [ImageFormat::Tiff, ImageFormat::Png, ImageFormat::Bmp] {
        from.push(crate::codec::of(format).read_metadata(&mut std::io::Cursor::new(bytes)));
    }
    let meta = Metadata {
        exif: exif.or(prefixed),
        xmp: Some(bytes.to_vec()),
        iptc: Some(bytes.to_vec()),
        ..Metadata::default()
    };
    let _ = containers::jpeg_iptc(&mut ifd::Reader(&mut std::io::Cursor::new(bytes)));
    let _ = for_output(&meta, (7, 9));
    let path = Path::new("fuzz");
    for format in [
        ImageFormat::Jpeg,
        ImageFormat::Png,
        ImageFormat::WebP,
        ImageFormat::Tiff,
    ] {
        let _ = embed(bytes.to_vec(), format, &meta, (2, 2), path);
    }
    if let Some(exif) = from.into_iter().find_map(|f| f.exif) {
        let blobs = Blobs {
            exif: Some(&exif),
            ..Blobs::default()
        };
        let _ = tiff::merge(bytes.to_vec(), blobs, &mut Vec::new());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Starts that lead the parsers past their first check: TIFF headers (classic and
    /// BigTIFF, both byte orders), JPEG's EXIF prefix, a JPEG's APP13 of Photoshop resources,
    /// PNG's and BMP's signatures.
    const STARTS: [&[u8]; 9] = [
        b"\xFF\xD8\xFF\xED\x00\x40Photoshop 3.0\x008BIM\x04\x04",
        b"II*\0",
        b"MM\0*",
        b"II+\0\x08\0\0\0",
        b"MM\0+\0\x08\0\0",
        b"Exif\0\0II*\0",
        b"\x89PNG\r\n\x1a\n",
        b"BM",
        b"",
    ];

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]
        /// Arbitrary bytes behind each start never panic a parser (a short EXIF block once
        /// did: seven bytes after `Exif\0\0`).
        #[test]
        fn no_parser_panics_on_arbitrary_bytes(
            start in 0usize..STARTS.len(),
            tail in prop::collection::vec(any::<u8>(), 0..96),
            small in prop::collection::vec(0u8..12, 0..64),
        ) {
            let mut bytes = STARTS[start].to_vec();
            bytes.extend_from_slice(&tail);
            parse_all(&bytes);
            // Small numbers make offsets and counts that point inside the blob.
            let mut near = STARTS[start].to_vec();
            near.extend_from_slice(&small);
            parse_all(&near);
        }
    }

    #[test]
    fn a_short_exif_block_is_left_out_not_a_panic() {
        // Up to a whole 8-byte TIFF header, whose first directory lies past the end.
        for len in 0..=8 {
            let blob = b"Exif\0\0II*\0\x08\0\0\0"[..6 + len].to_vec();
            assert_eq!(normalise_exif(blob.clone()), None, "{len} bytes");
            parse_all(&blob);
        }
    }
}
