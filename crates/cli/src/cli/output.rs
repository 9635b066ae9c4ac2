//! What OUTPUT and `--format` say of the format an output is written in: an extension's name,
//! or a `FORMAT:` prefix (ImageMagick's `png:-`).

use std::path::PathBuf;

/// An output format by its extension name (png, jpg, jpeg, tif, tiff, webp, ...), one gblur
/// writes.
pub(super) fn parse_format(s: &str) -> Result<image::ImageFormat, String> {
    if gblur::command::formats::is_heic_name(s) {
        // HEIC and AVIF are one format to the encoders' table; the output's name picks HEVC.
        return Err(format!("'{s}': HEIC is written where the output file is named .heic (a batch keeps a HEIC input's name without --format); --format names avif for HEIF coded with AV1"));
    }
    image::ImageFormat::from_extension(s)
        .filter(|f| gblur::command::formats::can_write(*f))
        .ok_or_else(|| match gblur::command::formats::unwritten_name(s) {
            Some(why) => format!("'{s}': {why}"),
            None => format!("'{s}' is not a format gblur writes (png, jpg, tif, webp, avif, bmp, tga, gif, qoi, exr, hdr)"),
        })
}

/// `FORMAT:REST` (ImageMagick's `png:-`) split into the format and the path, when the part
/// before the first colon names a format gblur writes; None where it names no format (a path
/// with a colon); Err where it names one gblur reads but does not write.
pub(super) fn split_prefix(
    output: &std::path::Path,
) -> Result<Option<(image::ImageFormat, PathBuf)>, String> {
    let Some((prefix, rest)) = output.to_str().and_then(|o| o.split_once(':')) else {
        return Ok(None);
    };
    if rest.is_empty() {
        return Ok(None);
    }
    match parse_format(prefix) {
        Ok(format) => Ok(Some((format, PathBuf::from(rest)))),
        Err(why)
            if gblur::command::formats::unwritten_name(prefix).is_some()
                || gblur::command::formats::is_heic_name(prefix) =>
        {
            Err(format!("OUTPUT {}: {why}", output.display()))
        }
        Err(_) => Ok(None),
    }
}
