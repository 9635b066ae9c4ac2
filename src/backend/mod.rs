//! Where a job blurs: the devices `--device` names, the OpenCL device or the Rust path that
//! `auto` picks, and the pipeline each device runs. All of it is resolved once, by the main
//! command for its image and by `gblur batch` for each of its workers, and then handed down.

pub mod calibrate;
pub mod cost;

use crate::filter::Blur2d;
use crate::gpu::opencl::cache::{self, ProgramCache};
use crate::gpu::opencl::{device, ClContext, ClError, DeviceChoice, DeviceInfo};
use crate::gpu::pipeline;
use crate::gpu::plan::Upload;
use crate::gpu::plan::{Pipeline, PipelineChoice};
pub use cost::Work;
use cost::{DeviceFigures, RustFigures};
use std::fmt;

/// What `--device` asked for as a whole: one device (all the main command takes), or, for
/// `gblur batch`, several, each driven by its own worker.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeviceSet {
    /// One device (or the host's cores).
    One(DeviceChoice),
    /// `all`: every GPU.
    AllGpus,
    /// A comma-separated list (at least two entries), in order; an entry may repeat, which
    /// opens the device twice.
    List(Vec<DeviceChoice>),
}

impl DeviceSet {
    /// `all`, a list `A,B,...` of single choices (indices, names, gpu, cpu, rust; blanks
    /// around entries ignored), or one choice. `auto` and `all` have no meaning inside a list,
    /// and an empty entry is a typo: both are refused rather than guessed at.
    pub fn parse(s: &str) -> Result<Self, String> {
        if s.trim().eq_ignore_ascii_case("all") {
            return Ok(Self::AllGpus);
        }
        if !s.contains(',') {
            return Ok(Self::One(DeviceChoice::parse(s)));
        }
        s.split(',')
            .map(|entry| {
                let entry = entry.trim();
                let lower = entry.to_ascii_lowercase();
                if entry.is_empty() {
                    Err(format!("'{s}' has an empty entry"))
                } else if lower == "all" || lower == "auto" {
                    Err(format!(
                        "'{lower}' cannot be part of a list: name each device (an index, a name, gpu, cpu or rust)"
                    ))
                } else {
                    Ok(DeviceChoice::parse(entry))
                }
            })
            .collect::<Result<_, _>>()
            .map(Self::List)
    }

    /// The one device asked for, unless `all` or a list was.
    pub fn single(&self) -> Option<&DeviceChoice> {
        match self {
            Self::One(choice) => Some(choice),
            _ => None,
        }
    }
}

impl fmt::Display for DeviceSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::One(choice) => write!(f, "{choice}"),
            Self::AllGpus => write!(f, "all"),
            Self::List(choices) => {
                let names: Vec<String> = choices.iter().map(|c| c.to_string()).collect();
                write!(f, "{}", names.join(","))
            }
        }
    }
}

/// A device chosen for a job, with the pipeline it runs there.
#[derive(Clone, Debug)]
pub struct Target {
    /// The device.
    pub info: DeviceInfo,
    /// The pipeline it runs, resolved for it.
    pub pipeline: Pipeline,
}

impl Target {
    /// The device with `choice` resolved against it.
    pub fn new(info: DeviceInfo, choice: PipelineChoice) -> Target {
        let pipeline = choice.resolve(&info);
        Target { info, pipeline }
    }
}

/// An opened device: its context (queue and built programs) and the pipeline it runs.
pub struct Device {
    /// Its context, queue and compiled programs.
    pub ctx: ClContext,
    /// The pipeline it runs.
    pub pipeline: Pipeline,
}

impl Device {
    /// Creates the device's context; no kernel is built yet.
    pub fn open(target: Target) -> Result<Device, ClError> {
        if crate::fault::is(crate::fault::Fault::Open) {
            return Err(ClError::Api {
                device: target.info.label(),
                what: "creating a context".into(),
                code: "CL_OUT_OF_HOST_MEMORY (the open fault drill)".into(),
            });
        }
        Ok(Device {
            ctx: ClContext::new(target.info)?,
            pipeline: target.pipeline,
        })
    }

    /// Builds the kernels a `size` image arriving as `upload` needs, so that their build time
    /// is reported as set-up rather than inside the first pass.
    pub fn prepare(
        &self,
        blur: &Blur2d,
        size: (usize, usize),
        upload: Upload,
    ) -> Result<(), ClError> {
        pipeline::prepare(&self.ctx, blur, self.pipeline, size, upload)
    }

    /// The device's name as reports give it.
    pub fn name(&self) -> String {
        self.ctx.device_name()
    }
}

/// What the report calls the Rust path.
pub fn rust_device_name() -> String {
    match rayon::current_num_threads() {
        1 => "built-in Rust (1 thread)".to_string(),
        n => format!("built-in Rust ({n} threads)"),
    }
}

/// The path a job runs on and why.
#[derive(Clone, Debug, Default)]
pub struct Choice {
    /// None: the Rust path.
    pub target: Option<Target>,
    /// Why `auto` took this path; None where `--device` named it.
    pub why: Option<String>,
    /// The cost model's prediction and where its figures came from, where it decided.
    pub explain: Vec<String>,
}

/// The device `choice` names; None for the Rust path, with the reason where `auto` chose.
/// `auto` takes the Rust path where there is no GPU (`gblur bench cpu` measures it several
/// times faster than an OpenCL CPU device, PoCL, on the same cores) unless an OpenCL pipeline
/// was asked for by name. Where there is a GPU, the cost model weighs both paths for `work`,
/// the image's size (None where it is not known before decoding: the GPU runs).
pub fn choose_device(
    choice: &DeviceChoice,
    pipeline: PipelineChoice,
    work: impl FnOnce() -> Option<Work>,
) -> anyhow::Result<Choice> {
    if *choice == DeviceChoice::Auto
        && pipeline == PipelineChoice::Auto
        && device::only_cpu_runtimes()
    {
        let why = "no GPU runtime installed (only PoCL): ran the built-in Rust path, faster \
                   here than PoCL (--device cpu runs it)";
        return Ok(rust_path(why.into()));
    }
    let mut known = None;
    if *choice == DeviceChoice::Auto && pipeline == PipelineChoice::Auto {
        known = work();
        if let Some(rust) = known.and_then(|w| rust_without_a_driver(&w, driverless_figures())) {
            return Ok(rust);
        }
    }
    let selected = device::select(choice)?;
    let target = |info| Target::new(info, pipeline);
    if *choice != DeviceChoice::Auto {
        return Ok(Choice {
            target: selected.map(target),
            ..Choice::default()
        });
    }
    match selected {
        Some(d) if d.is_gpu() && pipeline == PipelineChoice::Auto => match known {
            Some(work) => weigh(d, work),
            None => Ok(Choice {
                target: Some(target(d)),
                why: Some("a GPU is installed and the image's size is not known before decoding: ran the GPU".into()),
                explain: Vec::new(),
            }),
        },
        Some(d) if d.is_gpu() || pipeline != PipelineChoice::Auto => Ok(Choice {
            target: Some(target(d)),
            ..Choice::default()
        }),
        Some(d) => Ok(rust_path(format!(
            "no GPU: ran the built-in Rust path, faster here than {} (--device cpu runs it)",
            d.name
        ))),
        None => Ok(rust_path(
            "no GPU (no OpenCL device found): ran the built-in Rust path".into(),
        )),
    }
}

/// The figures `auto` weighs before any OpenCL driver loads: the Rust path's and this
/// machine's calibrated GPU's, with its name and where they came from. Ok(None): no GPU is
/// calibrated here. Err: figures cannot be had without loading a driver.
type DriverlessFigures = Result<Option<(RustFigures, DeviceFigures, String, String)>, ()>;

fn driverless_figures() -> DriverlessFigures {
    match calibrate::forced() {
        Some(Ok((rust, dev))) => Ok(Some((
            rust,
            dev,
            "the GPU".into(),
            "set by GBLUR_COST_FIGURES".into(),
        ))),
        Some(Err(_)) => Err(()),
        None => {
            let root = cache::cache_root();
            let Some((gpu, path)) = calibrate::gpu_summary(root.as_deref()) else {
                return Ok(None);
            };
            let rust = calibrate::kept_rust_figures(root.as_deref()).ok_or(())?;
            let source = format!("kept in {}", path.display());
            Ok(Some((rust, gpu.figures, gpu.name, source)))
        }
    }
}

/// `auto`'s choice made before any OpenCL driver loads (NVIDIA's takes about 0.2 s, more than
/// the Rust path needs for a small image): the Rust path where this machine has no GPU
/// calibrated (`gblur calibrate` measures one; the main command never does, because
/// calibrating costs seconds), or where the Rust path is predicted no slower than the
/// calibrated GPU at its best (its programs cached). None: weigh the GPU itself.
fn rust_without_a_driver(work: &Work, figures: DriverlessFigures) -> Option<Choice> {
    let Some((rust, dev, name, source)) = figures.ok()? else {
        return Some(rust_path(
            "no GPU calibrated on this machine: ran the built-in Rust path without loading a \
             driver (`gblur calibrate` measures the GPU so that auto can weigh it)"
                .into(),
        ));
    };
    let p = cost::predict(work, &rust, &dev, true);
    (!p.device_wins).then(|| Choice {
        target: None,
        why: Some(format!(
            "{p}: ran the built-in Rust path without loading a driver, faster even with \
             {name}'s programs cached (--device names a path)"
        )),
        explain: vec![
            format!(
                "{} px × {} channels, {} B a sample over the bus, {} threads",
                work.pixels, work.channels, work.bytes_per_sample, work.threads
            ),
            format!("figures {source}"),
        ],
    })
}

fn rust_path(why: String) -> Choice {
    Choice {
        target: None,
        why: Some(why),
        explain: Vec::new(),
    }
}

/// The faster of the Rust path and the GPU `d` for `work`, as the cost model predicts them.
fn weigh(d: DeviceInfo, work: Work) -> anyhow::Result<Choice> {
    let root = cache::cache_root();
    let pipeline = Pipeline::fastest_for(&d);
    let (rust, dev, sources) = match calibrate::forced() {
        Some(forced) => {
            let (rust, dev) = forced.map_err(|e| anyhow::anyhow!(e))?;
            (rust, dev, vec![calibrate::Source::Forced.to_string()])
        }
        None => {
            let (rust, rust_src) = calibrate::rust_figures(root.as_deref(), false);
            let (dev, dev_src) = calibrate::device_figures(root.as_deref(), &d, pipeline, false)?;
            (
                rust,
                dev,
                vec![
                    format!("Rust path figures {rust_src}"),
                    format!("{} figures {dev_src}", d.name),
                ],
            )
        }
    };
    let warm = root
        .as_deref()
        .is_some_and(|root| ProgramCache::new(root, &d).warm());
    let p = cost::predict(&work, &rust, &dev, warm);
    let verdict = if p.device_wins {
        format!("ran {}", d.name)
    } else {
        "ran the built-in Rust path".into()
    };
    let mut explain = vec![format!(
        "{} px × {} channels, {} B a sample over the bus, {} threads",
        work.pixels, work.channels, work.bytes_per_sample, work.threads
    )];
    explain.extend(sources);
    Ok(Choice {
        target: p.device_wins.then(|| Target::new(d, PipelineChoice::Auto)),
        why: Some(format!("{p}: {verdict} (--device names a path)")),
        explain,
    })
}

/// Why a batch's `auto` runs the Rust path where a GPU could be, without loading a driver.
/// A batch's CPU time goes mostly to the codecs, which every image needs whatever blurs it,
/// and the Rust lanes blur each image on its own core beside them; a device takes the blur
/// off the cores but costs a core for its worker and the staging copies. On both GPU hosts
/// measured (an H100 and an H200, 16 cores each: docs/BENCHMARKS.md) the Rust path made as
/// many images per second as the GPU or more (on the H200 host level with it, the driver
/// loaded as the batch starts), even where the per-image cost model, calibrated, predicted
/// the GPU faster; so a batch runs a GPU only where `--device` names one.
const BATCH_AUTO_WHY: &str = "--device auto: ran the built-in Rust path without loading a \
     driver: in a batch the codecs take most of the time on every path, and the Rust lanes \
     kept up with the GPU on every GPU host measured (--device gpu runs the GPU)";

/// The devices `--device` names for a batch, one per worker in order (None: the Rust path),
/// and a note for the summary where `auto` or `all` says why.
pub fn choose_devices(
    set: &DeviceSet,
    pipeline: PipelineChoice,
) -> anyhow::Result<(Vec<Option<Target>>, Option<String>)> {
    match set {
        DeviceSet::One(DeviceChoice::Auto)
            if pipeline == PipelineChoice::Auto && !device::only_cpu_runtimes() =>
        {
            Ok((vec![None], Some(BATCH_AUTO_WHY.into())))
        }
        DeviceSet::One(choice) => {
            Ok((vec![choose_device(choice, pipeline, || None)?.target], None))
        }
        // Each entry resolves as a single --device does; `rust` is a worker on the Rust path.
        DeviceSet::List(choices) => {
            let mut targets = Vec::with_capacity(choices.len());
            for choice in choices {
                let info = device::select(choice)?;
                targets.push(info.map(|info| Target::new(info, pipeline)));
            }
            Ok((targets, None))
        }
        DeviceSet::AllGpus => {
            let gpus = every_gpu()?;
            if !gpus.is_empty() {
                let targets = gpus
                    .into_iter()
                    .map(|info| Some(Target::new(info, pipeline)));
                return Ok((targets.collect(), None));
            }
            // No GPU: run what `auto` picks, and say so, rather than refuse. `all` asks for
            // whatever this machine has, so a script written for a GPU host still does its
            // job on a laptop or in CI; `auto` is the documented best choice without a GPU,
            // and the summary names what ran. Who needs a GPU or nothing names one
            // (`--device gpu`, indices), and that fails with exit 2 where it is missing (for
            // a batch's `--device gpu`, where no runtime but PoCL's is registered:
            // `found_as_batch_starts`).
            let Choice {
                target: selected,
                why,
                ..
            } = choose_device(&DeviceChoice::Auto, pipeline, || None)?;
            let note = match (&selected, why) {
                (_, Some(why)) => {
                    format!("--device all found no GPU, so it ran as --device auto: {why}")
                }
                (Some(d), None) => format!(
                    "--device all found no GPU: ran on {}, as --device auto does",
                    d.info.label()
                ),
                (None, None) => "--device all found no GPU: ran the built-in Rust path".into(),
            };
            Ok((vec![selected], Some(note)))
        }
    }
}

/// How a batch looks for its one device as it starts (`found_as_batch_starts`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FoundAsBatchStarts {
    /// The device looked for.
    pub choice: DeviceChoice,
    /// Where set (the test hook's value), the codec lanes blur exactly this many images on the
    /// cores, whatever the device's state, and hand it the rest: a test's split, not the
    /// driver's timing.
    pub warm_ups: Option<usize>,
}

/// The one device of a batch that its worker may look for on its own thread as the batch
/// starts, rather than before: `--device gpu` with the GPUs' pipeline (`auto` or `blocked`)
/// where an OpenCL runtime other than PoCL's is registered. The driver's load (about 0.3 s on
/// the H200 host) then overlaps the batch's first images, which the codec lanes blur on the
/// cores meanwhile. Where no such runtime is registered (PoCL alone, or no OpenCL),
/// `choose_devices` refuses `--device gpu` before OUT_DIR is made; where one is but its driver
/// finds no GPU (a GPU container run without its GPU, another vendor's CPU runtime), the
/// device is one that cannot be opened: the batch runs on the Rust path and says why. The test
/// hook GBLUR_FIND_AS_BATCH_STARTS=N does the same for any one device named with `--pipeline
/// blocked` (PoCL's in CI), N images blurred on the cores first.
pub fn found_as_batch_starts(
    set: &DeviceSet,
    pipeline: PipelineChoice,
) -> Option<FoundAsBatchStarts> {
    // The codec lanes decode for the blocked pipeline's form before the device is known.
    let blocked = matches!(pipeline, PipelineChoice::Blocked(_));
    let hook = crate::fault::hook("GBLUR_FIND_AS_BATCH_STARTS")
        .and_then(|v| v.into_string().ok()?.parse::<usize>().ok());
    match (set, hook) {
        (DeviceSet::One(choice), Some(n))
            if blocked && !matches!(choice, DeviceChoice::Auto | DeviceChoice::Rust) =>
        {
            Some(FoundAsBatchStarts {
                choice: choice.clone(),
                warm_ups: Some(n),
            })
        }
        (DeviceSet::One(DeviceChoice::Gpu), _)
            if (blocked || pipeline == PipelineChoice::Auto)
                && device::gpu_runtime_registered() =>
        {
            Some(FoundAsBatchStarts {
                choice: DeviceChoice::Gpu,
                warm_ups: None,
            })
        }
        _ => None,
    }
}

/// The device `choice` names, with `pipeline` resolved for it: what a worker of
/// `found_as_batch_starts` looks for. The error says why there is none.
pub fn find_target(choice: &DeviceChoice, pipeline: PipelineChoice) -> Result<Target, ClError> {
    match device::select(choice)? {
        Some(info) => Ok(Target::new(info, pipeline)),
        None => Err(ClError::NoRuntime),
    }
}

/// Every GPU, in `gblur devices` order.
fn every_gpu() -> Result<Vec<DeviceInfo>, ClError> {
    // Only PoCL registered: it has no GPU to offer, and loading it costs its LLVM (as for auto).
    if device::only_cpu_runtimes() {
        return Ok(Vec::new());
    }
    match device::list() {
        Ok(devices) => Ok(devices.into_iter().filter(DeviceInfo::is_gpu).collect()),
        Err(ClError::NoRuntime) => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::cost::tests::rgb8;
    use super::*;

    fn figures(rust_rate: f64) -> (RustFigures, DeviceFigures) {
        let rust = RustFigures {
            samples_per_s_per_thread: rust_rate,
        };
        let dev = DeviceFigures {
            open_ms: 150.0,
            compile_ms: 2800.0,
            cached_build_ms: 7.0,
            upload_bytes_per_s: 8e9,
            download_bytes_per_s: 12e9,
            kernel_samples_per_s: 70e9,
        };
        (rust, dev)
    }

    fn with(rust_rate: f64) -> DriverlessFigures {
        let (rust, dev) = figures(rust_rate);
        Ok(Some((rust, dev, "H100".into(), "test".into())))
    }

    #[test]
    fn no_calibrated_gpu_runs_the_rust_path_without_a_driver() {
        let c = rust_without_a_driver(&rgb8(100.0), Ok(None)).expect("decided");
        assert!(c.target.is_none());
        assert!(c.why.unwrap().contains("gblur calibrate"));
    }

    #[test]
    fn a_rust_path_faster_than_the_gpu_at_its_best_needs_no_driver() {
        // 16 MP on 16 threads at 100 M samples/s: 30 ms, against the GPU's 157 ms set-up.
        let c = rust_without_a_driver(&rgb8(16.0), with(100e6)).expect("decided");
        assert!(c.target.is_none());
        assert!(c.why.unwrap().contains("without loading a driver"));
    }

    #[test]
    fn a_gpu_that_could_win_is_weighed_with_its_driver() {
        // A slow CPU (1 M samples/s a thread): 300 MP samples take seconds on the Rust path.
        assert!(rust_without_a_driver(&rgb8(100.0), with(1e6)).is_none());
        // Figures that cannot be read without a driver: weigh with it.
        assert!(rust_without_a_driver(&rgb8(1.0), Err(())).is_none());
    }

    #[test]
    fn device_lists_parse() {
        use crate::backend::DeviceSet;
        use crate::gpu::opencl::DeviceChoice;
        let ok = |s: &str| DeviceSet::parse(s).unwrap();
        assert_eq!(ok("all"), DeviceSet::AllGpus);
        assert_eq!(ok("ALL"), DeviceSet::AllGpus);
        assert_eq!(ok("auto"), DeviceSet::One(DeviceChoice::Auto));
        assert_eq!(ok("1"), DeviceSet::One(DeviceChoice::Index(1)));
        assert_eq!(ok("rust"), DeviceSet::One(DeviceChoice::Rust));
        assert_eq!(
            ok(" 0 , rust,GPU,cpu, H200"),
            DeviceSet::List(vec![
                DeviceChoice::Index(0),
                DeviceChoice::Rust,
                DeviceChoice::Gpu,
                DeviceChoice::Cpu,
                DeviceChoice::Name("H200".into()),
            ])
        );
        assert_eq!(ok("0,0").to_string(), "0,0");
        assert_eq!(ok("0,0").single(), None);
        assert_eq!(ok("all").single(), None);
        assert_eq!(ok("cpu").single(), Some(&DeviceChoice::Cpu));
        for bad in ["0,", ",0", "0,,1", "0,auto", "All,1", " , "] {
            assert!(DeviceSet::parse(bad).is_err(), "{bad}");
        }
    }
}
