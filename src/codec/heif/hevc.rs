//! HEVC on every core: a decoder plugin for libheif that runs libde265 with worker threads.
//!
//! libheif's own HEVC decoder (libde265 too) starts one worker thread, so a HEIC photo
//! decodes on one core, and that decode is most of a HEIC job's wall. libde265 spreads
//! wavefront rows (x265 writes them by default), tiles, deblocking and SAO over as many
//! threads as it is given; libheif takes decoder plugins at run time and picks the one of
//! highest priority for each format. This one registers above the built-in decoder, with the
//! same output: the same library decodes the same bitstream into planes libheif then converts,
//! crops and turns as before (`tests/it/heif.rs` compares whole decodes with it on and off).
//!
//! Both libraries are the ones libheif itself links (Debian's libheif1 depends on
//! libde265-0); where either lacks a symbol, nothing is registered and libheif decodes as it
//! always does.

use super::{load, HeifError, Image};
use crate::codec::shared_library;
use dlopen2::wrapper::{Container, WrapperApi};
use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

type De265Context = c_void;
type De265Image = c_void;

/// The part of libde265's C API the plugin calls (de265.h, 1.0.7 and later).
#[derive(WrapperApi)]
struct De265 {
    de265_get_version: unsafe extern "C" fn() -> *const c_char,
    de265_init: unsafe extern "C" fn() -> c_int,
    de265_new_decoder: unsafe extern "C" fn() -> *mut De265Context,
    de265_start_worker_threads:
        unsafe extern "C" fn(ctx: *mut De265Context, threads: c_int) -> c_int,
    de265_free_decoder: unsafe extern "C" fn(ctx: *mut De265Context) -> c_int,
    #[dlopen2_name = "de265_push_NAL"]
    de265_push_nal: unsafe extern "C" fn(
        ctx: *mut De265Context,
        data: *const c_void,
        length: c_int,
        pts: i64,
        user_data: *mut c_void,
    ) -> c_int,
    de265_flush_data: unsafe extern "C" fn(ctx: *mut De265Context) -> c_int,
    de265_decode: unsafe extern "C" fn(ctx: *mut De265Context, more: *mut c_int) -> c_int,
    de265_get_error_text: unsafe extern "C" fn(err: c_int) -> *const c_char,
    de265_get_next_picture: unsafe extern "C" fn(ctx: *mut De265Context) -> *const De265Image,
    de265_release_next_picture: unsafe extern "C" fn(ctx: *mut De265Context),
    de265_get_chroma_format: unsafe extern "C" fn(img: *const De265Image) -> c_int,
    de265_get_image_width: unsafe extern "C" fn(img: *const De265Image, channel: c_int) -> c_int,
    de265_get_image_height: unsafe extern "C" fn(img: *const De265Image, channel: c_int) -> c_int,
    de265_get_bits_per_pixel: unsafe extern "C" fn(img: *const De265Image, channel: c_int) -> c_int,
    de265_get_image_plane: unsafe extern "C" fn(
        img: *const De265Image,
        channel: c_int,
        stride: *mut c_int,
    ) -> *const u8,
    de265_get_image_colour_primaries: unsafe extern "C" fn(img: *const De265Image) -> c_int,
    de265_get_image_transfer_characteristics: unsafe extern "C" fn(img: *const De265Image) -> c_int,
    de265_get_image_matrix_coefficients: unsafe extern "C" fn(img: *const De265Image) -> c_int,
    de265_get_image_full_range_flag: unsafe extern "C" fn(img: *const De265Image) -> c_int,
}

/// libheif's colour description of a decoded image (heif.h's `heif_color_profile_nclx`, the
/// version-1 fields the plugin writes; libheif allocates the whole structure).
#[repr(C)]
struct Nclx {
    version: u8,
    color_primaries: c_int,
    transfer_characteristics: c_int,
    matrix_coefficients: c_int,
    full_range_flag: u8,
}

/// The part of libheif's plugin API the plugin calls (libheif 1.12 and later have all of it).
#[derive(WrapperApi)]
struct PluginApi {
    heif_register_decoder_plugin: unsafe extern "C" fn(plugin: *const DecoderPlugin) -> HeifError,
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
    heif_image_release: unsafe extern "C" fn(image: *const Image),
    heif_nclx_color_profile_alloc: unsafe extern "C" fn() -> *mut Nclx,
    heif_nclx_color_profile_free: unsafe extern "C" fn(nclx: *mut Nclx),
    heif_nclx_color_profile_set_color_primaries:
        unsafe extern "C" fn(nclx: *mut Nclx, v: u16) -> HeifError,
    heif_nclx_color_profile_set_transfer_characteristics:
        unsafe extern "C" fn(nclx: *mut Nclx, v: u16) -> HeifError,
    heif_nclx_color_profile_set_matrix_coefficients:
        unsafe extern "C" fn(nclx: *mut Nclx, v: u16) -> HeifError,
    heif_image_set_nclx_color_profile:
        unsafe extern "C" fn(image: *mut Image, nclx: *const Nclx) -> HeifError,
}

/// heif_plugin.h's `heif_decoder_plugin`, at plugin API version 1 (the functions every
/// libheif since 1.0 calls).
#[repr(C)]
struct DecoderPlugin {
    plugin_api_version: c_int,
    get_plugin_name: extern "C" fn() -> *const c_char,
    init_plugin: Option<extern "C" fn()>,
    deinit_plugin: Option<extern "C" fn()>,
    does_support_format: extern "C" fn(format: c_int) -> c_int,
    new_decoder: extern "C" fn(decoder: *mut *mut c_void) -> HeifError,
    free_decoder: extern "C" fn(decoder: *mut c_void),
    push_data: extern "C" fn(decoder: *mut c_void, data: *const c_void, size: usize) -> HeifError,
    decode_image: extern "C" fn(decoder: *mut c_void, image: *mut *mut Image) -> HeifError,
}

static PLUGIN: DecoderPlugin = DecoderPlugin {
    plugin_api_version: 1,
    get_plugin_name,
    init_plugin: None,
    deinit_plugin: None,
    does_support_format,
    new_decoder,
    free_decoder,
    push_data,
    decode_image,
};

// heif.h's numbers.
const COMPRESSION_HEVC: c_int = 1;
const COLORSPACE_YCBCR: c_int = 0;
const COLORSPACE_MONOCHROME: c_int = 2;
const CHROMA_MONOCHROME: c_int = 0;
const ERROR_DECODER_PLUGIN: c_int = 7;
const SUBERROR_UNSPECIFIED: c_int = 0;
const SUBERROR_END_OF_DATA: c_int = 100;
/// Above libheif's own decoders (100), so that libheif picks this one for HEVC.
const PRIORITY: c_int = 200;

/// Both libraries, loaded once the plugin is registered.
struct Libraries {
    de265: Container<De265>,
    heif: Container<PluginApi>,
}

static LIBRARIES: OnceLock<Libraries> = OnceLock::new();

/// HEVC decoders alive now: a grid image's tiles decode several at a time (libheif's
/// decoding threads), and the cores are shared among them.
static LIVE: AtomicUsize = AtomicUsize::new(0);

/// Registers the plugin with libheif (once; libheif must be initialised). Ok: libde265's
/// version; Err: why libheif decodes HEVC on its own.
pub(super) fn register() -> Result<&'static str, String> {
    static REGISTERED: OnceLock<Result<String, String>> = OnceLock::new();
    REGISTERED
        .get_or_init(|| {
            if crate::fault::is(crate::fault::Fault::LibheifHevc) {
                return Err("turned off (GBLUR_FAULT=libheif-hevc)".into());
            }
            let de265 = shared_library::load::<De265>(&[
                "libde265.so.0",
                "libde265.0.dylib",
                "libde265.dll",
            ])
            .map_err(|e| format!("libde265 does not load ({e})"))?;
            let heif =
                load::<PluginApi>().map_err(|e| format!("libheif has no plugin API ({e})"))?;
            // SAFETY: de265_init has no preconditions and counts its callers; the version is a
            // static NUL-terminated string.
            let version = unsafe {
                de265.de265_init();
                CStr::from_ptr(de265.de265_get_version())
                    .to_string_lossy()
                    .into_owned()
            };
            let libraries = LIBRARIES.get_or_init(|| Libraries { de265, heif });
            // SAFETY: PLUGIN is static, as libheif keeps the pointer, and its functions use
            // LIBRARIES, set above.
            let registered = unsafe { libraries.heif.heif_register_decoder_plugin(&PLUGIN) };
            match super::failure(registered) {
                None => Ok(version),
                Some(why) => Err(why),
            }
        })
        .as_deref()
        .map_err(Clone::clone)
}

fn libraries() -> &'static Libraries {
    // Only reachable through PLUGIN, which is registered after LIBRARIES is set.
    LIBRARIES
        .get()
        .expect("set before the plugin is registered")
}

fn error(code: c_int, subcode: c_int, message: &'static CStr) -> HeifError {
    HeifError {
        code,
        subcode,
        message: message.as_ptr(),
    }
}

extern "C" fn get_plugin_name() -> *const c_char {
    c"libde265 HEVC decoder on every core (gblur)".as_ptr()
}

extern "C" fn does_support_format(format: c_int) -> c_int {
    if format == COMPRESSION_HEVC {
        PRIORITY
    } else {
        0
    }
}

extern "C" fn new_decoder(decoder: *mut *mut c_void) -> HeifError {
    let de265 = &libraries().de265;
    // SAFETY: allocates a decoder; null only when out of memory.
    let ctx = unsafe { de265.de265_new_decoder() };
    if ctx.is_null() {
        return error(
            ERROR_DECODER_PLUGIN,
            SUBERROR_UNSPECIFIED,
            c"libde265 could not allocate a decoder",
        );
    }
    let live = LIVE.fetch_add(1, Ordering::Relaxed) + 1;
    let threads = (rayon::current_num_threads() / live).max(1);
    // SAFETY: `ctx` is the live decoder; the threads end with it (de265_free_decoder).
    unsafe { de265.de265_start_worker_threads(ctx, threads as c_int) };
    // SAFETY: libheif passes where to put the decoder.
    unsafe { *decoder = ctx };
    HeifError::OK
}

extern "C" fn free_decoder(decoder: *mut c_void) {
    LIVE.fetch_sub(1, Ordering::Relaxed);
    // SAFETY: `decoder` is what new_decoder made, freed once by libheif.
    unsafe { libraries().de265.de265_free_decoder(decoder) };
}

/// NAL units as libheif passes them: each after its length in four big-endian bytes.
extern "C" fn push_data(decoder: *mut c_void, data: *const c_void, size: usize) -> HeifError {
    if data.is_null() {
        return HeifError::OK;
    }
    // SAFETY: libheif passes `size` readable bytes at `data` for the length of the call.
    let mut rest = unsafe { std::slice::from_raw_parts(data.cast::<u8>(), size) };
    let de265 = &libraries().de265;
    while !rest.is_empty() {
        let Some((length, after)) = rest.split_first_chunk::<4>() else {
            return error(
                ERROR_DECODER_PLUGIN,
                SUBERROR_END_OF_DATA,
                c"a NAL unit's length is cut short",
            );
        };
        let length = u32::from_be_bytes(*length) as usize;
        if length > after.len() || length > c_int::MAX as usize {
            return error(
                ERROR_DECODER_PLUGIN,
                SUBERROR_END_OF_DATA,
                c"a NAL unit runs past the data",
            );
        }
        let (nal, after) = after.split_at(length);
        // SAFETY: libde265 copies the unit before returning.
        unsafe {
            de265.de265_push_nal(
                decoder,
                nal.as_ptr().cast(),
                length as c_int,
                0,
                std::ptr::null_mut(),
            )
        };
        rest = after;
    }
    HeifError::OK
}

/// Decodes what was pushed; the last picture is the image (a HEIF item holds one).
extern "C" fn decode_image(decoder: *mut c_void, out: *mut *mut Image) -> HeifError {
    let Libraries { de265, heif } = libraries();
    let mut image: *mut Image = std::ptr::null_mut();
    // SAFETY: `decoder` is live; each picture is released after it is copied.
    unsafe {
        de265.de265_flush_data(decoder);
        loop {
            let mut more: c_int = 0;
            let status = de265.de265_decode(decoder, &mut more);
            if status != 0 {
                if !image.is_null() {
                    heif.heif_image_release(image);
                }
                let text = de265.de265_get_error_text(status);
                return HeifError {
                    code: ERROR_DECODER_PLUGIN,
                    subcode: SUBERROR_UNSPECIFIED,
                    message: if text.is_null() {
                        c"libde265 failed".as_ptr()
                    } else {
                        text
                    },
                };
            }
            let picture = de265.de265_get_next_picture(decoder);
            if !picture.is_null() {
                if !image.is_null() {
                    heif.heif_image_release(image);
                    image = std::ptr::null_mut();
                }
                let copied = copy_picture(de265, heif, picture, &mut image);
                de265.de265_release_next_picture(decoder);
                if copied.code != 0 {
                    return copied;
                }
            }
            if more == 0 {
                break;
            }
        }
        if image.is_null() {
            return error(
                ERROR_DECODER_PLUGIN,
                SUBERROR_UNSPECIFIED,
                c"libde265 decoded no picture",
            );
        }
        *out = image;
    }
    HeifError::OK
}

/// Gives `image` the colour description (primaries, transfer, matrix, range) `picture` signals.
///
/// # Safety
/// `picture` is a picture libde265 decoded and `image` an image libheif made, both alive.
unsafe fn copy_colour_profile(
    de265: &De265,
    heif: &PluginApi,
    picture: *const De265Image,
    image: *mut Image,
) {
    let nclx = heif.heif_nclx_color_profile_alloc();
    if !nclx.is_null() {
        // Values libheif does not know are left at its defaults, as its own decoder leaves them.
        heif.heif_nclx_color_profile_set_color_primaries(
            nclx,
            de265.de265_get_image_colour_primaries(picture) as u16,
        );
        heif.heif_nclx_color_profile_set_transfer_characteristics(
            nclx,
            de265.de265_get_image_transfer_characteristics(picture) as u16,
        );
        heif.heif_nclx_color_profile_set_matrix_coefficients(
            nclx,
            de265.de265_get_image_matrix_coefficients(picture) as u16,
        );
        (*nclx).full_range_flag = u8::from(de265.de265_get_image_full_range_flag(picture) != 0);
        heif.heif_image_set_nclx_color_profile(image, nclx);
        heif.heif_nclx_color_profile_free(nclx);
    }
}

/// libde265's picture as a libheif image of the same planes, with the bitstream's colour
/// description, as libheif's own decoder makes it.
///
/// # Safety
/// `picture` is a live libde265 picture; `image` receives the new image, which the caller
/// releases.
unsafe fn copy_picture(
    de265: &De265,
    heif: &PluginApi,
    picture: *const De265Image,
    image: &mut *mut Image,
) -> HeifError {
    let chroma = de265.de265_get_chroma_format(picture);
    let mono = chroma == CHROMA_MONOCHROME;
    let (width, height) = (
        de265.de265_get_image_width(picture, 0),
        de265.de265_get_image_height(picture, 0),
    );
    let colorspace = if mono {
        COLORSPACE_MONOCHROME
    } else {
        COLORSPACE_YCBCR
    };
    let created = heif.heif_image_create(width, height, colorspace, chroma, image);
    if created.code != 0 {
        return created;
    }
    let bits = de265.de265_get_bits_per_pixel(picture, 0);
    // heif_channel_Y, _Cb and _Cr are 0, 1 and 2, as libde265 numbers its planes.
    for channel in 0..if mono { 1 } else { 3 } {
        let (w, h) = (
            de265.de265_get_image_width(picture, channel),
            de265.de265_get_image_height(picture, channel),
        );
        if de265.de265_get_bits_per_pixel(picture, channel) != bits || w <= 0 || h <= 0 {
            heif.heif_image_release(*image);
            *image = std::ptr::null_mut();
            return error(
                ERROR_DECODER_PLUGIN,
                SUBERROR_UNSPECIFIED,
                c"the picture's planes differ in depth or are empty",
            );
        }
        let added = heif.heif_image_add_plane(*image, channel, w, h, bits);
        if added.code != 0 {
            heif.heif_image_release(*image);
            *image = std::ptr::null_mut();
            return added;
        }
        let (mut from_stride, mut to_stride) = (0, 0);
        let from = de265.de265_get_image_plane(picture, channel, &mut from_stride);
        let to = heif.heif_image_get_plane(*image, channel, &mut to_stride);
        let row = w as usize * (bits as usize).div_ceil(8);
        for y in 0..h as usize {
            std::ptr::copy_nonoverlapping(
                from.add(y * from_stride as usize),
                to.add(y * to_stride as usize),
                row,
            );
        }
    }
    copy_colour_profile(de265, heif, picture, *image);
    HeifError::OK
}
