//! Blurring images in memory on the host's cores: `image`'s `DynamicImage` and `ImageBuffer`,
//! raw interleaved samples with a row stride, and planar f32.
//!
//! Decoded images take the command line's own Rust path (the banded blur in place, the edge
//! modes by extension), so a `DynamicImage` blurred here has the same samples as `gblur`'s
//! output for it. Raw buffers take the banded blur where they can (rows without gaps, clamped
//! edges, recursive filters on both axes) and otherwise a premultiplied f32 copy filtered axis
//! by axis (`cpu::axis`).

use super::{Error, Gaussian};
use crate::cpu::axis::{self, AxisFilter};
use crate::cpu::interleaved::WholeImage;
use crate::cpu::reference;
use crate::filter::{EdgeMode, LineFilter};
use crate::pixels;
use crate::work::edges::{self, EdgePlan};
use image::{DynamicImage, ImageBuffer, Pixel};
use rayon::prelude::*;

mod private {
    use image::{DynamicImage, ImageBuffer};

    /// Keeps `Sample` to the types the blur implements, and maps packed samples to the
    /// `DynamicImage` that holds them, where one does (a device's image path takes those).
    pub trait Sealed: crate::cpu::banded::Sample + crate::cpu::axis::Element {
        /// The image of `channels` samples a pixel (the last alpha where `alpha`), if a
        /// `DynamicImage` variant holds exactly that.
        fn to_image(
            data: Vec<Self>,
            size: (u32, u32),
            channels: usize,
            alpha: bool,
        ) -> Option<DynamicImage>;
        /// The samples of an image `to_image` made.
        fn from_image(image: DynamicImage) -> Option<Vec<Self>>;
    }

    impl Sealed for u8 {
        fn to_image(
            data: Vec<u8>,
            (w, h): (u32, u32),
            channels: usize,
            alpha: bool,
        ) -> Option<DynamicImage> {
            Some(match (channels, alpha) {
                (1, false) => DynamicImage::ImageLuma8(ImageBuffer::from_raw(w, h, data)?),
                (2, true) => DynamicImage::ImageLumaA8(ImageBuffer::from_raw(w, h, data)?),
                (3, false) => DynamicImage::ImageRgb8(ImageBuffer::from_raw(w, h, data)?),
                (4, true) => DynamicImage::ImageRgba8(ImageBuffer::from_raw(w, h, data)?),
                _ => return None,
            })
        }
        fn from_image(image: DynamicImage) -> Option<Vec<u8>> {
            match image {
                DynamicImage::ImageLuma8(b) => Some(b.into_raw()),
                DynamicImage::ImageLumaA8(b) => Some(b.into_raw()),
                DynamicImage::ImageRgb8(b) => Some(b.into_raw()),
                DynamicImage::ImageRgba8(b) => Some(b.into_raw()),
                _ => None,
            }
        }
    }

    impl Sealed for u16 {
        fn to_image(
            data: Vec<u16>,
            (w, h): (u32, u32),
            channels: usize,
            alpha: bool,
        ) -> Option<DynamicImage> {
            Some(match (channels, alpha) {
                (1, false) => DynamicImage::ImageLuma16(ImageBuffer::from_raw(w, h, data)?),
                (2, true) => DynamicImage::ImageLumaA16(ImageBuffer::from_raw(w, h, data)?),
                (3, false) => DynamicImage::ImageRgb16(ImageBuffer::from_raw(w, h, data)?),
                (4, true) => DynamicImage::ImageRgba16(ImageBuffer::from_raw(w, h, data)?),
                _ => return None,
            })
        }
        fn from_image(image: DynamicImage) -> Option<Vec<u16>> {
            match image {
                DynamicImage::ImageLuma16(b) => Some(b.into_raw()),
                DynamicImage::ImageLumaA16(b) => Some(b.into_raw()),
                DynamicImage::ImageRgb16(b) => Some(b.into_raw()),
                DynamicImage::ImageRgba16(b) => Some(b.into_raw()),
                _ => None,
            }
        }
    }

    impl Sealed for f32 {
        fn to_image(
            data: Vec<f32>,
            (w, h): (u32, u32),
            channels: usize,
            alpha: bool,
        ) -> Option<DynamicImage> {
            Some(match (channels, alpha) {
                (3, false) => DynamicImage::ImageRgb32F(ImageBuffer::from_raw(w, h, data)?),
                (4, true) => DynamicImage::ImageRgba32F(ImageBuffer::from_raw(w, h, data)?),
                _ => return None,
            })
        }
        fn from_image(image: DynamicImage) -> Option<Vec<f32>> {
            match image {
                DynamicImage::ImageRgb32F(b) => Some(b.into_raw()),
                DynamicImage::ImageRgba32F(b) => Some(b.into_raw()),
                _ => None,
            }
        }
    }
}

/// A sample type an image can hold: `u8`, `u16` (levels of full scale 255 and 65535) or `f32`
/// (full scale 1, any value).
///
/// ```
/// // Code generic over the sample types a raw buffer may hold.
/// fn soften<T: gblur::Sample>(pixels: &mut [T], layout: gblur::Layout) -> Result<(), gblur::Error> {
///     gblur::Gaussian::new(1.5)?.blur_interleaved(pixels, layout)
/// }
/// soften(&mut vec![0u8; 16 * 16], gblur::Layout::new(16, 16, 1))?;
/// soften(&mut vec![0.5f32; 16 * 16 * 3], gblur::Layout::new(16, 16, 3))?;
/// # Ok::<(), gblur::Error>(())
/// ```
pub trait Sample: private::Sealed {}
impl Sample for u8 {}
impl Sample for u16 {}
impl Sample for f32 {}

/// How interleaved samples lie in a buffer.
///
/// ```
/// use gblur::Layout;
/// // 640×480 RGBA rows padded to 2576 samples (644 pixels), alpha last.
/// let layout = Layout::new(640, 480, 4).with_row_stride(2576).with_alpha(true);
/// assert_eq!(layout.len(), 479 * 2576 + 640 * 4);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Pixels per row.
    pub width: usize,
    /// Rows.
    pub height: usize,
    /// Samples per pixel, at least 1.
    pub channels: usize,
    /// Samples from the start of one row to the start of the next, at least
    /// `width × channels`.
    pub row_stride: usize,
    /// The last channel is alpha (2 or 4 channels): colour is blurred premultiplied by it, so
    /// transparent pixels leave no dark halos; alpha itself is blurred as it is.
    pub alpha: bool,
}

impl Layout {
    /// Rows without gaps and no alpha.
    ///
    /// ```
    /// let layout = gblur::Layout::new(640, 480, 3);
    /// assert_eq!(layout.row_stride, 640 * 3);
    /// assert_eq!(layout.len(), 640 * 480 * 3);
    /// ```
    pub fn new(width: usize, height: usize, channels: usize) -> Layout {
        Layout {
            width,
            height,
            channels,
            row_stride: width * channels,
            alpha: false,
        }
    }

    /// The same layout with rows `stride` samples apart.
    ///
    /// ```
    /// // A 100-pixel-wide RGBA crop of a 1000-pixel-wide buffer.
    /// let layout = gblur::Layout::new(100, 50, 4).with_row_stride(1000 * 4);
    /// assert_eq!(layout.len(), 49 * 4000 + 100 * 4);
    /// ```
    pub fn with_row_stride(mut self, stride: usize) -> Layout {
        self.row_stride = stride;
        self
    }

    /// The same layout with (or without) alpha as its last channel.
    ///
    /// ```
    /// let mut rgba = vec![0u8; 32 * 32 * 4];
    /// let layout = gblur::Layout::new(32, 32, 4).with_alpha(true);
    /// gblur::Gaussian::new(2.0)?.blur_interleaved(&mut rgba, layout)?;
    /// # Ok::<(), gblur::Error>(())
    /// ```
    pub fn with_alpha(mut self, alpha: bool) -> Layout {
        self.alpha = alpha;
        self
    }

    /// The least buffer length that holds the image: every row but the last at its stride.
    ///
    /// ```
    /// assert_eq!(gblur::Layout::new(10, 3, 2).len(), 60);
    /// assert_eq!(gblur::Layout::new(10, 3, 2).with_row_stride(25).len(), 2 * 25 + 20);
    /// ```
    pub fn len(&self) -> usize {
        match self.height {
            0 => 0,
            h => (h - 1) * self.row_stride + self.width * self.channels,
        }
    }

    /// Whether the image has no samples.
    ///
    /// ```
    /// assert!(gblur::Layout::new(0, 10, 3).is_empty());
    /// assert!(!gblur::Layout::new(1, 1, 1).is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.width == 0 || self.height == 0 || self.channels == 0
    }

    /// The rows of `data` (checked against this layout) without the gaps between them.
    pub(crate) fn packed<T: Copy>(&self, data: &[T]) -> Vec<T> {
        let row = self.width * self.channels;
        if self.is_empty() {
            return Vec::new();
        }
        let rows = data.chunks(self.row_stride).take(self.height);
        rows.flat_map(|r| &r[..row]).copied().collect()
    }

    /// `packed` (`packed`'s rows without gaps) written back over the rows of `data`; the gaps
    /// keep their samples.
    pub(crate) fn unpack<T: Copy>(&self, data: &mut [T], packed: &[T]) {
        let row = self.width * self.channels;
        if self.is_empty() {
            return;
        }
        for (r, p) in data
            .chunks_mut(self.row_stride)
            .zip(packed.chunks_exact(row))
        {
            r[..row].copy_from_slice(p);
        }
    }

    pub(crate) fn check(&self, len: usize) -> Result<(), Error> {
        let row = self.width.checked_mul(self.channels);
        let need = row.and_then(|row| {
            (self.height.saturating_sub(1))
                .checked_mul(self.row_stride)?
                .checked_add(row)
        });
        match (row, need) {
            (_, _) if self.channels == 0 => Err(Error::Buffer("an image needs at least one channel".into())),
            (Some(row), _) if self.row_stride < row => Err(Error::Buffer(format!(
                "a row stride of {} samples is shorter than a row ({} pixels × {} channels)",
                self.row_stride, self.width, self.channels
            ))),
            _ if self.alpha && !matches!(self.channels, 2 | 4) => Err(Error::Buffer(format!(
                "alpha needs 2 or 4 channels (gray or RGB and alpha), not {}",
                self.channels
            ))),
            (Some(_), Some(need)) if len >= need || self.is_empty() => Ok(()),
            _ => Err(Error::Buffer(format!(
                "a buffer of {len} samples cannot hold {}×{} pixels of {} channels with a row stride of {}",
                self.width, self.height, self.channels, self.row_stride
            ))),
        }
    }
}

impl Gaussian {
    /// Blurs a decoded image in place, whatever its colour type: colour premultiplied by
    /// alpha, NaN and infinite float samples replaced by 0 first (a recursive filter would
    /// carry one NaN along its whole row and column).
    ///
    /// ```
    /// use image::{DynamicImage, RgbImage};
    ///
    /// let mut img = DynamicImage::ImageRgb8(RgbImage::from_fn(64, 48, |x, y| {
    ///     image::Rgb([(x * 4) as u8, (y * 5) as u8, 128])
    /// }));
    /// gblur::Gaussian::new(3.0)?.blur_image(&mut img)?;
    /// assert_eq!(img.color(), image::ColorType::Rgb8);
    /// # Ok::<(), gblur::Error>(())
    /// ```
    pub fn blur_image(&self, img: &mut DynamicImage) -> Result<(), Error> {
        let image = std::mem::take(img);
        *img = self.blurred_image(image)?;
        Ok(())
    }

    /// A blurred copy of a decoded image (`blur_image` on a clone).
    ///
    /// ```
    /// use gblur::Gaussian;
    /// use image::{DynamicImage, RgbImage};
    ///
    /// let img = DynamicImage::ImageRgb8(RgbImage::from_pixel(20, 10, [10, 200, 30].into()));
    /// let soft = Gaussian::new(4.0)?.blurred(&img)?;
    /// assert_eq!(soft.as_bytes(), img.as_bytes());
    /// # Ok::<(), gblur::Error>(())
    /// ```
    pub fn blurred(&self, img: &DynamicImage) -> Result<DynamicImage, Error> {
        self.blurred_image(img.clone())
    }

    fn blurred_image(&self, mut img: DynamicImage) -> Result<DynamicImage, Error> {
        let img = match img {
            DynamicImage::ImageLuma8(_)
            | DynamicImage::ImageLumaA8(_)
            | DynamicImage::ImageRgb8(_)
            | DynamicImage::ImageRgba8(_)
            | DynamicImage::ImageLuma16(_)
            | DynamicImage::ImageLumaA16(_)
            | DynamicImage::ImageRgb16(_)
            | DynamicImage::ImageRgba16(_)
            | DynamicImage::ImageRgb32F(_)
            | DynamicImage::ImageRgba32F(_) => {
                pixels::sanitize_image(&mut img);
                img
            }
            other => {
                return Err(Error::Unsupported(format!(
                    "a {:?} image: convert it to 8-bit, 16-bit or f32 first",
                    other.color()
                )))
            }
        };
        let (w, h) = (img.width(), img.height());
        if w == 0 || h == 0 {
            return Ok(img);
        }
        let plan = EdgePlan::new(self.edges, &self.blur);
        let (mut work, padding) = match plan.is_none() {
            true => (img, None),
            false => {
                check_extension(&plan, w, h)?;
                let (padded, at) = edges::pad(&img, &plan);
                (padded, Some(at))
            }
        };
        if crate::cpu::blur_in_place(&mut work, &self.blur, self.linear, None).is_none() {
            work = reference::blur_image(&work, &self.blur, self.linear);
        }
        Ok(match padding {
            Some(at) => edges::crop_image(work, at, w, h),
            None => work,
        })
    }

    /// Blurs an `image::ImageBuffer` in place: any pixel type of `u8`, `u16` or `f32`
    /// samples, colour premultiplied by alpha where the pixel type has it.
    ///
    /// ```
    /// use image::{GrayImage, Luma};
    ///
    /// let mut img = GrayImage::from_fn(32, 32, |x, _| Luma([if x < 16 { 0 } else { 255 }]));
    /// gblur::Gaussian::new(2.0)?.blur_buffer(&mut img)?;
    /// assert!(img.get_pixel(15, 0)[0] > 0 && img.get_pixel(16, 0)[0] < 255);
    /// # Ok::<(), gblur::Error>(())
    /// ```
    pub fn blur_buffer<P>(&self, img: &mut ImageBuffer<P, Vec<P::Subpixel>>) -> Result<(), Error>
    where
        P: Pixel,
        P::Subpixel: Sample,
    {
        let layout = Layout::new(
            img.width() as usize,
            img.height() as usize,
            P::CHANNEL_COUNT as usize,
        )
        .with_alpha(P::HAS_ALPHA);
        self.blur_interleaved(img.as_mut(), layout)
    }

    /// Blurs raw interleaved samples in place: `layout` says how many pixels, channels and
    /// samples per row, and whether the last channel is alpha. Rows may have gaps (a row
    /// stride longer than the row), which are left as they are.
    ///
    /// ```
    /// use gblur::{Gaussian, Layout};
    ///
    /// // A 100×50 RGBA 16-bit image whose rows are 408 samples apart.
    /// let layout = Layout::new(100, 50, 4).with_row_stride(408).with_alpha(true);
    /// let mut samples = vec![40_000u16; layout.len()];
    /// Gaussian::new(4.0)?.blur_interleaved(&mut samples, layout)?;
    /// assert_eq!(samples[0], 40_000);
    /// # Ok::<(), gblur::Error>(())
    /// ```
    pub fn blur_interleaved<T: Sample>(&self, data: &mut [T], layout: Layout) -> Result<(), Error> {
        layout.check(data.len())?;
        if layout.is_empty() {
            return Ok(());
        }
        let row = layout.width * layout.channels;
        if layout.row_stride != row {
            // Gaps between rows: blur a copy of the rows without them.
            let mut packed = layout.packed(data);
            self.blur_interleaved(&mut packed, layout.with_row_stride(row))?;
            layout.unpack(data, &packed);
            return Ok(());
        }
        let data = &mut data[..row * layout.height];
        let dims = (layout.width, layout.height, layout.channels);
        crate::memory::keeping_scratch(|| self.whole_image().blur(data, dims, layout.alpha));
        Ok(())
    }

    /// Blurs raw interleaved samples from `src` into `dst`, both in `layout`: as
    /// [`Gaussian::blur_interleaved`] on a copy of `src`, without the copy where the blur
    /// reads `src` itself (no gaps between rows, edges [`EdgeMode::Clamp`], the recursive
    /// filter on both axes). The gaps between `dst`'s rows are left as they are.
    ///
    /// ```
    /// use gblur::{Gaussian, Layout};
    ///
    /// let layout = Layout::new(64, 48, 3);
    /// let src: Vec<u8> = (0..layout.len()).map(|i| (i % 251) as u8).collect();
    /// let (mut copied, mut into) = (src.clone(), vec![0u8; layout.len()]);
    /// let g = Gaussian::new(5.0)?;
    /// g.blur_interleaved(&mut copied, layout)?;
    /// g.blur_interleaved_into(&src, &mut into, layout)?;
    /// assert_eq!(copied, into);
    /// # Ok::<(), gblur::Error>(())
    /// ```
    pub fn blur_interleaved_into<T: Sample>(
        &self,
        src: &[T],
        dst: &mut [T],
        layout: Layout,
    ) -> Result<(), Error> {
        layout.check(src.len())?;
        layout.check(dst.len())?;
        let row = layout.width * layout.channels;
        let packed = row * layout.height;
        if layout.row_stride == row && !layout.is_empty() {
            crate::memory::map_pages_in_parallel(&mut dst[..packed], src[0]);
            if self.banded(Some(&src[..packed]), &mut dst[..packed], layout) {
                return Ok(());
            }
        }
        dst.par_chunks_mut(layout.row_stride)
            .zip(src.par_chunks(layout.row_stride))
            .for_each(|(d, s)| d[..row].copy_from_slice(&s[..row]));
        self.blur_interleaved(dst, layout)
    }

    /// The banded blur of `src` (or of `data` itself) into `data`, rows without gaps, where it
    /// runs this filter; false, nothing done, where it does not.
    fn banded<T: Sample>(&self, src: Option<&[T]>, data: &mut [T], layout: Layout) -> bool {
        let dims = (layout.width, layout.height, layout.channels);
        crate::memory::keeping_scratch(|| self.whole_image().banded(src, data, dims, layout.alpha))
    }

    /// This filter as the CPU's whole-image blur takes it.
    fn whole_image(&self) -> WholeImage<'_> {
        WholeImage {
            blur: &self.blur,
            edge_x: self.edges.x,
            edge_y: self.edges.y,
            linear: self.linear,
        }
    }

    /// Blurs `planes` planes of `width`×`height` f32 samples, one after another in `data`,
    /// each on its own (no alpha, no conversion).
    ///
    /// ```
    /// let (w, h) = (64, 32);
    /// let mut planes = vec![0.5f32; w * h * 3];
    /// gblur::Gaussian::new(10.0)?.blur_planar(&mut planes, w, h)?;
    /// assert!(planes.iter().all(|&v| v == 0.5));
    /// # Ok::<(), gblur::Error>(())
    /// ```
    pub fn blur_planar(&self, data: &mut [f32], width: usize, height: usize) -> Result<(), Error> {
        let plane = width.saturating_mul(height);
        if plane == 0 {
            return Ok(());
        }
        if plane == usize::MAX || !data.len().is_multiple_of(plane) {
            return Err(Error::Buffer(format!(
                "a buffer of {} samples is not a whole number of {width}×{height} planes",
                data.len()
            )));
        }
        let shape = [data.len() / plane, height, width];
        for (a, f, mode) in [
            (1, &self.blur.y, self.edges.y),
            (2, &self.blur.x, self.edges.x),
        ] {
            if let Some(f) = self.axis_filter(f, mode) {
                axis::filter_axis_in_place(data, &shape, a, &f);
            }
        }
        Ok(())
    }

    /// One axis's filter for planes of f32 (None where it keeps every sample): the constant
    /// edge's value is the sample value itself.
    pub(crate) fn axis_filter(&self, f: &LineFilter, mode: EdgeMode) -> Option<AxisFilter> {
        (!f.is_identity()).then(|| axis_filter(f, mode, vec![constant(mode).unwrap_or(0.0)]))
    }
}

/// The constant of `mode`, if it is `Constant`.
fn constant(mode: EdgeMode) -> Option<f32> {
    match mode {
        EdgeMode::Constant(v) => Some(v),
        _ => None,
    }
}

fn axis_filter(f: &LineFilter, edge: EdgeMode, cvals: Vec<f32>) -> AxisFilter {
    AxisFilter {
        filter: f.clone(),
        edge,
        cvals,
        footprint: None,
    }
}

/// Refuses an extension whose size overflows the image's dimensions.
fn check_extension(plan: &EdgePlan, w: u32, h: u32) -> Result<(), Error> {
    let (pw, ph) = plan.padded_size(w, h);
    if pw > u32::MAX as u64 || ph > u32::MAX as u64 {
        return Err(Error::Buffer(format!(
            "a {w}×{h} image extended for its edge mode would be {pw}×{ph} pixels"
        )));
    }
    Ok(())
}

/// Keeps the largest scratch buffer of [`Gaussian::blur_interleaved`] and
/// [`Gaussian::blur_interleaved_into`] on the host, up to `max_bytes`, from one call to the
/// next, or (0, the default) keeps none and frees the one kept. A fresh buffer's pages are
/// faulted in and zeroed by the kernel on their first write: on the 16-vCPU H200 host the 47
/// MiB that the banded blur of a 12 MP RGB8 image into another buffer takes on 16 threads cost
/// 1.7–2 ms of its 9 (docs/BENCHMARKS.md). A program that blurs many images keeps it; a job on
/// a file ([`blur_file`](crate::blur_file), the `gblur` command), whose memory budget counts
/// resident memory, never does. The Python package keeps up to 256 MiB.
///
/// ```
/// gblur::keep_scratch(64 << 20);
/// let mut image = vec![128u8; 300 * 200 * 3];
/// gblur::Gaussian::new(4.0)?.blur_interleaved(&mut image, gblur::Layout::new(300, 200, 3))?;
/// assert!(image.iter().all(|&v| v == 128));
/// gblur::keep_scratch(0);
/// # Ok::<(), gblur::Error>(())
/// ```
pub fn keep_scratch(max_bytes: usize) {
    crate::memory::keep_scratch(max_bytes);
}
