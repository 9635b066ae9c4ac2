//! AVIF and HEIC written through libheif's encoders (libaom's AV1 and x265's HEVC in Debian's
//! libheif1), loaded at run time as the reader loads libheif, the coding chosen by the output's
//! name (`Coding::for_path`): 8-bit RGB or RGBA, at `--quality` (libheif's lossy quality,
//! 1 to 100; 50 by default, as libvips's `heifsave`), with the ICC profile, EXIF and XMP in
//! the file. libheif converts RGB to the YCbCr the encoder codes (4:2:0, its default).
//! A HEIC of a 16-bit image is written at 10 bits (HEVC's Main 10, x265's). An AVIF is 8-bit
//! whatever the image: Debian 12's libheif 1.15 with libaom 3.6 aborts the process on a 10-bit
//! AVIF (an assertion in libaom; `vips copy x.png x.avif[bitdepth=10]` aborts the same way).

use super::{failure, Context, Handle, HeifError, Image, CHANNEL_INTERLEAVED, CHROMA_RGB};
use super::{CHROMA_RGBA, CHROMA_RRGGBBAA_LE, CHROMA_RRGGBB_LE, COLORSPACE_RGB, INSTALL};
use crate::codec::metadata::Blobs;
use dlopen2::wrapper::{Container, WrapperApi};
use image::DynamicImage;
use std::ffi::{c_char, c_int, c_void};
use std::sync::OnceLock;

/// The bits a sample of a deep HEIC holds.
const DEEP_BITS: c_int = 10;

/// The 16-bit colour type a HEIC output (`path` named for HEVC, `format` HEIF) of a 16-bit
/// integer image of `color` is written in, at 10 bits; None for every other output, which
/// `codec::output_color` decides (AVIF and 8-bit HEIC: 8-bit).
pub fn deep_heic(
    color: image::ColorType,
    format: image::ImageFormat,
    path: &std::path::Path,
) -> Option<image::ColorType> {
    use image::ColorType::*;
    let hevc = format == super::HEIF && Coding::for_path(path) == Coding::Hevc;
    match color {
        L16 | Rgb16 if hevc => Some(Rgb16),
        La16 | Rgba16 if hevc => Some(Rgba16),
        _ => None,
    }
}

/// The quality an AVIF is written at without `--quality`: libvips's `heifsave` default.
pub const DEFAULT_QUALITY: u8 = 50;

/// The HEIF codings gblur writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Coding {
    /// AVIF (`heif_compression_AV1`).
    Av1,
    /// HEIC (`heif_compression_HEVC`).
    Hevc,
}

impl Coding {
    /// HEVC for an output named `.heic`, `.heif` or `.hif`, AV1 for any other (`.avif`,
    /// stdout).
    pub fn for_path(path: &std::path::Path) -> Coding {
        let ext = path
            .extension()
            .map(|e| e.to_string_lossy().to_ascii_lowercase());
        match ext.as_deref() {
            Some("heic" | "heif" | "hif") => Coding::Hevc,
            _ => Coding::Av1,
        }
    }

    /// What encoding an image of `pixels` pixels, `deep` (16-bit samples, written at 10 bits)
    /// or 8-bit, holds beside the image itself, in bytes: libheif's copy of the samples, its
    /// YCbCr planes and the encoder's own buffers. Measured by peak resident memory on the
    /// 2-core machine, 8-bit RGB noise at 1.5, 6 and 12 MP beside the same job into PNG: x265
    /// (HEIC) 10 MiB and 15 bytes a pixel, libaom (AVIF) 17 MiB and 18 bytes a pixel; counted
    /// here with room above both, and 16 bytes a pixel more for deep samples (their 10-bit
    /// copy and wider planes).
    pub fn encoder_bytes(self, pixels: u64, deep: bool) -> u64 {
        let (fixed, per_pixel) = match self {
            Coding::Hevc => (12 << 20, 16),
            Coding::Av1 => (20 << 20, 20),
        };
        fixed + pixels * (per_pixel + if deep { 16 } else { 0 })
    }

    /// What errors call the files it makes.
    pub fn name(self) -> &'static str {
        self.names().0
    }

    /// libheif's number for it.
    fn compression(self) -> c_int {
        match self {
            Coding::Av1 => 4,
            Coding::Hevc => 1,
        }
    }

    /// What errors call the files it makes, and the encoder Debian's libheif1 brings for it.
    fn names(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Coding::Av1 => ("AVIF", "AV1", "libaom's"),
            Coding::Hevc => ("HEIC", "HEVC", "x265's"),
        }
    }
}

/// The AV1 encoder's speed, 0 (slowest, smallest) to 9: libheif's aom plugin's default is
/// 6 at best quality settings; 6 is also what libvips's `heifsave` uses at its default effort.
const SPEED: c_int = 6;

type Encoder = c_void;

/// The part of libheif's encoding API gblur calls (libheif 1.12 and later have all of it).
#[derive(WrapperApi)]
struct WriteApi {
    heif_context_alloc: unsafe extern "C" fn() -> *mut Context,
    heif_context_free: unsafe extern "C" fn(ctx: *mut Context),
    heif_context_get_encoder_for_format: unsafe extern "C" fn(
        ctx: *mut Context,
        format: c_int,
        encoder: *mut *mut Encoder,
    ) -> HeifError,
    heif_encoder_release: unsafe extern "C" fn(encoder: *mut Encoder),
    heif_encoder_set_lossy_quality:
        unsafe extern "C" fn(encoder: *mut Encoder, quality: c_int) -> HeifError,
    heif_encoder_set_parameter_integer:
        unsafe extern "C" fn(encoder: *mut Encoder, name: *const c_char, value: c_int) -> HeifError,
    heif_image_create: unsafe extern "C" fn(
        width: c_int,
        height: c_int,
        colorspace: c_int,
        chroma: c_int,
        image: *mut *mut Image,
    ) -> HeifError,
    heif_image_add_plane: unsafe extern "C" fn(
        image: *mut Image,
        channel: c_int,
        width: c_int,
        height: c_int,
        bit_depth: c_int,
    ) -> HeifError,
    heif_image_get_plane:
        unsafe extern "C" fn(image: *mut Image, channel: c_int, stride: *mut c_int) -> *mut u8,
    heif_image_set_raw_color_profile: unsafe extern "C" fn(
        image: *mut Image,
        kind: *const c_char,
        data: *const c_void,
        size: usize,
    ) -> HeifError,
    heif_image_release: unsafe extern "C" fn(image: *const Image),
    heif_context_encode_image: unsafe extern "C" fn(
        ctx: *mut Context,
        image: *const Image,
        encoder: *mut Encoder,
        options: *const c_void,
        handle: *mut *mut Handle,
    ) -> HeifError,
    heif_image_handle_release: unsafe extern "C" fn(handle: *const Handle),
    heif_context_add_exif_metadata: unsafe extern "C" fn(
        ctx: *mut Context,
        handle: *const Handle,
        data: *const c_void,
        size: c_int,
    ) -> HeifError,
    #[dlopen2_name = "heif_context_add_XMP_metadata"]
    heif_context_add_xmp_metadata: unsafe extern "C" fn(
        ctx: *mut Context,
        handle: *const Handle,
        data: *const c_void,
        size: c_int,
    ) -> HeifError,
    heif_context_write: unsafe extern "C" fn(
        ctx: *mut Context,
        writer: *const Writer,
        userdata: *mut c_void,
    ) -> HeifError,
}

/// libheif's `heif_writer`: where `heif_context_write` hands the file's bytes.
#[repr(C)]
struct Writer {
    writer_api_version: c_int,
    write: unsafe extern "C" fn(
        ctx: *mut Context,
        data: *const c_void,
        size: usize,
        userdata: *mut c_void,
    ) -> HeifError,
}

/// Appends what libheif writes to the `Vec<u8>` behind `userdata`.
unsafe extern "C" fn append(
    _: *mut Context,
    data: *const c_void,
    size: usize,
    userdata: *mut c_void,
) -> HeifError {
    // SAFETY: `encode` passes its output Vec as `userdata`, and libheif `size` bytes at
    // `data`, for the duration of `heif_context_write`.
    unsafe {
        let out = &mut *userdata.cast::<Vec<u8>>();
        out.extend_from_slice(std::slice::from_raw_parts(data.cast::<u8>(), size));
    }
    HeifError::OK
}

/// libheif's encoding API, loaded once; Err says why it could not be.
fn api() -> Result<&'static Container<WriteApi>, String> {
    static API: OnceLock<Result<Container<WriteApi>, String>> = OnceLock::new();
    API.get_or_init(|| {
        // The reader's API loads and initialises the library first.
        super::api().map_err(str::to_string)?;
        super::load::<WriteApi>()
            .map_err(|last| format!("the libheif found has no encoding API ({last})"))
    })
    .as_ref()
    .map_err(Clone::clone)
}

/// What libheif allocated for one encode, freed when it ends either way.
struct Owned<'a> {
    api: &'a WriteApi,
    ctx: *mut Context,
    encoder: *mut Encoder,
    image: *mut Image,
    handle: *mut Handle,
}

impl Drop for Owned<'_> {
    fn drop(&mut self) {
        // SAFETY: each pointer is null or what libheif allocated for this encode, released once.
        unsafe {
            if !self.handle.is_null() {
                self.api.heif_image_handle_release(self.handle);
            }
            if !self.image.is_null() {
                self.api.heif_image_release(self.image);
            }
            if !self.encoder.is_null() {
                self.api.heif_encoder_release(self.encoder);
            }
            if !self.ctx.is_null() {
                self.api.heif_context_free(self.ctx);
            }
        }
    }
}

impl<'a> Owned<'a> {
    /// A new context with libheif's encoder for `coding`; Err where libheif has none.
    fn new(api: &'a WriteApi, coding: Coding) -> Result<Owned<'a>, String> {
        let mut owned = Owned {
            api,
            // SAFETY: allocates a new context; null only when out of memory.
            ctx: unsafe { api.heif_context_alloc() },
            encoder: std::ptr::null_mut(),
            image: std::ptr::null_mut(),
            handle: std::ptr::null_mut(),
        };
        if owned.ctx.is_null() {
            return Err("libheif could not allocate a context".into());
        }
        // SAFETY: the context is live; the encoder pointer is written on success.
        let found = unsafe {
            api.heif_context_get_encoder_for_format(
                owned.ctx,
                coding.compression(),
                &mut owned.encoder,
            )
        };
        let (_, codec, brought) = coding.names();
        match failure(found) {
            Some(why) => Err(format!(
                "the libheif found has no {codec} encoder ({why}); Debian's libheif1 brings {brought}"
            )),
            None => Ok(owned),
        }
    }
}

/// Whether files of `coding` can be written here: libheif loads and has its encoder; Err
/// says why not.
pub fn encoder(coding: Coding) -> Result<(), String> {
    static FOUND: [OnceLock<Result<(), String>>; 2] = [OnceLock::new(), OnceLock::new()];
    FOUND[(coding == Coding::Hevc) as usize]
        .get_or_init(|| {
            let name = coding.names().0;
            let api =
                api().map_err(|why| format!("{name} is written through libheif, and {why}"))?;
            Owned::new(api, coding).map(drop)
        })
        .clone()
}

/// Whether AVIF can be written here (`encoder`).
pub fn avif_encoder() -> Result<(), String> {
    encoder(Coding::Av1)
}

/// How libheif takes `image`'s samples for `coding`: its interleaved chroma, the channels, the
/// bits a sample and the samples (16-bit ones rescaled to 10 bits, as the little-endian pairs
/// libheif's deep chroma takes, for HEVC).
#[allow(clippy::type_complexity)]
fn interleaved(
    image: &DynamicImage,
    coding: Coding,
) -> Result<(c_int, usize, c_int, std::borrow::Cow<'_, [u8]>), String> {
    let deep = |s: &[u16]| -> Vec<u8> {
        let max = ((1u32 << DEEP_BITS) - 1) as f32;
        s.iter()
            .flat_map(|&v| ((v as f32 * (max / 65535.0)).round() as u16).to_le_bytes())
            .collect()
    };
    let hevc = coding == Coding::Hevc;
    Ok(match image {
        DynamicImage::ImageRgb8(i) => (CHROMA_RGB, 3, 8, i.as_raw().into()),
        DynamicImage::ImageRgba8(i) => (CHROMA_RGBA, 4, 8, i.as_raw().into()),
        DynamicImage::ImageRgb16(i) if hevc => {
            (CHROMA_RRGGBB_LE, 3, DEEP_BITS, deep(i.as_raw()).into())
        }
        DynamicImage::ImageRgba16(i) if hevc => {
            (CHROMA_RRGGBBAA_LE, 4, DEEP_BITS, deep(i.as_raw()).into())
        }
        other => {
            let name = coding.name();
            return Err(format!(
                "{name} is written from 8-bit RGB or RGBA here, not {:?}",
                other.color()
            ));
        }
    })
}

/// Adds `blobs`' EXIF and XMP to the image `owned` encoded.
///
/// # Safety
/// `owned` holds a context and the handle of an image encoded into it.
unsafe fn add_metadata(api: &WriteApi, owned: &Owned, blobs: Blobs) -> Result<(), String> {
    let check = |e: HeifError| failure(e).map_or(Ok(()), Err);
    let size = |b: &[u8]| {
        c_int::try_from(b.len()).map_err(|_| "metadata larger than libheif takes".to_string())
    };
    if let Some(e) = blobs.exif {
        check(api.heif_context_add_exif_metadata(
            owned.ctx,
            owned.handle,
            e.as_ptr().cast(),
            size(e)?,
        ))?;
    }
    if let Some(x) = blobs.xmp {
        check(api.heif_context_add_xmp_metadata(
            owned.ctx,
            owned.handle,
            x.as_ptr().cast(),
            size(x)?,
        ))?;
    }
    Ok(())
}

/// The pixels `make_image` takes: `w × h`, of `chroma` with `channels` samples of `bits` each,
/// and the samples (the rows one after another).
type Pixels<'a> = ((c_int, c_int), (c_int, usize, c_int), &'a [u8]);

/// Creates `owned`'s image of `pixels`, their samples copied into its interleaved plane, with
/// `icc` as its colour profile.
///
/// # Safety
/// `owned` holds a live context.
unsafe fn make_image(
    api: &WriteApi,
    owned: &mut Owned,
    ((cw, ch), (chroma, channels, bits), samples): Pixels<'_>,
    icc: Option<&[u8]>,
) -> Result<(), String> {
    let check = |e: HeifError| failure(e).map_or(Ok(()), Err);
    check(api.heif_image_create(cw, ch, COLORSPACE_RGB, chroma, &mut owned.image))?;
    check(api.heif_image_add_plane(owned.image, CHANNEL_INTERLEAVED, cw, ch, bits))?;
    let mut stride: c_int = 0;
    let plane = api.heif_image_get_plane(owned.image, CHANNEL_INTERLEAVED, &mut stride);
    let (w, h) = (cw as usize, ch as usize);
    let row = w * channels * if bits > 8 { 2 } else { 1 };
    if plane.is_null() || stride <= 0 || (stride as usize) < row || samples.len() < row * h {
        return Err("libheif gave no plane to write the pixels into".into());
    }
    // Exactly `h` rows: the buffer may be longer than the image.
    for (y, src) in samples[..row * h].chunks_exact(row).enumerate() {
        std::ptr::copy_nonoverlapping(src.as_ptr(), plane.add(y * stride as usize), row);
    }
    if let Some(p) = icc {
        let kind = c"prof".as_ptr();
        check(api.heif_image_set_raw_color_profile(owned.image, kind, p.as_ptr().cast(), p.len()))?;
    }
    Ok(())
}

/// `image` (8-bit RGB or RGBA, as `codec::output_color` leaves it for HEIF, or for a HEIC
/// 16-bit, `deep_heic`, written at 10 bits) as an AVIF or a HEIC (`coding`) at `quality`
/// (1 to 100), with `icc`, and the EXIF and XMP of `blobs` (adjusted to the output).
pub fn encode(
    image: &DynamicImage,
    coding: Coding,
    quality: u8,
    icc: Option<&[u8]>,
    blobs: Blobs,
) -> Result<Vec<u8>, String> {
    let name = coding.names().0;
    let api =
        api().map_err(|why| format!("{name} is written through libheif ({INSTALL}), and {why}"))?;
    let (chroma, channels, bits, samples) = interleaved(image, coding)?;
    let (w, h) = (image.width() as usize, image.height() as usize);
    if w == 0 || h == 0 {
        return Err(format!("the image has no pixels ({w} × {h})"));
    }
    let too_big = || format!("{w} × {h} is larger than libheif takes");
    let (cw, ch) = (
        c_int::try_from(w).map_err(|_| too_big())?,
        c_int::try_from(h).map_err(|_| too_big())?,
    );
    let mut owned = Owned::new(api, coding)?;
    let check = |e: HeifError| failure(e).map_or(Ok(()), Err);
    // SAFETY: every call below takes what `owned` holds, live until it is dropped, and
    // buffers that outlive the call.
    unsafe {
        check(api.heif_encoder_set_lossy_quality(owned.encoder, quality as c_int))?;
        // Parameters the plugin may not know are left at its defaults.
        let threads = rayon::current_num_threads().max(1) as c_int;
        api.heif_encoder_set_parameter_integer(owned.encoder, c"speed".as_ptr(), SPEED);
        api.heif_encoder_set_parameter_integer(owned.encoder, c"threads".as_ptr(), threads);
        let pixels = ((cw, ch), (chroma, channels, bits), &samples[..]);
        make_image(api, &mut owned, pixels, icc)?;
        let options = std::ptr::null();
        check(api.heif_context_encode_image(
            owned.ctx,
            owned.image,
            owned.encoder,
            options,
            &mut owned.handle,
        ))?;
        add_metadata(api, &owned, blobs)?;
        let mut out: Vec<u8> = Vec::new();
        let writer = Writer {
            writer_api_version: 1,
            write: append,
        };
        let userdata = (&mut out as *mut Vec<u8>).cast();
        check(api.heif_context_write(owned.ctx, &writer, userdata))?;
        Ok(out)
    }
}
