//! The last step of a masked blur, on the samples of the input's own colour type:
//! out = in + m · (blurred − in). A selection of exactly 0 copies the input's sample and one
//! of exactly 1 the blurred sample, bit for bit; integer samples in between are rounded.

use super::MIN_WEIGHT;
use crate::cpu::banded::Sample;
use crate::pixels::dispatch::each_buffer_pair;
use image::DynamicImage;
use rayon::prelude::*;

/// A sample type the mix works on.
trait Mix: Copy + Send + Sync {
    fn mix(input: Self, blurred: Self, m: f32, nan: bool) -> Self;
}

macro_rules! integer_mix {
    ($t:ty) => {
        impl Mix for $t {
            #[inline]
            fn mix(input: Self, blurred: Self, m: f32, _nan: bool) -> Self {
                // The banded blur's own mix, which it applies as it writes on the Rust path.
                <$t as Sample>::mix(input, blurred, m)
            }
        }
    };
}
integer_mix!(u8);
integer_mix!(u16);

impl Mix for f32 {
    #[inline]
    fn mix(input: Self, blurred: Self, m: f32, nan: bool) -> Self {
        if blurred.is_nan() {
            // No weight reached this sample (`weights::normalise`).
            input
        } else if nan && m > 0.0 && !input.is_finite() {
            // A sample that `--nan ignore` left out is filled, not blended with.
            blurred
        } else {
            <f32 as Sample>::mix(input, blurred, m)
        }
    }
}

/// One f32 sample's mix, as `mix` makes it (`nan`: `--nan ignore` ran).
pub fn mix_f32(input: f32, blurred: f32, m: f32, nan: bool) -> f32 {
    <f32 as Mix>::mix(input, blurred, m, nan)
}

/// Mixes `blurred` (the input's colour type and size) into `input` by the selection
/// (None: 1 everywhere). `nan`: `--nan ignore` ran, so non-finite input samples are filled.
pub fn mix(
    input: &DynamicImage,
    blurred: DynamicImage,
    select: Option<&[f32]>,
    nan: bool,
) -> DynamicImage {
    let width = input.width() as usize;
    let channels = input.color().channel_count() as usize;
    let mut blurred = blurred;
    each_buffer_pair!(
        (input, &mut blurred),
        (a, b) => rows(a.as_raw(), b, select, (width, channels), nan),
        _ => panic!("the blurred image has the input's colour type"),
    );
    blurred
}

fn rows<T: Mix>(
    input: &[T],
    out: &mut [T],
    select: Option<&[f32]>,
    (width, channels): (usize, usize),
    nan: bool,
) {
    let stride = width * channels;
    if stride == 0 {
        return;
    }
    out.par_chunks_mut(stride)
        .zip(input.par_chunks(stride))
        .enumerate()
        .for_each(|(y, (out, input))| {
            let m = select.map(|s| &s[y * width..][..width]);
            let mut x = 0;
            while x < width {
                let mx = m.map_or(1.0, |m| m[x]);
                if mx <= 0.0 {
                    // The common case outside a selection: a run of unselected pixels, copied
                    // in one piece.
                    let run = m.map_or(0, |m| m[x..].iter().take_while(|v| **v <= 0.0).count());
                    let span = x * channels..(x + run) * channels;
                    out[span.clone()].copy_from_slice(&input[span]);
                    x += run;
                    continue;
                }
                for c in x * channels..(x + 1) * channels {
                    out[c] = T::mix(input[c], out[c], mx, nan);
                }
                x += 1;
            }
        });
}

/// `mix` for the routes that carry the weight as alpha (`weights::as_alpha`,
/// `weights::nan_as_alpha`), in one pass over `input` itself: `blurred` is the input's colour
/// with the blurred weight as alpha (`C + 1` samples a pixel), and a pixel whose weight /
/// `full` is below `MIN_WEIGHT` (nothing selected or valid reaches it) keeps its input, as an
/// unselected one does. The selection None is 1 everywhere; `nan` as `mix`'s.
pub fn mix_alpha(
    input: DynamicImage,
    blurred: &DynamicImage,
    select: Option<&[f32]>,
    nan: bool,
) -> DynamicImage {
    let width = input.width() as usize;
    let mut input = input;
    macro_rules! run {
        ($(($v:ident, $a:ident, $c:literal, $full:expr)),*) => {
            match (&mut input, blurred) {
                $((DynamicImage::$v(a), DynamicImage::$a(b)) => {
                    alpha_rows::<_, $c>(a, b.as_raw(), select, nan, width, $full)
                })*
                _ => panic!("the blurred image is the input's colour type with alpha"),
            }
        };
    }
    run!(
        (ImageLuma8, ImageLumaA8, 1, 255.0),
        (ImageRgb8, ImageRgba8, 3, 255.0),
        (ImageLuma16, ImageLumaA16, 1, 65535.0),
        (ImageRgb16, ImageRgba16, 3, 65535.0),
        (ImageRgb32F, ImageRgba32F, 3, 1.0)
    );
    input
}

fn alpha_rows<T: Mix + Into<f64>, const C: usize>(
    out: &mut [T],
    blurred: &[T],
    select: Option<&[f32]>,
    nan: bool,
    width: usize,
    full: f64,
) {
    if width == 0 {
        return;
    }
    // weight / full < MIN_WEIGHT without a division per pixel (exact: no 8- or 16-bit level
    // lies near the limit, and f32 weights compare as themselves).
    let limit = full * f64::from(MIN_WEIGHT);
    out.par_chunks_mut(width * C)
        .zip(blurred.par_chunks(width * (C + 1)))
        .enumerate()
        .for_each(|(y, (out, blurred))| {
            let m = select.map(|s| &s[y * width..(y + 1) * width]);
            let pixels = out.chunks_exact_mut(C).zip(blurred.chunks_exact(C + 1));
            for (x, (o, b)) in pixels.enumerate() {
                let m = m.map_or(1.0, |m| m[x]);
                if m > 0.0 && b[C].into() >= limit {
                    for c in 0..C {
                        o[c] = T::mix(o[c], b[c], m, nan);
                    }
                }
            }
        });
}
