//! The selection plane: rectangles and a grey mask file united, feathered by a Gaussian, one
//! f32 per pixel in [0, 1].

use super::MaskOptions;
use crate::codec;
use crate::cpu::{banded, reference};
use crate::filter::{Blur2d, Method};
use crate::pixels::planar::Planar;
use image::DynamicImage;
use rayon::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A rectangle of pixels: columns `x .. x + w`, rows `y .. y + h`. `x` and `y` may be negative
/// (a box that starts outside the image); `w` and `h` are at least 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    /// Left edge, pixels (negative: from the right).
    pub x: i64,
    /// Top edge, pixels (negative: from the bottom).
    pub y: i64,
    /// Width, pixels.
    pub w: u64,
    /// Height, pixels.
    pub h: u64,
}

impl std::fmt::Display for Region {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "{},{},{},{}", self.x, self.y, self.w, self.h)
    }
}

/// `x,y,w,h` as `--region` takes it.
pub fn parse_region(s: &str) -> Result<Region, String> {
    let bad = || {
        format!(
            "'{s}' is not x,y,w,h (four integers, w and h at least 1), e.g. 120,80,64,64, nor \
             ImageMagick's geometry WxH+X+Y, e.g. 64x64+120+80"
        )
    };
    let (x, y, w, h) = match geometry(s.trim()) {
        Some(g) => g,
        None => {
            let parts: Vec<&str> = s.split(',').map(str::trim).collect();
            let [x, y, w, h] = parts[..] else {
                return Err(bad());
            };
            (x, y, w, h)
        }
    };
    let (x, y): (i64, i64) = (x.parse().map_err(|_| bad())?, y.parse().map_err(|_| bad())?);
    let (w, h): (u64, u64) = (w.parse().map_err(|_| bad())?, h.parse().map_err(|_| bad())?);
    let fits = |v: u64| (1..=1 << 31).contains(&v);
    let start = |v: i64| v.unsigned_abs() <= 1 << 31;
    if fits(w) && fits(h) && start(x) && start(y) {
        Ok(Region { x, y, w, h })
    } else {
        Err(bad())
    }
}

/// ImageMagick's geometry `WxH+X+Y` (offsets signed: `+X`, `-X`) as (x, y, w, h) strings.
fn geometry(s: &str) -> Option<(&str, &str, &str, &str)> {
    let (w, rest) = s.split_once(['x', 'X'])?;
    let at = rest.find(['+', '-'])?;
    let (h, offsets) = rest.split_at(at);
    let second = offsets[1..].find(['+', '-'])? + 1;
    let (x, y) = offsets.split_at(second);
    let x = x.strip_prefix('+').unwrap_or(x);
    let y = y.strip_prefix('+').unwrap_or(y);
    Some((x, y, w, h))
}

impl Region {
    /// The part inside a `width`×`height` image as (x0, y0, x1, y1), None when there is none.
    fn clip(&self, (width, height): (usize, usize)) -> Option<(usize, usize, usize, usize)> {
        let span = |start: i64, len: u64, size: usize| {
            let lo = start.max(0);
            let hi = (start + len as i64).min(size as i64);
            (lo < hi).then_some((lo as usize, hi as usize))
        };
        let (x0, x1) = span(self.x, self.w, width)?;
        let (y0, y1) = span(self.y, self.h, height)?;
        Some((x0, y0, x1, y1))
    }
}

/// A decoded mask: one value in [0, 1] per pixel.
pub struct MaskFile {
    /// The mask image.
    pub path: PathBuf,
    /// Its width.
    pub width: usize,
    /// Its height.
    pub height: usize,
    /// Shared with the selections built from it until one changes (`Arc::make_mut`).
    values: Arc<Vec<f32>>,
}

impl MaskFile {
    /// Decodes `path` (any format and bit depth gblur reads, EXIF orientation applied, under
    /// `--max-memory`). Gray samples are the values (0 → 0, full scale → 1); a colour mask is
    /// read as the mean of its colour channels, so that its white is exactly 1; alpha is
    /// ignored.
    pub fn open(path: &Path, max_memory_mib: u64) -> Result<MaskFile, String> {
        let decoded = codec::decode(path, max_memory_mib).map_err(|e| format!("--mask {e}"))?;
        let image = decoded.image;
        let (width, height) = (image.width() as usize, image.height() as usize);
        let values = match &image {
            DynamicImage::ImageLuma8(b) => b.par_iter().map(|v| *v as f32 / 255.0).collect(),
            DynamicImage::ImageLuma16(b) => b.par_iter().map(|v| *v as f32 / 65535.0).collect(),
            DynamicImage::ImageLumaA8(_) | DynamicImage::ImageLumaA16(_) => {
                image.to_luma32f().into_raw()
            }
            _ => image
                .to_rgb32f()
                .as_raw()
                .chunks_exact(3)
                .map(|p| (p[0] + p[1] + p[2]) / 3.0)
                .collect(),
        };
        let mut values: Vec<f32> = values;
        if image.color() == image::ColorType::Rgb32F || image.color() == image::ColorType::Rgba32F {
            // Float masks may hold anything.
            values
                .par_iter_mut()
                .for_each(|v| *v = if v.is_nan() { 0.0 } else { v.clamp(0.0, 1.0) });
        }
        Ok(MaskFile {
            path: path.to_path_buf(),
            width,
            height,
            values: Arc::new(values),
        })
    }
}

/// Feathered selection values below this become 0 and those above 1 − it become 1: the
/// Gaussian's tail (and the recursive filter's ringing) would otherwise touch every pixel of
/// the image by a few ulps, and pixels outside the feathered edge must stay bit-identical.
pub const FEATHER_CUT: f32 = 1e-3;

/// The selection of a `size` image: the union (maximum) of the rectangles and the mask file,
/// feathered. `name` is the image, for errors.
pub fn build(
    opts: &MaskOptions,
    file: Option<&MaskFile>,
    size: (usize, usize),
    name: &Path,
) -> Result<Arc<Vec<f32>>, String> {
    let (width, height) = size;
    let mut m = match file {
        Some(f) if (f.width, f.height) != size => {
            return Err(format!(
            "{}: the mask is {}×{} but {} is {width}×{height}; a mask must have its image's size",
            f.path.display(),
            f.width,
            f.height,
            name.display()
        ))
        }
        Some(f) => f.values.clone(),
        None => Arc::new(vec![0.0; width * height]),
    };
    for r in &opts.regions {
        let Some((x0, y0, x1, y1)) = r.clip(size) else {
            return Err(format!(
                "{}: --region {r} lies wholly outside the {width}×{height} image",
                name.display()
            ));
        };
        let m = Arc::make_mut(&mut m);
        for row in m[y0 * width..y1 * width].chunks_exact_mut(width) {
            row[x0..x1].fill(1.0);
        }
    }
    if opts.feather > 0.0 {
        feather(Arc::make_mut(&mut m), size, opts.feather);
    }
    Ok(m)
}

/// Blurs the selection by a Gaussian of sigma `px / 2` (the edge's 16 %–84 % rise then spans
/// `px` pixels, centred on the edge), then snaps values within `FEATHER_CUT` of 0 or 1.
fn feather(m: &mut Vec<f32>, (width, height): (usize, usize), px: f64) {
    let sigma = (px / 2.0).clamp(crate::filter::MIN_SIGMA, crate::filter::MAX_SIGMA);
    let mut plane = Planar {
        width,
        height,
        channels: 1,
        data: std::mem::take(m),
    };
    blur_planes(&mut plane, &Blur2d::new(Method::Auto, sigma, sigma));
    *m = plane.data;
    m.par_iter_mut().for_each(|v| {
        *v = if *v < FEATHER_CUT {
            0.0
        } else if *v > 1.0 - FEATHER_CUT {
            1.0
        } else {
            *v
        }
    });
}

/// Blurs every plane of `p` in place: the banded blur one plane at a time where both axes are
/// recursive, else the planar reference.
fn blur_planes(p: &mut Planar, blur: &Blur2d) {
    if banded::blur_planes(p, blur).is_none() {
        *p = reference::blur(p, blur).0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regions_parse_and_refuse_malformed_text() {
        assert_eq!(
            parse_region("-5, 10,20,30"),
            Ok(Region {
                x: -5,
                y: 10,
                w: 20,
                h: 30
            })
        );
        for bad in [
            "",
            "1,2,3",
            "1,2,3,4,5",
            "1,2,0,4",
            "1,2,3,-4",
            "a,b,c,d",
            "1.5,2,3,4",
            "64x64",
            "64x64+1",
            "0x64+1+2",
            "64x+1+2",
            "x64+1+2",
        ] {
            assert!(parse_region(bad).is_err(), "{bad}");
        }
        // ImageMagick's geometry: WxH+X+Y, offsets signed.
        let g = |x, y, w, h| Ok(Region { x, y, w, h });
        assert_eq!(parse_region("100x50+10+20"), g(10, 20, 100, 50));
        assert_eq!(parse_region("100X50-10+20"), g(-10, 20, 100, 50));
        assert_eq!(parse_region("3x4-1-2"), g(-1, -2, 3, 4));
    }

    #[test]
    fn regions_are_clipped_to_the_image_or_refused_when_wholly_outside() {
        let r = |x, y, w, h| Region { x, y, w, h };
        assert_eq!(r(-5, -5, 10, 10).clip((8, 8)), Some((0, 0, 5, 5)));
        assert_eq!(r(6, 6, 10, 10).clip((8, 8)), Some((6, 6, 8, 8)));
        assert_eq!(r(8, 0, 1, 1).clip((8, 8)), None);
        assert_eq!(r(-1, 0, 1, 1).clip((8, 8)), None);
        let opts = MaskOptions {
            regions: vec![r(1, 1, 2, 2), r(10, 0, 3, 3)],
            ..Default::default()
        };
        let e = build(&opts, None, (8, 8), Path::new("a.png")).unwrap_err();
        assert_eq!(
            e,
            "a.png: --region 10,0,3,3 lies wholly outside the 8×8 image"
        );
    }

    #[test]
    fn rectangles_unite_and_feathering_is_symmetric_about_the_edge() {
        let opts = MaskOptions {
            regions: vec![
                Region {
                    x: 1,
                    y: 1,
                    w: 2,
                    h: 1,
                },
                Region {
                    x: 2,
                    y: 1,
                    w: 2,
                    h: 2,
                },
            ],
            ..Default::default()
        };
        let m = build(&opts, None, (5, 4), Path::new("a")).unwrap().to_vec();
        #[rustfmt::skip]
        let want = [
            0., 0., 0., 0., 0.,
            0., 1., 1., 1., 0.,
            0., 0., 1., 1., 0.,
            0., 0., 0., 0., 0.,
        ];
        assert_eq!(m, want);

        // A half-plane edge: the feathered values mirror each other about 0.5 across it
        // (sigma 4 is recursive), and far from it they are snapped exactly to 0 and 1.
        let (w, h) = (200, 8);
        let opts = MaskOptions {
            regions: vec![Region {
                x: 100,
                y: 0,
                w: 100,
                h: 8,
            }],
            feather: 8.0,
            ..Default::default()
        };
        let m = build(&opts, None, (w, h), Path::new("a")).unwrap().to_vec();
        for d in 0..20 {
            let (inside, outside) = (m[100 + d], m[99 - d]);
            assert!(
                (inside + outside - 1.0).abs() < 2e-3,
                "{d}: {inside} {outside}"
            );
        }
        assert!((m[100] - 0.5).abs() < 0.11, "{}", m[100]);
        assert_eq!(m[..80].iter().filter(|v| **v != 0.0).count(), 0);
        assert_eq!(m[120..200].iter().filter(|v| **v != 1.0).count(), 0);
    }
}
