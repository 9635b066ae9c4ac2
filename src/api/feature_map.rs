//! `feature_map_file`: what `gblur gradient` does for one file, for programs: decode, take the
//! image's luma, map its Gaussian gradient magnitude or Laplacian (`nd::Filter`), write the
//! values as a 32-bit float TIFF or scaled into a 16-bit PNG, atomically, and time each pass.

use super::nd::Filter;
use super::Error;
use crate::codec::tiff::write::{write_whole, Compression, Layout};
use crate::codec::{check_output, write_output, Replace};
use crate::codec::{decode, png};
use crate::filter::EdgeMode;
use image::{DynamicImage, ImageBuffer, ImageFormat, Luma};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Which map of the Gaussian's derivatives [`feature_map_file`] makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Feature {
    /// The gradient's length (scipy's `gaussian_gradient_magnitude`): edges, 0 or more.
    GradientMagnitude,
    /// The Laplacian of the Gaussian (scipy's `gaussian_laplace`): blobs and lines, signed.
    Laplacian,
}

/// How [`feature_map_file`] maps a file.
///
/// ```
/// use gblur::{Feature, FeatureOptions};
///
/// let options = FeatureOptions::new(Feature::Laplacian, 4.0).png_scale(2000.0);
/// # let _ = options;
/// ```
#[derive(Clone, Debug)]
pub struct FeatureOptions {
    feature: Feature,
    sigma: f64,
    mode: EdgeMode,
    png_scale: Option<f64>,
    max_memory_mib: u64,
}

impl FeatureOptions {
    /// The map and its sigma, in pixels; edges reflected (scipy's default), a 16-bit PNG
    /// scaled to the image's own largest value, the command line's memory budget.
    pub fn new(feature: Feature, sigma: f64) -> FeatureOptions {
        FeatureOptions {
            feature,
            sigma,
            mode: EdgeMode::Reflect,
            png_scale: None,
            max_memory_mib: crate::memory::DEFAULT_BUDGET_MIB,
        }
    }

    /// How the image is extended past its edges.
    pub fn mode(mut self, mode: EdgeMode) -> Self {
        self.mode = mode;
        self
    }

    /// The factor a 16-bit PNG's levels are the values times (a Laplacian's offset by
    /// 32768), the same for every image; without it, each image's largest magnitude is
    /// written as 65535 (32767 from the middle for a Laplacian).
    pub fn png_scale(mut self, scale: f64) -> Self {
        self.png_scale = Some(scale);
        self
    }

    /// The memory the decoder may use, in MiB.
    pub fn max_memory_mib(mut self, mib: u64) -> Self {
        self.max_memory_mib = mib;
        self
    }
}

/// What [`feature_map_file`] did: the map's range, the PNG's scale, and every pass's time.
#[derive(Clone, Debug, Serialize)]
pub struct FeatureReport {
    /// The input's path.
    pub input: PathBuf,
    /// The output's path.
    pub output: PathBuf,
    /// The map made.
    pub feature: Feature,
    /// Its sigma, in pixels.
    pub sigma: f64,
    /// Width and height in pixels.
    pub size: (u32, u32),
    /// The map's smallest and largest values, in the image's units (1 = full scale) per
    /// pixel (a gradient) or per pixel squared (a Laplacian).
    pub range: (f32, f32),
    /// The PNG's levels per unit of the map (None for a float TIFF).
    pub png_scale: Option<f64>,
    /// Each pass and its milliseconds: decode, luma, filter, encode, write.
    pub passes: Vec<(String, f64)>,
    /// What the map lost: values clipped at a PNG's lowest or highest level, or a scale that
    /// writes them all as one level.
    pub notes: Vec<String>,
}

impl FeatureReport {
    /// The report as JSON (`gblur gradient --json`).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// The report as `gblur gradient` prints it.
    pub fn table(&self) -> String {
        let (w, h) = self.size;
        let mut out = format!(
            "{} -> {}: {w}x{h}, {} at sigma {}, values {:.4e} to {:.4e}",
            self.input.display(),
            self.output.display(),
            match self.feature {
                Feature::GradientMagnitude => "gradient magnitude",
                Feature::Laplacian => "Laplacian",
            },
            self.sigma,
            self.range.0,
            self.range.1
        );
        if let Some(scale) = self.png_scale {
            out += &format!(", PNG levels = {scale:.6e} x value");
        }
        out.push('\n');
        for (name, ms) in &self.passes {
            out += &format!("  {name:<10} {ms:9.2} ms\n");
        }
        for note in &self.notes {
            out += &format!("  note: {note}\n");
        }
        out
    }
}

/// Maps the image file `input` into `output`: its luma (the Rec. 709 weights of its samples as
/// stored, 1 being full scale) through the Gaussian gradient magnitude or Laplacian at the
/// options' sigma. `output` ends in `.tif`/`.tiff` (32-bit float gray, the values themselves)
/// or `.png` (16-bit gray, scaled: [`FeatureOptions::png_scale`]); it is written through a
/// temporary file and a rename, so nothing is left half-written, and never over the input.
///
/// ```
/// use gblur::{feature_map_file, Feature, FeatureOptions};
/// # let dir = tempfile::tempdir().unwrap();
/// # let out = dir.path().join("edges.tif");
///
/// let report = feature_map_file("samples/coffee.png", &out, &FeatureOptions::new(Feature::GradientMagnitude, 2.0))?;
/// assert!(report.range.1 > 0.0);
/// # Ok::<(), gblur::Error>(())
/// ```
pub fn feature_map_file(
    input: impl AsRef<Path>,
    output: impl AsRef<Path>,
    options: &FeatureOptions,
) -> Result<FeatureReport, Error> {
    let (input, output) = (input.as_ref(), output.as_ref());
    let setup = |message: String| Error::Setup {
        input: input.into(),
        message,
    };
    let failed = |message: String| Error::Failed {
        input: input.into(),
        message,
    };
    let mut filter = Filter::new(&[options.sigma, options.sigma])?.mode(options.mode);
    if let EdgeMode::Constant(c) = options.mode {
        // The command's constant is a fraction of full scale, as the luma is.
        filter = filter.cval(c as f64);
    }
    let format = check_output(input, output, None).map_err(|e| setup(e.to_string()))?;
    if !matches!(format, ImageFormat::Tiff | ImageFormat::Png) {
        return Err(setup(format!(
            "{}: a feature map is written as a float TIFF (.tif) or a 16-bit PNG (.png)",
            output.display()
        )));
    }
    let mut passes = Vec::new();
    let mut timed = |name: &str, started: Instant| {
        passes.push((name.to_string(), started.elapsed().as_secs_f64() * 1e3));
    };
    let started = Instant::now();
    let decoded = decode(input, crate::memory::budget_mib(options.max_memory_mib))
        .map_err(|e| failed(e.to_string()))?;
    timed("decode", started);
    let started = Instant::now();
    let luma = decoded.image.to_luma32f();
    let (w, h) = luma.dimensions();
    timed("luma", started);
    let started = Instant::now();
    let shape = [h as usize, w as usize];
    let mut map = vec![0f32; luma.len()];
    match options.feature {
        Feature::GradientMagnitude => filter.gradient_magnitude(luma.as_raw(), &mut map, &shape),
        Feature::Laplacian => filter.laplace(luma.as_raw(), &mut map, &shape),
    }?;
    timed("filter", started);
    let range = map
        .iter()
        .fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), &v| {
            (lo.min(v), hi.max(v))
        });
    let started = Instant::now();
    let mut notes = Vec::new();
    let (bytes, png_scale) = match format {
        ImageFormat::Png => {
            let scale = options
                .png_scale
                .unwrap_or_else(|| auto_scale(options.feature, range));
            let (levels, clipped) = to_levels(&map, options.feature, scale);
            notes.extend(level_notes(&levels, clipped, range));
            let image = DynamicImage::ImageLuma16(
                ImageBuffer::<Luma<u16>, _>::from_raw(w, h, levels).expect("w × h levels"),
            );
            let bytes = png::encode(&image, 6, None)
                .expect("16-bit gray is a PNG layout")
                .map_err(|e| failed(format!("{}: cannot encode as PNG: {e}", output.display())))?;
            (bytes, Some(scale))
        }
        _ => (
            float_tiff(&map, w, h)
                .map_err(|e| failed(format!("{}: cannot encode as TIFF: {e}", output.display())))?,
            None,
        ),
    };
    timed("encode", started);
    let started = Instant::now();
    write_output(output, &bytes, Replace::Any).map_err(|e| failed(e.to_string()))?;
    timed("write", started);
    Ok(FeatureReport {
        input: input.into(),
        output: output.into(),
        feature: options.feature,
        sigma: options.sigma,
        size: (w, h),
        range,
        png_scale,
        passes,
        notes,
    })
}

/// What a PNG's levels lost: values clipped at its ends, or every value on one level.
fn level_notes(levels: &[u16], clipped: usize, (lo, hi): (f32, f32)) -> Vec<String> {
    let mut notes = Vec::new();
    if clipped > 0 {
        let share = 100.0 * clipped as f64 / levels.len().max(1) as f64;
        notes.push(format!(
            "{clipped} pixels ({share:.2}%) lie beyond the PNG's levels at this scale and are clipped to 0 or 65535"
        ));
    }
    let flat = levels.windows(2).all(|w| w[0] == w[1]);
    if flat && hi > lo && levels.len() > 1 {
        notes.push(format!(
            "every value is written as level {} at this scale: the map's range is lost",
            levels[0]
        ));
    }
    notes
}

/// The PNG scale that writes the map's largest magnitude as the top level (65535, or 32767
/// from the middle for the signed Laplacian); 1 for a map of zeros.
fn auto_scale(feature: Feature, (lo, hi): (f32, f32)) -> f64 {
    let (top, largest) = match feature {
        Feature::GradientMagnitude => (65535.0, hi.max(0.0) as f64),
        Feature::Laplacian => (32767.0, lo.abs().max(hi.abs()) as f64),
    };
    if largest > 0.0 && largest.is_finite() {
        top / largest
    } else {
        1.0
    }
}

/// The map as 16-bit levels: value × scale (offset by 32768 for the signed Laplacian),
/// rounded and clipped; and how many were clipped.
fn to_levels(map: &[f32], feature: Feature, scale: f64) -> (Vec<u16>, usize) {
    let offset = match feature {
        Feature::GradientMagnitude => 0.0,
        Feature::Laplacian => 32768.0,
    };
    let mut clipped = 0;
    let levels = map
        .iter()
        .map(|&v| {
            let level = (offset + v as f64 * scale).round();
            clipped += usize::from(!(0.0..=65535.0).contains(&level));
            level.clamp(0.0, 65535.0) as u16
        })
        .collect();
    (levels, clipped)
}

/// A gray 32-bit float TIFF of `map`, uncompressed: every reader takes it (tifffile without
/// imagecodecs among them), and a float map compresses little.
fn float_tiff(map: &[f32], width: u32, height: u32) -> tiff::TiffResult<Vec<u8>> {
    let mut out = std::io::Cursor::new(Vec::new());
    let layout = Layout {
        width,
        height,
        channels: 1,
        icc: None,
        compression: Compression::None,
        inks: false,
    };
    write_whole(&mut tiff::encoder::TiffEncoder::new(&mut out)?, map, layout)?;
    Ok(out.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_scale_clip_and_centre_the_laplacian() {
        let map = [0.0, 0.5, 1.0, 2.0, -1.0];
        assert_eq!(
            to_levels(&map, Feature::GradientMagnitude, 65535.0),
            (vec![0, 32768, 65535, 65535, 0], 2)
        );
        assert_eq!(
            to_levels(&map, Feature::Laplacian, 100.0),
            (vec![32768, 32818, 32868, 32968, 32668], 0)
        );
        let notes = level_notes(&[0, 0, 0], 0, (0.0, 1e-9));
        assert!(
            notes[0].starts_with("every value is written as level 0"),
            "{notes:?}"
        );
        let notes = level_notes(&[0, 65535, 7, 65535], 2, (-1.0, 3.0));
        assert!(
            notes[0].starts_with("2 pixels (50.00%) lie beyond"),
            "{notes:?}"
        );
        assert_eq!(auto_scale(Feature::GradientMagnitude, (0.0, 0.5)), 131070.0);
        assert_eq!(auto_scale(Feature::Laplacian, (-2.0, 1.0)), 32767.0 / 2.0);
        assert_eq!(auto_scale(Feature::Laplacian, (0.0, 0.0)), 1.0);
    }
}
