//! libjpeg's compressor (libjpeg-turbo's C code with its SIMD, as the `mozjpeg` crate builds
//! it) at its fastest profile, which writes what libjpeg-turbo writes: baseline (extended
//! sequential where a quality below about 25 needs 16-bit quantisation tables), the standard
//! tables scaled for the quality, the standard Huffman tables. Every stripe of an image is
//! therefore written with the same tables, which the stripe joiner relies on. Rows of
//! interleaved samples go through libjpeg's colour conversion and downsampling; YCbCr planes
//! go straight to its forward DCTs (`raw_data_in`).

use super::errors::{run, strict_errors};
use mozjpeg_sys as ffi;
use std::io;
use std::os::raw::{c_int, c_uint, c_ulong};

/// The chroma layouts gblur writes, with the subsampling factors of Cb and Cr against Y.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Chroma {
    /// Full chroma.
    S444,
    /// Chroma halved across.
    S422,
    /// Chroma halved across and down.
    S420,
}

impl Chroma {
    /// (horizontal, vertical) factors by which the chroma planes are smaller than luma.
    pub fn factors(self) -> (u32, u32) {
        match self {
            Chroma::S444 => (1, 1),
            Chroma::S422 => (2, 1),
            Chroma::S420 => (2, 2),
        }
    }

    /// The name the command line takes (`444`, `422`, `420`).
    pub fn name(self) -> &'static str {
        match self {
            Chroma::S444 => "4:4:4",
            Chroma::S422 => "4:2:2",
            Chroma::S420 => "4:2:0",
        }
    }
}

/// Colour layouts libjpeg writes: gray, RGB (coded as YCbCr) and CMYK inks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JpegColor {
    Gray,
    Rgb,
    /// Four samples a pixel, stored as given, at full resolution, with Adobe's APP14 marker
    /// (transform 0) where `adobe_marker`. Photoshop and the readers after it take a CMYK
    /// JPEG's samples as inverted (255 is no ink): the caller inverts the inks.
    Cmyk {
        adobe_marker: bool,
    },
}

impl JpegColor {
    pub fn channels(self) -> usize {
        match self {
            JpegColor::Gray => 1,
            JpegColor::Rgb => 3,
            JpegColor::Cmyk { .. } => 4,
        }
    }

    /// The size in pixels of an MCU with colour in the `chroma` layout (a gray file's is 8×8).
    pub fn mcu(self, chroma: Chroma) -> (u32, u32) {
        let (h, v) = match self {
            JpegColor::Gray | JpegColor::Cmyk { .. } => (1, 1),
            JpegColor::Rgb => chroma.factors(),
        };
        (8 * h, 8 * v)
    }
}

/// How libjpeg is to write a file.
#[derive(Clone, Copy)]
pub struct Written<'a> {
    /// 1 to 100, scaled as libjpeg scales the standard tables.
    pub quality: u8,
    /// The sampling factors of luma, chroma's being 1×1 (4:2:0 is (2, 2)); (1, 1) for one
    /// component or four.
    pub luma_factors: (u8, u8),
    /// Whether a CMYK file carries Adobe's APP14 segment (transform 0).
    pub adobe_marker: bool,
    /// An ICC profile to embed, in APP2 segments after the JFIF or Adobe one.
    pub icc: Option<&'a [u8]>,
}

/// Rows of `width` interleaved samples in `color`'s layout, as a JPEG.
pub fn compress_samples(
    rows: &[u8],
    width: u32,
    color: JpegColor,
    how: Written,
) -> Result<Vec<u8>, String> {
    compress_rows(rows, width, color, how, false)
}

/// Rows of RGB samples as a progressive JPEG (libjpeg's standard scan script): what cameras
/// and web tools write, for the decoders' tests.
#[cfg(test)]
pub fn compress_progressive(rgb: &[u8], width: u32, quality: u8) -> Vec<u8> {
    let how = Written {
        quality,
        luma_factors: (2, 2),
        adobe_marker: false,
        icc: None,
    };
    compress_rows(rgb, width, JpegColor::Rgb, how, true).expect("whole rows")
}

fn compress_rows(
    rows: &[u8],
    width: u32,
    color: JpegColor,
    how: Written,
    progressive: bool,
) -> Result<Vec<u8>, String> {
    let channels = color.channels();
    let row_bytes = width as usize * channels;
    if row_bytes == 0 || rows.is_empty() || !rows.len().is_multiple_of(row_bytes) {
        return Err(format!(
            "{} bytes are not whole rows of {width} pixels",
            rows.len()
        ));
    }
    let height = rows.len() / row_bytes;
    let space = match color {
        JpegColor::Gray => ffi::J_COLOR_SPACE::JCS_GRAYSCALE,
        JpegColor::Rgb => ffi::J_COLOR_SPACE::JCS_RGB,
        JpegColor::Cmyk { .. } => ffi::J_COLOR_SPACE::JCS_CMYK,
    };
    run(|| {
        let mut c = Compressor::new((width, height), space, channels, how)?;
        if progressive {
            // SAFETY: after the defaults, before the compressor starts, as libjpeg requires.
            unsafe { ffi::jpeg_simple_progression(&mut c.cinfo) };
        }
        c.start()?;
        // SAFETY: each row pointer addresses `row_bytes` samples of `rows`, which outlives the
        // call; libjpeg reads `image_width × input_components` samples from each.
        let pointers: Vec<*const u8> = rows.chunks_exact(row_bytes).map(<[u8]>::as_ptr).collect();
        for chunk in pointers.chunks(64) {
            let done = unsafe {
                ffi::jpeg_write_scanlines(&mut c.cinfo, chunk.as_ptr(), chunk.len() as c_uint)
            };
            if done as usize != chunk.len() {
                return Err(io::Error::other(
                    "libjpeg took fewer rows than it was given",
                ));
            }
        }
        c.finish()
    })
}

/// One YCbCr plane to compress: its samples and its width (rows `width` samples apart).
pub type Plane<'a> = (&'a [u8], usize);

/// A YCbCr picture of `width`×`height` pixels given as its planes (Y at full size, Cb and Cr
/// at the size `how.luma_factors` makes them), as a JPEG: the planes go straight to the DCTs.
pub fn compress_planes(
    planes: [Plane; 3],
    (width, height): (u32, u32),
    how: Written,
) -> Result<Vec<u8>, String> {
    let (fh, fv) = (how.luma_factors.0 as usize, how.luma_factors.1 as usize);
    let mcu_rows = (height as usize).div_ceil(8 * fv);
    let mut sources = Vec::with_capacity(3);
    for (i, &(samples, w)) in planes.iter().enumerate() {
        let (sh, sv) = if i == 0 { (fh, fv) } else { (1, 1) };
        let stride = (width as usize * sh).div_ceil(8 * fh) * 8;
        sources.push(PaddedPlane::new(samples, w, stride, 8 * sv)?);
    }
    run(|| {
        let mut c = Compressor::new(
            (width, height as usize),
            ffi::J_COLOR_SPACE::JCS_YCbCr,
            3,
            how,
        )?;
        c.cinfo.raw_data_in = 1;
        c.start()?;
        for mcu_row in 0..mcu_rows {
            let rows: Vec<*const *const u8> = sources
                .iter_mut()
                .map(|plane| plane.mcu_row(mcu_row).as_ptr())
                .collect();
            // SAFETY: every pointer addresses a row of whole blocks (`stride` samples) that
            // lives until the next MCU row, as many rows as the MCU row has of that plane.
            let done = unsafe {
                ffi::jpeg_write_raw_data(&mut c.cinfo, rows.as_ptr(), (8 * fv) as c_uint)
            };
            if done == 0 {
                return Err(io::Error::other("libjpeg took no rows"));
            }
        }
        c.finish()
    })
}

/// A plane handed to libjpeg's DCTs an MCU row at a time, as rows of whole blocks: its own
/// rows where their width is whole blocks, copies padded by repeating the last sample where
/// not, and the last row repeated below the picture (what libjpeg does with the rows it is
/// given).
struct PaddedPlane<'a> {
    samples: &'a [u8],
    width: usize,
    height: usize,
    stride: usize,
    /// Rows of this plane in one MCU row.
    rows: usize,
    /// The current MCU row's padded copies, where the width is not whole blocks.
    scratch: Vec<u8>,
    pointers: Vec<*const u8>,
}

impl<'a> PaddedPlane<'a> {
    fn new(samples: &'a [u8], width: usize, stride: usize, rows: usize) -> Result<Self, String> {
        let height = samples.len().checked_div(width).unwrap_or(0);
        if width == 0 || height == 0 || samples.len() != width * height || width > stride {
            return Err(format!(
                "a plane of {} samples, {width} wide, is not the picture's",
                samples.len()
            ));
        }
        Ok(PaddedPlane {
            samples,
            width,
            height,
            stride,
            rows,
            scratch: Vec::new(),
            pointers: Vec::with_capacity(rows),
        })
    }

    /// The row pointers of MCU row `n`.
    fn mcu_row(&mut self, n: usize) -> &[*const u8] {
        let (w, stride) = (self.width, self.stride);
        let source = |r: usize| {
            let r = r.min(self.height - 1);
            &self.samples[r * w..(r + 1) * w]
        };
        self.pointers.clear();
        if w == stride {
            self.pointers
                .extend((n * self.rows..(n + 1) * self.rows).map(|r| source(r).as_ptr()));
        } else {
            self.scratch.clear();
            for r in n * self.rows..(n + 1) * self.rows {
                let row = source(r);
                self.scratch.extend_from_slice(row);
                self.scratch
                    .resize(self.scratch.len() + stride - w, row[w - 1]);
            }
            self.pointers
                .extend(self.scratch.chunks_exact(stride).map(<[u8]>::as_ptr));
        }
        &self.pointers
    }
}

/// A libjpeg compressor writing into memory, destroyed (and its buffer freed) when dropped,
/// also when an error unwinds through it.
struct Compressor {
    cinfo: Box<ffi::jpeg_compress_struct>,
    _errors: Box<ffi::jpeg_error_mgr>,
    /// Where `jpeg_mem_dest` keeps its buffer and the bytes written.
    out: Box<(*mut u8, c_ulong)>,
    icc: Option<Vec<u8>>,
}

impl Compressor {
    fn new(
        (width, height): (u32, usize),
        space: ffi::J_COLOR_SPACE,
        components: usize,
        how: Written,
    ) -> io::Result<Compressor> {
        let too_big = |v: usize| v == 0 || v > u16::MAX as usize;
        if too_big(width as usize) || too_big(height) {
            return Err(io::Error::other(format!(
                "JPEG holds 1 to 65535 pixels per side, not {width}×{height}"
            )));
        }
        let mut c = Compressor {
            // SAFETY: a zeroed struct is what `jpeg_CreateCompress` expects to initialise.
            cinfo: Box::new(unsafe { std::mem::zeroed() }),
            _errors: Box::new(strict_errors()),
            out: Box::new((std::ptr::null_mut(), 0)),
            icc: how.icc.map(<[u8]>::to_vec),
        };
        c.cinfo.common.err = &mut *c._errors;
        let cinfo = &mut *c.cinfo;
        // SAFETY: the struct, its error manager and the destination's two words are boxed, so
        // they stay where libjpeg's pointers to them point until `drop` destroys it.
        unsafe {
            ffi::jpeg_CreateCompress(
                cinfo,
                ffi::JPEG_LIB_VERSION,
                size_of::<ffi::jpeg_compress_struct>(),
            );
            ffi::jpeg_mem_dest(cinfo, &mut c.out.0, &mut c.out.1);
        }
        describe(cinfo, (width, height), (space, components), &how);
        Ok(c)
    }

    /// Writes the header (and the ICC profile); the samples follow.
    fn start(&mut self) -> io::Result<()> {
        // SAFETY: the compressor is set up; the profile's segments are written between
        // `jpeg_start_compress` and the first row, as libjpeg requires.
        unsafe { ffi::jpeg_start_compress(&mut self.cinfo, 1) };
        if let Some(icc) = self.icc.take() {
            for segment in icc_segments(&icc)? {
                unsafe {
                    ffi::jpeg_write_marker(
                        &mut self.cinfo,
                        0xE2,
                        segment.as_ptr(),
                        segment.len() as c_uint,
                    )
                };
            }
        }
        Ok(())
    }

    /// Ends the file; its bytes.
    fn finish(mut self) -> io::Result<Vec<u8>> {
        // SAFETY: every row has been written; the buffer holds `out.1` bytes once finished.
        unsafe { ffi::jpeg_finish_compress(&mut self.cinfo) };
        let (buffer, len) = *self.out;
        Ok(unsafe { std::slice::from_raw_parts(buffer, len as usize) }.to_vec())
    }
}

/// Tells the created compressor `cinfo` its input (`width`×`height` pixels of `components`
/// samples in `space`) and how to write it: libjpeg-turbo's fastest profile at `how`'s quality,
/// without optimised Huffman tables, with `how`'s luma sampling factors for three components.
fn describe(
    cinfo: &mut ffi::jpeg_compress_struct,
    (width, height): (u32, usize),
    (space, components): (ffi::J_COLOR_SPACE, usize),
    how: &Written,
) {
    cinfo.image_width = width;
    cinfo.image_height = height as u32;
    cinfo.in_color_space = space;
    cinfo.input_components = components as c_int;
    // SAFETY: the compressor is created and its input described, as these calls require.
    unsafe {
        ffi::jpeg_c_set_int_param(
            cinfo,
            ffi::J_INT_PARAM::JINT_COMPRESS_PROFILE,
            ffi::JINT_COMPRESS_PROFILE_VALUE::JCP_FASTEST as c_int,
        );
        ffi::jpeg_set_defaults(cinfo);
        ffi::jpeg_set_quality(cinfo, how.quality.clamp(1, 100) as c_int, 0);
    }
    cinfo.optimize_coding = 0;
    if space == ffi::J_COLOR_SPACE::JCS_CMYK {
        cinfo.write_Adobe_marker = how.adobe_marker as ffi::boolean;
    }
    if components == 3 {
        // SAFETY: `jpeg_set_defaults` allocated one `comp_info` per component.
        let comps = unsafe { std::slice::from_raw_parts_mut(cinfo.comp_info, 3) };
        comps[0].h_samp_factor = how.luma_factors.0 as c_int;
        comps[0].v_samp_factor = how.luma_factors.1 as c_int;
        for chroma in &mut comps[1..] {
            chroma.h_samp_factor = 1;
            chroma.v_samp_factor = 1;
        }
    }
}

impl Drop for Compressor {
    fn drop(&mut self) {
        // SAFETY: created in `new`; `jpeg_mem_dest`'s buffer is malloc'd and ours to free.
        // The memory destination frees its buffer when it outgrows it and says where the
        // current one is only when terminated: terminating it first (again, after a finished
        // file) makes `out` name the live buffer on every path, an error's unwinding too.
        unsafe {
            if !self.cinfo.dest.is_null() {
                if let Some(term) = (*self.cinfo.dest).term_destination {
                    term(&mut self.cinfo);
                }
            }
            ffi::jpeg_destroy_compress(&mut self.cinfo);
            if !self.out.0.is_null() {
                libc::free(self.out.0.cast());
            }
        }
    }
}

/// The bodies of the APP2 segments that hold `icc` (ICC.1, "Embedding ICC profiles in JPEG
/// files"): the profile in chunks of at most 65519 bytes, each after its signature, its
/// number and the count.
pub fn icc_segments(icc: &[u8]) -> io::Result<Vec<Vec<u8>>> {
    const CHUNK: usize = 65535 - 2 - 14;
    let count = icc.len().div_ceil(CHUNK);
    if count > 255 {
        return Err(io::Error::other(
            "the ICC profile is over 16 MB, more than JPEG can hold",
        ));
    }
    Ok(icc
        .chunks(CHUNK)
        .enumerate()
        .map(|(i, part)| {
            let mut body = Vec::with_capacity(14 + part.len());
            body.extend_from_slice(b"ICC_PROFILE\0");
            body.extend_from_slice(&[i as u8 + 1, count as u8]);
            body.extend_from_slice(part);
            body
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A compressor dropped midway (as when an error unwinds through it) after its output
    /// outgrew the first buffer frees the buffer in use, once: without terminating the
    /// destination first it would free the outgrown one again (glibc aborts on that).
    #[test]
    fn a_compressor_dropped_midway_frees_its_live_buffer() {
        let how = Written {
            quality: 100,
            luma_factors: (1, 1),
            adobe_marker: false,
            icc: None,
        };
        let rows: Vec<u8> = (0..256 * 256 * 3).map(|i| (i * 7919 % 251) as u8).collect();
        let mut c = Compressor::new((256, 256), ffi::J_COLOR_SPACE::JCS_RGB, 3, how).unwrap();
        c.start().unwrap();
        let pointers: Vec<*const u8> = rows
            .chunks_exact(256 * 3)
            .take(200)
            .map(<[u8]>::as_ptr)
            .collect();
        // SAFETY: 200 rows of 256 RGB pixels, alive for the call.
        let done = unsafe { ffi::jpeg_write_scanlines(&mut c.cinfo, pointers.as_ptr(), 200) };
        assert_eq!(done, 200);
        drop(c);
    }
}
