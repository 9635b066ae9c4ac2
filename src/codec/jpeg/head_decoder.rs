//! A JPEG's header through the `image` crate's decoder interface, so that a JPEG's size, colour
//! type and metadata flow through the same checks as every other format's (`open_decoder`,
//! `Metadata::read`, the strip engine's `rows::read`) with libjpeg as the only JPEG library:
//! the frame header, the ICC profile (its APP2 chunks put in order), the EXIF and the XMP are
//! read from the header segments (`libjpeg::header_segments`); the pixels, where the
//! interface asks for them, come from libjpeg (`decode_pixels`).

use super::decode::decode_pixels;
use super::header::{is_frame, segments, Frame};
use image::error::{DecodingError, ImageFormatHint, UnsupportedError, UnsupportedErrorKind};
use image::{ColorType, ImageDecoder, ImageError, ImageFormat, ImageResult};

/// The prefix of an APP1 segment holding EXIF.
const EXIF: &[u8] = b"Exif\0\0";
/// The prefix of an APP1 segment holding XMP.
const XMP: &[u8] = b"http://ns.adobe.com/xap/1.0/\0";
/// The prefix of an APP2 segment holding a chunk of an ICC profile.
const ICC: &[u8] = b"ICC_PROFILE\0";

/// What a JPEG's header segments say, read once.
pub struct JpegHead {
    head: Vec<u8>,
    frame: Frame,
    icc: Option<Vec<u8>>,
    exif: Option<Vec<u8>>,
    xmp: Option<Vec<u8>>,
}

/// Whether gblur decodes the frame `frame` of `head`: an error for a lossless or hierarchical
/// process, a precision other than 8 bits, or other than 1, 3 or 4 components.
fn decoded_here(head: &[u8], frame: &Frame) -> ImageResult<()> {
    let process = segments(head)
        .map(|(marker, _)| marker)
        .find(|m| is_frame(*m));
    match process {
        // Baseline, extended and progressive DCT, Huffman or arithmetic coded.
        Some(0xC0..=0xC2 | 0xC9 | 0xCA) => {}
        Some(marker) => {
            return Err(unsupported(format!(
                "a JPEG of the lossless or hierarchical process (SOF{}), which gblur does not read",
                marker - 0xC0
            )))
        }
        None => {
            return Err(decoding(
                "no frame header (SOF) before the first scan".into(),
            ))
        }
    }
    if frame.precision != 8 {
        return Err(unsupported(format!(
            "a JPEG of {}-bit samples; gblur reads 8-bit JPEG",
            frame.precision
        )));
    }
    if !matches!(frame.components, 1 | 3 | 4) {
        return Err(unsupported(format!(
            "a JPEG of {} components; gblur reads gray, colour (3) and CMYK (4)",
            frame.components
        )));
    }
    Ok(())
}

impl JpegHead {
    /// Reads `head`, a JPEG's segments up to its first scan header. An error for a header
    /// without a frame, and for a frame gblur does not decode: a lossless or hierarchical
    /// process, a precision other than 8 bits (libjpeg is built for 8-bit samples), or other
    /// than 1, 3 or 4 components.
    pub fn read(head: Vec<u8>) -> ImageResult<JpegHead> {
        let frame = Frame::read(&mut std::io::Cursor::new(&head))
            .ok_or_else(|| decoding("no frame header (SOF) before the first scan".to_string()))?;
        decoded_here(&head, &frame)?;
        let mut chunks: Vec<(u8, u8, &[u8])> = Vec::new();
        let (mut exif, mut xmp) = (None, None);
        for (marker, body) in segments(&head) {
            match marker {
                0xE1 => {
                    // A later segment of the same kind replaces an earlier one, as most readers do.
                    if let Some(e) = body.strip_prefix(EXIF) {
                        exif = Some(e.to_vec());
                    } else if let Some(x) = body.strip_prefix(XMP) {
                        xmp = Some(x.to_vec());
                    }
                }
                0xE2 => {
                    if let Some(&[seq, count, ref data @ ..]) = body.strip_prefix(ICC) {
                        chunks.push((seq, count, data));
                    }
                }
                _ => {}
            }
        }
        let icc = icc_profile(&chunks);
        Ok(JpegHead {
            head,
            frame,
            icc,
            exif,
            xmp,
        })
    }

    /// Reads the head of a whole file.
    #[cfg(test)]
    pub fn of_file(bytes: &[u8]) -> ImageResult<JpegHead> {
        JpegHead::read(super::libjpeg::header_segments(&mut &bytes[..])?)
    }
}

/// The ICC profile from its chunks (sequence number from 1, count, data): None unless every
/// chunk names the same count, which is how many there are, and each number from 1 to it
/// comes once. A profile with a chunk missing or doubled is not a profile to trust.
fn icc_profile(chunks: &[(u8, u8, &[u8])]) -> Option<Vec<u8>> {
    let count = chunks.len();
    if count == 0 || chunks.iter().any(|&(_, n, _)| n as usize != count) {
        return None;
    }
    let mut ordered: Vec<Option<&[u8]>> = vec![None; count];
    for &(seq, _, data) in chunks {
        let slot = ordered.get_mut((seq as usize).checked_sub(1)?)?;
        if slot.replace(data).is_some() {
            return None;
        }
    }
    ordered
        .into_iter()
        .collect::<Option<Vec<_>>>()
        .map(|parts| parts.concat())
}

fn decoding(detail: String) -> ImageError {
    ImageError::Decoding(DecodingError::new(
        ImageFormatHint::Exact(ImageFormat::Jpeg),
        detail,
    ))
}

fn unsupported(detail: String) -> ImageError {
    ImageError::Unsupported(UnsupportedError::from_format_and_kind(
        ImageFormatHint::Exact(ImageFormat::Jpeg),
        UnsupportedErrorKind::GenericFeature(detail),
    ))
}

impl ImageDecoder for JpegHead {
    fn dimensions(&self) -> (u32, u32) {
        (self.frame.width, self.frame.height)
    }

    /// Gray for one component; RGB for three (YCbCr or RGB) and four (CMYK and YCCK, which
    /// gblur converts to RGB).
    fn color_type(&self) -> ColorType {
        match self.frame.components {
            1 => ColorType::L8,
            _ => ColorType::Rgb8,
        }
    }

    fn icc_profile(&mut self) -> ImageResult<Option<Vec<u8>>> {
        Ok(self.icc.clone())
    }

    fn exif_metadata(&mut self) -> ImageResult<Option<Vec<u8>>> {
        Ok(self.exif.clone())
    }

    fn xmp_metadata(&mut self) -> ImageResult<Option<Vec<u8>>> {
        Ok(self.xmp.clone())
    }

    /// The pixels of a gray or colour file whose head this is, followed by its scan: the
    /// header alone holds none, so this is for a decoder made from a whole file.
    fn read_image(self, buf: &mut [u8]) -> ImageResult<()> {
        if self.frame.components == 4 {
            return Err(unsupported(
                "CMYK pixels through the decoder interface (gblur reads CMYK JPEG itself)".into(),
            ));
        }
        let image = decode_pixels(&self.head, u64::MAX)
            .map_err(decoding)?
            .ok_or_else(|| decoding("libjpeg does not take this file".into()))?;
        if image.as_bytes().len() != buf.len() {
            return Err(decoding(
                "libjpeg reads another size than its header".into(),
            ));
        }
        buf.copy_from_slice(image.as_bytes());
        Ok(())
    }

    fn read_image_boxed(self: Box<Self>, buf: &mut [u8]) -> ImageResult<()> {
        (*self).read_image(buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segment(marker: u8, body: &[u8]) -> Vec<u8> {
        let mut s = vec![0xFF, marker];
        s.extend_from_slice(&((body.len() + 2) as u16).to_be_bytes());
        s.extend_from_slice(body);
        s
    }

    /// A head: SOI, the given segments, a 3-component 8-bit frame of 40 × 30.
    fn head(segments: &[Vec<u8>]) -> Vec<u8> {
        let mut h = vec![0xFF, 0xD8];
        for s in segments {
            h.extend_from_slice(s);
        }
        h.extend(segment(
            0xC0,
            &[8, 0, 30, 0, 40, 3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1],
        ));
        h
    }

    fn icc_chunk(seq: u8, count: u8, data: &[u8]) -> Vec<u8> {
        segment(0xE2, &[ICC, &[seq, count], data].concat())
    }

    #[test]
    fn reads_the_frame_exif_xmp_and_the_icc_chunks_in_order() {
        let h = head(&[
            segment(0xE0, b"JFIF\0\x01\x01\0\0\x01\0\x01\0\0"),
            segment(0xE1, &[EXIF, b"first"].concat()),
            segment(0xE1, &[XMP, b"<x/>"].concat()),
            icc_chunk(2, 2, b"world"),
            segment(0xE1, &[EXIF, b"II*\0"].concat()),
            icc_chunk(1, 2, b"hello "),
        ]);
        let mut d = JpegHead::read(h).unwrap();
        assert_eq!(d.dimensions(), (40, 30));
        assert_eq!(d.color_type(), ColorType::Rgb8);
        assert_eq!(
            d.icc_profile().unwrap().as_deref(),
            Some(&b"hello world"[..])
        );
        assert_eq!(d.exif_metadata().unwrap().as_deref(), Some(&b"II*\0"[..]));
        assert_eq!(d.xmp_metadata().unwrap().as_deref(), Some(&b"<x/>"[..]));
    }

    #[test]
    fn an_icc_profile_with_a_chunk_missing_or_doubled_is_none() {
        for chunks in [
            vec![icc_chunk(1, 2, b"a")],
            vec![icc_chunk(1, 2, b"a"), icc_chunk(1, 2, b"b")],
            vec![icc_chunk(0, 1, b"a")],
            vec![icc_chunk(1, 1, b"a"), icc_chunk(2, 2, b"b")],
        ] {
            let mut d = JpegHead::read(head(&chunks)).unwrap();
            assert_eq!(d.icc_profile().unwrap(), None, "{chunks:?}");
        }
    }

    #[test]
    fn a_frame_gblur_does_not_decode_is_refused_by_name() {
        let mut twelve = head(&[]);
        let sof = twelve.windows(2).position(|w| w == [0xFF, 0xC0]).unwrap();
        twelve[sof + 4] = 12;
        let e = JpegHead::read(twelve).err().unwrap().to_string();
        assert!(e.contains("12-bit"), "{e}");
        let mut two = head(&[]);
        two[sof + 9] = 2;
        let e = JpegHead::read(two).err().unwrap().to_string();
        assert!(e.contains("2 components"), "{e}");
        let e = JpegHead::read(vec![0xFF, 0xD8, 0xFF, 0xDA, 0, 2])
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("no frame header"), "{e}");
        let mut lossless = head(&[]);
        lossless[sof + 1] = 0xC3;
        let e = JpegHead::read(lossless).err().unwrap().to_string();
        assert!(e.contains("lossless or hierarchical process (SOF3)"), "{e}");
        let mut arithmetic = head(&[]);
        arithmetic[sof + 1] = 0xC9;
        assert!(
            JpegHead::read(arithmetic).is_ok(),
            "libjpeg decodes arithmetic coding"
        );
    }
}
