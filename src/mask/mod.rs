//! Blurring part of an image: a selection (rectangles, a grey mask file, a feathered edge),
//! how it mixes the blur in (`blend`, or `exclude`'s normalised convolution, which lets no
//! unselected pixel into the blur), and `--nan ignore`, the same normalised convolution over
//! the valid samples of a float image.
//!
//! It wraps the ordinary blur instead of changing it, so every path (the banded Rust blur, the
//! planar reference, the FIR, every OpenCL pipeline) gets it from one implementation:
//! `Masked::new` keeps the decoded input and builds the selection, `Masked::apply` puts the
//! image in the form the path blurs (the usual one for `blend`; premultiplied planar f32 with
//! weight planes for `exclude` and `--nan ignore`), the path blurs it, and `Masked::finish`
//! normalises and mixes the result into the input *sample by sample*, so that a pixel the
//! selection leaves at 0 is the input's sample bit for bit. A job with no selection never
//! comes here.

mod blend;
mod select;
mod weights;

pub use select::{parse_region, MaskFile, Region};

use crate::codec::ImageIoError;
use crate::pixels;
use crate::report::{Pass, Stage};
use crate::work::edges::{self, EdgePlan};
use crate::work::load::{load_with, Source};
use crate::work::{Keep, Loaded, Working};
use image::DynamicImage;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// How the selection mixes the blur in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MaskMode {
    /// out = in + m·(blur(in) − in): every pixel feeds the blur, the selection only says where
    /// it shows.
    #[default]
    Blend,
    /// out = in + m·(blur(m·in)/blur(m) − in): only selected pixels feed the blur, so nothing
    /// outside the selection leaks into it (no halo of a foreground around a blurred
    /// background).
    Exclude,
}

/// What happens to NaN and ±Inf samples of float images.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum NanPolicy {
    /// Replaced by 0 at load, with a note (`pixels::sanitize_image`).
    #[default]
    Zero,
    /// Left out of the blur: each channel is blurred over its finite samples only
    /// (normalised convolution), and a non-finite sample is filled from those that reach it.
    Ignore,
}

/// The selection a job asked for; the default selects nothing and costs nothing.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MaskOptions {
    /// Rectangles, united; partly outside ones are clipped to the image.
    pub regions: Vec<Region>,
    /// A grey image the size of the input: 0 untouched, full scale fully blurred.
    pub mask: Option<PathBuf>,
    /// Feather width in pixels: the selection is blurred by a Gaussian of sigma `feather / 2`.
    pub feather: f64,
    pub mode: MaskMode,
    pub nan: NanPolicy,
}

/// Below this the blurred weight (the Gaussian mass of the selected, valid pixels reaching a
/// pixel, 1 for a pixel whose whole neighbourhood counts) is too small to divide by: the pixel
/// keeps its input sample. It is twice the recursive filter's error (5.7e-4, relative L1), so
/// that the filter's ringing is never mistaken for data.
pub const MIN_WEIGHT: f32 = 1e-3;

impl MaskOptions {
    /// Whether the job selects part of the image or ignores NaN: only then does this module
    /// take part.
    pub fn active(&self) -> bool {
        self.selects() || self.nan == NanPolicy::Ignore
    }

    /// Whether a selection was given (else the whole image is selected).
    pub fn selects(&self) -> bool {
        !self.regions.is_empty() || self.mask.is_some()
    }

    /// Reads the mask file, if there is one (before any input: a bad mask is a set-up error).
    pub fn open(&self, max_memory_mib: u64) -> Result<Option<MaskFile>, String> {
        self.mask
            .as_deref()
            .map(|p| MaskFile::open(p, max_memory_mib))
            .transpose()
    }

    /// What a masked job loads: the decoded image as it is, whatever the path; `apply`
    /// converts it (the blend needs the input's own samples).
    pub fn keep(&self, keep: Keep) -> Keep {
        if self.active() {
            Keep::Decoded
        } else {
            keep
        }
    }

    /// Whether float samples are cleaned at load (`pixels::sanitize_image`): not when they
    /// are to be ignored.
    pub fn sanitize(&self) -> bool {
        self.nan == NanPolicy::Zero
    }
}

/// One image's selection and its input, from load to save.
pub struct Masked {
    original: DynamicImage,
    /// Per pixel in [0, 1]; None selects every pixel fully (`--nan ignore` alone).
    select: Option<Arc<Vec<f32>>>,
    mode: MaskMode,
    /// `--nan ignore` on a float image.
    nan: bool,
    linear: bool,
}

impl Masked {
    /// Builds the selection of `loaded` (decoded, as `MaskOptions::keep` loads it) and keeps
    /// its input; None where there is nothing to do (`--nan ignore` alone on an integer image).
    /// Errors (one line, naming `name`): a mask of another size, a rectangle wholly outside the
    /// image. Notes go to `notes`.
    pub fn new(
        opts: &MaskOptions,
        file: Option<&MaskFile>,
        loaded: &Loaded,
        plan: &EdgePlan,
        name: &Path,
        notes: &mut Vec<String>,
    ) -> Result<Option<Masked>, String> {
        let Working::Decoded(image) = &loaded.working else {
            panic!("a masked job loads its image as decoded (MaskOptions::keep)");
        };
        let float = !pixels::is_integer(image.color());
        if opts.nan == NanPolicy::Ignore && !float {
            notes.push(format!(
                "--nan ignore: {:?} samples cannot be NaN; nothing to ignore",
                image.color()
            ));
        }
        let select = if opts.selects() {
            // The selection is the image's own size; an edge mode's extension gets its
            // extension too, so that the padded image and its selection line up.
            let (width, height) = (loaded.width, loaded.height);
            let own = select::build(opts, file, (width as usize, height as usize), name)?;
            Some(match loaded.padding {
                Some(_) => Arc::new(edges::pad_plane(&own, width, height, plan)),
                None => own,
            })
        } else {
            None
        };
        let nan = opts.nan == NanPolicy::Ignore && float;
        if select.is_none() && !nan {
            return Ok(None);
        }
        Ok(Some(Masked {
            original: image.clone(),
            select,
            mode: opts.mode,
            nan,
            linear: loaded.layout.linear,
        }))
    }

    /// What the report adds to the pipeline's name: `mask blend`, `mask exclude (normalised)`,
    /// `NaN ignored (normalised)`.
    pub fn describe(&self) -> String {
        let mode = match (self.select.is_some(), self.mode) {
            (false, _) => None,
            (true, MaskMode::Blend) => Some("mask blend"),
            (true, MaskMode::Exclude) => Some("mask exclude"),
        };
        let nan = self.nan.then_some("NaN ignored");
        let parts: Vec<&str> = mode.into_iter().chain(nan).collect();
        let normalised = if self.weighted() { " (normalised)" } else { "" };
        format!("{}{normalised}", parts.join(", "))
    }

    /// Whether the blur runs on weighted planes (normalised convolution) rather than on the
    /// image as the path takes it.
    fn weighted(&self) -> bool {
        self.nan || (self.mode == MaskMode::Exclude && self.select.is_some())
    }

    /// Puts `loaded` (this image, decoded, or decoded again for a fallback) into the form its
    /// path blurs: `Loaded::adapt` for `blend`; for `exclude` and `--nan ignore` premultiplied
    /// planar f32 with every plane multiplied by its weight, followed by the weight planes.
    pub fn apply(&self, loaded: &mut Loaded, keep: Keep, passes: &mut Vec<Pass>) {
        if !self.weighted() {
            loaded.adapt(keep, self.linear, passes);
            return;
        }
        let t = Instant::now();
        if let (Keep::Decoded, false, Some(select)) = (keep, self.nan, &self.select) {
            if let Some(image) = weights::as_alpha(&self.original, select) {
                loaded.layout = pixels::Layout {
                    color: image.color(),
                    linear: self.linear,
                };
                loaded.working = Working::Decoded(image);
                passes.push(Pass::host(Stage::Decode, "selection as alpha", t));
                return;
            }
        }
        let select = self.select.as_deref().map(Vec::as_slice);
        let (planar, layout) = weights::weighted(&self.original, select, self);
        loaded.working = Working::Planar(planar);
        loaded.layout = layout;
        passes.push(Pass::host(Stage::Decode, "weighted planes", t));
    }

    /// Turns the blurred `loaded` back into the input's colour type, normalised where it was
    /// weighted, and mixes it into the input by the selection: the image `save` writes.
    pub fn finish(mut self, loaded: &mut Loaded, passes: &mut Vec<Pass>) {
        let t = Instant::now();
        let color = self.original.color();
        let working = std::mem::replace(&mut loaded.working, Working::Planar(Default::default()));
        let blurred = match working {
            // `weights::as_alpha`'s route: the weight came back as alpha; normalised already
            // by the premultiplied blur, it is mixed in one pass.
            Working::Decoded(image) if image.color() != color => {
                let select = self.select.as_deref().expect("weighted by a selection");
                let input = std::mem::replace(&mut self.original, DynamicImage::new_luma8(0, 0));
                let mixed = blend::mix_alpha(input, &image, select);
                loaded.layout = pixels::Layout {
                    color,
                    linear: self.linear,
                };
                loaded.working = Working::Decoded(mixed);
                passes.push(Pass::host(Stage::Encode, "mask blend", t));
                return;
            }
            Working::Decoded(image) => image,
            Working::Planar(mut planar) => {
                if self.weighted() {
                    let channels = color_planes(&planar, self.nan);
                    let select = self.select.as_mut().map(Arc::make_mut);
                    weights::normalise(&mut planar, channels, self.nan, select);
                }
                pixels::finish_planar(&mut planar, loaded.layout);
                pixels::from_planar(&planar, loaded.layout.color, color)
            }
        };
        let select = self.select.as_deref().map(Vec::as_slice);
        let mixed = blend::mix(&self.original, blurred, select, self.nan);
        loaded.layout = pixels::Layout {
            color,
            linear: self.linear,
        };
        loaded.working = Working::Decoded(mixed);
        passes.push(Pass::host(Stage::Encode, "mask blend", t));
    }
}

/// The image planes of a weighted planar image: half of them with per-channel weights
/// (`--nan ignore`), all but the one shared weight plane otherwise.
fn color_planes(planar: &pixels::planar::Planar, per_channel: bool) -> usize {
    if per_channel {
        planar.channels / 2
    } else {
        planar.channels - 1
    }
}

/// Loads `source` again as `keep` (the Rust path's) takes it, with `masked`'s selection applied
/// where the job masks: the second decode after a device could not blur the image.
/// `(limit, linear)` are the job's `--max-memory` and `--linear`.
pub fn reload(
    source: Source,
    opts: &MaskOptions,
    masked: Option<&Masked>,
    (limit, linear): (u64, bool),
    plan: &EdgePlan,
    keep: Keep,
) -> Result<Loaded, ImageIoError> {
    let (load_keep, sanitize) = (opts.keep(keep), opts.sanitize());
    let mut again = load_with(
        source,
        limit,
        linear,
        load_keep,
        sanitize,
        plan,
        &mut Vec::new(),
    )?;
    if let Some(m) = masked {
        m.apply(&mut again, keep, &mut Vec::new());
    }
    Ok(again)
}
