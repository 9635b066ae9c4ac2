//! What this build reads and writes, format by format, as `gblur formats` prints it: the
//! written sample types come from the encoders' own table (`writable`), the metadata from the
//! formats whose codecs hold it (`Codec::holds_metadata`), HEIF from whether libheif loads.

use super::{can_write, format_name, heif, jpeg, jxl, of, webp, writable};
use image::{ColorType, ImageFormat};
use serde::Serialize;

/// One format's row.
#[derive(Clone, Debug, Serialize)]
pub struct FormatSupport {
    pub format: String,
    pub extensions: Vec<String>,
    /// Whether this build reads it here and now (HEIF: whether libheif loads).
    pub reads: bool,
    /// What is read, or why it is not.
    pub read: String,
    /// The sample types written, empty where gblur does not write the format.
    pub writes: Vec<String>,
    /// The metadata kinds written into it, where the input has them.
    pub metadata: Vec<String>,
}

/// The TIFF compressions this build reads.
fn compressions() -> &'static str {
    match cfg!(feature = "zstd") {
        true => "none, LZW, Deflate, PackBits, CCITT, JPEG and Zstandard",
        false => "none, LZW, Deflate, PackBits, CCITT and JPEG (not Zstandard: built without the zstd feature)",
    }
}

/// Nothing where libheif has the encoder for `coding`, else why not.
fn written_note(coding: heif::Coding) -> String {
    heif::encoder(coding)
        .err()
        .map_or_else(String::new, |why| format!(", not here: {why}"))
}

/// Whether libjpeg, which decodes and encodes every JPEG, has its SIMD code here.
fn libjpeg_note() -> &'static str {
    match jpeg::libjpeg::has_simd() {
        true => "libjpeg with its SIMD code",
        false => "libjpeg in plain C, without its SIMD code: built without nasm (install nasm, then cargo clean -p mozjpeg-sys and build again)",
    }
}

/// How HEVC is decoded: on every core through gblur's libde265 plugin, else why on one.
fn hevc_note() -> String {
    match heif::threaded_hevc() {
        Ok(v) => format!("HEVC on every core, libde265 {v}"),
        Err(why) => format!("HEVC on one core: {why}"),
    }
}

/// Every format gblur recognises, in the order the table lists them.
pub fn formats() -> Vec<FormatSupport> {
    let heif = heif::version();
    let rows: [(ImageFormat, &[&str], String); 14] = [
        (ImageFormat::Jpeg, &["jpg", "jpeg"], format!("8-bit gray and colour (YCbCr); CMYK and YCCK kept as CMYK into JPEG and TIFF, converted to sRGB through their ICC profile (by formula without one) for other outputs; {}", libjpeg_note())),
        (ImageFormat::Png, &["png"], "1- to 16-bit gray, colour and palette, with alpha".into()),
        (ImageFormat::Tiff, &["tif", "tiff"], format!("8- and 16-bit gray and colour, 32-bit float gray and colour, with alpha; strips or tiles; classic and BigTIFF; {}; 8- and 16-bit CMYK kept as CMYK into TIFF and JPEG, converted to sRGB through its ICC profile (by formula without one) for other outputs; every page (--page N takes one, --sigma-z blurs a stack as a volume). Not: palette, signed, YCbCr, white-is-zero float", compressions())),
        (ImageFormat::WebP, &["webp"], match webp::version() {
            Ok(v) => format!("lossy and lossless, with alpha (written lossless, or lossy with --quality N through libwebp {v})"),
            Err(why) => format!("lossy and lossless, with alpha (written lossless; lossy with --quality N not here: {why})"),
        }),
        (heif::HEIF, &["heic", "heif", "avif"], match &heif {
            Ok(v) => format!("HEIC and AVIF through libheif {v} ({}): 8-bit, and 10- and 12-bit as 16-bit; the primary image, turned upright. Written as AVIF (.avif: libheif's AV1 encoder{}) and HEIC (.heic: its HEVC encoder{}), 8-bit (a 16-bit image into HEIC: 10-bit), --quality N (default {})", hevc_note(), written_note(heif::Coding::Av1), written_note(heif::Coding::Hevc), heif::DEFAULT_QUALITY),
            Err(why) => why.clone(),
        }),
        (jxl::JXL, &["jxl"], match cfg!(feature = "jxl") {
            true => "8-bit, deeper integer samples as 16-bit, float as 32-bit float; gray and colour, with alpha; turned upright; the first frame of an animation; CMYK converted to sRGB through its ICC profile (jxl-oxide). Not written".into(),
            false => format!("not in this build: {}", jxl::MISSING),
        }),
        (ImageFormat::Bmp, &["bmp"], "1- to 32-bit, with its ICC profile".into()),
        (ImageFormat::Gif, &["gif"], "the first frame".into()),
        (ImageFormat::Ico, &["ico"], "the largest image, its alpha mask kept".into()),
        (ImageFormat::Pnm, &["pbm", "pgm", "ppm", "pam"], "8- and 16-bit".into()),
        (ImageFormat::Tga, &["tga"], "8-bit, recognised by its extension".into()),
        (ImageFormat::Qoi, &["qoi"], "8-bit colour, with alpha".into()),
        (ImageFormat::OpenExr, &["exr"], "32-bit float colour, with alpha".into()),
        (ImageFormat::Hdr, &["hdr"], "Radiance RGBE as 32-bit float".into()),
    ];
    rows.into_iter()
        .map(|(format, extensions, read)| FormatSupport {
            format: format_name(format),
            extensions: extensions.iter().map(|e| e.to_string()).collect(),
            reads: match format {
                heif::HEIF => heif.is_ok(),
                jxl::JXL => cfg!(feature = "jxl"),
                _ => true,
            },
            read,
            writes: written(format),
            metadata: match of(format).holds_metadata() && can_write(format) {
                true => ["ICC", "EXIF", "XMP"].map(String::from).to_vec(),
                false => Vec::new(),
            },
        })
        .collect()
}

/// The sample types `format` is written in here, as the table names them; TIFF also writes
/// gray float, which has no colour type of its own (`codec::DecodedFile::gray_float`).
fn written(format: ImageFormat) -> Vec<String> {
    if !can_write(format) {
        return Vec::new();
    }
    let mut names: Vec<String> = writable(format).iter().map(|c| sample_name(*c)).collect();
    if of(format).holds_gray_float() {
        names.extend(["gray 32f".into(), "gray+alpha 32f".into()]);
    }
    // From a CMYK input, whose inks are kept (`job::inks`); a 16-bit image into HEIC.
    match format {
        ImageFormat::Jpeg => names.push("CMYK 8".into()),
        ImageFormat::Tiff => names.push("CMYK 8/16".into()),
        heif::HEIF if heif::encoder(heif::Coding::Hevc).is_ok() => {
            names.extend(["RGB 10".into(), "RGBA 10".into()]);
        }
        _ => {}
    }
    names
}

/// A sample type as the table names it: channels and bits.
fn sample_name(c: ColorType) -> String {
    let channels = match (c.has_color(), c.has_alpha()) {
        (false, false) => "gray",
        (false, true) => "gray+alpha",
        (true, false) => "RGB",
        (true, true) => "RGBA",
    };
    let bits = match c {
        ColorType::Rgb32F | ColorType::Rgba32F => "32f".to_string(),
        c => (8 * c.bytes_per_pixel() / c.channel_count()).to_string(),
    };
    format!("{channels} {bits}")
}

/// The table as text: one line a format, then what each reads.
pub fn table(rows: &[FormatSupport]) -> String {
    let writes = |r: &FormatSupport| match r.writes.is_empty() {
        true => "-".to_string(),
        false => compact(&r.writes),
    };
    // The widest "written as", and room after it.
    let width = rows
        .iter()
        .map(|r| writes(r).chars().count())
        .max()
        .unwrap_or(0)
        + 3;
    let line = |cells: [&str; 5]| {
        format!(
            "{:<8}{:<17}{:<5}{:<width$}{}\n",
            cells[0], cells[1], cells[2], cells[3], cells[4]
        )
    };
    let mut out = line([
        "format",
        "extensions",
        "read",
        "written as",
        "metadata written",
    ]);
    for r in rows {
        let writes = writes(r);
        let metadata = match r.metadata.is_empty() {
            true => "-".to_string(),
            false => r.metadata.join(", "),
        };
        let reads = if r.reads { "yes" } else { "no" };
        out += &line([
            &r.format,
            &r.extensions.join(" "),
            reads,
            &writes,
            &metadata,
        ]);
    }
    out += "\nwhat is read\n";
    for r in rows {
        out += &format!("{:<8}{}\n", r.format, r.read);
    }
    out
}

/// Sample types grouped by their channels: `gray, RGB 8/16` for four types.
fn compact(types: &[String]) -> String {
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for t in types {
        let (channels, bits) = t.rsplit_once(' ').unwrap_or((t, ""));
        match groups.iter_mut().find(|(c, _)| c == channels) {
            Some((_, b)) => b.push(bits.into()),
            None => groups.push((channels.into(), vec![bits.into()])),
        }
    }
    groups
        .into_iter()
        .map(|(c, b)| format!("{c} {}", b.join("/")))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::metadata::{embed, Metadata};
    use std::path::Path;

    #[test]
    fn the_metadata_column_is_what_embed_writes() {
        let meta = Metadata {
            exif: Some(b"MM\0*\0\0\0\x08\0\0\0\0\0\0".to_vec()),
            ..Metadata::default()
        };
        for format in [
            ImageFormat::Bmp,
            ImageFormat::Gif,
            ImageFormat::Qoi,
            ImageFormat::Tga,
        ] {
            let (_, notes) = embed(Vec::new(), format, &meta, (1, 1), Path::new("x")).unwrap();
            assert!(!of(format).holds_metadata());
            assert!(
                notes.iter().any(|n| n.contains("cannot carry")),
                "{format:?}"
            );
        }
        let rows = formats();
        let avif = can_write(heif::HEIF) as usize;
        assert_eq!(
            rows.iter().filter(|r| !r.metadata.is_empty()).count(),
            4 + avif
        );
    }

    #[test]
    fn writable_types_are_grouped_by_channels() {
        let png = formats().into_iter().find(|r| r.format == "Png").unwrap();
        assert_eq!(
            compact(&png.writes),
            "gray 8/16, gray+alpha 8/16, RGB 8/16, RGBA 8/16"
        );
        let heif = formats()
            .into_iter()
            .find(|r| r.format == heif::NAME)
            .unwrap();
        assert_eq!(
            heif.writes.is_empty(),
            !can_write(heif::HEIF),
            "AVIF where libheif encodes it"
        );
    }
}
