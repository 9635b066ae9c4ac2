//! JPEG XL's `Codec`: decoded from the file's bytes by jxl-oxide (with the `jxl` feature;
//! without it, refused in one line that says how to build a gblur that reads it); not written.

use super::{JXL, NAME};
use crate::codec::format::{Codec, FileToDecode};
use crate::codec::{DecodedFile, ImageIoError};
use image::ImageFormat;

/// JPEG XL, decoded by jxl-oxide (with the `jxl` feature); not written.
pub struct Jxl;

impl Codec for Jxl {
    fn format(&self) -> ImageFormat {
        JXL
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
        let (image, meta, gray_float, notes) =
            super::decode(file.path, bytes, file.max_memory_mib)?;
        Ok(DecodedFile {
            gray_float,
            notes,
            ..DecodedFile::new(image, JXL, meta)
        })
    }
}
