//! gblur: a recursive (IIR) Gaussian blur for images and N-D arrays, on the host's cores or
//! on OpenCL devices, at a cost per sample that does not grow with sigma.
//!
//! The filter is Deriche's 4th-order recursive Gaussian as two parallel 2nd-order sections in
//! f32, within 5.7e-4 of the exactly sampled Gaussian (relative to the value range) for sigma
//! from 2 to 3000; below sigma 2 the exactly sampled Gaussian (an FIR) runs instead. Edges
//! start in the filter's exact steady state, so a constant image stays constant to the bit.
//!
//! # Common uses
//!
//! Blur a decoded image in place (any `image::DynamicImage` of 8-bit, 16-bit or f32 samples;
//! colour is blurred premultiplied by alpha):
//!
//! ```
//! use image::{DynamicImage, RgbaImage};
//!
//! let mut img = DynamicImage::ImageRgba8(RgbaImage::new(320, 240));
//! gblur::Gaussian::new(4.0)?.blur_image(&mut img)?;
//! # Ok::<(), gblur::Error>(())
//! ```
//!
//! Blur raw interleaved samples with a row stride, with scipy's edge modes:
//!
//! ```
//! use gblur::{EdgeMode, Gaussian, Layout};
//!
//! let layout = Layout::new(640, 480, 4).with_row_stride(2600).with_alpha(true);
//! let mut rgba16 = vec![0u16; layout.len()];
//! let g = Gaussian::builder().sigma(2.5).edges(EdgeMode::Reflect).build()?;
//! g.blur_interleaved(&mut rgba16, layout)?;
//! # Ok::<(), gblur::Error>(())
//! ```
//!
//! Blur an N-D array along chosen axes, as `scipy.ndimage.gaussian_filter` does:
//!
//! ```
//! use gblur::nd::Filter;
//!
//! let shape = [32, 128, 128]; // (z, y, x)
//! let mut volume = vec![0f32; 32 * 128 * 128];
//! Filter::new(&[1.0, 3.0, 3.0])?.apply(&mut volume, &shape)?;
//! # Ok::<(), gblur::Error>(())
//! ```
//!
//! An array held in chunks (a Dask array, a Zarr store, tiles of any chunked engine) is
//! blurred along an axis without any chunk reading another's samples, at any sigma, by
//! carrying the filter's state between chunks: [`nd::carry`].
//!
//! Open a device once and reuse it (the OpenCL driver's set-up and the kernels' builds are
//! paid once; `"auto"` runs each call where it is predicted faster):
//!
//! ```
//! use gblur::{nd::Filter, Device};
//!
//! let device = Device::open("rust")?; // or "gpu", "auto", an index from `gblur devices`
//! let mut volume = vec![0f32; 16 * 64 * 64];
//! for sigma in [1.0, 2.0, 4.0] {
//!     device.blur_nd(&Filter::new(&[sigma; 3])?, &mut volume, &[16, 64, 64])?;
//! }
//! # Ok::<(), gblur::Error>(())
//! ```
//!
//! Blur a file as the `gblur` command does (streamed when large, metadata kept, written
//! atomically), with a report of every pass:
//!
//! ```no_run
//! use gblur::{blur_file, FileOptions, Gaussian};
//!
//! let report = blur_file("in.jpg", "out.jpg", &FileOptions::new(Gaussian::new(5.0)?))?;
//! eprintln!("{}", report.table());
//! # Ok::<(), gblur::Error>(())
//! ```
//!
//! # Features
//!
//! None is on by default. `progress-bars` draws a progress bar on stderr for a long image, as
//! the `gblur` command does. `unstable-internals` exposes the crate's internals to `gblur bench`
//! (`crates/bench`), the fuzz targets and the benchmark programs; it is not part of the API and
//! follows no versioning. The `gblur` command's own code (`crates/cli`) uses the public API
//! alone: what it needs beyond `blur_file` is [`command`].
//!
//! # Layers
//!
//! The public API (`api`, [`command`] among it) over the per-file job (`job`, `work`, `mask`, `stream`) over the
//! engines (`codec`, `cpu`, `gpu`, on `filter` and `pixels`), with `backend` choosing where a
//! job runs. The `gblur` command (`crates/cli`: the argument parser, `gblur batch`, the device
//! list) and the GPU tutorial suite behind `gblur bench` (`crates/bench`) are packages of their
//! own on top. Nothing imports upwards; `tests/it/architecture.rs` fails on an import cycle.

#![deny(missing_docs)]

mod api;
pub use api::{
    blur_file, command, feature_map_file, keep_scratch, nd, Device, Error, Feature, FeatureOptions,
    FeatureReport, FileOptions, FileReport, Gaussian, GaussianBuilder, Layout, PageLocked,
    PassTime, Sample,
};
pub use filter::{EdgeMode, Method};

// The crate's internal modules: `pub(crate)`, except with the `unstable-internals` feature,
// where `gblur bench`, the fuzz targets and the benchmark programs reach them (hidden from the
// documentation, outside the API and its versioning). Declared one by one, not by a macro, so
// that rustfmt (`cargo fmt`) reaches their files.

#[cfg(not(feature = "unstable-internals"))]
pub(crate) mod backend;
#[cfg(feature = "unstable-internals")]
#[doc(hidden)]
pub mod backend;

#[cfg(not(feature = "unstable-internals"))]
pub(crate) mod codec;
#[cfg(feature = "unstable-internals")]
#[doc(hidden)]
pub mod codec;

#[cfg(not(feature = "unstable-internals"))]
pub(crate) mod cpu;
#[cfg(feature = "unstable-internals")]
#[doc(hidden)]
pub mod cpu;

#[cfg(not(feature = "unstable-internals"))]
pub(crate) mod fault;
#[cfg(feature = "unstable-internals")]
#[doc(hidden)]
pub mod fault;

#[cfg(not(feature = "unstable-internals"))]
pub(crate) mod filter;
#[cfg(feature = "unstable-internals")]
#[doc(hidden)]
pub mod filter;

#[cfg(not(feature = "unstable-internals"))]
pub(crate) mod gpu;
#[cfg(feature = "unstable-internals")]
#[doc(hidden)]
pub mod gpu;

#[cfg(not(feature = "unstable-internals"))]
pub(crate) mod interrupt;
#[cfg(feature = "unstable-internals")]
#[doc(hidden)]
pub mod interrupt;

#[cfg(not(feature = "unstable-internals"))]
pub(crate) mod job;
#[cfg(feature = "unstable-internals")]
#[doc(hidden)]
pub mod job;

#[cfg(not(feature = "unstable-internals"))]
pub(crate) mod mask;
#[cfg(feature = "unstable-internals")]
#[doc(hidden)]
pub mod mask;

#[cfg(not(feature = "unstable-internals"))]
pub(crate) mod memory;
#[cfg(feature = "unstable-internals")]
#[doc(hidden)]
pub mod memory;

#[cfg(not(feature = "unstable-internals"))]
pub(crate) mod pixels;
#[cfg(feature = "unstable-internals")]
#[doc(hidden)]
pub mod pixels;

#[cfg(not(feature = "unstable-internals"))]
pub(crate) mod progress;
#[cfg(feature = "unstable-internals")]
#[doc(hidden)]
pub mod progress;

#[cfg(not(feature = "unstable-internals"))]
pub(crate) mod report;
#[cfg(feature = "unstable-internals")]
#[doc(hidden)]
pub mod report;

#[cfg(not(feature = "unstable-internals"))]
pub(crate) mod stream;
#[cfg(feature = "unstable-internals")]
#[doc(hidden)]
pub mod stream;

#[cfg(not(feature = "unstable-internals"))]
pub(crate) mod work;
#[cfg(feature = "unstable-internals")]
#[doc(hidden)]
pub mod work;

#[cfg(test)]
mod tests;
