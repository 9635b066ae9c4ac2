//! JPEG XL, read through jxl-oxide (pure Rust, so the build needs no system library; the `jxl`
//! feature, off by default: a tenth of the build): 8-bit
//! files as 8-bit, deeper integer samples as 16-bit, float samples as 32-bit float (gray float
//! held as RGB, as a gray float TIFF is), with alpha, turned upright, the first frame of an
//! animation. Colour is rendered in the file's own colour space; its ICC profile is the one
//! the file carries, or, for a colour space the file names (Display P3, Rec. 2020, linear
//! sRGB, ...), one jxl-oxide writes for it, so that nothing is taken as sRGB that is not.
//! CMYK files are converted to sRGB through their profile (moxcms). EXIF and XMP are kept.
//!
//! The `image` crate has no JPEG XL format; gblur carries JPEG XL inputs under a variant of
//! `ImageFormat` that it neither reads nor writes otherwise (`JXL`), and names it JPEG XL
//! in every report (`codec::format_name`).

use image::ImageFormat;

mod codec;
#[cfg(feature = "jxl")]
mod oxide;

pub use codec::Jxl;
#[cfg(feature = "jxl")]
pub use oxide::decode;

/// The format a JPEG XL input is carried as: one whose own files gblur does not read
/// (`read::guess` never names it for them).
pub const JXL: ImageFormat = ImageFormat::Farbfeld;

/// What reports call it.
pub const NAME: &str = "JPEG XL";

/// A bare codestream's signature, and the container's first box (`JXL `).
const CODESTREAM: [u8; 2] = [0xFF, 0x0A];
const CONTAINER: [u8; 12] = [
    0, 0, 0, 12, b'J', b'X', b'L', b' ', b'\r', b'\n', 0x87, b'\n',
];

/// Whether `head` starts a JPEG XL file, bare codestream or container.
pub fn is_jxl(head: &[u8]) -> bool {
    head.starts_with(&CODESTREAM) || head.starts_with(&CONTAINER)
}

/// Without the `jxl` feature a JPEG XL input is recognised and refused in one line that says
/// how to build a gblur that reads it.
#[cfg(not(feature = "jxl"))]
pub fn decode(
    path: &std::path::Path,
    _bytes: &[u8],
    _max_memory_mib: u64,
) -> Result<
    (
        image::DynamicImage,
        super::metadata::Metadata,
        bool,
        Vec<String>,
    ),
    super::ImageIoError,
> {
    Err(not_built(path))
}

/// The error for a JPEG XL input to a gblur built without the `jxl` feature.
#[cfg(any(test, not(feature = "jxl")))]
pub fn not_built(path: &std::path::Path) -> super::ImageIoError {
    super::ImageIoError::NeedsLibrary {
        path: path.into(),
        detail: MISSING.into(),
    }
}

/// What a gblur built without the `jxl` feature says of a JPEG XL input.
pub const MISSING: &str =
    "a JPEG XL file, and this gblur was built without JPEG XL input (build it with `--features jxl`)";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_signatures_are_recognised_and_others_are_not() {
        assert!(is_jxl(&[0xFF, 0x0A, 0xFA]));
        assert!(is_jxl(&CONTAINER));
        assert!(!is_jxl(&[0xFF, 0xD8, 0xFF]));
        assert!(!is_jxl(b"farbfeld"));
    }

    #[test]
    fn a_build_without_the_decoder_names_the_file_and_the_feature_in_one_line() {
        let said = not_built(std::path::Path::new("dir/photo.jxl")).to_string();
        assert!(said.starts_with("dir/photo.jxl: a JPEG XL file"), "{said}");
        assert!(
            said.contains("--features jxl") && !said.contains('\n'),
            "{said}"
        );
    }
}
