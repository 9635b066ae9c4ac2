//! The parts the `gblur` command is built from, for programs that do what it does over many
//! files (a batch tool, a server, a notebook's pipeline): a job on one file with every option
//! the command has ([`job`]), the per-image stages a batch worker runs ([`stages`]), the report
//! of every pass and how the command prints it ([`report`]), the formats ([`formats`]), the
//! devices and their figures ([`devices`]) and what belongs to the whole process
//! ([`process`]). [`crate::blur_file`] and [`crate::Device`] are the short ways in; these are the
//! long ones, with every setting the command line has.
//!
//! They are the command's own tools, and keep the command's habits where the rest of the API
//! does not: a job fails with a [`job::JobError`] (set-up or failure, each an
//! `anyhow::Error` with its context, and the command's exit status); [`report::emit`] and
//! [`report::diagnostic`] print as the command prints, [`process::remove_temp_files_and_exit`]
//! ends the process; a [`job::BlurJob`]'s fields are set freely, and only its filter is
//! checked, where it is made.

pub mod job {
    //! One file in, one blurred file out, with every option of the command line: fill a
    //! [`BlurJob`] and [`run`] it. A program that shows its own progress gives the job a
    //! callback ([`BlurJob::with_progress_callback`]), told each stage or row as it goes.
    //!
    //! ```
    //! use gblur::command::job::{run, BlurJob, Progress};
    //! use gblur::command::stages::Blur2d;
    //! use gblur::Method;
    //! use std::sync::{Arc, Mutex};
    //! # let dir = tempfile::tempdir()?;
    //! # let out = dir.path().join("out.png");
    //!
    //! let steps = Arc::new(Mutex::new(Vec::<Progress>::new()));
    //! let told = steps.clone();
    //! let filter = Blur2d::checked(Method::Auto, 3.0, 3.0)?;
    //! let job = BlurJob::new("samples/coffee.png", &out, filter)
    //!     .with_progress_callback(move |step| told.lock().unwrap().push(step));
    //! let report = run(&job)?;
    //! let steps = steps.lock().unwrap();
    //! assert_eq!(steps.first().map(|s| s.stage), Some("decode"));
    //! assert_eq!(steps.last().map(|s| s.stage), Some("done"));
    //! assert!(report.total_ms > 0.0);
    //! # Ok::<(), Box<dyn std::error::Error>>(())
    //! ```
    pub use crate::filter::{check_sigma, check_truncate, Method};
    pub use crate::job::{blur_inks, blur_stack, needs_colour, run, BlurJob, JobError};
    pub use crate::mask::{parse_region, MaskMode, MaskOptions, NanPolicy, Region};
    pub use crate::progress::{OnProgress, Progress};
    pub use crate::stream::Engine;
    pub use crate::work::edges::{EdgeMode, Edges};
    pub use crate::work::load::Decoding;
    pub use crate::work::sharpen::Sharpen;
}

pub mod stages {
    //! One image of a batch, stage by stage, so that decoding, blurring and encoding can run
    //! on different threads: an [`ImagePlan`] decodes a [`Loaded`] image, [`blur`] blurs it
    //! where the plan says, [`save`] encodes and writes it.
    //!
    //! ```
    //! use gblur::command::formats::{open, ImageFormat, Replace};
    //! use gblur::command::job::BlurJob;
    //! use gblur::command::stages::{blur, save, Blur2d, ImagePlan, Output, Source};
    //! use gblur::Method;
    //! # let dir = tempfile::tempdir()?;
    //! # let out = dir.path().join("out.jpg");
    //!
    //! let filter = Blur2d::checked(Method::Auto, 4.0, 4.0)?;
    //! let job = BlurJob::new("samples/chelsea.jpg", &out, filter.clone());
    //! let plan = ImagePlan::new(&job);
    //! let keep = plan.path_keep(None); // the form the host's cores blur
    //! let (mut passes, mut notes) = (Vec::new(), Vec::new());
    //!
    //! // Decode (one thread), blur (another), encode and write (a third).
    //! let input = open(&job.input, job.max_memory_mib)?;
    //! let mut image = plan.decode(Source::Input(&input), keep, &mut passes)?;
    //! let reload = || plan.decode(Source::Input(&input), keep, &mut Vec::new());
    //! let done = blur(None, &mut image, &filter, None, &mut passes, reload, None)?;
    //! assert!(!done.on_device);
    //! let output = Output {
    //!     path: &job.output,
    //!     format: ImageFormat::Jpeg,
    //!     encode: job.encode,
    //!     metadata: job.metadata,
    //!     replace: Replace::Any,
    //!     max_memory_mib: None,
    //! };
    //! let colour = save(image, output, &mut passes, &mut notes)?;
    //! assert_eq!(colour, "Rgb8");
    //! assert!(out.exists());
    //! # Ok::<(), Box<dyn std::error::Error>>(())
    //! ```
    pub use crate::filter::Blur2d;
    pub use crate::gpu::opencl::pinned::{Staging, StagingPool};
    pub use crate::job::ImagePlan;
    pub use crate::mask::{MaskFile, Masked};
    pub use crate::work::blur::{blur, stage_planes, unstage_planes, BlurOutcome};
    pub use crate::work::load::Source;
    pub use crate::work::save::{save, Output};
    pub use crate::work::{Keep, Loaded, Working};
}

pub mod report {
    //! What a job did, pass by pass, and how the command prints it.
    pub use crate::report::{
        diagnostic, emit, one_line, stage_ms, write_out, Backend, ImageSummary, Log, Pass,
        PassKind, Report, Stage,
    };
}

pub mod formats {
    //! The image formats: which are read and written, how a file is sniffed, named and
    //! written, and each format's settings.
    pub use crate::codec::formats::{formats, table};
    pub use crate::codec::heif::{
        encoder as heif_encoder, readable as heif_readable, Coding, HEIF,
    };
    pub use crate::codec::inks::may_be_cmyk_as;
    pub use crate::codec::jpeg::{
        Chroma, JpegOptions, Quality, Subsampling, DEFAULT_QUALITY as DEFAULT_JPEG_QUALITY,
    };
    pub use crate::codec::metadata::KeepMetadata;
    pub use crate::codec::read::{open, own_format, Content, Input};
    pub use crate::codec::tiff::{Quirks, TiffCompression};
    pub use crate::codec::{
        can_write, format_name, holds_inks, holds_pages, is_heic_name, is_stdio, sniff,
        unwritten_name, write_atomic, EncodeOptions, ImageIoError, Replace,
    };
    pub use image::ImageFormat;
}

pub mod devices {
    //! Where a job runs: the OpenCL devices, the host's cores, and their measured figures.
    pub use crate::backend::calibrate::{device_figures, rust_figures};
    pub use crate::backend::cost::{DeviceFigures, RustFigures};
    pub use crate::backend::{
        choose_devices, find_target, found_as_batch_starts, rust_device_name,
        Device as OpenedDevice, DeviceSet, FoundAsBatchStarts, Target,
    };
    pub use crate::gpu::opencl::cache::cache_root;
    pub use crate::gpu::opencl::device::{list as list_devices, select as select_device};
    pub use crate::gpu::opencl::{runtime_available, ClError, DeviceChoice, DeviceInfo};
    pub use crate::gpu::plan::{ChunkStart, Pipeline, PipelineChoice};
    pub use crate::gpu::transpose::TransposeKind;
}

pub mod process {
    //! What belongs to the whole process: the memory budget and the allocator that reports
    //! a failed allocation, Ctrl-C's clean-up of half-written outputs, progress bars.
    pub use crate::interrupt::{remove_temp_files_and_exit, stop_requested};
    pub use crate::memory::{
        budget_mib, return_freed_blocks, ReportingAllocator, DEFAULT_BUDGET_MIB,
    };
    #[cfg(feature = "progress-bars")]
    pub use crate::progress::progress_bar;
    pub use crate::progress::FILES;
}
