//! Blurring only the part of the image a small selection needs: the selection's bounding box
//! grown by the filter's reach. A selected pixel's blur then sees everything it would see in
//! the whole image except what lies beyond that reach, and the filter's weights out there sum
//! to under 1e-8 (`margin`), far below one f32 rounding of a sample; an unselected pixel keeps
//! its input either way. A 500×500 region of a 16 MP photo then costs about its own share of
//! the blur instead of the whole image's.

use crate::filter::{Blur2d, LineFilter};
use crate::pixels::dispatch::{each_buffer, each_buffer_pair};
use crate::work::edges::recursive_reach;
use image::{DynamicImage, ImageBuffer, Pixel};
use rayon::prelude::*;

/// Columns `x0 .. x1` and rows `y0 .. y1` of the (extended) image.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    pub x0: usize,
    pub y0: usize,
    pub x1: usize,
    pub y1: usize,
}

impl Window {
    pub fn width(&self) -> usize {
        self.x1 - self.x0
    }

    pub fn height(&self) -> usize {
        self.y1 - self.y0
    }

    fn union(self, o: Window) -> Window {
        Window {
            x0: self.x0.min(o.x0),
            y0: self.y0.min(o.y0),
            x1: self.x1.max(o.x1),
            y1: self.y1.max(o.y1),
        }
    }
}

/// How far beyond the selection one axis's filter must see: the FIR's radius (nothing reaches
/// further), and for the recursive filter twice `recursive_reach`, beyond which its weights sum
/// to under 1e-8 (the test measures them). Once `recursive_reach` would leave up to 5e-5 of
/// full scale, enough to flip the rounding of one 8-bit sample in a few hundred.
pub fn margin(filter: &LineFilter) -> usize {
    match filter {
        LineFilter::Fir { taps, .. } => taps.len() / 2,
        LineFilter::Recursive { sigma, .. } => 2 * recursive_reach(*sigma),
    }
}

/// The bounding box of the selected (non-zero) pixels of a `width`-wide selection; None when
/// none is. Each row is read from both ends up to its first selected pixel only, so a
/// selection that reaches the image's sides costs one look per row.
pub fn bounds(select: &[f32], width: usize) -> Option<Window> {
    if width == 0 {
        return None;
    }
    select
        .par_chunks(width)
        .enumerate()
        .filter_map(|(y, row)| {
            let x0 = row.iter().position(|v| *v > 0.0)?;
            let x1 = row.iter().rposition(|v| *v > 0.0)? + 1;
            Some(Window {
                x0,
                y0: y,
                x1,
                y1: y + 1,
            })
        })
        .reduce_with(Window::union)
}

/// The window a `size` selection is blurred within: its bounds grown by each axis's `margin`
/// and clipped to the image. None where nothing is selected or the window would cover more
/// than three quarters of the image, where the copies in and out would eat the saving.
pub fn choose(select: &[f32], (width, height): (usize, usize), blur: &Blur2d) -> Option<Window> {
    let b = bounds(select, width)?;
    let (mx, my) = (margin(&blur.x), margin(&blur.y));
    let w = Window {
        x0: b.x0.saturating_sub(mx),
        y0: b.y0.saturating_sub(my),
        x1: (b.x1 + mx).min(width),
        y1: (b.y1 + my).min(height),
    };
    (w.width() * w.height() * 4 <= width * height * 3).then_some(w)
}

/// The window's values of a `width`-wide plane.
pub fn crop_plane(plane: &[f32], width: usize, w: Window) -> Vec<f32> {
    let mut out = Vec::with_capacity(w.width() * w.height());
    for y in w.y0..w.y1 {
        out.extend_from_slice(&plane[y * width + w.x0..y * width + w.x1]);
    }
    out
}

/// The window's pixels of `image` as an image of their own.
pub fn crop(image: &DynamicImage, w: Window) -> DynamicImage {
    each_buffer!(image, b => crop_buffer(b, w).into(), other => unreachable!("no masked blur for {:?}", other.color()))
}

fn crop_buffer<P: Pixel>(
    b: &ImageBuffer<P, Vec<P::Subpixel>>,
    w: Window,
) -> ImageBuffer<P, Vec<P::Subpixel>> {
    let c = P::CHANNEL_COUNT as usize;
    let stride = b.width() as usize * c;
    let mut out = Vec::with_capacity(w.width() * w.height() * c);
    for y in w.y0..w.y1 {
        out.extend_from_slice(&b.as_raw()[y * stride + w.x0 * c..y * stride + w.x1 * c]);
    }
    ImageBuffer::from_raw(w.width() as u32, w.height() as u32, out).expect("the window's size")
}

/// Writes `part` (the window's size, `image`'s colour type) over the window of `image`.
pub fn paste(image: &mut DynamicImage, part: &DynamicImage, w: Window) {
    each_buffer_pair!((image, part), (a, b) => paste_buffer(a, b.as_raw(), w), _ => panic!("the part has the image's colour type"));
}

fn paste_buffer<P: Pixel>(
    into: &mut ImageBuffer<P, Vec<P::Subpixel>>,
    part: &[P::Subpixel],
    w: Window,
) {
    let c = P::CHANNEL_COUNT as usize;
    let stride = into.width() as usize * c;
    let row = w.width() * c;
    if row == 0 {
        return;
    }
    let data: &mut [P::Subpixel] = into;
    for (y, src) in (w.y0..w.y1).zip(part.chunks_exact(row)) {
        data[y * stride + w.x0 * c..][..row].copy_from_slice(src);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::gaussian::RecursiveGaussian;

    /// The most the recursive filter's weights beyond `margin` sum to, per side.
    const TAIL: f64 = 1e-8;

    /// The recursive filter's weights beyond `margin` on one side, summed (the test's measure).
    fn recursive_tail_beyond_margin(sigma: f64) -> f64 {
        let g = RecursiveGaussian::new(sigma);
        let k = 2 * recursive_reach(sigma) as i64;
        let end = k + (40.0 * sigma) as i64 + 40;
        (k + 1..end).map(|n| g.impulse_response(n).abs()).sum()
    }

    #[test]
    fn the_recursive_filter_leaves_under_tail_beyond_the_margin() {
        for sigma in [0.5, 1.0, 2.0, 3.0, 5.0, 10.0, 20.0, 50.0, 200.0] {
            let tail = recursive_tail_beyond_margin(sigma);
            assert!(tail < TAIL, "sigma {sigma}: {tail:e}");
        }
    }

    #[test]
    fn bounds_cover_every_selected_pixel_and_windows_are_clipped() {
        let (w, h) = (50, 40);
        let mut s = vec![0.0f32; w * h];
        assert_eq!(bounds(&s, w), None);
        s[7 * w + 30] = 0.25;
        s[20 * w + 12] = 1.0;
        s[21 * w + 31] = 0.5;
        let b = bounds(&s, w).unwrap();
        assert_eq!(
            b,
            Window {
                x0: 12,
                y0: 7,
                x1: 32,
                y1: 22
            }
        );
        let blur = Blur2d::new(crate::filter::Method::Fir, 1.0, 1.0);
        let r = margin(&blur.x);
        assert!(r > 0);
        let win = choose(&s, (w, h), &blur).unwrap();
        assert_eq!(
            win,
            Window {
                x0: 12 - r,
                y0: 7 - r,
                x1: 32 + r,
                y1: 22 + r
            }
        );
        // Near the corner the window stops at the image.
        let mut s = vec![0.0f32; w * h];
        s[w + 1] = 1.0;
        let win = choose(&s, (w, h), &blur).unwrap();
        assert_eq!((win.x0, win.y0, win.x1, win.y1), (0, 0, 2 + r, 2 + r));
        // A selection spread over the image blurs it whole.
        s[(h - 1) * w + w - 1] = 1.0;
        assert_eq!(choose(&s, (w, h), &blur), None);
    }

    #[test]
    fn crop_and_paste_put_the_window_back_where_it_was() {
        let img = DynamicImage::ImageRgb8(image::RgbImage::from_fn(9, 7, |x, y| {
            image::Rgb([x as u8, y as u8, (x * y) as u8])
        }));
        let w = Window {
            x0: 2,
            y0: 1,
            x1: 6,
            y1: 5,
        };
        let part = crop(&img, w);
        assert_eq!((part.width(), part.height()), (4, 4));
        assert_eq!(part.to_rgb8().get_pixel(0, 0).0, [2, 1, 2]);
        let mut blank = DynamicImage::ImageRgb8(image::RgbImage::new(9, 7));
        paste(&mut blank, &part, w);
        let (a, b) = (img.to_rgb8(), blank.to_rgb8());
        for (x, y, p) in b.enumerate_pixels() {
            let inside = (2..6).contains(&x) && (1..5).contains(&y);
            assert_eq!(
                *p,
                if inside {
                    *a.get_pixel(x, y)
                } else {
                    image::Rgb([0; 3])
                }
            );
        }
        let plane: Vec<f32> = (0..63).map(|i| i as f32).collect();
        assert_eq!(crop_plane(&plane, 9, w)[..4], [11.0, 12.0, 13.0, 14.0]);
    }
}
