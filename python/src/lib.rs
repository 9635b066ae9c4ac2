//! `gblur._gblur`: the extension module under the Python package. It takes C-contiguous numpy
//! arrays whose checks and conversions `gblur/__init__.py` has already made (scipy's argument
//! rules live there), borrows their memory without copying, and runs the library with the
//! GIL released.

use gblur::nd::carry::{Carry, INCOMING, SUMMARY};
use gblur::nd::{Element, Filter};
use gblur::{Device, EdgeMode, Error, FileOptions, Gaussian, Layout, Method};
use numpy::ndarray::{ArrayViewD, IxDyn};
use numpy::{
    dtype, Element as NumpyElement, PyArrayDescrMethods, PyArrayDyn, PyArrayMethods,
    PyReadonlyArrayDyn, PyUntypedArray, PyUntypedArrayMethods,
};
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// A library error as the Python exception a caller expects: `ValueError` for values and
/// shapes (scipy raises the same), `TypeError` for types, `RuntimeError` for devices,
/// `OSError` for files.
fn to_py(e: Error) -> PyErr {
    let text = e.to_string();
    match e {
        Error::Unsupported(_) => PyTypeError::new_err(text),
        Error::Device(_) => PyRuntimeError::new_err(text),
        Error::Setup { .. } | Error::Failed { .. } => PyOSError::new_err(text),
        _ => PyValueError::new_err(text),
    }
}

fn mode(name: &str) -> PyResult<EdgeMode> {
    EdgeMode::parse(name).map_err(PyValueError::new_err)
}

fn method(name: &str) -> PyResult<Method> {
    match name {
        "auto" => Ok(Method::Auto),
        "recursive" => Ok(Method::Recursive),
        "fir" => Ok(Method::Fir),
        other => Err(PyValueError::new_err(format!(
            "method must be 'auto', 'recursive' or 'fir', not '{other}'"
        ))),
    }
}

/// An OpenCL device (or the host's cores) opened once and reused across calls.
#[pyclass(name = "Device", module = "gblur", frozen)]
struct PyDevice {
    inner: Device,
}

#[pymethods]
impl PyDevice {
    #[new]
    fn new(py: Python<'_>, which: &str) -> PyResult<Self> {
        let which = which.to_string();
        let inner = py.detach(move || Device::open(&which)).map_err(to_py)?;
        Ok(PyDevice { inner })
    }

    /// The device's name, or the host's path with its thread count.
    #[getter]
    fn name(&self) -> String {
        self.inner.name()
    }

    /// Whether an OpenCL device was opened (False: the host's cores).
    #[getter]
    fn is_opencl(&self) -> bool {
        self.inner.is_opencl()
    }

    fn __repr__(&self) -> String {
        format!("gblur.Device({:?})", self.inner.name())
    }

    /// A float32 array of ``shape``, zeros, in this OpenCL device's page-locked host memory.
    /// Blurred on this device with mode 'nearest' (into another such array, or in place), it
    /// goes up and comes back by the device's copy engines alone, at the bus's rate, with no
    /// copy on the host's cores; other modes and dtypes take the usual route. The memory
    /// goes back to the driver with the last array that uses it. RuntimeError on the host's
    /// cores, or where the driver cannot pin that much memory.
    fn zeros_pinned<'py>(
        &self,
        py: Python<'py>,
        shape: Vec<usize>,
    ) -> PyResult<Bound<'py, PyArrayDyn<f32>>> {
        let len = shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d));
        let len = len.ok_or_else(|| PyValueError::new_err("the shape is too large"))?;
        let mut memory = self.inner.page_locked(len).map_err(to_py)?;
        let start = memory.as_mut_ptr();
        let owner = Bound::new(py, PinnedMemory { _memory: memory })?;
        // SAFETY: `start` holds `len` samples of page-locked memory that `owner` keeps
        // mapped at the same address until it is dropped; the array holds `owner` as its
        // base object, so the memory lives as long as the array and every view of it.
        let view = unsafe { ArrayViewD::from_shape_ptr(IxDyn(&shape), start.cast_const()) };
        // SAFETY: as above.
        Ok(unsafe { PyArrayDyn::borrow_from_array(&view, owner.into_any()) })
    }
}

/// The page-locked memory under an array of `Device.zeros_pinned` (its base object).
#[pyclass(name = "PinnedMemory", module = "gblur", frozen)]
struct PinnedMemory {
    _memory: gblur::PageLocked,
}

/// The sample types the library filters.
#[derive(Clone, Copy)]
enum Kind {
    U8,
    U16,
    I16,
    F32,
    F64,
}

fn kind(array: &Bound<'_, PyUntypedArray>) -> PyResult<Kind> {
    let py = array.py();
    let d = array.dtype();
    let kinds = [
        (dtype::<u8>(py), Kind::U8),
        (dtype::<u16>(py), Kind::U16),
        (dtype::<i16>(py), Kind::I16),
        (dtype::<f32>(py), Kind::F32),
        (dtype::<f64>(py), Kind::F64),
    ];
    kinds
        .iter()
        .find(|(k, _)| d.is_equiv_to(k))
        .map(|(_, kind)| *kind)
        .ok_or_else(|| PyTypeError::new_err(format!("unsupported dtype {d}")))
}

/// The most worker pools kept at once (`on_workers`): a sweep over many counts leaves no more
/// idle threads than this many pools hold.
const KEPT_POOLS: usize = 4;

/// Runs `work` with the GIL released on `workers` threads (`gblur/__init__.py` has checked the
/// count as scipy.fft does), or on the global pool, one thread per core, for None. A pool is
/// built for a count asked for and kept, up to `KEPT_POOLS` of them (the one asked for least
/// recently goes): building one costs more than many small filters.
fn on_workers<R: Send>(
    py: Python<'_>,
    workers: Option<usize>,
    work: impl FnOnce() -> R + Send,
) -> PyResult<R> {
    /// Pools by count, each with the call that last asked for it.
    static POOLS: Mutex<BTreeMap<usize, (u64, Arc<rayon::ThreadPool>)>> =
        Mutex::new(BTreeMap::new());
    static CALLS: AtomicU64 = AtomicU64::new(0);
    let Some(n) = workers else {
        return Ok(py.detach(work));
    };
    let call = CALLS.fetch_add(1, Ordering::Relaxed);
    let pool = {
        let mut pools = POOLS.lock().unwrap_or_else(|e| e.into_inner());
        match pools.get_mut(&n) {
            Some((last, pool)) => {
                *last = call;
                pool.clone()
            }
            None => {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(n)
                    .thread_name(|i| format!("gblur-{i}"))
                    .build()
                    .map_err(|e| {
                        PyRuntimeError::new_err(format!("cannot start {n} worker threads: {e}"))
                    })?;
                if pools.len() >= KEPT_POOLS {
                    let oldest = pools
                        .iter()
                        .min_by_key(|(_, (last, _))| *last)
                        .map(|(k, _)| *k);
                    oldest.and_then(|k| pools.remove(&k));
                }
                let pool = Arc::new(pool);
                pools.insert(n, (call, pool.clone()));
                pool
            }
        }
    };
    Ok(py.detach(|| pool.install(work)))
}

/// Calls `$f::<T>` for the element type `$kind` names.
macro_rules! with_type {
    ($kind:expr, $f:ident, $($arg:expr),*) => {
        match $kind {
            Kind::U8 => $f::<u8>($($arg),*),
            Kind::U16 => $f::<u16>($($arg),*),
            Kind::I16 => $f::<i16>($($arg),*),
            Kind::F32 => $f::<f32>($($arg),*),
            Kind::F64 => $f::<f64>($($arg),*),
        }
    };
}

/// The filter from the arguments `gaussian_filter` in Python has checked and expanded to one
/// value per axis.
fn nd_filter(
    sigma: &[f64],
    modes: &[String],
    cval: f64,
    truncate: f64,
    radius: Option<Vec<usize>>,
    how: &str,
    order: Option<Vec<u8>>,
) -> PyResult<Filter> {
    let modes = modes
        .iter()
        .map(|m| mode(m))
        .collect::<PyResult<Vec<_>>>()?;
    let mut f = Filter::new(sigma)
        .map_err(to_py)?
        .modes(&modes)
        .cval(cval)
        .truncate(truncate)
        .method(method(how)?);
    if let Some(r) = radius {
        f = f.radius(&r);
    }
    if let Some(o) = order {
        f = f.order(&o);
    }
    Ok(f)
}

/// The arrays and where to blur them, for `into_typed`.
struct Job<'a, 'py> {
    input: &'a Bound<'py, PyUntypedArray>,
    output: &'a Bound<'py, PyUntypedArray>,
    filter: &'a Filter,
    device: Option<&'a Device>,
    workers: Option<usize>,
}

/// A numpy borrow refused (a read-only output, or an array already borrowed) as the
/// `ValueError` scipy raises, in its words where it has them, never a panic.
fn borrow_error(e: numpy::BorrowError) -> PyErr {
    match e {
        numpy::BorrowError::NotWriteable => PyValueError::new_err("output array is read-only."),
        other => PyValueError::new_err(format!("the array cannot be used here: {other}")),
    }
}

fn into_typed<S: Element + NumpyElement, D: Element + NumpyElement>(job: &Job) -> PyResult<()> {
    let py = job.input.py();
    let shape = job.input.shape().to_vec();
    let input = job
        .input
        .cast::<PyArrayDyn<S>>()?
        .try_readonly()
        .map_err(borrow_error)?;
    let output = job.output.cast::<PyArrayDyn<D>>()?;
    let mut output = output.try_readwrite().map_err(borrow_error)?;
    let (src, dst) = (input.as_slice()?, output.as_slice_mut()?);
    let (filter, device) = (job.filter, job.device);
    on_workers(py, job.workers, || match device {
        Some(d) => d.blur_nd_into(filter, src, dst, &shape),
        None => filter.apply_into(src, dst, &shape),
    })?
    .map_err(to_py)
}

fn into_from<S: Element + NumpyElement>(job: &Job) -> PyResult<()> {
    match kind(job.output)? {
        Kind::U8 => into_typed::<S, u8>(job),
        Kind::U16 => into_typed::<S, u16>(job),
        Kind::I16 => into_typed::<S, i16>(job),
        Kind::F32 => into_typed::<S, f32>(job),
        Kind::F64 => into_typed::<S, f64>(job),
    }
}

/// Filters `input` into `output` (C-contiguous, the same shape, no shared memory), or where it
/// lies where `output` is None (`gaussian_filter` with its input as its output), with one
/// sigma, mode, radius and derivative order per axis, on `device` (None: the host's cores)
/// with `workers` threads (None: one per core).
#[pyfunction]
#[pyo3(signature = (input, output, sigma, modes, cval, truncate, radius, method, device=None, workers=None, order=None))]
#[allow(clippy::too_many_arguments)]
fn gaussian_filter_into(
    input: &Bound<'_, PyUntypedArray>,
    output: Option<&Bound<'_, PyUntypedArray>>,
    sigma: Vec<f64>,
    modes: Vec<String>,
    cval: f64,
    truncate: f64,
    radius: Option<Vec<usize>>,
    method: &str,
    device: Option<&PyDevice>,
    workers: Option<usize>,
    order: Option<Vec<u8>>,
) -> PyResult<()> {
    let filter = nd_filter(&sigma, &modes, cval, truncate, radius, method, order)?;
    let device = device.map(|d| &d.inner);
    let Some(output) = output else {
        let on = (device, workers);
        return with_type!(kind(input)?, in_place_typed, input, &filter, on);
    };
    let job = Job {
        input,
        output,
        filter: &filter,
        device,
        workers,
    };
    with_type!(kind(input)?, into_from, &job)
}

fn in_place_typed<T: Element + NumpyElement>(
    array: &Bound<'_, PyUntypedArray>,
    filter: &Filter,
    (device, workers): (Option<&Device>, Option<usize>),
) -> PyResult<()> {
    let py = array.py();
    let shape = array.shape().to_vec();
    let array = array.cast::<PyArrayDyn<T>>()?;
    let mut array = array.try_readwrite().map_err(borrow_error)?;
    let data = array.as_slice_mut()?;
    on_workers(py, workers, || match device {
        Some(d) => d.blur_nd(filter, data, &shape),
        None => filter.apply(data, &shape),
    })?
    .map_err(to_py)
}

/// Which filter runs along each axis (None where sigma is 0), and how far each reaches: the
/// samples beyond which an input moves no output by more than 5e-5 of its range.
#[pyfunction]
#[pyo3(signature = (sigma, truncate, radius, method, order=None))]
fn plan(
    sigma: Vec<f64>,
    truncate: f64,
    radius: Option<Vec<usize>>,
    method: &str,
    order: Option<Vec<u8>>,
) -> PyResult<(Vec<Option<String>>, Vec<usize>)> {
    let modes = vec!["reflect".to_string(); sigma.len()];
    let f = nd_filter(&sigma, &modes, 0.0, truncate, radius, method, order)?;
    Ok((f.describe().map_err(to_py)?, f.reach().map_err(to_py)?))
}

/// The recursive filter along one axis of a chunked array (`gblur.dask`'s carries).
fn carry_of(sigma: f64, mode_name: &str, cval: f64) -> PyResult<Carry> {
    Ok(Carry::new(sigma)
        .map_err(to_py)?
        .mode(mode(mode_name)?)
        .cval(cval))
}

/// A new float32 array of `shape` with `axis`'s extent set to `extent`, filled by `fill`
/// with the GIL released.
fn filled_array<'py>(
    py: Python<'py>,
    shape: &[usize],
    axis: usize,
    extent: usize,
    fill: impl FnOnce(&mut [f32]) -> Result<(), Error> + Send,
) -> PyResult<Bound<'py, PyArrayDyn<f32>>> {
    let mut shape = shape.to_vec();
    if axis >= shape.len() {
        return Err(PyValueError::new_err(format!(
            "axis {axis} is out of range for an array of {} dimensions",
            shape.len()
        )));
    }
    shape[axis] = extent;
    let out = PyArrayDyn::<f32>::zeros(py, shape, false);
    {
        let mut values = out.try_readwrite().map_err(borrow_error)?;
        let values = values.as_slice_mut()?;
        on_workers(py, None, || fill(values))?.map_err(to_py)?;
    }
    Ok(out)
}

/// Step 1 of the carries: the summary of a float32 chunk along `axis`.
#[pyfunction]
fn carry_summarize<'py>(
    chunk: PyReadonlyArrayDyn<'py, f32>,
    axis: usize,
    sigma: f64,
    mode: &str,
    cval: f64,
) -> PyResult<Bound<'py, PyArrayDyn<f32>>> {
    let carry = carry_of(sigma, mode, cval)?;
    let (shape, x) = (chunk.shape().to_vec(), chunk.as_slice()?);
    filled_array(chunk.py(), &shape, axis, SUMMARY, |s| {
        carry.summarize(x, &shape, axis, s)
    })
}

/// Step 2: the states entering each chunk of a column, from its summaries joined along `axis`.
#[pyfunction]
fn carry_incoming<'py>(
    summaries: PyReadonlyArrayDyn<'py, f32>,
    axis: usize,
    lengths: Vec<usize>,
    sigma: f64,
    mode: &str,
    cval: f64,
) -> PyResult<Bound<'py, PyArrayDyn<f32>>> {
    let carry = carry_of(sigma, mode, cval)?;
    let (shape, s) = (summaries.shape().to_vec(), summaries.as_slice()?);
    let extent = INCOMING * lengths.len();
    filled_array(summaries.py(), &shape, axis, extent, |i| {
        carry.carry(s, &shape, axis, &lengths, i)
    })
}

/// Step 3: a float32 chunk filtered along `axis` from its incoming states.
#[pyfunction]
fn carry_filter<'py>(
    chunk: PyReadonlyArrayDyn<'py, f32>,
    incoming: PyReadonlyArrayDyn<'py, f32>,
    axis: usize,
    sigma: f64,
    mode: &str,
    cval: f64,
) -> PyResult<Bound<'py, PyArrayDyn<f32>>> {
    let carry = carry_of(sigma, mode, cval)?;
    let (shape, x, inc) = (
        chunk.shape().to_vec(),
        chunk.as_slice()?,
        incoming.as_slice()?,
    );
    let extent = shape.get(axis).copied().unwrap_or(0);
    filled_array(chunk.py(), &shape, axis, extent, |o| {
        carry.filter(x, &shape, axis, inc, o)
    })
}

/// Samples copied at once by one thread of `copy_in_parallel`: 1 MiB of 8-bit samples.
const COPY_CHUNK: usize = 1 << 20;

/// `src` copied into `dst` on every thread of the pool: a fresh output array's pages are then
/// first touched by as many cores as blur it (one thread copying a 12 MP RGB8 image into new
/// memory took longer than the blur on 16 cores).
fn copy_in_parallel<T: Copy + Send + Sync>(src: &[T], dst: &mut [T]) {
    use rayon::prelude::*;
    dst.par_chunks_mut(COPY_CHUNK)
        .zip(src.par_chunks(COPY_CHUNK))
        .for_each(|(d, s)| d.copy_from_slice(s));
}

/// The float types `add_squares` takes.
trait Real:
    NumpyElement + Copy + Send + Sync + std::ops::Add<Output = Self> + std::ops::Mul<Output = Self>
{
    fn sqrt(self) -> Self;
}

impl Real for f32 {
    fn sqrt(self) -> Self {
        f32::sqrt(self)
    }
}

impl Real for f64 {
    fn sqrt(self) -> Self {
        f64::sqrt(self)
    }
}

/// `total = (first ? 0 : total) + part²`, then `total = √total` where `last`, over the
/// arrays' elements in chunks on the worker threads.
fn add_squares_typed<T: Real>(
    (total, part): (&Bound<'_, PyUntypedArray>, &Bound<'_, PyUntypedArray>),
    (first, last): (bool, bool),
    workers: Option<usize>,
) -> PyResult<()> {
    use rayon::prelude::*;
    let py = total.py();
    let mut total = total
        .cast::<PyArrayDyn<T>>()?
        .try_readwrite()
        .map_err(borrow_error)?;
    let part = part
        .cast::<PyArrayDyn<T>>()?
        .try_readonly()
        .map_err(borrow_error)?;
    let (t, p) = (total.as_slice_mut()?, part.as_slice()?);
    if t.len() != p.len() {
        return Err(PyValueError::new_err("the arrays differ in size"));
    }
    on_workers(py, workers, || {
        t.par_chunks_mut(COPY_CHUNK)
            .zip(p.par_chunks(COPY_CHUNK))
            .for_each(|(t, p)| match (first, last) {
                (true, false) => t.iter_mut().zip(p).for_each(|(t, &p)| *t = p * p),
                (false, false) => t.iter_mut().zip(p).for_each(|(t, &p)| *t = *t + p * p),
                (true, true) => t.iter_mut().zip(p).for_each(|(t, &p)| *t = (p * p).sqrt()),
                (false, true) => t
                    .iter_mut()
                    .zip(p)
                    .for_each(|(t, &p)| *t = (*t + p * p).sqrt()),
            })
    })
}

/// Adds the squares of `part` into `total` (C-contiguous float32 or float64 arrays of one
/// shape and type), starting from 0 where `first` and taking the square root where `last`: a
/// gradient magnitude's sum of squared derivatives on every worker thread, where numpy's
/// three passes over the arrays run on one.
#[pyfunction]
#[pyo3(signature = (total, part, first, last, workers=None))]
fn add_squares(
    total: &Bound<'_, PyUntypedArray>,
    part: &Bound<'_, PyUntypedArray>,
    first: bool,
    last: bool,
    workers: Option<usize>,
) -> PyResult<()> {
    let arrays = (total, part);
    match kind(total)? {
        Kind::F32 => add_squares_typed::<f32>(arrays, (first, last), workers),
        Kind::F64 => add_squares_typed::<f64>(arrays, (first, last), workers),
        _ => Err(PyTypeError::new_err(
            "add_squares takes float32 or float64 arrays",
        )),
    }
}

fn image_typed<T: Element + NumpyElement + gblur::Sample>(
    (array, source): (
        &Bound<'_, PyUntypedArray>,
        Option<&Bound<'_, PyUntypedArray>>,
    ),
    g: &Gaussian,
    alpha: bool,
    (device, workers): (Option<&Device>, Option<usize>),
) -> PyResult<()> {
    let shape = array.shape().to_vec();
    let (h, w) = (shape[0], shape[1]);
    let c = shape.get(2).copied().unwrap_or(1);
    let py = array.py();
    let mut array = array
        .cast::<PyArrayDyn<T>>()?
        .try_readwrite()
        .map_err(borrow_error)?;
    let source = source
        .map(|s| {
            s.cast::<PyArrayDyn<T>>()?
                .try_readonly()
                .map_err(borrow_error)
        })
        .transpose()?;
    let src = source.as_ref().map(|s| s.as_slice()).transpose()?;
    let data = array.as_slice_mut()?;
    if src.is_some_and(|s| s.len() != data.len()) {
        return Err(PyValueError::new_err(
            "the source and the image differ in size",
        ));
    }
    let layout = Layout::new(w, h, c).with_alpha(alpha);
    on_workers(py, workers, || match (device, src) {
        // The host blur reads the source itself: no copy into the new array first.
        (None, Some(src)) => g.blur_interleaved_into(src, data, layout),
        (None, None) => g.blur_interleaved(data, layout),
        (Some(d), src) => {
            if let Some(src) = src {
                copy_in_parallel(src, data);
            }
            d.blur_interleaved(g, data, layout)
        }
    })?
    .map_err(to_py)
}

/// Blurs an (H, W) or (H, W, C) image in place: uint8, uint16 or float32, colour premultiplied
/// by alpha where `alpha` (2 or 4 channels). With `source` (C-contiguous, the same shape and
/// type), the blur is of `source`'s samples into `array`: read from `source` itself where the
/// host blurs, copied first (on every worker thread) otherwise.
#[pyfunction]
#[pyo3(signature = (array, sigma_x, sigma_y, edge_x, edge_y, linear, alpha, method, truncate=None, device=None, workers=None, source=None))]
#[allow(clippy::too_many_arguments)]
fn blur_image(
    array: &Bound<'_, PyUntypedArray>,
    sigma_x: f64,
    sigma_y: f64,
    edge_x: &str,
    edge_y: &str,
    linear: bool,
    alpha: bool,
    method: &str,
    truncate: Option<f64>,
    device: Option<&PyDevice>,
    workers: Option<usize>,
    source: Option<&Bound<'_, PyUntypedArray>>,
) -> PyResult<()> {
    let mut b = Gaussian::builder()
        .sigma_x(sigma_x)
        .sigma_y(sigma_y)
        .edge_x(self::mode(edge_x)?)
        .edge_y(self::mode(edge_y)?)
        .linear(linear)
        .method(self::method(method)?);
    if let Some(t) = truncate {
        b = b.truncate(t);
    }
    let g = b.build().map_err(to_py)?;
    let on = (device.map(|d| &d.inner), workers);
    let arrays = (array, source);
    match kind(array)? {
        Kind::U8 => image_typed::<u8>(arrays, &g, alpha, on),
        Kind::U16 => image_typed::<u16>(arrays, &g, alpha, on),
        Kind::F32 => image_typed::<f32>(arrays, &g, alpha, on),
        _ => Err(PyTypeError::new_err(
            "blur_image takes uint8, uint16 or float32 images",
        )),
    }
}

/// Runs the command's job on one file; returns the report as JSON.
#[pyfunction]
#[pyo3(signature = (input, output, sigma_x, sigma_y, edge_x, edge_y, linear, method, device, quality, lossless, strip_metadata, max_memory_mib, format, to_srgb))]
#[allow(clippy::too_many_arguments)]
fn blur_file(
    py: Python<'_>,
    input: std::path::PathBuf,
    output: std::path::PathBuf,
    sigma_x: f64,
    sigma_y: f64,
    edge_x: &str,
    edge_y: &str,
    linear: bool,
    method: &str,
    device: &str,
    quality: Option<u8>,
    lossless: bool,
    strip_metadata: bool,
    max_memory_mib: Option<u64>,
    format: Option<&str>,
    to_srgb: bool,
) -> PyResult<String> {
    let g = Gaussian::builder()
        .sigma_x(sigma_x)
        .sigma_y(sigma_y)
        .edge_x(self::mode(edge_x)?)
        .edge_y(self::mode(edge_y)?)
        .linear(linear)
        .method(self::method(method)?)
        .build()
        .map_err(to_py)?;
    let mut options = FileOptions::new(g).device(device);
    if let Some(q) = quality {
        options = options.quality(q).map_err(to_py)?;
    }
    if lossless {
        options = options.lossless();
    }
    if strip_metadata {
        options = options.strip_metadata();
    }
    if to_srgb {
        options = options.to_srgb();
    }
    if let Some(m) = max_memory_mib {
        options = options.max_memory_mib(m);
    }
    if let Some(f) = format {
        options = options.format(f).map_err(to_py)?;
    }
    let report = py
        .detach(|| gblur::blur_file(&input, &output, &options))
        .map_err(to_py)?;
    Ok(report.to_json())
}

/// Keeps the host blur's largest scratch buffer, up to `max_bytes`, between calls (0 frees it
/// and keeps none): `gblur.keep_scratch`.
#[pyfunction]
fn keep_scratch(max_bytes: usize) {
    gblur::keep_scratch(max_bytes);
}

/// The bytes of scratch the package keeps between calls until told otherwise
/// (`gblur.keep_scratch`): a 12 MP RGB8 image's on 16 threads takes 47 MiB.
const KEPT_SCRATCH: usize = 256 << 20;

#[pymodule]
fn _gblur(m: &Bound<'_, PyModule>) -> PyResult<()> {
    gblur::keep_scratch(KEPT_SCRATCH);
    m.add_class::<PyDevice>()?;
    m.add_class::<PinnedMemory>()?;
    m.add_function(wrap_pyfunction!(keep_scratch, m)?)?;
    m.add_function(wrap_pyfunction!(gaussian_filter_into, m)?)?;
    m.add_function(wrap_pyfunction!(plan, m)?)?;
    m.add_function(wrap_pyfunction!(add_squares, m)?)?;
    m.add_function(wrap_pyfunction!(carry_summarize, m)?)?;
    m.add_function(wrap_pyfunction!(carry_incoming, m)?)?;
    m.add_function(wrap_pyfunction!(carry_filter, m)?)?;
    m.add_function(wrap_pyfunction!(blur_image, m)?)?;
    m.add_function(wrap_pyfunction!(blur_file, m)?)?;
    Ok(())
}
