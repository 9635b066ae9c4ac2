//! A context on one device with an in-order, profiling-enabled queue for its kernels (and two
//! more for transfers beside them, `lanes`). Programs are built once
//! per (source, options) and kept; every enqueue returns its event so the caller can read the
//! device time of each pass.

use super::cache::{self, Lookup, ProgramCache};
use super::program::{KernelSource, BASE_OPTIONS};
use super::{ClError, DeviceInfo};
use crate::fault::{self, Fault};
use crate::report::{Pass, PassKind};
use opencl3::command_queue::{CommandQueue, CL_QUEUE_PROFILING_ENABLE};
use opencl3::context::Context;
use opencl3::device::Device;
use opencl3::event::Event;
use opencl3::kernel::{ExecuteKernel, Kernel};
use opencl3::memory::{Buffer, CL_MEM_READ_ONLY, CL_MEM_READ_WRITE};
use opencl3::program::Program;
use opencl3::types::{CL_BLOCKING, CL_NON_BLOCKING};
use std::cell::{Cell, OnceCell, RefCell};
use std::collections::HashMap;
use std::ptr;
use std::sync::Arc;

/// Zeros after a cached binary handed to the driver (`ClContext::program_from_binary`): more
/// than the header PoCL reads before it checks a binary's length.
const PAST_BINARY: usize = 4096;

/// How many distinct constant tables (`ClContext::constant`) a context keeps: a batch of one
/// sigma and size needs a handful (the two axes' coefficients and start tables, per plane
/// size, and the 8-bit table); past this the oldest go.
const CONSTANTS_KEPT: usize = 48;

/// How many f32 scratch buffers (`ClContext::scratch_f32`) a context keeps for reuse: the
/// carried starts' summaries need one per axis of each plane in flight, an array's two
/// buffers two more, and an array in slabs (`gpu::volume::direct`) seven.
const SCRATCH_KEPT: usize = 12;

/// A kernel argument.
#[derive(Clone, Copy)]
pub enum Arg<'a> {
    Buf(&'a Buffer<f32>),
    /// A buffer of 8-bit samples.
    Bytes(&'a Buffer<u8>),
    /// A buffer of 32-bit flags or counts.
    Words(&'a Buffer<u32>),
    U32(u32),
    U64(u64),
    F32(f32),
}

/// An enqueued command and what it stands for in the report.
pub struct Timed {
    pub name: String,
    pub event: Event,
}

impl Timed {
    /// Device time between the command's start and end, from the profiling counters.
    pub fn device_ms(&self) -> Result<f64, opencl3::error_codes::ClError> {
        let (start, end) = self.span_ns()?;
        Ok(end.saturating_sub(start) as f64 * 1e-6)
    }

    /// The command's start and end on the device's clock, in ns.
    pub fn span_ns(&self) -> Result<(u64, u64), opencl3::error_codes::ClError> {
        let start = self.event.profiling_command_start()?;
        let end = self.event.profiling_command_end()?;
        Ok((start, end))
    }
}

pub struct ClContext {
    pub info: DeviceInfo,
    context: Context,
    queue: CommandQueue,
    programs: RefCell<HashMap<(&'static str, String), Program>>,
    /// None where the cache is off (`GBLUR_NO_CACHE`) or no cache folder is known.
    cache: Option<ProgramCache>,
    builds: Cell<Builds>,
    /// The 8-bit path's two large buffers, kept for the next image or plane (`u8_scratch`).
    scratch: RefCell<Option<U8Scratch>>,
    /// Small read-only tables already on the device, with their contents (`constant`).
    constants: RefCell<Vec<KeptTable>>,
    /// f32 scratch buffers handed back after use, with their lengths (`scratch_f32`).
    spare: RefCell<Vec<(usize, Buffer<f32>)>>,
    /// Pinned slots for arrays' chunked transfers (`staged`), made on first use.
    pub(super) staging: RefCell<Vec<super::pinned::Pinned>>,
    /// The upload and download queues beside `queue` (`lanes`), made on first use.
    pub(super) lanes: OnceCell<[CommandQueue; 2]>,
    /// Arrays of at least this many bytes go through in overlapped slabs (`lanes`).
    pub(super) overlap_from: Cell<usize>,
    /// The page-locked blocks handed out for callers' arrays (`lanes`).
    pub(super) locked: super::lanes::Locked,
}

/// The 8-bit path's device memory for images of up to `len` samples: the bytes going up and
/// coming back, and the f32 intermediate between the two axes. Kept by the context between
/// images, because allocating (and freeing) tens of MiB per image costs the driver more than
/// the blur itself: a batch of one size allocates once, and a JPEG's chroma planes reuse the
/// Y plane's memory.
pub struct U8Scratch {
    pub bytes: Buffer<u8>,
    pub mid: Buffer<f32>,
    len: usize,
}

impl U8Scratch {
    /// The samples it holds room for.
    // Never empty: a buffer of the size asked for (public only as an internal).
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> usize {
        self.len
    }
}

/// A table on the device (`ClContext::constant`) with the contents it was written from.
type KeptTable = (Vec<f32>, Arc<Buffer<f32>>);

/// How many programs a context compiled from source, took from the program cache, and found
/// in the cache but refused (corrupt, stale, or not accepted by the driver) and compiled.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Builds {
    pub compiled: usize,
    pub cached: usize,
    pub rejected: usize,
}

impl ClContext {
    /// A context whose programs go through the user's program cache (`cache::cache_root`).
    pub fn new(info: DeviceInfo) -> Result<Self, ClError> {
        let cache = cache::cache_root().map(|root| ProgramCache::new(&root, &info));
        Self::with_cache(info, cache)
    }

    /// A context whose programs go through `cache` (None: always compiled from source).
    pub fn with_cache(info: DeviceInfo, cache: Option<ProgramCache>) -> Result<Self, ClError> {
        let device = Device::new(info.id());
        let context =
            Context::from_device(&device).map_err(|e| api(&info, "creating a context", e))?;
        let queue =
            CommandQueue::create_default_with_properties(&context, CL_QUEUE_PROFILING_ENABLE, 0)
                .map_err(|e| api(&info, "creating a profiling queue", e))?;
        Ok(Self {
            overlap_from: Cell::new(super::lanes::overlap_default(&info)),
            info,
            context,
            queue,
            programs: RefCell::new(HashMap::new()),
            cache,
            builds: Cell::new(Builds::default()),
            scratch: RefCell::new(None),
            constants: RefCell::new(Vec::new()),
            spare: RefCell::new(Vec::new()),
            staging: RefCell::new(Vec::new()),
            lanes: OnceCell::new(),
            locked: super::lanes::Locked::default(),
        })
    }

    pub(super) fn context(&self) -> &Context {
        &self.context
    }

    pub(super) fn queue(&self) -> &CommandQueue {
        &self.queue
    }

    pub(crate) fn api_error(&self, what: &str, e: opencl3::error_codes::ClError) -> ClError {
        api(&self.info, what, e)
    }

    pub fn device_name(&self) -> String {
        self.info.label()
    }

    /// Builds (once) `source` with `defines` appended to the base options, returns `kernel`.
    pub fn kernel(
        &self,
        source: KernelSource,
        name: &str,
        defines: &str,
    ) -> Result<Kernel, ClError> {
        let options = format!("{BASE_OPTIONS} {defines}").trim().to_string();
        let key = (source.file, options.clone());
        let mut programs = self.programs.borrow_mut();
        if !programs.contains_key(&key) {
            if fault::is(Fault::Build) {
                return Err(ClError::Build {
                    device: self.device_name(),
                    source_file: source.file.into(),
                    options,
                    log: "error: simulated build failure (GBLUR_FAULT=build)".into(),
                });
            }
            let program = match self.load_cached(source, &options) {
                Some(program) => program,
                None => self.compile(source, &options)?,
            };
            programs.insert(key.clone(), program);
        }
        Kernel::create(&programs[&key], name).map_err(|e| ClError::Enqueue {
            device: self.device_name(),
            kernel: name.into(),
            options,
            code: e.to_string(),
        })
    }

    /// What the programs of this context came from so far.
    pub fn builds(&self) -> Builds {
        self.builds.get()
    }

    /// `source` built from the binary the cache keeps for it, if there is one that the driver
    /// accepts; an entry it refuses is removed, to be replaced by the build from source.
    fn load_cached(&self, source: KernelSource, options: &str) -> Option<Program> {
        let cache = self.cache.as_ref()?;
        let binary = match cache.load(source.file, source.text, options) {
            Lookup::Hit(binary) => binary,
            Lookup::Miss => return None,
            Lookup::Rejected => {
                self.count(|b| b.rejected += 1);
                return None;
            }
        };
        let built = self.program_from_binary(&binary, options);
        if built.is_none() {
            cache.remove(source.file, source.text, options);
            self.count(|b| b.rejected += 1);
        } else {
            self.count(|b| b.cached += 1);
        }
        built
    }

    /// `binary` loaded and built with `options` for this context's device, or None where the
    /// driver refuses it. The driver reads it from a copy with `PAST_BINARY` zeros after it:
    /// PoCL 2.10 reads a binary's header before it looks at the length it was given, and read
    /// past a 20-byte binary (a segfault in libpocl where the bytes ended a mapping; with 64
    /// zeros after them it refuses them).
    pub(crate) fn program_from_binary(&self, binary: &[u8], options: &str) -> Option<Program> {
        let mut padded = Vec::with_capacity(binary.len() + PAST_BINARY);
        padded.extend_from_slice(binary);
        padded.resize(binary.len() + PAST_BINARY, 0);
        let device = [self.info.id()];
        // SAFETY: the binary passed its checksum under a key that names this driver and this
        // device, so it is one the driver produced; the driver validates it here and in
        // clBuildProgram, and reads no further than the zeros after it.
        unsafe { Program::create_from_binary(&self.context, &device, &[&padded[..binary.len()]]) }
            .ok()
            .and_then(|mut p| p.build(&device, options).ok().map(|_| p))
    }

    /// `source` compiled with `options`, kept in the cache for the next process.
    fn compile(&self, source: KernelSource, options: &str) -> Result<Program, ClError> {
        let mut program = Program::create_from_source(&self.context, source.text)
            .map_err(|e| api(&self.info, &format!("loading {}", source.file), e))?;
        if program.build(&[self.info.id()], options).is_err() {
            return Err(ClError::Build {
                device: self.device_name(),
                source_file: source.file.into(),
                options: options.into(),
                log: program.get_build_log(self.info.id()).unwrap_or_default(),
            });
        }
        self.count(|b| b.compiled += 1);
        if let Some(cache) = &self.cache {
            // One binary per device the program was built for: this context has one.
            if let Ok(Some(binary)) = program.get_binaries().map(|mut b| b.pop()) {
                if !binary.is_empty() {
                    // A cache that cannot be written costs the next run a build, no more.
                    let _ = cache.store(source.file, source.text, options, &binary);
                }
            }
        }
        Ok(program)
    }

    fn count(&self, f: impl FnOnce(&mut Builds)) {
        let mut b = self.builds.get();
        f(&mut b);
        self.builds.set(b);
    }

    /// A device buffer of `len` elements (f32 samples, or u8 ones), checked against the
    /// device's allocation limit.
    pub fn buffer<T>(&self, len: usize, read_only: bool) -> Result<Buffer<T>, ClError> {
        let bytes = (len.max(1) * std::mem::size_of::<T>()) as u64;
        if bytes > self.info.max_alloc_mib << 20 {
            return Err(ClError::TooLarge {
                device: self.device_name(),
                need_mib: bytes.div_ceil(1 << 20),
                max_mib: self.info.max_alloc_mib,
            });
        }
        if fault::is(Fault::Alloc) {
            let failure =
                opencl3::error_codes::ClError(cl3::error_codes::CL_MEM_OBJECT_ALLOCATION_FAILURE);
            return Err(api(
                &self.info,
                &format!("allocating {} MiB", bytes >> 20),
                failure,
            ));
        }
        let flags = if read_only {
            CL_MEM_READ_ONLY
        } else {
            CL_MEM_READ_WRITE
        };
        // SAFETY: no host pointer is passed; the buffer is owned by the returned value.
        unsafe { Buffer::<T>::create(&self.context, flags, len.max(1), ptr::null_mut()) }
            .map_err(|e| api(&self.info, &format!("allocating {} MiB", bytes >> 20), e))
    }

    /// Device memory for an 8-bit image of `len` samples: the kept buffers where they are
    /// large enough, else new ones (the kept ones freed first, so that one image's memory is
    /// held at most). Hand them back with `keep_u8_scratch`.
    pub fn u8_scratch(&self, len: usize) -> Result<U8Scratch, ClError> {
        let mut kept = self.scratch.borrow_mut();
        if let Some(scratch) = kept.take_if(|s| s.len >= len) {
            return Ok(scratch);
        }
        *kept = None;
        Ok(U8Scratch {
            bytes: self.buffer(len, false)?,
            mid: self.buffer(len, false)?,
            len,
        })
    }

    /// Keeps `scratch` for the next `u8_scratch`.
    pub fn keep_u8_scratch(&self, scratch: U8Scratch) {
        *self.scratch.borrow_mut() = Some(scratch);
    }

    /// A read-only device buffer holding `data`: the one uploaded earlier with the same
    /// contents, else a new one (written with a blocking call, because `data` may not outlive
    /// the call). Every image of a batch needs the same coefficient and start tables, and
    /// allocating and writing them afresh for every plane cost more on a GPU's driver than
    /// the plane's blur.
    pub fn constant(&self, data: &[f32]) -> Result<Arc<Buffer<f32>>, ClError> {
        let mut kept = self.constants.borrow_mut();
        if let Some((_, buf)) = kept.iter().find(|(d, _)| d.as_slice() == data) {
            return Ok(Arc::clone(buf));
        }
        let mut buf = self.buffer(data.len(), true)?;
        self.write_blocking(&mut buf, data, "coefficients")?;
        let buf = Arc::new(buf);
        if kept.len() == CONSTANTS_KEPT {
            kept.remove(0);
        }
        kept.push((data.to_vec(), Arc::clone(&buf)));
        Ok(buf)
    }

    /// An f32 scratch buffer of at least `len` elements: the smallest handed back that holds
    /// it, else a new one. Hand it back with `spare_f32` once the queue has finished with it.
    pub fn scratch_f32(&self, len: usize) -> Result<(usize, Buffer<f32>), ClError> {
        let mut spare = self.spare.borrow_mut();
        let fits = spare
            .iter()
            .enumerate()
            .filter(|(_, (n, _))| *n >= len)
            .min_by_key(|(_, (n, _))| *n)
            .map(|(i, _)| i);
        match fits {
            Some(i) => Ok(spare.swap_remove(i)),
            None => Ok((len, self.buffer(len, false)?)),
        }
    }

    /// Keeps `scratch` (from `scratch_f32`) for a later one, up to `SCRATCH_KEPT` of them:
    /// past that the smallest is freed.
    pub fn spare_f32(&self, scratch: (usize, Buffer<f32>)) {
        let mut spare = self.spare.borrow_mut();
        spare.push(scratch);
        if spare.len() > SCRATCH_KEPT {
            let smallest = (0..spare.len()).min_by_key(|&i| spare[i].0).unwrap_or(0);
            spare.swap_remove(smallest);
        }
    }

    /// Non-blocking upload; the in-order queue orders it before later commands.
    pub fn write<T>(&self, buf: &mut Buffer<T>, data: &[T], name: &str) -> Result<Timed, ClError> {
        // SAFETY: `data` outlives the command: callers finish the queue before returning.
        let event = unsafe {
            self.queue
                .enqueue_write_buffer(buf, CL_NON_BLOCKING, 0, data, &[])
        }
        .map_err(|e| api(&self.info, "uploading", e))?;
        Ok(Timed {
            name: name.into(),
            event,
        })
    }

    /// Blocking upload, for small data whose host copy does not outlive the call.
    pub fn write_blocking(
        &self,
        buf: &mut Buffer<f32>,
        data: &[f32],
        name: &str,
    ) -> Result<Timed, ClError> {
        // SAFETY: the call returns only after the data has been copied.
        let event = unsafe {
            self.queue
                .enqueue_write_buffer(buf, CL_BLOCKING, 0, data, &[])
        }
        .map_err(|e| api(&self.info, "uploading", e))?;
        Ok(Timed {
            name: name.into(),
            event,
        })
    }

    /// Non-blocking download of the whole buffer into `data`: the caller must leave `data`
    /// alone until it has finished the queue.
    pub fn read_later<T>(
        &self,
        buf: &Buffer<T>,
        data: &mut [T],
        name: &str,
    ) -> Result<Timed, ClError> {
        // SAFETY (of the non-blocking read): callers finish the queue before touching or
        // freeing `data`.
        self.download(buf, data, CL_NON_BLOCKING, name)
    }

    /// Blocking download of the whole buffer into `data`.
    pub fn read<T>(&self, buf: &Buffer<T>, data: &mut [T], name: &str) -> Result<Timed, ClError> {
        self.download(buf, data, CL_BLOCKING, name)
    }

    fn download<T>(
        &self,
        buf: &Buffer<T>,
        data: &mut [T],
        blocking: cl3::types::cl_bool,
        name: &str,
    ) -> Result<Timed, ClError> {
        // SAFETY: a read into a slice of the buffer's length; `read_later` says when the
        // slice may be used again.
        let event = unsafe { self.queue.enqueue_read_buffer(buf, blocking, 0, data, &[]) }
            .map_err(|e| api(&self.info, "downloading", e))?;
        Ok(Timed {
            name: name.into(),
            event,
        })
    }

    /// Enqueues `kernel` over `global` (rounded up to `local` by the caller when given).
    pub fn run(
        &self,
        kernel: &Kernel,
        args: &[Arg],
        global: &[usize],
        local: Option<&[usize]>,
        name: &str,
    ) -> Result<Timed, ClError> {
        let mut exec = ExecuteKernel::new(kernel);
        // SAFETY: argument types match the kernel signatures in kernels/*.cl, which the
        // opencl_vs_reference tests exercise for every kernel.
        unsafe {
            for a in args {
                match a {
                    Arg::Buf(b) => exec.set_arg(*b),
                    Arg::Bytes(b) => exec.set_arg(*b),
                    Arg::Words(b) => exec.set_arg(*b),
                    Arg::U32(v) => exec.set_arg(v),
                    Arg::U64(v) => exec.set_arg(v),
                    Arg::F32(v) => exec.set_arg(v),
                };
            }
        }
        exec.set_global_work_sizes(global);
        if let Some(l) = local {
            exec.set_local_work_sizes(l);
        }
        let kernel_name = kernel.function_name().unwrap_or_default();
        if fault::is(Fault::Enqueue) {
            return Err(ClError::Enqueue {
                device: self.device_name(),
                kernel: kernel_name,
                options: BASE_OPTIONS.into(),
                code: opencl3::error_codes::ClError(cl3::error_codes::CL_OUT_OF_RESOURCES)
                    .to_string(),
            });
        }
        // SAFETY: see above.
        let event =
            unsafe { exec.enqueue_nd_range(&self.queue) }.map_err(|e| ClError::Enqueue {
                device: self.device_name(),
                kernel: kernel_name,
                options: BASE_OPTIONS.into(),
                code: e.to_string(),
            })?;
        Ok(Timed {
            name: name.into(),
            event,
        })
    }

    /// Device-side copy of `len` floats.
    pub fn copy(
        &self,
        src: &Buffer<f32>,
        dst: &Buffer<f32>,
        len: usize,
        name: &str,
    ) -> Result<Timed, ClError> {
        use opencl3::memory::ClMem;
        // SAFETY: both buffers hold at least `len` floats (callers pass same-sized buffers).
        let event = unsafe {
            cl3::command_queue::enqueue_copy_buffer(
                self.queue.get(),
                src.get(),
                dst.get(),
                0,
                0,
                len * 4,
                0,
                ptr::null(),
            )
        }
        .map_err(|e| {
            api(
                &self.info,
                "copying a buffer",
                opencl3::error_codes::ClError(e),
            )
        })?;
        Ok(Timed {
            name: name.into(),
            event: Event::new(event),
        })
    }

    pub fn finish(&self) -> Result<(), ClError> {
        self.queue
            .finish()
            .map_err(|e| api(&self.info, "finishing the queue", e))
    }
}

fn api(info: &DeviceInfo, what: &str, e: opencl3::error_codes::ClError) -> ClError {
    ClError::Api {
        device: info.label(),
        what: what.into(),
        code: e.to_string(),
    }
}

/// A device command with what the report says about it.
pub struct Enqueued {
    pub timed: Timed,
    pub kind: PassKind,
    pub bytes: u64,
}

impl Enqueued {
    pub fn into_pass(self, ctx: &ClContext) -> Result<Pass, ClError> {
        let ms = self.timed.device_ms().map_err(|e| ClError::Api {
            device: ctx.device_name(),
            what: "reading profiling counters".into(),
            code: e.to_string(),
        })?;
        Ok(Pass::device(self.timed.name, self.kind, ms, self.bytes))
    }
}
