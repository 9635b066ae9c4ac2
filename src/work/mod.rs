//! The work on one image that the main command and every batch worker share: `load` decodes
//! it into the form its path blurs, `blur` blurs it on the device or on the Rust path (and
//! falls back to the Rust path when the device cannot), `save` turns it back into samples and
//! writes it atomically. Every step is timed into the job's passes.

pub mod blur;
pub mod edges;
pub mod load;
pub mod save;
pub mod sharpen;

use crate::filter::Blur2d;
use crate::gpu::plan::Pipeline;
use crate::gpu::plan::{self, Upload};
use crate::pixels::{self, planar::Planar};
use image::{ColorType, DynamicImage, ImageFormat};

/// The image a blur works on.
pub enum Working {
    /// Premultiplied planar f32: what the OpenCL pipelines and the reference path take.
    Planar(Planar),
    /// The decoded image itself, blurred in place by the banded Rust blur (no f32 copy).
    Decoded(DynamicImage),
    /// A colour JPEG's YCbCr planes at their own resolutions (`Keep::JpegPlanes`), blurred
    /// in place (on the Rust path, or up and down as bytes on the blocked pipeline) and
    /// encoded straight back.
    Ycc(crate::codec::jpeg::YccPlanes),
}

/// A decoded input, oriented, as the blur will take it.
pub struct Loaded {
    /// The samples.
    pub working: Working,
    /// Their layout.
    pub layout: pixels::Layout,
    /// The input's ICC profile, EXIF and XMP.
    pub meta: crate::codec::metadata::Metadata,
    /// The input's format.
    pub format: ImageFormat,
    /// The input's colour type.
    pub color: ColorType,
    /// Width, pixels.
    pub width: u32,
    /// Height, pixels.
    pub height: u32,
    /// What decoding changed that the report should say (`pixels::sanitize_image`).
    pub notes: Vec<String>,
    /// How a JPEG input was written, for `--quality same` and `--subsampling same`.
    pub jpeg: Option<crate::codec::jpeg::JpegTraits>,
    /// A TIFF input's Compression tag, for `--tiff-compression same`.
    pub tiff_compression: Option<u16>,
    /// The input is a lossless WebP: a WebP output is lossless too unless `--quality` says.
    pub webp_lossless: bool,
    /// The image is gray 32-bit float held as RGB(A) with three equal channels
    /// (`codec::DecodedFile::gray_float`); it is written back as gray.
    pub gray_float: bool,
    /// Where the image lies in the extension an edge mode other than clamp blurs
    /// (`edges::pad`); `width` and `height` stay the image's own.
    pub padding: Option<edges::Padding>,
    /// A selection that the banded blur mixes its result into the decoded input by as it
    /// writes it (`mask`'s blend on the Rust path, `Masked::apply`); the blur takes it.
    pub mix: Option<std::sync::Arc<Vec<f32>>>,
}

impl Loaded {
    /// What a device running `pipe` receives of this image: planar f32, or the decoded 8-bit
    /// samples (`Upload::for_image`); None for a decoded image that the device does not take,
    /// which the banded blur handles on the host.
    pub fn upload(&self, pipe: Pipeline, blur: &Blur2d) -> Option<Upload> {
        match &self.working {
            Working::Planar(_) => Some(Upload::PlanarF32),
            // The planes go up one at a time as 8-bit gray; the Y plane is the largest.
            Working::Ycc(_) => match Upload::for_image(ColorType::L8, false, pipe, blur) {
                u @ Upload::U8 { .. } => Some(u),
                Upload::PlanarF32 => None,
            },
            Working::Decoded(image) => {
                match Upload::for_image(image.color(), self.layout.linear, pipe, blur) {
                    u @ Upload::U8 { .. } => Some(u),
                    Upload::PlanarF32 => None,
                }
            }
        }
    }

    /// (width, height) in pixels of what is blurred: the image, or its extension.
    pub fn size(&self) -> (usize, usize) {
        match self.padding {
            Some(p) => (p.width as usize, p.height as usize),
            None => (self.width as usize, self.height as usize),
        }
    }
}

/// Which decoded images a path blurs as they are, without a planar f32 copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keep {
    /// Every image converted to planar f32 (the reference path, the FIR, the other pipelines).
    Planar,
    /// Every image as decoded: the Rust path's banded blur, in place.
    Decoded,
    /// 8-bit gray, gray+alpha, RGB and RGBA as decoded (uploaded as bytes, converted on the
    /// device: `upload::blur_u8`), the rest as planar f32.
    Decoded8Bit,
    /// A colour JPEG as its YCbCr planes (`Working::Ycc`) where its layout is the one
    /// `subsampling` writes, everything else as `Decoded` keeps it (`Decoded8Bit` where
    /// `on_device`): a JPEG → JPEG job on the Rust path or the blocked pipeline
    /// (`job::ImagePlan::with_planes` says when).
    JpegPlanes {
        /// The output's chroma subsampling.
        subsampling: crate::codec::jpeg::Subsampling,
        /// Blurred on an OpenCL device (else on the host).
        on_device: bool,
    },
}

impl Keep {
    /// What a path keeps: the Rust path (`device` None) or a device running `device`.
    pub fn for_path(device: Option<Pipeline>, blur: &Blur2d) -> Keep {
        let recursive = blur.x.is_recursive() && blur.y.is_recursive();
        // An axis left alone (sigma 0) and the other recursive or an FIR: in place on the host
        // (`cpu::blur_in_place`).
        let one_axis = blur.x.is_identity() || blur.y.is_identity();
        match device {
            None if one_axis => Keep::Decoded,
            _ if !recursive => Keep::Planar,
            None => Keep::Decoded,
            Some(Pipeline::Blocked { .. }) => Keep::Decoded8Bit,
            Some(_) => Keep::Planar,
        }
    }

    /// Whether an image of `color` keeps its samples in this form.
    pub fn keeps(self, color: ColorType) -> bool {
        match self {
            Keep::Planar => false,
            Keep::Decoded
            | Keep::JpegPlanes {
                on_device: false, ..
            } => true,
            Keep::Decoded8Bit
            | Keep::JpegPlanes {
                on_device: true, ..
            } => plan::u8_channels(color).is_some(),
        }
    }
}
