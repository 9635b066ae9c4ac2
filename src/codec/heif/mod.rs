//! HEIF files, HEIC (HEVC-coded, the iPhone camera's format) and AVIF (AV1-coded), read
//! through libheif, the library vips and ImageMagick read them with. It is loaded at run time,
//! as the OpenCL driver is, so that gblur builds and runs with a Rust toolchain alone: where
//! libheif is missing, a HEIF input is a one-line error naming the package that installs it.
//!
//! What is read is the file's primary image (a burst or a multi-image file holds more; a note
//! says so), turned upright by libheif (HEIF stores rotation and mirroring in the container,
//! and its EXIF orientation is informative only), with its ICC profile, EXIF and XMP. 8-bit
//! files decode to 8-bit RGB(A), deeper ones (10 and 12 bits) to 16-bit RGB(A), scaled to the
//! full 16-bit range.
//!
//! The `image` crate has no HEIF format; of the family it names AVIF alone, and gblur carries
//! every HEIF file under that name (`HEIF`). AVIF is written through libheif too (`write`).

mod codec;
mod hevc;
mod write;

pub use codec::Heif;

pub use write::{avif_encoder, deep_heic, encode, encoder, Coding, DEFAULT_QUALITY};

use super::metadata::{FromFile, Metadata};
use super::ImageIoError;
use dlopen2::wrapper::{Container, WrapperApi};
use image::{DynamicImage, ImageBuffer, ImageFormat};
use std::ffi::{c_char, c_int, c_void, CStr};
use std::path::Path;
use std::sync::OnceLock;

/// The format a HEIF input (HEIC or AVIF) is carried as.
pub const HEIF: ImageFormat = ImageFormat::Avif;

/// What reports call a HEIF input.
pub const NAME: &str = "Heif";

/// Brands of the files libheif reads as images: HEIC and its variants, the generic HEIF
/// brands, and AVIF.
const BRANDS: [&[u8; 4]; 10] = [
    b"heic", b"heix", b"hevc", b"hevx", b"heim", b"heis", b"mif1", b"msf1", b"avif", b"avis",
];

/// Whether `head` (a file's first bytes) starts a HEIF file: an ISO base media `ftyp` box
/// whose major brand, or one of its compatible brands, is a HEIF image brand.
pub fn is_heif(head: &[u8]) -> bool {
    if head.len() < 16 || &head[4..8] != b"ftyp" {
        return false;
    }
    let size = u32::from_be_bytes([head[0], head[1], head[2], head[3]]) as usize;
    let known = |b: &[u8]| BRANDS.iter().any(|k| &k[..] == b);
    // The major brand, then (past the minor version) the compatible brands the head holds.
    known(&head[8..12])
        || head[16..size.clamp(16, head.len())]
            .chunks_exact(4)
            .any(known)
}

/// Whether `head` starts an AVIF file, the one HEIF gblur writes (a HEIC file is not written
/// back in its own format): major brand `avif` or `avis`, or a generic one (`mif1`, `msf1`)
/// with `avif` among the compatible brands and no HEVC brand.
pub fn is_avif(head: &[u8]) -> bool {
    if !is_heif(head) {
        return false;
    }
    let size = u32::from_be_bytes([head[0], head[1], head[2], head[3]]) as usize;
    let compatible: Vec<&[u8]> = head[16..size.clamp(16, head.len())]
        .chunks_exact(4)
        .collect();
    let hevc = |b: &[u8]| matches!(b, b"heic" | b"heix" | b"hevc" | b"hevx" | b"heim" | b"heis");
    match &head[8..12] {
        b"avif" | b"avis" => true,
        major if hevc(major) => false,
        _ => compatible.iter().any(|b| *b == b"avif") && !compatible.iter().any(|b| hevc(b)),
    }
}

#[repr(C)]
#[derive(Clone, Copy)]
pub(super) struct HeifError {
    code: c_int,
    subcode: c_int,
    message: *const c_char,
}

impl HeifError {
    /// Success, as a callback returns it.
    const OK: HeifError = HeifError {
        code: 0,
        subcode: 0,
        message: c"Success".as_ptr(),
    };
}

type Context = c_void;
type Handle = c_void;
type Image = c_void;

// libheif's enums, as heif.h numbers them.
const COLORSPACE_RGB: c_int = 1;
const CHROMA_RGB: c_int = 10;
const CHROMA_RGBA: c_int = 11;
const CHROMA_RRGGBB_LE: c_int = 14;
const CHROMA_RRGGBBAA_LE: c_int = 15;
const CHANNEL_INTERLEAVED: c_int = 10;
const ERROR_INVALID_INPUT: c_int = 2;

/// The part of libheif's C API gblur calls (libheif 1.12 and later have all of it).
#[derive(WrapperApi)]
struct Api {
    heif_get_version: unsafe extern "C" fn() -> *const c_char,
    heif_init: Option<unsafe extern "C" fn(params: *const c_void) -> HeifError>,
    heif_context_alloc: unsafe extern "C" fn() -> *mut Context,
    heif_context_free: unsafe extern "C" fn(ctx: *mut Context),
    heif_context_read_from_memory_without_copy: unsafe extern "C" fn(
        ctx: *mut Context,
        mem: *const c_void,
        size: usize,
        options: *const c_void,
    ) -> HeifError,
    heif_context_set_max_decoding_threads:
        Option<unsafe extern "C" fn(ctx: *mut Context, max_threads: c_int)>,
    heif_context_get_number_of_top_level_images: unsafe extern "C" fn(ctx: *mut Context) -> c_int,
    heif_context_get_primary_image_handle:
        unsafe extern "C" fn(ctx: *mut Context, handle: *mut *mut Handle) -> HeifError,
    heif_image_handle_release: unsafe extern "C" fn(handle: *const Handle),
    heif_image_handle_get_width: unsafe extern "C" fn(handle: *const Handle) -> c_int,
    heif_image_handle_get_height: unsafe extern "C" fn(handle: *const Handle) -> c_int,
    heif_image_handle_has_alpha_channel: unsafe extern "C" fn(handle: *const Handle) -> c_int,
    heif_image_handle_get_luma_bits_per_pixel: unsafe extern "C" fn(handle: *const Handle) -> c_int,
    heif_image_handle_get_raw_color_profile_size:
        unsafe extern "C" fn(handle: *const Handle) -> usize,
    heif_image_handle_get_raw_color_profile:
        unsafe extern "C" fn(handle: *const Handle, out: *mut c_void) -> HeifError,
    heif_image_handle_get_number_of_metadata_blocks:
        unsafe extern "C" fn(handle: *const Handle, filter: *const c_char) -> c_int,
    #[dlopen2_name = "heif_image_handle_get_list_of_metadata_block_IDs"]
    heif_image_handle_get_list_of_metadata_block_ids: unsafe extern "C" fn(
        handle: *const Handle,
        filter: *const c_char,
        ids: *mut u32,
        count: c_int,
    ) -> c_int,
    heif_image_handle_get_metadata_type:
        unsafe extern "C" fn(handle: *const Handle, id: u32) -> *const c_char,
    heif_image_handle_get_metadata_content_type:
        unsafe extern "C" fn(handle: *const Handle, id: u32) -> *const c_char,
    heif_image_handle_get_metadata_size:
        unsafe extern "C" fn(handle: *const Handle, id: u32) -> usize,
    heif_image_handle_get_metadata:
        unsafe extern "C" fn(handle: *const Handle, id: u32, out: *mut c_void) -> HeifError,
    heif_decode_image: unsafe extern "C" fn(
        handle: *const Handle,
        image: *mut *mut Image,
        colorspace: c_int,
        chroma: c_int,
        options: *const c_void,
    ) -> HeifError,
    heif_image_get_plane_readonly:
        unsafe extern "C" fn(image: *const Image, channel: c_int, stride: *mut c_int) -> *const u8,
    heif_image_get_width: unsafe extern "C" fn(image: *const Image, channel: c_int) -> c_int,
    heif_image_get_height: unsafe extern "C" fn(image: *const Image, channel: c_int) -> c_int,
    heif_image_release: unsafe extern "C" fn(image: *const Image),
}

/// The names libheif's shared library goes by.
const LIBRARY: [&str; 3] = ["libheif.so.1", "libheif.1.dylib", "libheif.dll"];

/// What to install where libheif is missing.
pub const INSTALL: &str = "on Debian and Ubuntu: apt-get install libheif1";

/// libheif, loaded once; Err says why it could not be.
fn api() -> Result<&'static Container<Api>, &'static str> {
    static API: OnceLock<Result<Container<Api>, String>> = OnceLock::new();
    API.get_or_init(|| {
        if crate::fault::is(crate::fault::Fault::NoLibheif) {
            return Err(format!("libheif is not installed ({INSTALL})"));
        }
        let api = load::<Api>()
            .map_err(|last| format!("libheif is not installed ({INSTALL}; {last})"))?;
        // SAFETY: heif_init takes NULL for its defaults and may be called more than once.
        if let Some(init) = api.heif_init {
            unsafe { init(std::ptr::null()) };
        }
        // Where it cannot be registered, libheif decodes HEVC on one core, as it always does.
        let _ = hevc::register();
        Ok(api)
    })
    .as_ref()
    .map_err(String::as_str)
}

/// `T`'s symbols from libheif's shared library, under whichever of its names loads; Err: the
/// last name's failure.
fn load<T: WrapperApi>() -> Result<Container<T>, String> {
    super::shared_library::load(&LIBRARY)
}

/// Whether the HEIF file `path` can be read here: Err (naming the file and the package to
/// install) where libheif does not load.
pub fn readable(path: &Path) -> Result<(), ImageIoError> {
    api().map(drop).map_err(|why| ImageIoError::NeedsLibrary {
        path: path.into(),
        detail: format!("a HEIF file (HEIC or AVIF), which gblur reads through libheif, and {why}"),
    })
}

/// libde265's version where HEVC decodes on every core (the plugin `hevc` registers with
/// libheif), else why it decodes on one (for `gblur formats`).
pub fn threaded_hevc() -> Result<&'static str, String> {
    api().map_err(str::to_string)?;
    hevc::register()
}

/// libheif's version where it loads (for `gblur formats`), else why it does not.
pub fn version() -> Result<String, String> {
    let api = api().map_err(str::to_string)?;
    // SAFETY: heif_get_version returns a static NUL-terminated string.
    let v = unsafe { CStr::from_ptr(api.heif_get_version()) };
    Ok(v.to_string_lossy().into_owned())
}

/// The context, handle and image libheif allocated, freed when the decode ends either way.
struct Owned<'a> {
    api: &'a Api,
    ctx: *mut Context,
    handle: *mut Handle,
    image: *mut Image,
}

impl Drop for Owned<'_> {
    fn drop(&mut self) {
        // SAFETY: each pointer is null or what libheif allocated for this decode, released once.
        unsafe {
            if !self.image.is_null() {
                self.api.heif_image_release(self.image);
            }
            if !self.handle.is_null() {
                self.api.heif_image_handle_release(self.handle);
            }
            if !self.ctx.is_null() {
                self.api.heif_context_free(self.ctx);
            }
        }
    }
}

/// libheif's error as a sentence (None for success).
fn failure(e: HeifError) -> Option<String> {
    if e.code == 0 {
        return None;
    }
    let message = match e.message.is_null() {
        true => format!("libheif error {}.{}", e.code, e.subcode),
        // SAFETY: libheif's messages are static NUL-terminated strings.
        false => unsafe { CStr::from_ptr(e.message) }
            .to_string_lossy()
            .into_owned(),
    };
    Some(super::one_line(&message))
}

/// A new libheif context that has read the HEIF file `bytes` (borrowed for as long as the
/// context lives: libheif reads it without a copy); `bad` words a failure.
fn read_context<'a>(
    api: &'a Api,
    bytes: &'a [u8],
    bad: &dyn Fn(String) -> ImageIoError,
) -> Result<Owned<'a>, ImageIoError> {
    let owned = Owned {
        api,
        // SAFETY: allocates a new context; null only when out of memory.
        ctx: unsafe { api.heif_context_alloc() },
        handle: std::ptr::null_mut(),
        image: std::ptr::null_mut(),
    };
    if owned.ctx.is_null() {
        return Err(bad("libheif could not allocate a context".into()));
    }
    if let Some(set_threads) = api.heif_context_set_max_decoding_threads {
        // A grid image (as phones write them: 512 × 512 tiles) decodes its tiles on every core.
        // SAFETY: the context is live; any count is valid.
        unsafe { set_threads(owned.ctx, rayon::current_num_threads().max(1) as c_int) };
    }
    // SAFETY: `bytes` outlives the context (`Owned<'a>` cannot outlive it).
    let read = unsafe {
        api.heif_context_read_from_memory_without_copy(
            owned.ctx,
            bytes.as_ptr().cast(),
            bytes.len(),
            std::ptr::null(),
        )
    };
    if let Some(why) = failure(read) {
        // libheif's "invalid input" while reading the container: boxes missing or pointing
        // past the end, as in a file cut short.
        return Err(bad(match read.code == ERROR_INVALID_INPUT {
            true => format!("the HEIF file is damaged or cut short (libheif: {why})"),
            false => why,
        }));
    }
    Ok(owned)
}

/// Decodes the primary image of the HEIF file `bytes` (named `path` in errors) within
/// `max_memory_mib`, what the decoded image may take (the caller counts the bytes it holds):
/// upright pixels, its metadata, and notes.
pub fn decode(
    path: &Path,
    bytes: &[u8],
    max_memory_mib: u64,
) -> Result<(DynamicImage, Metadata, Vec<String>), ImageIoError> {
    readable(path)?;
    let api = api().expect("checked by readable");
    let bad = |detail: String| ImageIoError::Decode {
        path: path.into(),
        detail,
    };
    let mut owned = read_context(api, bytes, &bad)?;
    // SAFETY: the context holds a file that was read.
    let images = unsafe { api.heif_context_get_number_of_top_level_images(owned.ctx) };
    let primary =
        unsafe { api.heif_context_get_primary_image_handle(owned.ctx, &mut owned.handle) };
    if let Some(why) = failure(primary) {
        return Err(bad(why));
    }
    let handle = owned.handle;
    // SAFETY: `handle` is the primary image's, valid until `owned` is dropped.
    let (w, h, alpha, bits) = unsafe {
        (
            api.heif_image_handle_get_width(handle),
            api.heif_image_handle_get_height(handle),
            api.heif_image_handle_has_alpha_channel(handle) != 0,
            api.heif_image_handle_get_luma_bits_per_pixel(handle),
        )
    };
    if w <= 0 || h <= 0 {
        return Err(bad(format!("the image has no pixels ({w} × {h})")));
    }
    let deep = bits > 8;
    let channels = 3 + alpha as u64;
    let decoded = w as u64 * h as u64 * channels * (1 + deep as u64);
    if decoded > max_memory_mib.saturating_mul(1 << 20) {
        return Err(ImageIoError::OverLimit {
            path: path.into(),
            limit_mib: max_memory_mib,
        });
    }
    let chroma = match (deep, alpha) {
        (false, false) => CHROMA_RGB,
        (false, true) => CHROMA_RGBA,
        (true, false) => CHROMA_RRGGBB_LE,
        (true, true) => CHROMA_RRGGBBAA_LE,
    };
    // SAFETY: default decoding options (NULL): libheif applies the container's rotation,
    // mirroring and crop.
    let decode = unsafe {
        api.heif_decode_image(
            handle,
            &mut owned.image,
            COLORSPACE_RGB,
            chroma,
            std::ptr::null(),
        )
    };
    if let Some(why) = failure(decode) {
        return Err(bad(why));
    }
    let image = pixels(api, owned.image, alpha, bits)
        .ok_or_else(|| bad("libheif returned no interleaved plane for the decoded image".into()))?;
    let mut notes = Vec::new();
    if images > 1 {
        notes.push(format!(
            "the HEIF file holds {images} images; its primary image was blurred and written"
        ));
    }
    let meta = metadata(api, handle);
    Ok((image, meta, notes))
}

/// The decoded interleaved plane (RGB, or RGBA where `alpha`) as an image: 8-bit as it is,
/// deeper samples scaled from `bits` to 16.
fn pixels(api: &Api, image: *const Image, alpha: bool, bits: c_int) -> Option<DynamicImage> {
    let deep = bits > 8;
    let mut stride: c_int = 0;
    // SAFETY: `image` is a decoded image of one interleaved plane, valid while it is held.
    let (plane, w, h) = unsafe {
        (
            api.heif_image_get_plane_readonly(image, CHANNEL_INTERLEAVED, &mut stride),
            api.heif_image_get_width(image, CHANNEL_INTERLEAVED),
            api.heif_image_get_height(image, CHANNEL_INTERLEAVED),
        )
    };
    if plane.is_null() || w <= 0 || h <= 0 || stride <= 0 {
        return None;
    }
    let (w, h, stride) = (w as u32, h as u32, stride as usize);
    let row_samples = w as usize * (3 + alpha as usize);
    let row_bytes = row_samples * (1 + deep as usize);
    if stride < row_bytes {
        return None;
    }
    // SAFETY: libheif's plane holds `h` rows of `stride` bytes.
    let data = unsafe { std::slice::from_raw_parts(plane, stride * (h as usize - 1) + row_bytes) };
    let rows = (0..h as usize).map(|r| &data[r * stride..][..row_bytes]);
    if !deep {
        let mut samples = Vec::with_capacity(row_bytes * h as usize);
        rows.for_each(|row| samples.extend_from_slice(row));
        return match alpha {
            false => ImageBuffer::from_raw(w, h, samples).map(DynamicImage::ImageRgb8),
            true => ImageBuffer::from_raw(w, h, samples).map(DynamicImage::ImageRgba8),
        };
    }
    let max = ((1u32 << bits.clamp(9, 16)) - 1) as f32;
    let scale = |v: u16| ((v.min(max as u16) as f32) * (65535.0 / max)).round() as u16;
    let samples: Vec<u16> = rows
        .flat_map(|row| {
            row.chunks_exact(2)
                .map(|b| scale(u16::from_le_bytes([b[0], b[1]])))
        })
        .collect();
    match alpha {
        false => ImageBuffer::from_raw(w, h, samples).map(DynamicImage::ImageRgb16),
        true => ImageBuffer::from_raw(w, h, samples).map(DynamicImage::ImageRgba16),
    }
}

/// The primary image's ICC profile, EXIF and XMP. The pixels are upright already, so no
/// orientation is applied whatever the EXIF says (the written EXIF says 1).
fn metadata(api: &Api, handle: *const Handle) -> Metadata {
    // SAFETY: `handle` is valid; the profile is copied into a buffer of the size libheif gave.
    let icc = unsafe {
        let n = api.heif_image_handle_get_raw_color_profile_size(handle);
        let mut icc = vec![0u8; n];
        (n > 0
            && failure(
                api.heif_image_handle_get_raw_color_profile(handle, icc.as_mut_ptr().cast()),
            )
            .is_none())
        .then_some(icc)
    };
    let (mut exif, mut xmp) = (None, None);
    for (id, kind, content) in metadata_blocks(api, handle) {
        // SAFETY: as above, for the block `id` libheif listed.
        let block = unsafe {
            let n = api.heif_image_handle_get_metadata_size(handle, id);
            let mut b = vec![0u8; n];
            failure(api.heif_image_handle_get_metadata(handle, id, b.as_mut_ptr().cast()))
                .is_none()
                .then_some(b)
        };
        match (kind.as_str(), content.as_str(), block) {
            ("Exif", _, Some(b)) if exif.is_none() => exif = exif_tiff(b),
            ("mime", "application/rdf+xml", Some(b)) if xmp.is_none() => xmp = Some(b),
            _ => {}
        }
    }
    let from_file = FromFile {
        exif,
        icc,
        xmp,
        xmp_read: true,
        orientation: None,
        associated_alpha: false,
        iptc: None,
    };
    let mut meta = Metadata::read(None, from_file).unwrap_or_default();
    meta.orientation = None;
    meta
}

/// Every metadata block of `handle`: its id, type (`Exif`, `mime`) and content type.
fn metadata_blocks(api: &Api, handle: *const Handle) -> Vec<(u32, String, String)> {
    let text = |p: *const c_char| match p.is_null() {
        true => String::new(),
        // SAFETY: libheif's type strings are NUL-terminated and live as long as the handle.
        false => unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned(),
    };
    // SAFETY: a NULL filter lists every block; `ids` has room for the count asked for.
    unsafe {
        let n = api.heif_image_handle_get_number_of_metadata_blocks(handle, std::ptr::null());
        let mut ids = vec![0u32; n.max(0) as usize];
        let got = api.heif_image_handle_get_list_of_metadata_block_ids(
            handle,
            std::ptr::null(),
            ids.as_mut_ptr(),
            n.max(0),
        );
        ids.truncate(got.max(0) as usize);
        ids.into_iter()
            .map(|id| {
                let kind = text(api.heif_image_handle_get_metadata_type(handle, id));
                let content = text(api.heif_image_handle_get_metadata_content_type(handle, id));
                (id, kind, content)
            })
            .collect()
    }
}

/// A HEIF Exif block's TIFF structure: the block starts with the offset (4 bytes, big-endian)
/// of the TIFF header past itself. A JPEG-style `Exif\0\0` left before the header is taken off
/// by `Metadata::read`, as for every format.
fn exif_tiff(block: Vec<u8>) -> Option<Vec<u8>> {
    let offset = u32::from_be_bytes(block.get(..4)?.try_into().ok()?) as usize;
    Some(block.get(4usize.checked_add(offset)?..)?.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heif_brands_are_recognised_and_others_are_not() {
        let ftyp = |major: &[u8; 4], compatible: &[&[u8; 4]]| {
            let size = 16 + 4 * compatible.len();
            let mut b = (size as u32).to_be_bytes().to_vec();
            b.extend_from_slice(b"ftyp");
            b.extend_from_slice(major);
            b.extend_from_slice(&[0; 4]);
            compatible.iter().for_each(|c| b.extend_from_slice(&c[..]));
            b.extend_from_slice(&[0; 8]);
            b
        };
        assert!(is_heif(&ftyp(b"heic", &[b"mif1"])));
        assert!(is_heif(&ftyp(b"avif", &[])));
        assert!(is_heif(&ftyp(b"isom", &[b"mif1", b"miaf"])));
        assert!(
            !is_heif(&ftyp(b"isom", &[b"mp41", b"avc1"])),
            "an MP4 video"
        );
        assert!(!is_heif(&ftyp(b"qt  ", &[])), "a QuickTime movie");
        assert!(!is_heif(b"\x89PNG\r\n\x1a\n"));
    }

    #[test]
    fn exif_blocks_give_their_tiff_structure() {
        let tiff = b"MM\0*\0\0\0\x08".to_vec();
        let mut block = 6u32.to_be_bytes().to_vec();
        block.extend_from_slice(b"Exif\0\0");
        block.extend_from_slice(&tiff);
        assert_eq!(exif_tiff(block).unwrap(), tiff);
        let mut plain = 0u32.to_be_bytes().to_vec();
        plain.extend_from_slice(&tiff);
        assert_eq!(exif_tiff(plain).unwrap(), tiff);
        assert_eq!(
            exif_tiff(vec![0, 0, 1, 0, 1]),
            None,
            "an offset past the end"
        );
    }
}

#[cfg(test)]
mod brand_tests {
    use super::is_avif;

    /// An `ftyp` box of `major` and `compatible` brands.
    fn ftyp(major: &[u8; 4], compatible: &[&[u8; 4]]) -> Vec<u8> {
        let size = 16 + 4 * compatible.len() as u32;
        let mut b = size.to_be_bytes().to_vec();
        b.extend_from_slice(b"ftyp");
        b.extend_from_slice(major);
        b.extend_from_slice(&[0, 0, 0, 0]);
        compatible.iter().for_each(|c| b.extend_from_slice(&c[..]));
        b
    }

    #[test]
    fn avif_is_told_from_heic_by_its_brands() {
        assert!(is_avif(&ftyp(b"avif", &[b"mif1", b"miaf"])));
        assert!(is_avif(&ftyp(b"mif1", &[b"avif", b"miaf"])));
        assert!(!is_avif(&ftyp(b"heic", &[b"mif1", b"heic"])));
        assert!(!is_avif(&ftyp(b"mif1", &[b"heic", b"avif"])));
        assert!(!is_avif(&ftyp(b"mif1", &[b"miaf"])));
    }
}
