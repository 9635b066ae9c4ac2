//! `Device`: where blurs run, opened once and reused, so that a program pays the OpenCL
//! driver's set-up (about 0.2 s on NVIDIA's) and the kernels' builds once, not per call.

use super::array_cost::{self, ArrayFigures};
use super::nd::{Element, Filter};
use super::page_locked::{self, Direct, PageLocked};
use super::{Error, Gaussian, Layout, Sample};
use crate::backend::{self, calibrate, cost};
use crate::cpu::axis::footprint::Spoiled;
use crate::cpu::axis::AxisFilter;
use crate::gpu::host_array::{Extended, Pad};
use crate::gpu::opencl::staged::SLOT_BYTES;
use crate::gpu::opencl::{cache, DeviceChoice};
use crate::gpu::plan::{PipelineChoice, Upload};
use crate::gpu::{pipeline, upload, volume};
use crate::pixels;
use crate::work::edges::{self, EdgePlan};
use image::DynamicImage;
use std::sync::{Mutex, MutexGuard, OnceLock};

/// Where blurs run: an OpenCL device (a GPU, or a CPU device such as PoCL), or the host's own
/// cores (the built-in Rust path, which needs no OpenCL at all).
///
/// ```
/// use gblur::{Device, Gaussian};
///
/// // "rust" never loads a driver; "gpu" needs one, "auto" takes a GPU if there is one.
/// let device = Device::open("rust")?;
/// let mut pixels = vec![0.25f32; 64 * 64];
/// for _ in 0..3 {
///     device.blur_planar(&Gaussian::new(2.5)?, &mut pixels, 64, 64)?;
/// }
/// assert!(!device.is_opencl());
/// # Ok::<(), gblur::Error>(())
/// ```
///
/// A `Device` is `Send` and `Sync`: threads may share one, and their calls on an OpenCL device
/// take turns on its one queue.
pub struct Device {
    /// None: the host's cores.
    opened: Option<Mutex<backend::Device>>,
    /// Opened by `auto`: each call weighs the host against the device for its size.
    weighs: bool,
    /// The cost model's figures, measured or read once, on the first call that weighs.
    figures: OnceLock<Option<(cost::RustFigures, cost::DeviceFigures)>>,
    /// The arrays' figures, measured on the first array that `auto` weighs.
    array_figures: OnceLock<Option<ArrayFigures>>,
}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Device")
            .field("name", &self.name())
            .finish()
    }
}

impl Device {
    /// Opens the device `which` names, as `gblur --device` does: `auto` (a GPU where one is
    /// installed, else the host's cores; each call then runs where the cost model predicts
    /// it faster for that size), `gpu`, `cpu` (an OpenCL CPU device), `rust` (the host's
    /// cores, no OpenCL), an index from `gblur devices`, or part of a device's name.
    ///
    /// ```
    /// use gblur::Device;
    ///
    /// // Open once, blur many times: the OpenCL set-up is paid here.
    /// let device = Device::open("rust")?;
    /// assert!(!device.is_opencl());
    /// assert!(Device::open("no such device").is_err());
    /// # Ok::<(), gblur::Error>(())
    /// ```
    pub fn open(which: &str) -> Result<Device, Error> {
        let choice = DeviceChoice::parse(which.trim());
        let auto = choice == DeviceChoice::Auto;
        let chosen = backend::choose_device(&choice, PipelineChoice::Auto, || None)
            .map_err(|e| Error::Device(format!("{e:#}")))?;
        let opened = match chosen.target {
            Some(target) => {
                let device =
                    backend::Device::open(target).map_err(|e| Error::Device(e.to_string()))?;
                Some(Mutex::new(device))
            }
            None => None,
        };
        Ok(Device {
            weighs: auto && opened.is_some(),
            opened,
            figures: OnceLock::new(),
            array_figures: OnceLock::new(),
        })
    }

    /// This device, weighing each array as one opened by `auto` does, by figures that send
    /// every array to the host's cores (for tests on PoCL, where `auto` opens the cores).
    #[cfg(test)]
    pub(crate) fn weighing_for_the_host(mut self) -> Device {
        self.weighs = self.opened.is_some();
        let _ = self.array_figures.set(Some(ArrayFigures::host_always()));
        self
    }

    /// This device with its allocation limit lowered to `mib` (as `GBLUR_MAX_ALLOC_MIB` sets it
    /// for a whole process), so that tests hand it arrays larger than it may hold.
    #[cfg(test)]
    pub(crate) fn allocating_at_most(self, mib: u64) -> Device {
        let opened = self.opened.expect("an OpenCL device").into_inner().unwrap();
        let mut info = opened.ctx.info.clone();
        info.max_alloc_mib = mib;
        let target = backend::Target {
            info,
            pipeline: opened.pipeline,
        };
        let device = backend::Device::open(target).expect("the device again");
        Device {
            opened: Some(Mutex::new(device)),
            ..Device::host()
        }
    }

    /// The host's cores.
    ///
    /// ```
    /// let host = gblur::Device::host();
    /// assert!(!host.is_opencl());
    /// let mut gray = vec![0u8; 64 * 64];
    /// host.blur_interleaved(&gblur::Gaussian::new(2.0)?, &mut gray, gblur::Layout::new(64, 64, 1))?;
    /// # Ok::<(), gblur::Error>(())
    /// ```
    pub fn host() -> Device {
        Device {
            opened: None,
            weighs: false,
            figures: OnceLock::new(),
            array_figures: OnceLock::new(),
        }
    }

    /// The device's name, or the host's path with its thread count.
    ///
    /// ```
    /// println!("blurring on {}", gblur::Device::host().name());
    /// ```
    pub fn name(&self) -> String {
        match self.lock() {
            Some(d) => d.name(),
            None => backend::rust_device_name(),
        }
    }

    /// The opened device, for one call at a time (a call that panicked leaves it usable: its
    /// queue was finished or dropped with the call).
    fn lock(&self) -> Option<MutexGuard<'_, backend::Device>> {
        let m = self.opened.as_ref()?;
        Some(m.lock().unwrap_or_else(|poisoned| poisoned.into_inner()))
    }

    /// `len` f32 samples of page-locked host memory of this device, for arrays that go to
    /// it and back at the bus's rate ([`PageLocked`]). Fails on a `Device` that runs on the
    /// host's cores, and where the driver cannot pin that much memory.
    pub fn page_locked(&self, len: usize) -> Result<PageLocked, Error> {
        let device = self.lock().ok_or_else(|| {
            Error::Device(
                "page-locked memory needs an OpenCL device; this one is the host's cores".into(),
            )
        })?;
        device
            .ctx
            .page_locked(len)
            .map(PageLocked::new)
            .map_err(|e| Error::Device(e.to_string()))
    }

    /// Whether an OpenCL device was opened (false: the host's cores).
    ///
    /// ```
    /// let device = gblur::Device::open("auto")?;
    /// println!("{}: OpenCL {}", device.name(), device.is_opencl());
    /// # Ok::<(), gblur::Error>(())
    /// ```
    pub fn is_opencl(&self) -> bool {
        self.opened.is_some()
    }

    /// The opened device, where it should run `samples` samples moving `bytes_per_sample`
    /// each way: always, unless opened by `auto`, where the cost model decides.
    fn runs(&self, samples: u64, bytes_per_sample: u32) -> Option<MutexGuard<'_, backend::Device>> {
        let device = self.lock()?;
        if !self.weighs {
            return Some(device);
        }
        let figures = self.figures.get_or_init(|| {
            let root = cache::cache_root();
            let (rust, _) = calibrate::rust_figures(root.as_deref(), false);
            let (dev, _) = calibrate::device_figures(
                root.as_deref(),
                &device.ctx.info,
                device.pipeline,
                false,
            )
            .ok()?;
            Some((rust, dev))
        });
        let (rust, dev) = figures.as_ref()?;
        let work = cost::Work {
            pixels: samples,
            channels: 1,
            bytes_per_sample,
            threads: rayon::current_num_threads(),
        };
        cost::predict_opened(&work, rust, dev)
            .device_wins
            .then_some(device)
    }

    /// Blurs a decoded image in place on this device (see [`Gaussian::blur_image`]).
    ///
    /// ```
    /// use gblur::{Device, Gaussian};
    /// use image::{DynamicImage, GrayImage};
    ///
    /// let device = Device::open("rust")?;
    /// let mut img = DynamicImage::ImageLuma8(GrayImage::from_fn(32, 32, |x, _| [(x * 8) as u8].into()));
    /// device.blur_image(&Gaussian::new(3.0)?, &mut img)?;
    /// assert_eq!(img.dimensions(), (32, 32));
    /// # use image::GenericImageView;
    /// # Ok::<(), gblur::Error>(())
    /// ```
    pub fn blur_image(&self, g: &Gaussian, img: &mut DynamicImage) -> Result<(), Error> {
        let samples = img.width() as u64 * img.height() as u64 * img.color().channel_count() as u64;
        let upload = |d: MutexGuard<backend::Device>| {
            Upload::for_image(img.color(), g.linear, d.pipeline, &g.blur)
        };
        let bytes = match self.lock().map(upload) {
            Some(Upload::U8 { .. }) => 1,
            _ => 4,
        };
        let Some(device) = self.runs(samples, bytes) else {
            return g.blur_image(img);
        };
        let image = std::mem::take(img);
        *img = blur_image_on(&device, g, image)?;
        Ok(())
    }

    /// Blurs raw interleaved samples in place on this device (see
    /// [`Gaussian::blur_interleaved`]). Pixels a decoded image holds (gray, gray and alpha,
    /// RGB, RGBA; float as RGB or RGBA) go to the device as an image, their rows gathered
    /// from a row stride and put back between its gaps, which are left as they are; any
    /// other channel count is blurred on the host.
    ///
    /// ```
    /// use gblur::{Device, Gaussian, Layout};
    ///
    /// // 16-bit RGBA rows of 5 pixels, 24 samples apart (4 samples of gap each).
    /// let device = Device::open("rust")?;
    /// let layout = Layout::new(5, 3, 4).with_row_stride(24).with_alpha(true);
    /// let mut rows = vec![30_000u16; layout.len()];
    /// device.blur_interleaved(&Gaussian::new(2.0)?, &mut rows, layout)?;
    /// assert!(rows.iter().all(|&v| v == 30_000));
    /// # Ok::<(), gblur::Error>(())
    /// ```
    pub fn blur_interleaved<T: Sample>(
        &self,
        g: &Gaussian,
        data: &mut [T],
        layout: Layout,
    ) -> Result<(), Error> {
        layout.check(data.len())?;
        let size = (u32::try_from(layout.width), u32::try_from(layout.height));
        let (Ok(w), Ok(h), true) = (size.0, size.1, self.is_opencl()) else {
            return g.blur_interleaved(data, layout);
        };
        let packed = layout.packed(data);
        let Some(mut img) = T::to_image(packed, (w, h), layout.channels, layout.alpha) else {
            return g.blur_interleaved(data, layout);
        };
        self.blur_image(g, &mut img)?;
        let blurred = T::from_image(img)
            .ok_or_else(|| Error::Unsupported("the device returned another colour type".into()))?;
        layout.unpack(data, &blurred);
        Ok(())
    }

    /// Blurs planes of f32 samples in place on this device (see [`Gaussian::blur_planar`]).
    ///
    /// ```
    /// use gblur::{Device, Gaussian};
    ///
    /// // Two 16 × 8 planes: a constant one stays constant.
    /// let device = Device::open("rust")?;
    /// let mut planes = vec![0.5f32; 2 * 16 * 8];
    /// device.blur_planar(&Gaussian::new(2.0)?, &mut planes, 16, 8)?;
    /// assert!(planes.iter().all(|v| (v - 0.5).abs() < 1e-6));
    /// # Ok::<(), gblur::Error>(())
    /// ```
    pub fn blur_planar(
        &self,
        g: &Gaussian,
        data: &mut [f32],
        width: usize,
        height: usize,
    ) -> Result<(), Error> {
        let plane = width.saturating_mul(height);
        if plane == 0 || plane == usize::MAX || !data.len().is_multiple_of(plane) {
            return g.blur_planar(data, width, height);
        }
        let axes = vec![
            None,
            g.axis_filter(&g.blur.y, g.edges.y),
            g.axis_filter(&g.blur.x, g.edges.x),
        ];
        let shape = [data.len() / plane, height, width];
        match self.runs_array(&axes, &shape, Some(data)) {
            Some(device) => blur_axes_on(&device, &axes, data, &shape),
            None => g.blur_planar(data, width, height),
        }
    }

    /// Blurs an N-D array in place on this device (see [`Filter::apply`]). On an OpenCL
    /// device the array goes up as f32 in chunks through page-locked memory (extended as it
    /// goes for edge modes other than clamp; in slabs where the device cannot hold it whole),
    /// every axis is filtered there, and the result comes back rounded as the host rounds it.
    /// An f32 array in the device's own page-locked memory ([`Device::page_locked`]), clamped
    /// on every axis it filters, goes up and comes back by the copy engines alone.
    ///
    /// ```
    /// use gblur::{nd::Filter, Device};
    ///
    /// let device = Device::open("rust")?;
    /// let shape = [8, 16, 16];
    /// let mut volume = vec![1.0f64; 8 * 16 * 16];
    /// device.blur_nd(&Filter::new(&[1.5, 3.0, 3.0])?, &mut volume, &shape)?;
    /// assert!(volume.iter().all(|&v| (v - 1.0).abs() < 1e-6));
    /// # Ok::<(), gblur::Error>(())
    /// ```
    pub fn blur_nd<T: Element>(
        &self,
        filter: &Filter,
        data: &mut [T],
        shape: &[usize],
    ) -> Result<(), Error> {
        let axes = filter.checked_axes::<T>(data.len(), shape)?;
        let Some(device) = self.runs_array(&axes, shape, T::as_f32(data)) else {
            return filter.apply(data, shape);
        };
        // An array in page-locked memory is looked at for NaN and infinity on the device (and
        // left as it was where it holds one), with no pass over it on the host first.
        if page_locked::blur_direct_in_place(&device, &axes, data, shape)? == Direct::Done {
            return Ok(());
        }
        match Spoiled::find(data, shape, &axes) {
            None => blur_staged_axes_on(&device, &axes, data, shape),
            Some(spoiled) => {
                let input = Spoiled::zeroed(data);
                blur_spoilt_on(&device, &axes, spoiled, &input, data, shape)
            }
        }
    }

    /// Blurs `input` into `output` on this device (see [`Filter::apply_into`]); the input
    /// is left as it is. NaN and infinity spoil the outputs they spoil on the host: they are
    /// looked for as the array is staged (on the device, for an input in its page-locked
    /// memory), and an array that holds one is filtered a second time with them as 0 (about
    /// twice the time of a finite array).
    ///
    /// ```
    /// use gblur::{nd::Filter, Device};
    ///
    /// // 8-bit input, float output: a spike spreads along the one axis blurred.
    /// let device = Device::open("rust")?;
    /// let mut input = vec![0u8; 4 * 32];
    /// input[16] = 255;
    /// let mut output = vec![0f32; 4 * 32];
    /// device.blur_nd_into(&Filter::new(&[0.0, 2.0])?, &input, &mut output, &[4, 32])?;
    /// assert!(output[15] > 0.0 && output[32 + 16] == 0.0);
    /// # Ok::<(), gblur::Error>(())
    /// ```
    pub fn blur_nd_into<S: Element, D: Element>(
        &self,
        filter: &Filter,
        input: &[S],
        output: &mut [D],
        shape: &[usize],
    ) -> Result<(), Error> {
        let axes = filter.checked_axes::<D>(input.len(), shape)?;
        if output.len() != input.len() {
            return Err(Error::Buffer(format!(
                "the output has {} elements where the input has {}",
                output.len(),
                input.len()
            )));
        }
        let Some(device) = self.runs_array(&axes, shape, S::as_f32(input)) else {
            return filter.apply_into(input, output, shape);
        };
        let direct = page_locked::blur_direct_into(&device, &axes, (input, &mut *output), shape)?;
        if direct == Direct::Done {
            return Ok(());
        }
        // Where only the samples can spoil outputs, they are looked at as the staging slots are
        // filled, or on the device where the input skips them (no pass over the input of its
        // own); the rare array with a NaN or an infinity is then filtered again with them as 0.
        if direct == Direct::NotTaken
            && Spoiled::from_samples_alone::<S>(&axes)
            && blur_staged_on(&device, &axes, input, output, shape)? == Staged::Finite
        {
            return Ok(());
        }
        match Spoiled::find(input, shape, &axes) {
            None => blur_staged_on(&device, &axes, input, output, shape).map(drop),
            Some(spoiled) => {
                let input = Spoiled::zeroed(input);
                blur_spoilt_on(&device, &axes, spoiled, &input, output, shape)
            }
        }
    }

    /// The opened device, where it should blur an array of `shape` along `axes` from `input`
    /// (its samples, where they are f32): always, unless opened by `auto`, where the arrays'
    /// figures decide (`array_cost`), and an input in the device's own page-locked memory
    /// with nothing to extend goes to the device: its copy engines read it there with no copy
    /// on the host (on the H200 host, in 0.21–0.33 ms at 256² against the 16 cores'
    /// 0.22–0.31, and in half their time or less from 1024² to 512³).
    fn runs_array(
        &self,
        axes: &[Option<AxisFilter>],
        shape: &[usize],
        input: Option<&[f32]>,
    ) -> Option<MutexGuard<'_, backend::Device>> {
        let device = self.lock()?;
        if !self.weighs {
            return Some(device);
        }
        let locked = input.is_some_and(|s| device.ctx.is_page_locked(s));
        if locked && AxisFilter::nothing_to_extend(axes) {
            return Some(device);
        }
        let figures = self
            .array_figures
            .get_or_init(|| array_cost::measure(&device));
        let active = axes.iter().flatten().count();
        let extended: usize = shape
            .iter()
            .zip(AxisFilter::pads(axes))
            .map(|(n, p)| n + 2 * p)
            .product();
        figures
            .as_ref()?
            .device_wins(shape, active, extended)
            .then_some(device)
    }
}

/// Filters `data` along each axis that has a filter, on an OpenCL device: by the copy engines
/// alone where it lies in the device's page-locked memory, is clamped and finite, else
/// staged (`blur_staged_axes_on`).
fn blur_axes_on<T: Element>(
    device: &backend::Device,
    axes: &[Option<AxisFilter>],
    data: &mut [T],
    shape: &[usize],
) -> Result<(), Error> {
    if page_locked::blur_direct_in_place(device, axes, data, shape)? == Direct::Done {
        return Ok(());
    }
    blur_staged_axes_on(device, axes, data, shape)
}

/// `blur_axes_on` through the staging slots: extended on the host where an axis's edge mode
/// is not clamp, up as f32, down cropped and rounded.
fn blur_staged_axes_on<T: Element>(
    device: &backend::Device,
    axes: &[Option<AxisFilter>],
    data: &mut [T],
    shape: &[usize],
) -> Result<(), Error> {
    // f32 arrays with nothing to extend go up and come back from their own memory.
    if AxisFilter::nothing_to_extend(axes) {
        if let Some(samples) = T::as_f32_mut(data) {
            return volume::blur(
                &device.ctx,
                samples,
                shape,
                &AxisFilter::lines(axes),
                device.pipeline,
            )
            .map(drop)
            .map_err(|e| Error::Device(e.to_string()));
        }
    }
    let input = data.to_vec();
    blur_staged_on(device, axes, &input, data, shape).map(drop)
}

/// `zeroed` (an input with its non-finite samples as 0) filtered into `output` on an OpenCL
/// device, the non-finite edge constants as 0 too, then the outputs `spoiled` names set as
/// scipy's sum leaves them.
fn blur_spoilt_on<S: Element, D: Element>(
    device: &backend::Device,
    axes: &[Option<AxisFilter>],
    spoiled: Spoiled,
    zeroed: &[S],
    output: &mut [D],
    shape: &[usize],
) -> Result<(), Error> {
    blur_staged_on(device, &Spoiled::zeroed_axes(axes), zeroed, output, shape)?;
    // The zeroed input and axes stage no NaN or infinity: every one is set here.
    spoiled.apply(output);
    Ok(())
}

/// Whether the samples a staged blur sent to the device were all finite.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Staged {
    Finite,
    NonFinite,
}

/// `input` filtered into `output` along each axis that has a filter, on an OpenCL device:
/// extended as each axis's edge mode says and converted to f32 as the staging slots are filled,
/// cropped and rounded as they are drained (`host_array::Extended`); an f32 side with nothing
/// to extend that lies in the device's page-locked memory skips the slots. Says whether a
/// staged sample was NaN or infinite.
fn blur_staged_on<S: Element, D: Element>(
    device: &backend::Device,
    axes: &[Option<AxisFilter>],
    input: &[S],
    output: &mut [D],
    shape: &[usize],
) -> Result<Staged, Error> {
    if input.is_empty() {
        return Ok(Staged::Finite);
    }
    let pads: Vec<Pad> = axes.iter().map(|a| Pad::of(a.as_ref())).collect();
    // A derivative takes the constant edges of the axes filtered after it to 0: those are set
    // afresh before their passes, as scipy extends each pass's input anew.
    let derivative = axes.iter().flatten().any(|a| a.filter.order() > 0);
    let constants: Vec<Option<f32>> = pads
        .iter()
        .map(|p| {
            (derivative && matches!(p.mode, crate::EdgeMode::Constant(_)) && p.by > 0)
                .then_some(p.cval)
        })
        .collect();
    let mut host = Extended::new(input, output, shape, pads).locked_in(&device.ctx);
    let padded = host.padded_shape().to_vec();
    volume::blur_staged_with_constants(
        &device.ctx,
        &mut host,
        &padded,
        (&AxisFilter::lines(axes), &constants),
        device.pipeline,
        SLOT_BYTES / 4,
    )
    .map_err(|e| Error::Device(e.to_string()))?;
    Ok(match host.staged_non_finite() {
        true => Staged::NonFinite,
        false => Staged::Finite,
    })
}

/// `Gaussian::blur_image` on an OpenCL device: the 8-bit kernels where the image goes up as
/// bytes, else premultiplied planar f32; the edge modes by extension, as on the host.
fn blur_image_on(
    device: &backend::Device,
    g: &Gaussian,
    img: DynamicImage,
) -> Result<DynamicImage, Error> {
    let (w, h, color) = (img.width(), img.height(), img.color());
    if w == 0 || h == 0 {
        return Ok(img);
    }
    let plan = EdgePlan::new(g.edges, &g.blur);
    let (mut work, padding) = match plan.is_none() {
        true => (img, None),
        false => {
            let (padded, at) = edges::pad(&img, &plan);
            (padded, Some(at))
        }
    };
    let device_error = |e: crate::gpu::opencl::ClError| Error::Device(e.to_string());
    match Upload::for_image(color, g.linear, device.pipeline, &g.blur) {
        Upload::U8 { .. } => {
            upload::blur_u8(&device.ctx, &mut work, &g.blur, g.linear, device.pipeline)
                .map_err(device_error)?;
        }
        Upload::PlanarF32 => {
            pixels::sanitize_image(&mut work);
            let (planar, layout) = pixels::to_planar(&work, g.linear);
            let (mut out, _) = pipeline::blur(&device.ctx, planar, &g.blur, device.pipeline)
                .map_err(device_error)?;
            pixels::finish_planar(&mut out, layout);
            work = pixels::from_planar(&out, layout.color, color);
        }
    }
    Ok(match padding {
        Some(at) => edges::crop_image(work, at, w, h),
        None => work,
    })
}
