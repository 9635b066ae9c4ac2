//! The JPEG XL decoder: jxl-oxide (the `jxl` feature).

use crate::codec::metadata::{FromFile, Metadata};
use crate::codec::ImageIoError;
use image::{DynamicImage, ImageBuffer};
use jxl_oxide::color::{ColourEncoding, ColourSpace, Primaries, TransferFunction, WhitePoint};
use jxl_oxide::image::BitDepth;
use jxl_oxide::{
    AllocTracker, EnumColourEncoding, JxlImage, JxlThreadPool, PixelFormat, RenderingIntent,
};
use std::path::Path;

/// Decodes the JPEG XL file `bytes` (named `path` in errors) within `max_memory_mib` (what the
/// decoder's buffers and the image may take; the caller counts the bytes it holds): the
/// upright pixels of its first frame, its metadata, whether the pixels are gray float held as
/// RGB, and notes.
pub fn decode(
    path: &Path,
    bytes: &[u8],
    max_memory_mib: u64,
) -> Result<(DynamicImage, Metadata, bool, Vec<String>), ImageIoError> {
    let bad = |detail: String| ImageIoError::Decode {
        path: path.into(),
        detail,
    };
    let over = || ImageIoError::OverLimit {
        path: path.into(),
        limit_mib: max_memory_mib,
    };
    let limit = usize::try_from(max_memory_mib.saturating_mul(1 << 20)).unwrap_or(usize::MAX);
    // The decoder's own buffers (f32 planes, several times the image) count against the limit:
    // running out of them is the limit's error, not a damaged file's.
    let failed = |e: Box<dyn std::error::Error + Send + Sync>| {
        let text = crate::codec::one_line(&e.to_string());
        match text.contains("failed to allocate") {
            true => over(),
            false => bad(text),
        }
    };
    let mut image = JxlImage::builder()
        .pool(pool())
        .alloc_tracker(AllocTracker::with_limit(limit))
        .read(bytes)
        .map_err(failed)?;
    image.set_cms(jxl_oxide::Moxcms);
    let mut notes = Vec::new();
    let cmyk = image.pixel_format().has_black();
    if cmyk {
        image.request_color_encoding(EnumColourEncoding::srgb(RenderingIntent::Relative));
        notes.push("the JPEG XL file is CMYK: converted to sRGB through its ICC profile".into());
    }
    // What is rendered: RGB(A) for CMYK, once sRGB is asked for.
    let format = image.pixel_format();
    let header = &image.image_header().metadata;
    let float = matches!(header.bit_depth, BitDepth::FloatSample { .. })
        || header.bit_depth.bits_per_sample() > 16;
    let deep = header.bit_depth.bits_per_sample() > 8;
    let untagged = cmyk || srgb(&header.colour_encoding);
    let gray = format.is_grayscale();
    if held_bytes(&image, format, (float, deep)) > max_memory_mib.saturating_mul(1 << 20) {
        return Err(over());
    }
    let frames = image.num_loaded_keyframes();
    if frames == 0 {
        return Err(bad("the file is truncated (no complete frame)".into()));
    }
    if frames > 1 {
        notes.push(format!("the JPEG XL file is an animation of {frames} frames; its first was blurred and written"));
    }
    let render = image.render_frame(0).map_err(failed)?;
    let pixels = rendered_pixels(&render, format, (float, deep)).map_err(bad)?;
    let meta = metadata(&image, cmyk, untagged);
    Ok((pixels, meta, float && gray, notes))
}

/// The bytes the decoded image holds: `format`'s channels (gray float as RGB(A), three equal
/// channels) of 8-bit, 16-bit (`deep`) or float samples.
fn held_bytes(image: &JxlImage, format: PixelFormat, (float, deep): (bool, bool)) -> u64 {
    let channels = match (format.is_grayscale() && !float, format.has_alpha()) {
        (true, a) => 1 + a as u64,
        (false, a) => 3 + a as u64,
    };
    let sample_bytes = if float { 4 } else { 1 + deep as u64 };
    image.width() as u64 * image.height() as u64 * channels * sample_bytes
}

/// The pixels of the rendered frame: 8-bit, 16-bit (`deep`) or float, in `format`'s channels.
fn rendered_pixels(
    render: &jxl_oxide::Render,
    format: PixelFormat,
    (float, deep): (bool, bool),
) -> Result<DynamicImage, String> {
    let mut stream = render.stream();
    if stream.channels() as usize != format.channels() {
        return Err(format!(
            "the decoder gave {} channels for {format:?}",
            stream.channels()
        ));
    }
    let (sw, sh) = (stream.width(), stream.height());
    let n = sw as usize * sh as usize * stream.channels() as usize;
    let (gray, alpha) = (format.is_grayscale(), format.has_alpha());
    let pixels = match (float, deep) {
        (true, _) => {
            let mut samples = vec![0f32; n];
            stream.write_to_buffer(&mut samples);
            float_image(sw, sh, samples, format)
        }
        (false, true) => {
            let mut samples = vec![0u16; n];
            stream.write_to_buffer(&mut samples);
            match (gray, alpha) {
                (true, false) => {
                    ImageBuffer::from_raw(sw, sh, samples).map(DynamicImage::ImageLuma16)
                }
                (true, true) => {
                    ImageBuffer::from_raw(sw, sh, samples).map(DynamicImage::ImageLumaA16)
                }
                (false, false) => {
                    ImageBuffer::from_raw(sw, sh, samples).map(DynamicImage::ImageRgb16)
                }
                (false, true) => {
                    ImageBuffer::from_raw(sw, sh, samples).map(DynamicImage::ImageRgba16)
                }
            }
        }
        (false, false) => {
            let mut samples = vec![0u8; n];
            stream.write_to_buffer(&mut samples);
            match (gray, alpha) {
                (true, false) => {
                    ImageBuffer::from_raw(sw, sh, samples).map(DynamicImage::ImageLuma8)
                }
                (true, true) => {
                    ImageBuffer::from_raw(sw, sh, samples).map(DynamicImage::ImageLumaA8)
                }
                (false, false) => {
                    ImageBuffer::from_raw(sw, sh, samples).map(DynamicImage::ImageRgb8)
                }
                (false, true) => {
                    ImageBuffer::from_raw(sw, sh, samples).map(DynamicImage::ImageRgba8)
                }
            }
        }
    };
    pixels.ok_or_else(|| "the decoder gave fewer samples than the image holds".into())
}

/// The file's ICC profile (none where it is sRGB, `untagged`), EXIF and XMP, with no
/// orientation: the frame is rendered upright from the codestream's own, which a JPEG XL
/// reader follows whatever the EXIF says.
fn metadata(image: &JxlImage, cmyk: bool, untagged: bool) -> Metadata {
    // The profile of the pixels as rendered: the file's own where its samples are stored in
    // its space (not XYB-coded), else one jxl-oxide writes for the space it rendered them in
    // (for an XYB file that carries a profile, the primaries and curve it reads from it).
    let stored_in_own_space = !image.image_header().metadata.xyb_encoded && !cmyk;
    let icc = (!untagged).then(|| match (stored_in_own_space, image.original_icc()) {
        (true, Some(own)) => own.to_vec(),
        _ => image.rendered_icc(),
    });
    let exif = match image.aux_boxes().first_exif() {
        Ok(jxl_oxide::AuxBoxData::Data(exif)) => exif
            .payload()
            .get(exif.tiff_header_offset() as usize..)
            .map(<[u8]>::to_vec),
        _ => None,
    };
    let xmp = match image.aux_boxes().first_xml() {
        jxl_oxide::AuxBoxData::Data(xml) => Some(xml.to_vec()),
        _ => None,
    };
    let from_file = FromFile {
        exif,
        icc,
        xmp,
        xmp_read: true,
        ..FromFile::default()
    };
    let mut meta = Metadata::read(None, from_file).unwrap_or_default();
    meta.orientation = None;
    meta
}

/// A pool of the job's thread count for the decoder, whose workers' panics the guarded
/// caller reports (`guard::quiet_thread`). Each thread that decodes keeps its own, built once:
/// a pool made and dropped for every file cost a batch of JPEG XL files a pool of threads
/// each, and a dropped pool's threads wind down after the decode has returned; one pool for
/// the whole process would make a batch's lanes (each decoding on its own thread, with its
/// own share of the cores) share one lane's threads.
fn pool() -> JxlThreadPool {
    use std::cell::RefCell;
    use std::sync::Arc;
    thread_local! {
        static POOL: RefCell<Option<(usize, Arc<rayon::ThreadPool>)>> = const { RefCell::new(None) };
    }
    let threads = rayon::current_num_threads().max(1);
    POOL.with_borrow_mut(|kept| {
        if let Some((_, pool)) = kept.as_ref().filter(|(n, _)| *n == threads) {
            return JxlThreadPool::with_rayon_thread_pool(pool.clone());
        }
        let built = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .start_handler(|_| crate::codec::guard::quiet_thread())
            .build();
        match built {
            Ok(pool) => {
                let pool = Arc::new(pool);
                *kept = Some((threads, pool.clone()));
                JxlThreadPool::with_rayon_thread_pool(pool)
            }
            Err(_) => JxlThreadPool::none(),
        }
    })
}

/// Whether the file names sRGB (or gray with sRGB's curve and white): what an untagged output
/// stands for, so no profile is written for it.
fn srgb(encoding: &ColourEncoding) -> bool {
    match encoding {
        ColourEncoding::Enum(e) => {
            let space = match e.colour_space {
                ColourSpace::Grey => true,
                ColourSpace::Rgb => e.primaries == Primaries::Srgb,
                _ => false,
            };
            space && e.white_point == WhitePoint::D65 && e.tf == TransferFunction::Srgb
        }
        ColourEncoding::IccProfile(_) => false,
    }
}

/// Float samples as an image: RGB(A) as they are, gray (and gray with alpha) spread over three
/// equal channels.
fn float_image(w: u32, h: u32, samples: Vec<f32>, format: PixelFormat) -> Option<DynamicImage> {
    match format {
        PixelFormat::Rgb => ImageBuffer::from_raw(w, h, samples).map(DynamicImage::ImageRgb32F),
        PixelFormat::Rgba => ImageBuffer::from_raw(w, h, samples).map(DynamicImage::ImageRgba32F),
        PixelFormat::Gray => {
            let rgb = samples.iter().flat_map(|&v| [v, v, v]).collect();
            ImageBuffer::from_raw(w, h, rgb).map(DynamicImage::ImageRgb32F)
        }
        PixelFormat::Graya => {
            let rgba = samples
                .chunks_exact(2)
                .flat_map(|p| [p[0], p[0], p[0], p[1]])
                .collect();
            ImageBuffer::from_raw(w, h, rgba).map(DynamicImage::ImageRgba32F)
        }
        // CMYK is rendered as sRGB (`decode`).
        PixelFormat::Cmyk | PixelFormat::Cmyka => None,
    }
}
