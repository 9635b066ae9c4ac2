//! Edge modes other than clamp, exact on every blur path with one implementation: the decoded
//! image is extended by `reach` samples per side along each axis with the chosen mode, the
//! usual clamp blur runs on the extended image, and the result is cropped back.
//!
//! Why this is exact: the clamp blur of the extended image differs from the blur of the
//! infinitely extended image only through the samples beyond the extension, which reach an
//! output sample with the filter's weights beyond `reach`. For the FIR `reach` is its radius,
//! so nothing reaches; for the recursive filter the weights beyond `reach` sum to under 5e-5
//! per side (`recursive_reach`); for `constant` one sample suffices, since the clamp beyond it
//! repeats the constant, which is the constant extension itself. Clamp adds nothing.
//!
//! Mode names follow scipy.ndimage and OpenCV: clamp = scipy `nearest` = BORDER_REPLICATE;
//! reflect = scipy `reflect` = BORDER_REFLECT (`dcba|abcd|dcba`); reflect101 = scipy `mirror`
//! = BORDER_REFLECT_101 (`dcb|abcd|cba`); wrap = scipy `wrap` = BORDER_WRAP (`bcd|abcd|abc`);
//! constant = scipy `constant` (cval) = BORDER_CONSTANT.

pub use crate::filter::EdgeMode;
use crate::filter::{Blur2d, LineFilter};
use crate::pixels::dispatch::each_buffer;
use crate::pixels::planar::Planar;
use image::{DynamicImage, ImageBuffer, Luma, Pixel};
use rayon::prelude::*;

/// The edge mode of each axis.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Edges {
    /// Left and right.
    pub x: EdgeMode,
    /// Top and bottom.
    pub y: EdgeMode,
}

impl Default for Edges {
    fn default() -> Self {
        Edges {
            x: EdgeMode::Clamp,
            y: EdgeMode::Clamp,
        }
    }
}

impl Edges {
    /// `reflect`, or `reflect (x), wrap (y)` when the axes differ.
    pub fn describe(&self) -> String {
        if self.x == self.y {
            self.x.name()
        } else {
            format!("{} (x), {} (y)", self.x.name(), self.y.name())
        }
    }
}

/// One-sided tail of the recursive filter's impulse response left beyond `recursive_reach`:
/// a full-scale step there moves an output by at most this much per side.
#[cfg(test)]
pub const RECURSIVE_TAIL: f64 = 5e-5;

pub use crate::filter::gaussian::recursive_reach;

/// How far `filter` reaches beyond an edge with `mode`: 0 for clamp (the blur's own), 1 for
/// constant (the clamp beyond it is the constant), else the filter's support.
fn reach(filter: &LineFilter, mode: EdgeMode) -> usize {
    match mode {
        EdgeMode::Clamp => 0,
        EdgeMode::Constant(_) => 1,
        _ => filter.reach(),
    }
}

/// The extension for one image: mode and width per axis.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EdgePlan {
    pub edges: Edges,
    /// Samples added on each side along x and along y.
    pub reach: (usize, usize),
}

impl EdgePlan {
    pub fn new(edges: Edges, blur: &Blur2d) -> Self {
        EdgePlan {
            edges,
            reach: (reach(&blur.x, edges.x), reach(&blur.y, edges.y)),
        }
    }

    /// Clamp on both axes: nothing to add.
    pub fn is_none(&self) -> bool {
        self.reach == (0, 0)
    }

    /// (width, height) of the extended image.
    pub fn padded_size(&self, width: u32, height: u32) -> (u64, u64) {
        (
            width as u64 + 2 * self.reach.0 as u64,
            height as u64 + 2 * self.reach.1 as u64,
        )
    }
}

/// Where the image lies in its extension: `left`, `top`, and the extension's size.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Padding {
    pub left: u32,
    pub top: u32,
    pub width: u32,
    pub height: u32,
}

/// `image` extended as `plan` says, and where the image lies in it. The caller checks the
/// size first (`EdgePlan::padded_size`).
pub fn pad(image: &DynamicImage, plan: &EdgePlan) -> (DynamicImage, Padding) {
    let (w, h) = plan.padded_size(image.width(), image.height());
    let padding = Padding {
        left: plan.reach.0 as u32,
        top: plan.reach.1 as u32,
        width: w as u32,
        height: h as u32,
    };
    let padded = match image {
        DynamicImage::ImageLuma8(b) => pad_buffer(b, plan, u8::MAX, 255.0).into(),
        DynamicImage::ImageLumaA8(b) => pad_buffer(b, plan, u8::MAX, 255.0).into(),
        DynamicImage::ImageRgb8(b) => pad_buffer(b, plan, u8::MAX, 255.0).into(),
        DynamicImage::ImageRgba8(b) => pad_buffer(b, plan, u8::MAX, 255.0).into(),
        DynamicImage::ImageLuma16(b) => pad_buffer(b, plan, u16::MAX, 65535.0).into(),
        DynamicImage::ImageLumaA16(b) => pad_buffer(b, plan, u16::MAX, 65535.0).into(),
        DynamicImage::ImageRgb16(b) => pad_buffer(b, plan, u16::MAX, 65535.0).into(),
        DynamicImage::ImageRgba16(b) => pad_buffer(b, plan, u16::MAX, 65535.0).into(),
        DynamicImage::ImageRgb32F(b) => pad_buffer(b, plan, 1.0, 1.0).into(),
        DynamicImage::ImageRgba32F(b) => pad_buffer(b, plan, 1.0, 1.0).into(),
        // Every colour type the decoder yields is listed above; a new one fails loudly here
        // rather than blurring with the wrong edges.
        other => unreachable!("no edge extension for {:?}", other.color()),
    };
    (padded, padding)
}

/// A plane of one f32 per pixel (`width`×`height`: a selection or weights) extended as `plan`
/// says, where a constant edge counts fully (1): which pixels of the extended image take part
/// in a masked blur.
pub fn pad_plane(values: &[f32], width: u32, height: u32, plan: &EdgePlan) -> Vec<f32> {
    let as_one = |m: EdgeMode| match m {
        EdgeMode::Constant(_) => EdgeMode::Constant(1.0),
        m => m,
    };
    let plan = EdgePlan {
        edges: Edges {
            x: as_one(plan.edges.x),
            y: as_one(plan.edges.y),
        },
        ..*plan
    };
    let plane: ImageBuffer<Luma<f32>, Vec<f32>> =
        ImageBuffer::from_raw(width, height, values.to_vec()).expect("one value per pixel");
    pad_buffer(&plane, &plan, 1.0, 1.0).into_raw()
}

/// A sample type the extension copies, and how a fraction of full scale becomes one.
trait Sample: Copy + Default {
    fn from_fraction(v: f32, full: f32) -> Self;
}

impl Sample for u8 {
    fn from_fraction(v: f32, full: f32) -> Self {
        (v * full).round() as u8
    }
}

impl Sample for u16 {
    fn from_fraction(v: f32, full: f32) -> Self {
        (v * full).round() as u16
    }
}

impl Sample for f32 {
    fn from_fraction(v: f32, _: f32) -> Self {
        v
    }
}

/// `pad` for one buffer type: `opaque` is alpha's full value, `full` the colour's.
fn pad_buffer<P, S>(
    src: &ImageBuffer<P, Vec<S>>,
    plan: &EdgePlan,
    opaque: S,
    full: f32,
) -> ImageBuffer<P, Vec<S>>
where
    P: Pixel<Subpixel = S>,
    S: Sample + image::Primitive + Send + Sync,
{
    let c = P::CHANNEL_COUNT as usize;
    let (w, h) = (src.width() as i64, src.height() as i64);
    let (kx, ky) = (plan.reach.0 as i64, plan.reach.1 as i64);
    let (pw, ph) = ((w + 2 * kx) as usize, (h + 2 * ky) as usize);
    let fill = |mode| edge_pixel::<P, S>(mode, opaque, full);
    let (fill_x, fill_y) = (fill(plan.edges.x), fill(plan.edges.y));
    // Along x the constant wins in the corners: the extension then equals blurring along y
    // first and extending along x after, the order scipy.ndimage applies its axes in.
    let columns: Vec<Option<usize>> = (0..pw as i64)
        .map(|x| plan.edges.x.source(x - kx, w))
        .collect();
    let src = src.as_raw();
    let mut out = vec![S::default(); pw * ph * c];
    let (left, inner) = (kx as usize * c, w as usize * c);
    // Only the margins go pixel by pixel; the image's own samples are one copy per row.
    let margins: Vec<usize> = (0..kx as usize)
        .chain(kx as usize + w as usize..pw)
        .collect();
    out.par_chunks_exact_mut(pw * c)
        .enumerate()
        .for_each(|(y, row)| {
            let source = plan.edges.y.source(y as i64 - ky, h);
            let line = source.map(|sy| &src[sy * inner..(sy + 1) * inner]);
            match line {
                Some(line) => row[left..left + inner].copy_from_slice(line),
                None => row[left..left + inner]
                    .chunks_exact_mut(c)
                    .for_each(|px| px.copy_from_slice(&fill_y)),
            }
            for &x in &margins {
                let px = &mut row[x * c..(x + 1) * c];
                match (columns[x], line) {
                    (Some(sx), Some(line)) => px.copy_from_slice(&line[sx * c..(sx + 1) * c]),
                    (Some(_), None) => px.copy_from_slice(&fill_y),
                    (None, _) => px.copy_from_slice(&fill_x),
                }
            }
        });
    ImageBuffer::from_raw(pw as u32, ph as u32, out).expect("the buffer has the padded size")
}

/// The pixel a constant edge extends with (`mode`'s constant, a fraction of `full`, in each
/// colour channel; alpha `opaque`), zeros for another mode, whose extension copies pixels.
fn edge_pixel<P, S>(mode: EdgeMode, opaque: S, full: f32) -> Vec<S>
where
    P: Pixel<Subpixel = S>,
    S: Sample + image::Primitive,
{
    let c = P::CHANNEL_COUNT as usize;
    let v = match mode {
        EdgeMode::Constant(v) => v,
        _ => 0.0,
    };
    (0..c)
        .map(|i| match P::HAS_ALPHA && i == c - 1 {
            true => opaque,
            false => S::from_fraction(v, full),
        })
        .collect()
}

/// The image cropped out of its blurred extension, in place.
pub fn crop_image(image: DynamicImage, padding: Padding, width: u32, height: u32) -> DynamicImage {
    let size = (width, height);
    each_buffer!(image, b => crop_buffer(b, padding, size).into(), other => other.crop_imm(padding.left, padding.top, width, height))
}

/// `crop_image` for one buffer type: each row moved forward within the buffer (image's own
/// `crop_imm` goes pixel by pixel into a new buffer, at twice the cost of the extension).
fn crop_buffer<P, S>(
    src: ImageBuffer<P, Vec<S>>,
    padding: Padding,
    (width, height): (u32, u32),
) -> ImageBuffer<P, Vec<S>>
where
    P: Pixel<Subpixel = S>,
    S: image::Primitive,
{
    let c = P::CHANNEL_COUNT as usize;
    let (w, pw) = (width as usize * c, padding.width as usize * c);
    let (left, top) = (padding.left as usize * c, padding.top as usize);
    let mut data = src.into_raw();
    move_rows(
        &mut data,
        (0..height as usize).map(|y| (top + y) * pw + left),
        w,
    );
    ImageBuffer::from_raw(width, height, data).expect("the buffer has the image's size")
}

/// Moves the rows of `len` samples starting at `starts` to the front of `data`, one after
/// another, and drops the rest. In place: a row's destination never lies past its start, nor
/// past a later row's start, so ascending order reads every row before it is overwritten.
fn move_rows(data: &mut Vec<impl Copy>, starts: impl Iterator<Item = usize>, len: usize) {
    let mut rows = 0;
    for (i, from) in starts.enumerate() {
        data.copy_within(from..from + len, i * len);
        rows = i + 1;
    }
    data.truncate(rows * len);
}

/// The image cropped out of its blurred planar extension, in place.
pub fn crop_planar(planar: &mut Planar, padding: Padding, width: u32, height: u32) {
    let (w, h) = (width as usize, height as usize);
    let (left, top) = (padding.left as usize, padding.top as usize);
    let (pw, ph) = (planar.width, planar.height);
    let starts = (0..planar.channels * h).map(|row| (row / h * ph + top + row % h) * pw + left);
    move_rows(&mut planar.data, starts, w);
    (planar.width, planar.height) = (w, h);
}

/// The recursive filter's weights beyond `recursive_reach(sigma)` on one side, summed: the
/// most a full-scale difference out there moves an output (the tests and docs quote it).
#[cfg(test)]
pub fn recursive_tail(sigma: f64) -> f64 {
    let g = crate::filter::gaussian::RecursiveGaussian::new(sigma);
    let k = recursive_reach(sigma) as i64;
    let end = k + (40.0 * sigma) as i64 + 40;
    (k + 1..end).map(|n| g.impulse_response(n).abs()).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::Method;

    #[test]
    fn index_mappings_match_scipy() {
        // scipy.ndimage's documented patterns for the input `abcd` (n = 4), indices -5..9.
        let n = 4;
        let map = |mode: EdgeMode| -> String {
            (-5..9)
                .map(|i| match mode.source(i, n) {
                    Some(s) => (b'a' + s as u8) as char,
                    None => '.',
                })
                .collect()
        };
        assert_eq!(map(EdgeMode::Clamp), "aaaaaabcdddddd");
        assert_eq!(map(EdgeMode::Reflect), "ddcbaabcddcbaa");
        assert_eq!(map(EdgeMode::Reflect101), "bcdcbabcdcbabc");
        assert_eq!(map(EdgeMode::Wrap), "dabcdabcdabcda");
        assert_eq!(map(EdgeMode::Constant(0.0)), ".....abcd.....");
        // One sample: every mode repeats it.
        assert_eq!(EdgeMode::Reflect101.source(-3, 1), Some(0));
        assert_eq!(EdgeMode::Reflect.source(5, 1), Some(0));
    }

    #[test]
    fn recursive_tail_is_within_budget() {
        for sigma in [0.5, 0.8, 1.0, 2.0, 3.0, 5.0, 10.0, 37.0, 200.0, 1000.0] {
            let tail = recursive_tail(sigma);
            assert!(tail < RECURSIVE_TAIL, "sigma {sigma}: tail {tail}");
        }
    }

    #[test]
    fn parse_names_and_values() {
        assert_eq!(EdgeMode::parse("mirror"), Ok(EdgeMode::Reflect101));
        assert_eq!(EdgeMode::parse("nearest"), Ok(EdgeMode::Clamp));
        assert_eq!(EdgeMode::parse("constant"), Ok(EdgeMode::Constant(0.0)));
        assert_eq!(
            EdgeMode::parse("constant=0.25"),
            Ok(EdgeMode::Constant(0.25))
        );
        for bad in [
            "mirrored",
            "constant=2",
            "constant=-0.1",
            "constant=x",
            "wrap=1",
        ] {
            assert!(EdgeMode::parse(bad).is_err(), "{bad}");
        }
        let p = EdgeMode::parse("constant=nan").unwrap_err();
        assert!(p.contains("0 to 1"), "{p}");
    }

    #[test]
    fn pad_then_crop_is_the_identity() {
        let img = DynamicImage::ImageRgb16(ImageBuffer::from_fn(7, 5, |x, y| {
            image::Rgb([x as u16 * 1000, y as u16 * 7, 3])
        }));
        let blur = Blur2d::new(Method::Auto, 3.0, 1.0);
        for mode in [EdgeMode::Reflect, EdgeMode::Wrap, EdgeMode::Constant(0.5)] {
            let plan = EdgePlan::new(Edges { x: mode, y: mode }, &blur);
            let (padded, at) = pad(&img, &plan);
            assert_eq!(crop_image(padded, at, 7, 5), img);
        }
    }

    #[test]
    fn planar_crop_takes_the_inner_rectangle_of_every_plane() {
        let value = |x: usize, y: usize, c: usize| (c * 10000 + y * 100 + x) as f32;
        let padding = Padding {
            left: 3,
            top: 2,
            width: 13,
            height: 9,
        };
        let mut padded = Planar::from_fn(13, 9, 3, |x, y, c| match (x, y) {
            (3..=9, 2..=6) => value(x - 3, y - 2, c),
            _ => -1.0,
        });
        crop_planar(&mut padded, padding, 7, 5);
        assert_eq!(padded, Planar::from_fn(7, 5, 3, value));
    }

    #[test]
    fn constant_fills_colour_and_keeps_alpha_opaque() {
        let img = DynamicImage::ImageRgba8(ImageBuffer::from_pixel(2, 2, image::Rgba([9; 4])));
        let blur = Blur2d::new(Method::Fir, 1.0, 1.0);
        let mode = EdgeMode::Constant(0.5);
        let plan = EdgePlan::new(Edges { x: mode, y: mode }, &blur);
        let (padded, _) = pad(&img, &plan);
        let padded = padded.to_rgba8();
        assert_eq!(padded.dimensions(), (4, 4));
        assert_eq!(padded.get_pixel(0, 0).0, [128, 128, 128, 255]);
        assert_eq!(padded.get_pixel(1, 1).0, [9; 4]);
    }
}
