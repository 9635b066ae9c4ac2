//! One plan for every image a job blurs: what the input's head says, read once, and the form
//! an image is decoded in, blurred in, and decoded again in should its device fail, decided
//! in one place from the job, the filter, the output's format and the path. The main command,
//! a stack's pages and every batch worker load, fit and reload their images through it.

use super::BlurJob;
use crate::codec::metadata::ifd::Reader;
use crate::codec::read::Input;
use crate::codec::tiff::pages::Pages;
use crate::codec::ImageIoError;
use crate::filter::Blur2d;
use crate::gpu::plan::Pipeline;
use crate::mask::{MaskFile, Masked};
use crate::report::Log;
use crate::report::{Pass, Stage};
use crate::work::edges::EdgePlan;
use crate::work::load::{load_with, Source};
use crate::work::{Keep, Loaded};
use image::ImageFormat;
use std::path::Path;
use std::time::Instant;

/// What the input's head says, read once per job before any decision: its format, from its
/// first bytes, and a TIFF's chain of pages.
pub struct Header {
    /// None where the first bytes are no format gblur reads (the decode then says why).
    pub format: Option<ImageFormat>,
    /// A TIFF's pages, as far as its directories can be followed; None for any other format.
    pub pages: Option<Pages>,
}

impl Header {
    /// Reads the head of `input`.
    pub fn read(input: &Input) -> Header {
        let format = input.sniffed;
        let pages = match format {
            Some(ImageFormat::Tiff) => Pages::read(&mut Reader(input.reader())),
            _ => None,
        };
        Header { format, pages }
    }
}

/// The forms of one job's images, for its filter.
pub struct ImagePlan<'a> {
    job: &'a BlurJob,
    blur: &'a Blur2d,
    /// What lies beyond each edge.
    pub edges: EdgePlan,
}

impl<'a> ImagePlan<'a> {
    /// The plan for the images of `job`, blurred with its filter.
    pub fn new(job: &'a BlurJob) -> ImagePlan<'a> {
        let blur = &job.filter;
        let edges = EdgePlan::new(job.edges, blur);
        ImagePlan { job, blur, edges }
    }

    /// The job.
    pub fn job(&self) -> &'a BlurJob {
        self.job
    }

    /// The blur.
    pub fn blur(&self) -> &'a Blur2d {
        self.blur
    }

    /// The form `device`'s path (None: the Rust path) blurs an image in, written as
    /// `out_format`: `path_keep`, as YCbCr planes where `with_planes` takes them.
    pub fn keep(&self, device: Option<Pipeline>, out_format: ImageFormat) -> Keep {
        self.with_planes(self.path_keep(device), out_format)
    }

    /// What `device`'s path (None: the Rust path) keeps of a decoded image: what the path
    /// keeps (`Keep::for_path`), except that sharpening keeps planar f32, or on the Rust path
    /// the decoded image where it sharpens in place (`Sharpen::in_place`).
    pub fn path_keep(&self, device: Option<Pipeline>) -> Keep {
        let (job, blur) = (self.job, self.blur);
        match &job.sharpen {
            None => Keep::for_path(device, blur),
            Some(s)
                if device.is_none()
                    && s.in_place(job.linear, job.mask.active())
                    && Keep::for_path(None, blur) == Keep::Decoded
                    && !(blur.x.is_identity() || blur.y.is_identity()) =>
            {
                Keep::Decoded
            }
            Some(_) => Keep::Planar,
        }
    }

    /// `Keep::JpegPlanes` where a JPEG input may be blurred as its YCbCr planes: in place on
    /// the Rust path (`path_keep` `Decoded`) or as bytes on the blocked pipeline
    /// (`Decoded8Bit`), JPEG out, and nothing that needs RGB samples (`--linear`, a selection,
    /// an edge mode); `load` then checks the file itself (its layout against `--subsampling`,
    /// its orientation). Else `path_keep`.
    pub fn with_planes(&self, path_keep: Keep, out_format: ImageFormat) -> Keep {
        let job = self.job;
        let takes = job.jpeg_planes
            && matches!(path_keep, Keep::Decoded | Keep::Decoded8Bit)
            && out_format == ImageFormat::Jpeg
            && !job.linear
            && !job.mask.active()
            && job.sharpen.is_none()
            && self.edges.is_none();
        match takes {
            true => Keep::JpegPlanes {
                subsampling: job.encode.jpeg.subsampling,
                on_device: path_keep == Keep::Decoded8Bit,
            },
            false => path_keep,
        }
    }

    /// Decodes `source` for a path that blurs `keep`: as decoded where the job masks (the
    /// selection's blend needs the input's own samples; `fit` then converts it), extended
    /// where an edge mode extends it.
    pub fn decode(
        &self,
        source: Source,
        keep: Keep,
        passes: &mut Vec<Pass>,
    ) -> Result<Loaded, ImageIoError> {
        let mask = &self.job.mask;
        let decoding = self.job.decoding();
        load_with(
            source,
            decoding,
            mask.keep(keep),
            mask.sanitize(),
            &self.edges,
            passes,
        )
    }

    /// The selection of a decoded image (`name` in messages) where the job masks, with `mask`
    /// (`--mask`, decoded already); None where it blurs the whole image or the selection is
    /// empty. A mask of another size or a rectangle outside the image is an error.
    pub fn select(
        &self,
        loaded: &mut Loaded,
        mask: Option<&MaskFile>,
        name: &Path,
        log: &mut Log,
    ) -> Result<Option<Masked>, String> {
        if !self.job.mask.active() {
            return Ok(None);
        }
        let t = Instant::now();
        let (edges, blur) = (&self.edges, self.blur);
        let masked = Masked::new(&self.job.mask, mask, loaded, edges, blur, name, log.notes)?;
        log.passes.push(Pass::host(Stage::Decode, "selection", t));
        Ok(masked)
    }

    /// Puts a loaded image in the form `keep`'s path blurs: through its selection where it
    /// has one (`Masked::apply`), else converted to planar f32 where the path does not keep it
    /// as decoded (`Loaded::adapt`).
    pub fn fit(
        &self,
        loaded: &mut Loaded,
        masked: Option<&mut Masked>,
        keep: Keep,
        passes: &mut Vec<Pass>,
    ) {
        match masked {
            Some(m) => m.apply(loaded, keep, passes),
            None => loaded.adapt(keep, self.job.linear, passes),
        }
    }

    /// `source` decoded again as the Rust path takes it for `out_format`, with `masked`'s
    /// selection applied: the second decode after a device could not blur the image.
    pub fn reload(
        &self,
        source: Source,
        masked: Option<&Masked>,
        out_format: ImageFormat,
    ) -> Result<Loaded, ImageIoError> {
        let rust = self.keep(None, out_format);
        let mut again = self.decode(source, rust, &mut Vec::new())?;
        if let Some(m) = masked {
            m.apply_copy(&mut again, rust, &mut Vec::new());
        }
        Ok(again)
    }
}
