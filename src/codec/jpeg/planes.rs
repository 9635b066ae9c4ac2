//! A colour JPEG as its YCbCr planes at their own resolutions, straight from the entropy
//! decoder's IDCT and straight back into the encoder's FDCT: no colour conversion, no chroma
//! upsampling or downsampling. JFIF's colour transform is affine and the blur is a normalised
//! linear filter, so blurring the planes (chroma on its own grid, at sigma over its
//! subsampling factor) gives the picture that blurring RGB gives, apart from rounding and
//! the chroma resampling the RGB route adds (docs/ALGORITHMS.md, "JPEG in YCbCr planes").

use super::compress::Chroma;
use super::compress::{compress_planes, Written};
use super::decode::frame_within;
use super::encode::{encode_stripes, StripePlan};
use super::entropy;
use super::errors::{run, strict_errors};
use super::pieces::Pieces;
use image::metadata::Orientation;
use image::{GrayImage, RgbImage};
use mozjpeg_sys as ffi;
use mozjpeg_sys::J_COLOR_SPACE;
use rayon::prelude::*;

/// The three planes of a YCbCr JPEG, each cropped to its own size: Y `width`×`height`, Cb and
/// Cr `ceil(width / h)`×`ceil(height / v)` for the layout's factors (h, v).
pub struct YccPlanes {
    pub width: u32,
    pub height: u32,
    pub chroma: Chroma,
    /// Y, Cb, Cr.
    pub planes: [GrayImage; 3],
}

impl YccPlanes {
    /// Bytes the planes hold.
    pub fn bytes(&self) -> u64 {
        self.planes.iter().map(|p| p.len() as u64).sum()
    }

    /// Whether planes in layout `chroma` of a `width` × `height` picture keep their chroma
    /// where it was when turned by `orientation`: not where 4:2:2 chroma is turned a quarter
    /// (it would be 4:4:0, which gblur does not write), nor where a subsampled axis of odd
    /// length is read backwards (the last chroma sample covers one luma sample, which the turn
    /// moves to the start, and every chroma sample would then sit over its neighbour's luma).
    pub fn turnable(chroma: Chroma, (width, height): (u32, u32), orientation: Orientation) -> bool {
        // Which of the stored axes the turn reads backwards.
        let (back_x, back_y) = match orientation {
            Orientation::NoTransforms | Orientation::Rotate90FlipH => (false, false),
            Orientation::Rotate180 | Orientation::Rotate270FlipH => (true, true),
            Orientation::FlipHorizontal | Orientation::Rotate270 => (true, false),
            Orientation::FlipVertical | Orientation::Rotate90 => (false, true),
        };
        let (fh, fv) = chroma.factors();
        let odd_backwards =
            (back_x && fh == 2 && width % 2 == 1) || (back_y && fv == 2 && height % 2 == 1);
        let quarter_of_422 = transposes(orientation) && chroma == Chroma::S422;
        !(quarter_of_422 || odd_backwards)
    }

    /// Turns the planes as `orientation` turns a picture to stand upright (an EXIF
    /// Orientation), each plane on its own grid; false, untouched, where they are not
    /// `turnable`.
    pub fn turn(&mut self, orientation: Orientation) -> bool {
        if !Self::turnable(self.chroma, (self.width, self.height), orientation) {
            return false;
        }
        if orientation == Orientation::NoTransforms {
            return true;
        }
        for plane in &mut self.planes {
            *plane = turned(plane, orientation);
        }
        if transposes(orientation) {
            (self.width, self.height) = (self.height, self.width);
        }
        true
    }

    /// The picture as RGB (JFIF's full-range BT.601 transform), each pixel's chroma from the
    /// chroma sample covering it: for a job whose planes must end up as RGB samples after
    /// all (another output format, a selection to mix in).
    pub fn to_rgb(&self) -> RgbImage {
        let (h, v) = self.chroma.factors();
        let [y, cb, cr] = &self.planes;
        RgbImage::from_fn(self.width, self.height, |px, py| {
            let l = y.get_pixel(px, py).0[0] as f32;
            let b = cb.get_pixel(px / h, py / v).0[0] as f32 - 128.0;
            let r = cr.get_pixel(px / h, py / v).0[0] as f32 - 128.0;
            let q = |f: f32| f.round().clamp(0.0, 255.0) as u8;
            image::Rgb([
                q(l + 1.402 * r),
                q(l - 0.344_136 * b - 0.714_136 * r),
                q(l + 1.772 * b),
            ])
        })
    }
}

/// Whether `orientation` turns a picture a quarter (its width becomes its height).
fn transposes(orientation: Orientation) -> bool {
    matches!(
        orientation,
        Orientation::Rotate90
            | Orientation::Rotate270
            | Orientation::Rotate90FlipH
            | Orientation::Rotate270FlipH
    )
}

/// Square tiles of a turn: a tile's source rows and output rows both stay in the L1 cache.
const TURN_TILE: usize = 64;

/// `plane` turned by `orientation`, on every core, a tile at a time (a turn that walks the
/// output in rows reads the source a column at a time, a cache line per sample).
fn turned(plane: &GrayImage, orientation: Orientation) -> GrayImage {
    let (w, h) = (plane.width() as usize, plane.height() as usize);
    // Each turn by where output (x, y) reads from, in a plane `w` × `h` (the source's).
    match orientation {
        Orientation::NoTransforms => plane.clone(),
        Orientation::Rotate90 => turned_by(plane, (h, w), |x, y| (y, h - 1 - x)),
        Orientation::Rotate180 => turned_by(plane, (w, h), |x, y| (w - 1 - x, h - 1 - y)),
        Orientation::Rotate270 => turned_by(plane, (h, w), |x, y| (w - 1 - y, x)),
        Orientation::FlipHorizontal => turned_by(plane, (w, h), |x, y| (w - 1 - x, y)),
        Orientation::FlipVertical => turned_by(plane, (w, h), |x, y| (x, h - 1 - y)),
        Orientation::Rotate90FlipH => turned_by(plane, (h, w), |x, y| (y, x)),
        Orientation::Rotate270FlipH => turned_by(plane, (h, w), |x, y| (w - 1 - y, h - 1 - x)),
    }
}

/// The `ow` × `oh` plane whose sample (x, y) is `plane`'s at `source(x, y)`.
fn turned_by(
    plane: &GrayImage,
    (ow, oh): (usize, usize),
    source: impl Fn(usize, usize) -> (usize, usize) + Sync,
) -> GrayImage {
    let (w, src) = (plane.width() as usize, plane.as_raw());
    let mut out = vec![0u8; ow * oh];
    out.par_chunks_mut(TURN_TILE * ow.max(1))
        .enumerate()
        .for_each(|(band, rows)| {
            let y0 = band * TURN_TILE;
            for x0 in (0..ow).step_by(TURN_TILE) {
                for (dy, row) in rows.chunks_mut(ow).enumerate() {
                    for (x, v) in row.iter_mut().enumerate().skip(x0).take(TURN_TILE) {
                        let (sx, sy) = source(x, y0 + dy);
                        *v = src[sy * w + sx];
                    }
                }
            }
        });
    GrayImage::from_raw(ow as u32, oh as u32, out).expect("the turned plane's size")
}

/// Whether libjpeg reads `bytes` as YCbCr with the luma sampled `(h, v)` times the chroma's.
fn has_layout(bytes: &[u8], (h, v): (u32, u32)) -> bool {
    let taken = run(|| {
        let decompress = mozjpeg::Decompress::with_err(strict_errors()).from_mem(bytes)?;
        let factors: Vec<(u8, u8)> = decompress
            .components()
            .iter()
            .map(|c| (c.h_samp_factor as u8, c.v_samp_factor as u8))
            .collect();
        let want = [(h as u8, v as u8), (1, 1), (1, 1)];
        Ok(decompress.color_space() == J_COLOR_SPACE::JCS_YCbCr && factors == want)
    });
    taken.unwrap_or(false)
}

/// The MCU rows each restart piece decodes (`mcu_height` pixel rows to an MCU row), or all
/// `mcu_rows` where the file has no pieces.
fn mcu_spans(pieces: Option<&Pieces>, mcu_rows: usize, mcu_height: usize) -> Vec<(usize, usize)> {
    match pieces {
        None => vec![(0, mcu_rows)],
        Some(p) => (0..p.len())
            .map(|i| {
                let rows = p.rows(i);
                (rows.start / mcu_height, rows.end.div_ceil(mcu_height))
            })
            .collect(),
    }
}

/// The planes of `bytes`, or None where the file is not an 8-bit YCbCr JPEG in the `chroma`
/// layout (gblur writes 4:4:4, 4:2:2 and 4:2:0), where libjpeg refuses it or finds its data
/// damaged (the pixels' decoders then read it, or say what is wrong), or where its planes
/// and libjpeg's working memory would be over `max_bytes`.
pub fn decode_planes(bytes: &[u8], chroma: Chroma, max_bytes: u64) -> Option<YccPlanes> {
    let frame = frame_within(bytes, 3, max_bytes)?;
    let (h, v) = chroma.factors();
    if !has_layout(bytes, (h, v)) {
        return None;
    }
    let (width, height) = (frame.width, frame.height);
    // Every plane padded as libjpeg hands it out: rows of whole blocks, whole MCU rows.
    let mcu_rows = (height as usize).div_ceil(8 * v as usize);
    let luma_stride = (width as usize).div_ceil(8) * 8;
    let chroma_stride = (width as usize).div_ceil(8 * h as usize) * 8;
    let strides = [luma_stride, chroma_stride, chroma_stride];
    let rows_per_mcu = [8 * v as usize, 8, 8];
    let mut planes: Vec<Vec<u8>> = (0..3)
        .map(|k| vec![0u8; strides[k] * rows_per_mcu[k] * mcu_rows])
        .collect();
    // Restart pieces decode on every core, each into its own rows of the planes; a file
    // without them on every core too, where there are several (`entropy`).
    let pieces = Pieces::cut(bytes);
    // The parallel decode holds a copy of the scan's data (at most the file) besides.
    let copy_fits =
        super::working_bytes(bytes, frame, 3).saturating_add(bytes.len() as u64) <= max_bytes;
    if pieces.is_none() && copy_fits && rayon::current_num_threads() > 1 {
        let [y, cb, cr] = &mut planes[..] else {
            unreachable!("three planes");
        };
        if entropy::decode_into(bytes, [y, cb, cr], strides).is_some() {
            return cropped_planes(planes, strides, (width, height), chroma);
        }
    }
    let spans = mcu_spans(pieces.as_ref(), mcu_rows, 8 * v as usize);
    let [y, cb, cr] = &mut planes[..] else {
        unreachable!("three planes");
    };
    let mut rest: [&mut [u8]; 3] = [y, cb, cr];
    let parts: Vec<[&mut [u8]; 3]> = spans
        .iter()
        .map(|&(m0, m1)| {
            std::array::from_fn(|k| {
                let len = (m1 - m0) * rows_per_mcu[k] * strides[k];
                let (part, after) = std::mem::take(&mut rest[k]).split_at_mut(len);
                rest[k] = after;
                part
            })
        })
        .collect();
    let decoded: Result<(), String> =
        parts.into_par_iter().enumerate().try_for_each(|(i, part)| {
            let (jpeg, rows) = match &pieces {
                None => (std::borrow::Cow::Borrowed(bytes), height as usize),
                Some(p) => (std::borrow::Cow::Owned(p.jpeg(i)), p.rows(i).len()),
            };
            run(|| raw_into(&jpeg, (width, rows), part, strides))
        });
    decoded.ok()?;
    cropped_planes(planes, strides, (width, height), chroma)
}

/// The planes decoded whole blocks at a time, cropped to the picture's `width` × `height`.
fn cropped_planes(
    planes: Vec<Vec<u8>>,
    strides: [usize; 3],
    (width, height): (u32, u32),
    chroma: Chroma,
) -> Option<YccPlanes> {
    let (h, v) = chroma.factors();
    let sizes = [
        (width as usize, height as usize),
        (
            (width as usize).div_ceil(h as usize),
            (height as usize).div_ceil(v as usize),
        ),
        (
            (width as usize).div_ceil(h as usize),
            (height as usize).div_ceil(v as usize),
        ),
    ];
    let mut cropped = planes
        .into_iter()
        .zip(strides)
        .zip(sizes)
        .map(|((data, stride), size)| {
            let plane = crop(data, stride, size)?;
            GrayImage::from_raw(size.0 as u32, size.1 as u32, plane)
        });
    Some(YccPlanes {
        width,
        height,
        chroma,
        planes: [cropped.next()??, cropped.next()??, cropped.next()??],
    })
}

/// A libjpeg decompressor reading from memory (borrowed for as long as it lives: libjpeg
/// reads it in place), destroyed when dropped, also when an error unwinds through it.
struct Decompressor<'a> {
    cinfo: Box<ffi::jpeg_decompress_struct>,
    _errors: Box<ffi::jpeg_error_mgr>,
    _source: std::marker::PhantomData<&'a [u8]>,
}

impl<'a> Decompressor<'a> {
    /// A decompressor reading `jpeg`, its header read.
    fn reading(jpeg: &'a [u8]) -> Decompressor<'a> {
        let mut d = Decompressor {
            // SAFETY: a zeroed struct is what `jpeg_CreateDecompress` expects to initialise.
            cinfo: Box::new(unsafe { std::mem::zeroed() }),
            _errors: Box::new(strict_errors()),
            _source: std::marker::PhantomData,
        };
        d.cinfo.common.err = &mut *d._errors;
        let cinfo = &mut *d.cinfo;
        // SAFETY: the struct and its error manager are boxed and outlive the decompressor; the
        // source bytes outlive it too (it borrows them).
        unsafe {
            ffi::jpeg_CreateDecompress(
                cinfo,
                ffi::JPEG_LIB_VERSION,
                size_of::<ffi::jpeg_decompress_struct>(),
            );
            ffi::jpeg_mem_src(cinfo, jpeg.as_ptr(), jpeg.len() as _);
            ffi::jpeg_read_header(cinfo, 1);
        }
        d
    }
}

impl Drop for Decompressor<'_> {
    fn drop(&mut self) {
        // SAFETY: created in `reading`.
        unsafe { ffi::jpeg_destroy_decompress(&mut self.cinfo) };
    }
}

/// Decodes `jpeg` (a whole file or one of its restart pieces, `width`×`rows` pixels) as its
/// YCbCr planes straight into `planes`, rows `strides` apart (whole blocks), whole MCU rows:
/// an error where libjpeg reads another layout or finds the data damaged.
pub(super) fn raw_into(
    jpeg: &[u8],
    (width, rows): (u32, usize),
    planes: [&mut [u8]; 3],
    strides: [usize; 3],
) -> std::io::Result<()> {
    let mut d = Decompressor::reading(jpeg);
    let cinfo = &mut *d.cinfo;
    let other = |why: &str| std::io::Error::other(why.to_string());
    if (
        cinfo.image_width,
        cinfo.image_height as usize,
        cinfo.num_components,
    ) != (width, rows, 3)
    {
        return Err(other("libjpeg reads another size than its header"));
    }
    cinfo.raw_data_out = 1;
    // SAFETY: the header is read; raw output asked for.
    unsafe { ffi::jpeg_start_decompress(cinfo) };
    // SAFETY: after `jpeg_start_decompress` the three components' descriptions are set.
    let comps = unsafe { std::slice::from_raw_parts(cinfo.comp_info, 3) };
    let max_v = cinfo.max_v_samp_factor as usize;
    let v: Vec<usize> = comps.iter().map(|c| c.v_samp_factor as usize).collect();
    if comps
        .iter()
        .zip(strides)
        .any(|(c, s)| c.width_in_blocks as usize * 8 != s)
    {
        return Err(other("libjpeg pads the planes otherwise"));
    }
    let mut pointers = [[std::ptr::null_mut::<u8>(); 32]; 3];
    let planes = planes.map(|p| p.as_mut_ptr_range());
    while cinfo.output_scanline < cinfo.output_height {
        let row = cinfo.output_scanline as usize;
        for k in 0..3 {
            let rows = &mut pointers[k][..8 * v[k]];
            point_rows(rows, row * v[k] / max_v, strides[k], &planes[k]).map_err(other)?;
        }
        let image = [
            pointers[0].as_mut_ptr(),
            pointers[1].as_mut_ptr(),
            pointers[2].as_mut_ptr(),
        ];
        // SAFETY: every row pointer addresses `stride` samples of this piece's part, as many
        // rows per plane as one MCU row holds.
        let read = unsafe { ffi::jpeg_read_raw_data(cinfo, image.as_ptr() as _, (8 * max_v) as _) };
        if read == 0 {
            return Err(other("libjpeg read no rows"));
        }
    }
    // SAFETY: every row is read.
    unsafe { ffi::jpeg_finish_decompress(cinfo) };
    Ok(())
}

/// Points `pointers` at rows `first`, `first + 1`, ... of the plane `part` (rows `stride`
/// apart): where libjpeg writes one MCU row's rows of a component.
fn point_rows(
    pointers: &mut [*mut u8],
    first: usize,
    stride: usize,
    part: &std::ops::Range<*mut u8>,
) -> Result<(), &'static str> {
    let len = part.end as usize - part.start as usize;
    for (j, pointer) in pointers.iter_mut().enumerate() {
        let at = (first + j) * stride;
        // Every MCU row of the piece has its rows in the part (whole MCU rows).
        if at + stride > len {
            return Err("libjpeg hands out more rows than the frame has");
        }
        // SAFETY: `at + stride` is within this plane's part, checked above.
        *pointer = unsafe { part.start.add(at) };
    }
    Ok(())
}

/// The top-left `w`×`h` of a plane whose rows are `stride` samples apart (the decoder pads
/// planes to whole MCUs), in place.
fn crop(mut data: Vec<u8>, stride: usize, (w, h): (usize, usize)) -> Option<Vec<u8>> {
    if stride < w || data.len() < stride * h {
        return None;
    }
    if stride != w {
        for row in 1..h {
            data.copy_within(row * stride..row * stride + w, row * w);
        }
    }
    data.truncate(w * h);
    Some(data)
}

/// Encodes the planes at `quality` (1-100) in their own layout, with `icc` embedded if
/// given: in stripes on every core, joined by restart markers, as `encode` does for RGB.
pub fn encode_planes(p: &YccPlanes, quality: u8, icc: Option<&[u8]>) -> Result<Vec<u8>, String> {
    let (h, v) = p.chroma.factors();
    let plan = StripePlan::new((p.width, p.height), (8 * h, 8 * v))?;
    encode_stripes(&plan, |r0, r1| {
        // Luma rows r0..r1 are chroma rows r0 / v .. ceil(r1 / v): stripes start on MCU rows.
        let rows = |i: usize| {
            let (f, plane) = if i == 0 {
                (1, &p.planes[0])
            } else {
                (v, &p.planes[i])
            };
            let (a, b) = (r0 / f as usize, r1.div_ceil(f as usize));
            let w = plane.width() as usize;
            (&plane.as_raw()[a * w..b * w], w)
        };
        let how = Written {
            quality,
            luma_factors: (h as u8, v as u8),
            adobe_marker: false,
            icc: icc.filter(|_| r0 == 0),
        };
        let size = (p.width, (r1 - r0) as u32);
        compress_planes([rows(0), rows(1), rows(2)], size, how)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::jpeg::{encode_stripe, JpegColor, JpegSettings};

    const EVERY_TURN: [Orientation; 8] = [
        Orientation::NoTransforms,
        Orientation::Rotate90,
        Orientation::Rotate180,
        Orientation::Rotate270,
        Orientation::FlipHorizontal,
        Orientation::FlipVertical,
        Orientation::Rotate90FlipH,
        Orientation::Rotate270FlipH,
    ];

    /// Each turn is the `image` crate's, the one the pixels' decode applies, on planes of
    /// sizes that leave partial tiles.
    #[test]
    fn every_turn_is_the_one_pixels_get() {
        for (w, h) in [(1, 1), (3, 130), (131, 67), (64, 64)] {
            let plane = GrayImage::from_fn(w, h, |x, y| image::Luma([(x * 31 + y * 7) as u8]));
            for o in EVERY_TURN {
                let mut want = image::DynamicImage::ImageLuma8(plane.clone());
                want.apply_orientation(o);
                assert!(turned(&plane, o) == want.into_luma8(), "{w}x{h} {o:?}");
            }
        }
    }

    /// Turned planes keep their layout: chroma is turned on its own grid; 4:2:2 is not turned
    /// a quarter (it would be 4:4:0).
    #[test]
    fn turned_planes_keep_their_layout_or_are_left_alone() {
        for chroma in [Chroma::S420, Chroma::S422, Chroma::S444] {
            let (w, h) = (67u32, 45u32);
            let (fh, fv) = chroma.factors();
            let plane = |w, h| GrayImage::from_fn(w, h, |x, y| image::Luma([(x + 3 * y) as u8]));
            for o in EVERY_TURN {
                let mut p = YccPlanes {
                    width: w,
                    height: h,
                    chroma,
                    planes: [
                        plane(w, h),
                        plane(w.div_ceil(fh), h.div_ceil(fv)),
                        plane(w.div_ceil(fh), h.div_ceil(fv)),
                    ],
                };
                let quarter = matches!(
                    o,
                    Orientation::Rotate90
                        | Orientation::Rotate270
                        | Orientation::Rotate90FlipH
                        | Orientation::Rotate270FlipH
                );
                // 67 × 45 is odd both ways: a turn that reads a subsampled axis backwards
                // would move the chroma against the luma.
                let refused = match chroma {
                    Chroma::S444 => false,
                    Chroma::S420 => {
                        !matches!(o, Orientation::NoTransforms | Orientation::Rotate90FlipH)
                    }
                    Chroma::S422 => {
                        quarter || matches!(o, Orientation::Rotate180 | Orientation::FlipHorizontal)
                    }
                };
                if refused {
                    assert!(!p.turn(o), "{chroma:?} {o:?}");
                    assert_eq!((p.width, p.planes[1].width()), (w, w.div_ceil(fh)));
                    continue;
                }
                assert!(p.turn(o));
                let (tw, th) = if quarter { (h, w) } else { (w, h) };
                assert_eq!((p.width, p.height), (tw, th));
                assert_eq!(p.planes[0].dimensions(), (tw, th));
                assert_eq!(
                    p.planes[1].dimensions(),
                    (tw.div_ceil(fh), th.div_ceil(fv)),
                    "{chroma:?} {o:?}"
                );
            }
        }
    }

    fn photo(w: u32, h: u32) -> Vec<u8> {
        (0..h)
            .flat_map(|y| {
                (0..w).flat_map(move |x| {
                    [
                        (x * 255 / w) as u8,
                        (y * 255 / h) as u8,
                        ((x * 7 + y * 13) % 256) as u8,
                    ]
                })
            })
            .collect()
    }

    fn jpeg(w: u32, h: u32, chroma: Chroma) -> Vec<u8> {
        let settings = JpegSettings {
            quality: 90,
            chroma,
        };
        encode_stripe(&photo(w, h), w, JpegColor::Rgb, settings, None).unwrap()
    }

    /// The file as libjpeg decodes it: one decoder for both files, as decoders
    /// differ in the chroma of an odd last column.
    fn rgb_of(bytes: &[u8]) -> image::RgbImage {
        super::super::decode_pixels(bytes, 1 << 30)
            .unwrap()
            .expect("a plain JPEG")
            .to_rgb8()
    }

    /// Planes decoded and encoded again (at 100, stripes and all) decode to the picture the
    /// file holds, for odd sizes and every layout.
    #[test]
    fn planes_round_trip_to_the_same_picture() {
        for chroma in [Chroma::S444, Chroma::S422, Chroma::S420] {
            for (w, h) in [(1, 1), (17, 33), (67, 45), (300, 97), (64, 700)] {
                let file = jpeg(w, h, chroma);
                let planes = decode_planes(&file, chroma, 1 << 30).expect("plain file");
                let (hf, vf) = chroma.factors();
                assert_eq!(planes.planes[0].dimensions(), (w, h));
                assert_eq!(
                    planes.planes[1].dimensions(),
                    (w.div_ceil(hf), h.div_ceil(vf))
                );
                let again = encode_planes(&planes, 100, None).unwrap();
                let (a, b) = (rgb_of(&file), rgb_of(&again));
                let worst = a.iter().zip(b.iter()).map(|(p, q)| p.abs_diff(*q)).max();
                assert!(worst.unwrap() <= 4, "{chroma:?} {w}x{h}: {worst:?}");
                let back = decode_planes(&again, chroma, 1 << 30).unwrap();
                for (p, q) in planes.planes.iter().zip(&back.planes) {
                    let worst = p.iter().zip(q.iter()).map(|(a, b)| a.abs_diff(*b)).max();
                    // Quality 100 quantises by 1: what is left is the DCTs' integer rounding.
                    assert!(worst.unwrap() <= 4, "{chroma:?} {w}x{h} planes: {worst:?}");
                }
            }
        }
    }

    /// Full-chroma planes turn into the RGB a decoder gives, within the decoders' rounding.
    #[test]
    fn planes_to_rgb_match_a_decoder() {
        let file = jpeg(67, 45, Chroma::S444);
        let rgb = decode_planes(&file, Chroma::S444, 1 << 30)
            .unwrap()
            .to_rgb();
        let want = rgb_of(&file);
        let worst = rgb
            .iter()
            .zip(want.iter())
            .map(|(a, b)| a.abs_diff(*b))
            .max();
        // Decoders round the colour transform in fixed point, each its own way.
        assert!(worst.unwrap() <= 3, "{worst:?}");
    }

    #[test]
    fn other_layouts_gray_and_damaged_files_are_not_taken() {
        let file = jpeg(40, 24, Chroma::S420);
        assert!(decode_planes(&file, Chroma::S444, 1 << 30).is_none());
        let settings = JpegSettings {
            quality: 90,
            chroma: Chroma::S444,
        };
        let gray = encode_stripe(&[9u8; 64 * 8], 64, JpegColor::Gray, settings, None).unwrap();
        assert!(decode_planes(&gray, Chroma::S444, 1 << 30).is_none());
        let sos = file.windows(2).position(|w| w == [0xFF, 0xDA]).unwrap();
        for cut in [10, sos, sos + 40] {
            assert!(decode_planes(&file[..cut], Chroma::S420, 1 << 30).is_none());
        }
        assert!(decode_planes(&file, Chroma::S420, 1000).is_none());
    }

    #[test]
    fn the_profile_is_embedded_once() {
        let planes = decode_planes(&jpeg(40, 300, Chroma::S420), Chroma::S420, 1 << 30).unwrap();
        let icc = vec![5u8; 200];
        let out = encode_planes(&planes, 85, Some(&icc)).unwrap();
        assert_eq!(out.windows(12).filter(|w| w == b"ICC_PROFILE\0").count(), 1);
        use image::ImageDecoder as _;
        let mut d = crate::codec::jpeg::JpegHead::of_file(&out).unwrap();
        assert_eq!(d.icc_profile().unwrap(), Some(icc));
    }

    /// Decoded in restart pieces on every core, a file gives exactly its whole decode's planes.
    #[test]
    fn restart_pieces_join_into_the_whole_planes() {
        for chroma in [Chroma::S420, Chroma::S422, Chroma::S444] {
            let (w, h) = (150, 1300);
            let settings = JpegSettings {
                quality: 90,
                chroma,
            };
            let file =
                crate::codec::jpeg::encode(&photo(w, h), (w, h), JpegColor::Rgb, settings, None)
                    .unwrap();
            assert!(Pieces::cut(&file).is_some_and(|p| p.len() >= 3));
            let joined = decode_planes(&file, chroma, 1 << 30).unwrap();
            // The same pixels in one stripe: the same coefficients, decoded whole.
            let one = encode_stripe(&photo(w, h), w, JpegColor::Rgb, settings, None).unwrap();
            assert!(Pieces::cut(&one).is_none());
            let whole = decode_planes(&one, chroma, 1 << 30).unwrap();
            for (a, b) in joined.planes.iter().zip(&whole.planes) {
                assert!(a == b, "{chroma:?}");
            }
        }
    }

    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]
        /// Damaged files (bytes overwritten, cut short) never panic the planes decoder, and
        /// what it accepts has planes of the sizes its layout gives.
        #[test]
        fn damaged_files_never_panic(
            which in 0usize..3,
            edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..12),
            cut in any::<prop::sample::Index>(),
            shorten in any::<bool>(),
            tall in any::<bool>(),
        ) {
            let chroma = [Chroma::S420, Chroma::S422, Chroma::S444][which];
            let mut file = match tall {
                // Tall enough to be cut into restart pieces.
                true => {
                    let settings = JpegSettings { quality: 90, chroma };
                    crate::codec::jpeg::encode(&photo(16, 600), (16, 600), JpegColor::Rgb, settings, None).unwrap()
                }
                false => jpeg(40, 24, chroma),
            };
            for (at, byte) in edits {
                let i = at.index(file.len());
                file[i] = byte;
            }
            if shorten {
                file.truncate(cut.index(file.len()).max(2));
            }
            if let Some(p) = decode_planes(&file, chroma, 64 << 20) {
                let (h, v) = chroma.factors();
                prop_assert_eq!(p.planes[0].dimensions(), (p.width, p.height));
                let chroma_size = (p.width.div_ceil(h), p.height.div_ceil(v));
                prop_assert_eq!(p.planes[1].dimensions(), chroma_size);
                prop_assert_eq!(p.planes[2].dimensions(), chroma_size);
            }
        }
    }
}
