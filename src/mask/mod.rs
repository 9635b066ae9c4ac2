//! Blurring part of an image: a selection (rectangles, a grey mask file, a feathered edge),
//! how it mixes the blur in (`blend`, or `exclude`'s normalised convolution, which lets no
//! unselected pixel into the blur), and `--nan ignore`, the same normalised convolution over
//! the valid samples of a float image.
//!
//! It wraps the ordinary blur instead of changing it, so every path (the banded Rust blur, the
//! planar reference, the FIR, every OpenCL pipeline) gets it from one implementation:
//! `Masked::new` takes the decoded input over and builds the selection, `Masked::apply` puts
//! the image in the form the path blurs (for `blend` the input itself with the selection,
//! which the banded blur mixes in as it writes, or a copy on the other paths; the selection as
//! alpha, or premultiplied planar f32 with weight planes, for `exclude` and `--nan ignore`),
//! the path blurs it, and `Masked::finish` normalises and mixes the result into the input
//! *sample by sample*, so that a pixel the selection leaves at 0 is the input's sample bit for bit. A
//! selection far smaller than the image is blurred within its bounding box grown by the
//! filter's reach (`window`). A job with no selection never comes here.

mod blend;
mod pages;
mod select;
mod weights;
mod window;

pub use select::{parse_region, MaskFile, Region};

use crate::filter::Blur2d;
use crate::pixels;
use crate::report::{Pass, Stage};
use crate::work::edges::{self, EdgePlan};
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
    /// How the mask's weights mix the blurred and the original image.
    pub mode: MaskMode,
    /// What a NaN sample does (`--nan`).
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
    /// The decoded input (extended where an edge mode extends it), taken over from the load.
    original: DynamicImage,
    /// Its colour type (`original` goes to the blur where `apply` fuses the blend).
    color: image::ColorType,
    /// Where the selection is small: the part of the image the blur runs on (`window`), and
    /// the input's pixels there.
    window: Option<(window::Window, DynamicImage)>,
    /// Per pixel of the window (of the whole image where there is none) in [0, 1]; None
    /// selects every pixel fully (`--nan ignore` alone).
    select: Option<Arc<Vec<f32>>>,
    mode: MaskMode,
    /// `--nan ignore` on a float image.
    nan: bool,
    linear: bool,
    /// The input went to the banded blur, which mixes the blur into it by the selection as it
    /// writes (`apply`): the blurred image is the result.
    fused: bool,
}

/// The selection `opts` and the mask `file` make for `loaded` (named `name`), its own size;
/// an edge mode's extension gets its extension too, so that the padded image and its
/// selection line up. A mask of another size than an image its EXIF orientation turned says so.
fn selection(
    opts: &MaskOptions,
    file: Option<&MaskFile>,
    loaded: &Loaded,
    plan: &EdgePlan,
    name: &Path,
) -> Result<Arc<Vec<f32>>, String> {
    let (width, height) = (loaded.width, loaded.height);
    let own =
        select::build(opts, file, (width as usize, height as usize), name).map_err(|e| {
            match (file, loaded.meta.orientation()) {
                (Some(f), turn)
                    if turn != image::metadata::Orientation::NoTransforms
                        && (f.width, f.height) != (width as usize, height as usize) =>
                {
                    format!(
                        "{e}: the image was turned upright by its EXIF orientation ({turn:?}) \
                     before the mask was applied; turn the mask the same way, or remove \
                     the tag (exiftool -Orientation= FILE) to keep the pixels as stored"
                    )
                }
                _ => e,
            }
        })?;
    Ok(match loaded.padding {
        Some(_) => Arc::new(edges::pad_plane(&own, width, height, plan)),
        None => own,
    })
}

impl Masked {
    /// Builds the selection of `loaded` (decoded, as `MaskOptions::keep` loads it) and takes
    /// its input over (`apply` puts the image to blur back); None, leaving `loaded` as it is,
    /// where there is nothing to do (`--nan ignore` alone on an integer image). A selection
    /// far smaller than the image is blurred within its window only (`window::choose`, by
    /// `blur`'s reach). Errors (one line, naming `name`): a mask of another size, a rectangle
    /// wholly outside the image. Notes go to `notes`.
    pub fn new(
        opts: &MaskOptions,
        file: Option<&MaskFile>,
        loaded: &mut Loaded,
        plan: &EdgePlan,
        blur: &Blur2d,
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
        let select = match opts.selects() {
            true => Some(selection(opts, file, loaded, plan, name)?),
            false => None,
        };
        let nan = opts.nan == NanPolicy::Ignore && float;
        if select.is_none() && !nan {
            return Ok(None);
        }
        let size = (image.width() as usize, image.height() as usize);
        let within = select
            .as_deref()
            .and_then(|s| window::choose(s, size, blur));
        let (window, select) = match (within, select) {
            (Some(w), Some(s)) => {
                let part = window::crop_plane(&s, size.0, w);
                (Some((w, window::crop(image, w))), Some(Arc::new(part)))
            }
            (_, select) => (None, select),
        };
        let taken = std::mem::replace(&mut loaded.working, Working::Planar(Default::default()));
        let Working::Decoded(original) = taken else {
            unreachable!("matched as decoded above")
        };
        Ok(Some(Masked {
            color: original.color(),
            original,
            window,
            select,
            mode: opts.mode,
            nan,
            linear: loaded.layout.linear,
            fused: false,
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
        let within = match &self.window {
            Some((w, _)) => format!(", blurred within {}×{}", w.width(), w.height()),
            None => String::new(),
        };
        format!("{}{normalised}{within}", parts.join(", "))
    }

    /// The input the blur and the final mix work on: the window's part, or the whole image.
    fn input(&self) -> &DynamicImage {
        self.window
            .as_ref()
            .map_or(&self.original, |(_, part)| part)
    }

    /// Whether the blur runs on weighted planes (normalised convolution) rather than on the
    /// image as the path takes it.
    fn weighted(&self) -> bool {
        self.nan || (self.mode == MaskMode::Exclude && self.select.is_some())
    }

    /// Puts the input (the window's part where there is one) into `loaded`, this image's
    /// load, in the form its path blurs. A `blend` on the Rust path (`Keep::Decoded`) hands
    /// the input itself over with the selection (`Loaded::mix`): the banded blur mixes as it
    /// writes, so the input needs no copy and the blend no pass of its own. Any other job as
    /// `apply_copy`.
    pub fn apply(&mut self, loaded: &mut Loaded, keep: Keep, passes: &mut Vec<Pass>) {
        if self.weighted() || keep != Keep::Decoded {
            return self.apply_copy(loaded, keep, passes);
        }
        let select = self.select.clone().expect("a blend has a selection");
        loaded.working = Working::Decoded(self.take_input());
        loaded.mix = Some(select);
        self.fused = true;
    }

    /// Puts a copy of the input (the window's part where there is one) into `loaded` in the
    /// form its path blurs (`loaded` is this image's load, or a second one for a fallback):
    /// a copy, adapted by `Loaded::adapt`, for `blend`; for `exclude` and `--nan ignore`
    /// premultiplied planar f32 with every plane multiplied by its weight, followed by the
    /// weight planes.
    pub fn apply_copy(&self, loaded: &mut Loaded, keep: Keep, passes: &mut Vec<Pass>) {
        assert!(!self.fused, "the input went to the blur (`apply`)");
        let t = Instant::now();
        let input = self.input();
        if !self.weighted() {
            // The blur overwrites its copy; the input stays for the final mix.
            loaded.working = Working::Decoded(input.clone());
            passes.push(Pass::host(Stage::Decode, "input kept for the blend", t));
            loaded.adapt(keep, self.linear, passes);
            return;
        }
        let select = self.select.as_deref().map(Vec::as_slice);
        if let (Keep::Decoded, true) = (keep, self.nan) {
            if let Some(image) = weights::nan_as_alpha(input, select) {
                loaded.layout = pixels::Layout {
                    color: image.color(),
                    linear: false,
                };
                loaded.working = Working::Decoded(image);
                passes.push(Pass::host(Stage::Decode, "valid pixels as alpha", t));
                return;
            }
        }
        if let (Keep::Decoded, false, Some(select)) = (keep, self.nan, &self.select) {
            if let Some(image) = weights::as_alpha(input, select) {
                loaded.layout = pixels::Layout {
                    color: image.color(),
                    linear: self.linear,
                };
                loaded.working = Working::Decoded(image);
                passes.push(Pass::host(Stage::Decode, "selection as alpha", t));
                return;
            }
        }
        let (planar, layout) = weights::weighted(input, select, self);
        loaded.working = Working::Planar(planar);
        loaded.layout = layout;
        passes.push(Pass::host(Stage::Decode, "weighted planes", t));
    }

    /// Turns the blurred `loaded` back into the input's colour type, normalised where it was
    /// weighted, and mixes it into the input by the selection: the image `save` writes.
    pub fn finish(mut self, loaded: &mut Loaded, passes: &mut Vec<Pass>) {
        let t = Instant::now();
        let color = self.color;
        assert!(
            loaded.mix.is_none(),
            "the banded blur takes the selection it mixes by"
        );
        let working = std::mem::replace(&mut loaded.working, Working::Planar(Default::default()));
        let mixed = self.mixed(working, loaded.layout);
        let image = match self.window.take() {
            // Outside the window the selection is 0: the input as it is.
            Some((w, _)) => {
                window::paste(&mut self.original, &mixed, w);
                self.original
            }
            None => mixed,
        };
        loaded.layout = pixels::Layout {
            color,
            linear: self.linear,
        };
        loaded.working = Working::Decoded(image);
        passes.push(Pass::host(Stage::Encode, "mask blend", t));
    }

    /// The blurred `working` (in `layout`) in the input's colour type, normalised where it was
    /// weighted and mixed into the input (the window's part where there is one).
    fn mixed(&mut self, working: Working, layout: pixels::Layout) -> DynamicImage {
        let color = self.color;
        if self.fused {
            // Mixed by the banded blur already (`apply`).
            let Working::Decoded(image) = working else {
                panic!("a fused blend is blurred in place by the banded blur");
            };
            return image;
        }
        let blurred = match working {
            // `weights::as_alpha`'s route: the weight came back as alpha; normalised already
            // by the premultiplied blur, it is mixed into the input in place, in one pass.
            Working::Decoded(image) if image.color() != color => {
                let input = self.take_input();
                let select = self.select.as_deref().map(Vec::as_slice);
                return blend::mix_alpha(input, &image, select, self.nan);
            }
            Working::Decoded(image) => image,
            Working::Ycc(planes) => planes.to_rgb().into(),
            Working::Planar(mut planar)
                if self.nan && !layout.linear && layout.color == image::ColorType::Rgb32F =>
            {
                // `weights::weighted`'s RGB f32 planes (`nan_weighted_rgb`: four or six):
                // normalised and mixed in one pass.
                let DynamicImage::ImageRgb32F(mut input) = self.take_input() else {
                    panic!("the RGB f32 weighted planes come from an RGB f32 image");
                };
                let select = self.select.as_deref().map(Vec::as_slice);
                weights::nan_mix_rgb(&mut input, &mut planar, select);
                return DynamicImage::ImageRgb32F(input);
            }
            Working::Planar(mut planar) => {
                if self.weighted() {
                    let channels = color_planes(&planar, self.nan);
                    let select = self.select.as_mut().map(Arc::make_mut);
                    weights::normalise(&mut planar, channels, self.nan, select);
                }
                pixels::finish_planar(&mut planar, layout);
                pixels::from_planar(&planar, layout.color, color)
            }
        };
        let select = self.select.as_deref().map(Vec::as_slice);
        blend::mix(self.input(), blurred, select, self.nan)
    }

    /// Takes the input (`input`) out of `self`, leaving an empty image.
    fn take_input(&mut self) -> DynamicImage {
        let slot = match &mut self.window {
            Some((_, part)) => part,
            None => &mut self.original,
        };
        std::mem::replace(slot, DynamicImage::new_luma8(0, 0))
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
