//! The HEIF family's `Codec` (HEIC and AVIF, through libheif): decoded from the file's bytes,
//! written as AVIF or HEIC by the output's name, with the EXIF and XMP the encoder itself
//! writes.

use super::{Coding, HEIF, NAME};
use crate::codec::format::{Codec, FileToDecode, ImageToEncode};
use crate::codec::{DecodedFile, ImageIoError};
use image::{ColorType, ImageFormat};

/// HEIC and AVIF.
pub struct Heif;

impl Codec for Heif {
    fn format(&self) -> ImageFormat {
        HEIF
    }

    fn name(&self) -> String {
        NAME.into()
    }

    fn decodes_bytes(&self) -> bool {
        true
    }

    fn decode(&self, file: FileToDecode<'_>) -> Result<DecodedFile, ImageIoError> {
        let bytes = file
            .bytes
            .expect("a codec that decodes bytes is handed them");
        let (image, meta, notes) = super::decode(file.path, bytes, file.max_memory_mib)?;
        Ok(DecodedFile {
            notes,
            ..DecodedFile::new(image, HEIF, meta)
        })
    }

    fn writable(&self) -> &'static [ColorType] {
        &[ColorType::Rgb8, ColorType::Rgba8]
    }

    /// Where libheif loads with an AV1 encoder.
    fn can_write(&self) -> bool {
        super::avif_encoder().is_ok()
    }

    fn gray_as_colour(&self) -> bool {
        true
    }

    fn encode(&self, e: ImageToEncode<'_>) -> Result<(Vec<u8>, Option<String>), String> {
        let coding = Coding::for_path(e.path);
        let quality = e.options.avif_quality();
        super::encode(e.image, coding, quality, e.icc, e.blobs).map(|bytes| (bytes, None))
    }

    fn holds_metadata(&self) -> bool {
        true
    }

    /// libheif writes the EXIF and XMP with the image; nothing is added after.
    fn encoder_writes_metadata(&self) -> bool {
        true
    }
}
