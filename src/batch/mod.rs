//! `gblur batch`: blur every image under a folder into a mirrored folder. Decoding and encoding
//! run on a pool of CPU threads and blurring on one worker per device (`--device all` or a
//! list gives several), overlapped through bounded queues: the device workers all take from
//! one queue of decoded images, so a faster device takes more of them. At most
//! `2 × threads + 4 + devices` images are in memory at once whatever the folder's size. A
//! file that fails is reported and the batch goes on; outputs are written through temporary
//! files, so an interrupted batch leaves only complete files.

use crate::codec::{self, ImageIoError};
use crate::fallback;
use crate::filter::Blur2d;
use crate::gpu::opencl::device::{self, DeviceSet};
use crate::gpu::opencl::{ClContext, ClError, DeviceChoice, DeviceInfo};
use crate::gpu::plan::PipelineChoice;
use crate::job::{self, BlurJob, JobError, Keep, Loaded, Working};
use crate::report::{self, Backend, Pass, Stage};
use crossbeam_channel::{bounded, unbounded, Receiver, Sender};
use image::ImageFormat;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// A checked batch request. `blur.input`/`blur.output` are the two folders.
#[derive(Clone, Debug)]
pub struct BatchJob {
    pub blur: BlurJob,
    /// Write every output in this format instead of its input's.
    pub format: Option<ImageFormat>,
    pub overwrite: bool,
    pub in_place: bool,
    /// `(k, n)`: process the k-th of n deterministic shards (1-based).
    pub shard: Option<(usize, usize)>,
    /// Follow symbolic links (to files and folders, inside IN_DIR or not). Off: every link
    /// is skipped and named in the report.
    pub follow_links: bool,
    pub verbose: bool,
    /// No progress bar.
    pub quiet: bool,
}

#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    Blurred,
    SkippedExisting,
    SkippedNotImage,
    SkippedLink,
    Failed,
}

#[derive(Clone, Debug, Serialize)]
pub struct FileRecord {
    pub input: String,
    pub output: String,
    pub outcome: Outcome,
    pub error: Option<String>,
    pub megapixels: f64,
    pub decode_ms: f64,
    pub blur_ms: f64,
    pub encode_ms: f64,
    pub notes: Vec<String>,
    /// What blurred the file: the device's name, or the Rust path's where the device failed
    /// on it. Null for a file that was not blurred.
    pub device: Option<String>,
    /// The device worker that took the file: its position in `--device` (0 for one device).
    pub worker: Option<usize>,
}

/// What one device worker did.
#[derive(Clone, Debug, Serialize)]
pub struct WorkerSummary {
    /// Its position in `--device` (0 for one device).
    pub worker: usize,
    /// Its device, named as reports name it.
    pub device: String,
    pub backend: Backend,
    /// Files it blurred that were written, and their megapixels.
    pub images: usize,
    pub megapixels: f64,
    /// Of those, how many the Rust path blurred because the device failed on them.
    pub rust_fallbacks: usize,
    /// Its blur time, summed over those files.
    pub blur_s: f64,
    /// Why its device stopped blurring before the end, if it did, and what the worker did then.
    pub stopped: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    /// The device's name; with several workers, their names joined by " + ".
    pub device: String,
    pub blurred: usize,
    pub skipped_existing: usize,
    pub skipped_not_image: usize,
    /// Symbolic links not followed, loops and dangling links.
    pub skipped_links: usize,
    pub failed: usize,
    /// Files not started because the batch was interrupted.
    pub not_started: usize,
    pub interrupted: bool,
    pub total_s: f64,
    pub images_per_s: f64,
    pub megapixels_per_s: f64,
    /// Time summed over the worker threads of each stage.
    pub decode_s: f64,
    pub blur_s: f64,
    pub encode_s: f64,
    /// One entry per device worker, in `--device` order.
    pub devices: Vec<WorkerSummary>,
    /// What the report says of the batch as a whole (what `--device all` ran without a GPU).
    pub notes: Vec<String>,
    pub files: Vec<FileRecord>,
}

/// Depth of each queue between stages. It stays 2 whatever the number of device workers: each
/// worker holds the one image it is blurring, so memory grows by one image per device.
const QUEUE: usize = 2;

/// Stable across machines and runs, so shards split a folder the same way everywhere.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Whether `rel` (a path relative to IN_DIR) belongs to shard `k` of `n`.
pub fn in_shard(rel: &Path, (k, n): (usize, usize)) -> bool {
    let key = rel.to_string_lossy().replace('\\', "/");
    (fnv1a(key.as_bytes()) % n as u64) as usize == k - 1
}

struct Task {
    input: PathBuf,
    output: PathBuf,
    format: ImageFormat,
}

/// Finds the work: every file under IN_DIR (never inside OUT_DIR), in a stable order, split
/// into tasks and the records of files skipped up front.
fn plan(job: &BatchJob, in_dir: &Path, out_dir: &Path) -> (Vec<Task>, Vec<FileRecord>) {
    let mut tasks = Vec::new();
    let mut skipped = Vec::new();
    let walker = walkdir::WalkDir::new(in_dir)
        .follow_links(job.follow_links)
        .sort_by_file_name()
        .into_iter()
        // OUT_DIR inside IN_DIR is not walked: outputs never become inputs.
        .filter_entry(|e| out_dir == in_dir || !e.path().starts_with(out_dir));
    let record = |input: &Path, outcome, output: &Path| FileRecord {
        input: input.display().to_string(),
        output: output.display().to_string(),
        outcome,
        error: None,
        megapixels: 0.0,
        decode_ms: 0.0,
        blur_ms: 0.0,
        encode_ms: 0.0,
        notes: Vec::new(),
        device: None,
        worker: None,
    };
    for entry in walker {
        let entry = match entry {
            Ok(entry) => entry,
            Err(e) => {
                skipped.push(walk_error(&e, in_dir, record));
                continue;
            }
        };
        let input = entry.path().to_path_buf();
        if entry.path_is_symlink() && !job.follow_links {
            let mut r = record(&input, Outcome::SkippedLink, Path::new(""));
            r.notes
                .push("symbolic link, not followed (--follow-links follows links)".into());
            skipped.push(r);
            continue;
        }
        if !entry.file_type().is_file() {
            continue;
        }
        let rel = input.strip_prefix(in_dir).unwrap_or(&input).to_path_buf();
        if job.shard.is_some_and(|s| !in_shard(&rel, s)) {
            continue;
        }
        let record = |outcome, output: &Path| record(&input, outcome, output);
        let sniffed = codec::sniff(&input).ok().flatten();
        let Some(in_format) = sniffed else {
            if job.verbose {
                eprintln!("gblur: {}: not an image, skipped", input.display());
            }
            let mut r = record(Outcome::SkippedNotImage, Path::new(""));
            if entry.metadata().is_ok_and(|m| m.len() == 0) {
                // Most likely a copy that failed: worth naming even without -v.
                r.notes.push("empty file, skipped".into());
            }
            skipped.push(r);
            continue;
        };
        let format = job.format.unwrap_or(in_format);
        let mut output = out_dir.join(&rel);
        if job.format.is_some() {
            output.set_extension(format.extensions_str()[0]);
        }
        if output.exists() && !(job.overwrite || job.in_place) {
            skipped.push(record(Outcome::SkippedExisting, &output));
            continue;
        }
        tasks.push(Task {
            input,
            output,
            format,
        });
    }
    (tasks, skipped)
}

/// The record for an entry the walk could not take: a symbolic link loop or a dangling link
/// (with --follow-links) is skipped and named; anything else (an unreadable folder, say) is a
/// failure.
fn walk_error(
    e: &walkdir::Error,
    in_dir: &Path,
    record: impl Fn(&Path, Outcome, &Path) -> FileRecord,
) -> FileRecord {
    let path = e.path().unwrap_or(in_dir);
    let is_link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    if let Some(ancestor) = e.loop_ancestor() {
        let mut r = record(path, Outcome::SkippedLink, Path::new(""));
        r.notes.push(format!(
            "symbolic link loop (back to {}), not followed",
            ancestor.display()
        ));
        r
    } else if is_link {
        let mut r = record(path, Outcome::SkippedLink, Path::new(""));
        r.notes
            .push("symbolic link to nothing (dangling), skipped".into());
        r
    } else {
        let mut r = record(path, Outcome::Failed, Path::new(""));
        let cause = e
            .io_error()
            .map_or_else(|| e.to_string(), |io| io.to_string());
        r.error = Some(format!("{}: cannot read: {cause}", path.display()));
        r
    }
}

/// Refuses an output that would leave OUT_DIR: relative paths from the walk cannot climb out,
/// but a folder inside OUT_DIR that is a symbolic link would carry the write elsewhere.
fn check_inside(out_dir: &Path, output: &Path) -> Result<(), ImageIoError> {
    let rel = output.strip_prefix(out_dir).unwrap_or(output);
    let mut at = out_dir.to_path_buf();
    let folders = rel.parent().into_iter().flat_map(|p| p.components());
    for c in folders {
        at.push(c);
        if std::fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(ImageIoError::BadOutput {
                path: output.into(),
                detail: format!(
                    "not written: {} is a symbolic link, and outputs never leave OUT_DIR",
                    at.display()
                ),
            });
        }
    }
    Ok(())
}

struct Decoded {
    task: Task,
    loaded: Loaded,
    passes: Vec<Pass>,
}

struct Blurred {
    task: Task,
    loaded: Loaded,
    passes: Vec<Pass>,
    notes: Vec<String>,
    blur_ms: f64,
    /// The worker that took it, and whether its device blurred it (else the Rust path did).
    /// The encoder puts the device's name in the record: the device thread allocates nothing
    /// per image that lives to the end. A name allocated there did, and with the malloc heap
    /// of that thread pinned under freed image buffers, peak memory grew with the folder
    /// (Rust path, 3 MP JPEGs: 84 MiB for 10 images, 200 to 420 MiB for 120).
    worker: usize,
    on_device: bool,
}

fn failed_record(task: &Task, err: String, passes: &[Pass]) -> FileRecord {
    FileRecord {
        input: task.input.display().to_string(),
        output: task.output.display().to_string(),
        outcome: Outcome::Failed,
        error: Some(err),
        megapixels: 0.0,
        decode_ms: report::stage_ms(passes, Stage::Decode),
        blur_ms: 0.0,
        encode_ms: 0.0,
        notes: Vec::new(),
        device: None,
        worker: None,
    }
}

/// The devices `--device` names for the batch, one per worker in order (None: the Rust path),
/// and a note for the summary where `all` found no GPU.
pub fn choose_devices(
    set: &DeviceSet,
    pipeline: PipelineChoice,
) -> Result<(Vec<Option<DeviceInfo>>, Option<String>), ClError> {
    match set {
        DeviceSet::One(choice) => {
            let (selected, _) = job::choose_device(choice, pipeline)?;
            Ok((vec![selected], None))
        }
        // Each entry resolves as a single --device does; `rust` is a worker on the Rust path.
        DeviceSet::List(choices) => Ok((
            choices
                .iter()
                .map(device::select)
                .collect::<Result<_, _>>()?,
            None,
        )),
        DeviceSet::AllGpus => {
            let gpus = every_gpu()?;
            if !gpus.is_empty() {
                return Ok((gpus.into_iter().map(Some).collect(), None));
            }
            // No GPU: run what `auto` picks, and say so, rather than refuse. `all` asks for
            // whatever this machine has, so a script written for a GPU host still does its
            // job on a laptop or in CI; `auto` is the documented best choice without a GPU,
            // and the summary names what ran. Who needs a GPU or nothing names one
            // (`--device gpu`, indices), and that fails with exit 2 where it is missing.
            let (selected, why) = job::choose_device(&DeviceChoice::Auto, pipeline)?;
            let note = match (&selected, why) {
                (_, Some(why)) => {
                    format!("--device all found no GPU, so it ran as --device auto: {why}")
                }
                (Some(d), None) => format!(
                    "--device all found no GPU: ran on {}, as --device auto does",
                    d.label()
                ),
                (None, None) => "--device all found no GPU: ran the built-in Rust path".into(),
            };
            Ok((vec![selected], Some(note)))
        }
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

/// One device-stage worker: its device (None: the Rust path) with its own context, and so its
/// own queue, built programs and buffers.
struct Worker {
    index: usize,
    ctx: Option<ClContext>,
    name: String,
    /// What its path blurs as decoded (`job::Keep::for_path`).
    keep: Keep,
}

/// What every device worker shares.
struct Shared<'a> {
    job: &'a BatchJob,
    blur: &'a Blur2d,
    bar: &'a indicatif::ProgressBar,
    t_total: Instant,
    megapixels_done: &'a AtomicU64,
    /// Workers whose device still blurs (a Rust-path worker always does).
    alive: &'a AtomicUsize,
    workers: usize,
}

/// Where the workers' paths keep different images as decoded (a list with `rust`, or devices
/// running different pipelines), the decoders keep every image decoded, and a worker converts
/// to planar f32 the ones its own path does not keep, as `job::load` would have for it alone.
fn adapt(loaded: &mut Loaded, keep: Keep, linear: bool, passes: &mut Vec<Pass>) {
    let Working::Decoded(image) = &loaded.working else {
        return;
    };
    if keep.keeps(image.color()) {
        return;
    }
    let t = Instant::now();
    let (planar, layout) = crate::pixels::to_planar(image, linear);
    loaded.working = Working::Planar(planar);
    loaded.layout = layout;
    passes.push(Pass::host(Stage::Decode, "to planar f32", t));
}

/// The device stage of one worker: takes decoded images until the queue closes, blurs each
/// on its device (the Rust path where the device fails on it), and hands it to the encoders.
/// Returns why its device stopped before the end, if it did.
fn device_stage(
    worker: &Worker,
    stage: &Shared,
    dec_rx: Receiver<Decoded>,
    enc_tx: Sender<Blurred>,
    rec_fail: Sender<FileRecord>,
) -> Option<String> {
    let job = stage.job;
    let mut device_broken = false;
    let mut stopped = None;
    while let Ok(d) = dec_rx.recv() {
        let done_mp = stage.megapixels_done.load(Ordering::Relaxed) as f64 * 1e-6;
        let secs = stage.t_total.elapsed().as_secs_f64();
        stage.bar.set_message(format!(
            "{:.1} MP/s  {}",
            done_mp / secs,
            d.task.input.display()
        ));
        let Decoded {
            task,
            mut loaded,
            mut passes,
        } = d;
        let device = if device_broken {
            None
        } else {
            worker.ctx.as_ref()
        };
        if device.is_some() {
            adapt(&mut loaded, worker.keep, job.blur.linear, &mut passes);
        }
        let t = Instant::now();
        let mut notes = std::mem::take(&mut loaded.notes);
        // Too large for the device, out of device memory and the like: this image goes
        // the Rust way (crate::fallback).
        let reload = || {
            let (limit, linear) = (job.blur.max_memory_mib, job.blur.linear);
            job::load(
                &task.input,
                limit,
                linear,
                Keep::for_path(None, stage.blur),
                &mut Vec::new(),
            )
        };
        let pipeline = job.blur.pipeline;
        let mut leave = false;
        let on_device = match fallback::blur(
            device,
            &mut loaded,
            stage.blur,
            pipeline,
            &mut passes,
            reload,
        ) {
            Ok(done) => {
                notes.extend(done.note);
                if let Some(ClError::Build { .. }) = done.failure {
                    // Kernels that did not build will not build for the next image. The
                    // device takes no more images while another worker's device still
                    // blurs; the last one whose device breaks goes on on the Rust path.
                    device_broken = true;
                    let last = stage.alive.fetch_sub(1, Ordering::SeqCst) == 1;
                    leave = !last;
                    let then = if leave {
                        "it took no more images, the other devices went on"
                    } else {
                        "it blurred the rest of the batch on the built-in Rust path"
                    };
                    stopped = Some(format!("the kernels did not build: {then}"));
                    if !job.quiet {
                        let who = if stage.workers == 1 {
                            worker.name.clone()
                        } else {
                            format!("{} (device #{})", worker.name, worker.index)
                        };
                        let then = if leave {
                            "it takes no more images, the other devices go on"
                        } else {
                            "the rest of the batch runs on the built-in Rust path"
                        };
                        stage.bar.suspend(|| {
                            eprintln!("gblur: {who}: the kernels did not build; {then}")
                        });
                    }
                }
                done.on_device
            }
            Err(e) => {
                let _ = rec_fail.send(failed_record(&task, e.to_string(), &passes));
                continue;
            }
        };
        let megapixels = loaded.width as u64 * loaded.height as u64;
        stage
            .megapixels_done
            .fetch_add(megapixels, Ordering::Relaxed);
        let _ = enc_tx.send(Blurred {
            task,
            loaded,
            passes,
            notes,
            blur_ms: t.elapsed().as_secs_f64() * 1e3,
            worker: worker.index,
            on_device,
        });
        if leave {
            break;
        }
    }
    stopped
}

pub fn run(job: &BatchJob) -> Result<Summary, JobError> {
    let t_total = Instant::now();
    let setup = |e: anyhow::Error| JobError::Setup(e);
    let (in_dir, out_dir) = (&job.blur.input, &job.blur.output);
    if !in_dir.is_dir() {
        return Err(setup(anyhow::anyhow!("{}: not a folder", in_dir.display())));
    }
    // A --device that names nothing is refused before OUT_DIR is created.
    let (devices, device_note) =
        choose_devices(&job.blur.device, job.blur.pipeline).map_err(|e| setup(e.into()))?;
    std::fs::create_dir_all(out_dir)
        .map_err(|e| setup(anyhow::anyhow!("{}: cannot create: {e}", out_dir.display())))?;
    let in_dir = in_dir.canonicalize().map_err(|e| setup(e.into()))?;
    let out_dir = out_dir.canonicalize().map_err(|e| setup(e.into()))?;
    if in_dir == out_dir && !job.in_place {
        return Err(setup(anyhow::anyhow!(
            "{}: IN_DIR and OUT_DIR are the same folder; pass --in-place to replace the originals",
            in_dir.display()
        )));
    }
    if let Some(f) = job.format {
        if !codec::can_write(f) {
            return Err(setup(anyhow::anyhow!(
                "--format {f:?}: gblur cannot write it"
            )));
        }
    }
    let blur = Blur2d::checked(job.blur.method, job.blur.sigma_x, job.blur.sigma_y)
        .map_err(|e| setup(anyhow::anyhow!(e)))?;
    // Every context is created before any work, so a device that cannot be opened is a set-up
    // error; each then moves to its worker's thread and stays there.
    let workers = devices
        .into_iter()
        .enumerate()
        .map(|(index, info)| {
            let ctx = info.map(ClContext::new).transpose()?;
            let name = ctx
                .as_ref()
                .map_or_else(job::rust_device_name, |c| c.device_name());
            let pipe = ctx.as_ref().map(|c| job.blur.pipeline.resolve(&c.info));
            let keep = Keep::for_path(pipe, &blur);
            Ok(Worker {
                index,
                ctx,
                name,
                keep,
            })
        })
        .collect::<Result<Vec<_>, ClError>>()
        .map_err(|e| setup(e.into()))?;
    let rust_name = job::rust_device_name();
    let names: Vec<(String, Backend)> = workers
        .iter()
        .map(|w| {
            (
                w.name.clone(),
                if w.ctx.is_some() {
                    Backend::Opencl
                } else {
                    Backend::Rust
                },
            )
        })
        .collect();
    let device_name = names
        .iter()
        .map(|(name, _)| name.as_str())
        .collect::<Vec<_>>()
        .join(" + ");
    // The decoders load each image once for every worker: as their paths all keep it
    // (job::Keep) where they agree, else as decoded, and a worker converts to planar f32 what
    // its own path does not keep (`adapt`).
    let keep = match workers.split_first() {
        Some((first, rest)) if rest.iter().all(|w| w.keep == first.keep) => first.keep,
        _ => Keep::Decoded,
    };

    let (tasks, mut records) = plan(job, &in_dir, &out_dir);
    let total = tasks.len();
    let interrupted = Arc::new(AtomicBool::new(false));
    {
        let flag = interrupted.clone();
        // Only one handler per process; a second batch in the same process keeps the first.
        let _ = ctrlc::set_handler(move || flag.store(true, Ordering::SeqCst));
    }
    let bar = crate::report::progress_bar(total, job.quiet, crate::report::FILES);

    let megapixels_done = AtomicU64::new(0);
    let alive = AtomicUsize::new(workers.len());
    let stage = Shared {
        job,
        blur: &blur,
        bar: &bar,
        t_total,
        megapixels_done: &megapixels_done,
        alive: &alive,
        workers: workers.len(),
    };
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let (task_tx, task_rx) = unbounded::<Task>();
    for t in tasks {
        task_tx.send(t).expect("receiver alive");
    }
    drop(task_tx);
    let (dec_tx, dec_rx) = bounded::<Decoded>(QUEUE);
    let (enc_tx, enc_rx) = bounded::<Blurred>(QUEUE);
    let (rec_tx, rec_rx) = unbounded::<FileRecord>();

    let stopped = std::thread::scope(|scope| {
        for _ in 0..threads {
            let (task_rx, dec_tx, rec_tx) = (task_rx.clone(), dec_tx.clone(), rec_tx.clone());
            let interrupted = &interrupted;
            scope.spawn(move || {
                while let Ok(task) = task_rx.recv() {
                    if interrupted.load(Ordering::SeqCst) {
                        break;
                    }
                    let mut passes = Vec::new();
                    match job::load(
                        &task.input,
                        job.blur.max_memory_mib,
                        job.blur.linear,
                        keep,
                        &mut passes,
                    ) {
                        Ok(loaded) => {
                            let _ = dec_tx.send(Decoded {
                                task,
                                loaded,
                                passes,
                            });
                        }
                        Err(e) => {
                            let _ = rec_tx.send(failed_record(&task, e.to_string(), &passes));
                        }
                    }
                }
            });
        }
        drop(dec_tx);
        for _ in 0..threads {
            let (enc_rx, rec_tx, out_dir) = (enc_rx.clone(), rec_tx.clone(), &out_dir);
            let (names, rust_name) = (&names, &rust_name);
            scope.spawn(move || {
                while let Ok(b) = enc_rx.recv() {
                    let mut passes = b.passes;
                    let mut notes = b.notes;
                    let saved = check_inside(out_dir, &b.task.output)
                        .and_then(|()| match b.task.output.parent() {
                            Some(parent) => std::fs::create_dir_all(parent).map_err(|cause| {
                                ImageIoError::Write {
                                    path: b.task.output.clone(),
                                    cause,
                                }
                            }),
                            None => Ok(()),
                        })
                        .and_then(|()| {
                            job::save(
                                b.loaded.working,
                                b.loaded.layout,
                                b.loaded.icc.as_deref(),
                                b.task.format,
                                job.blur.encode,
                                &b.task.output,
                                &mut passes,
                                &mut notes,
                            )
                        });
                    let mut record = FileRecord {
                        input: b.task.input.display().to_string(),
                        output: b.task.output.display().to_string(),
                        outcome: Outcome::Blurred,
                        error: None,
                        megapixels: b.loaded.width as f64 * b.loaded.height as f64 * 1e-6,
                        decode_ms: report::stage_ms(&passes, Stage::Decode),
                        blur_ms: b.blur_ms,
                        encode_ms: report::stage_ms(&passes, Stage::Encode),
                        notes,
                        device: Some(if b.on_device {
                            names[b.worker].0.clone()
                        } else {
                            rust_name.clone()
                        }),
                        worker: Some(b.worker),
                    };
                    if let Err(e) = saved {
                        record.outcome = Outcome::Failed;
                        record.error = Some(e.to_string());
                    }
                    let _ = rec_tx.send(record);
                }
            });
        }
        drop(enc_rx);

        // The device stage: one worker per device, each on its own thread with its own
        // context, all taking from the one queue of decoded images.
        let stage = &stage;
        let handles: Vec<_> = workers
            .into_iter()
            .map(|worker| {
                let (dec_rx, enc_tx, rec_fail) = (dec_rx.clone(), enc_tx.clone(), rec_tx.clone());
                scope.spawn(move || device_stage(&worker, stage, dec_rx, enc_tx, rec_fail))
            })
            .collect();
        drop((dec_rx, enc_tx, rec_tx));
        // Records arrive as encoders finish; the bar counts them.
        for r in rec_rx.iter() {
            bar.inc(1);
            records.push(r);
        }
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect::<Vec<_>>()
    });
    bar.finish_and_clear();

    records.sort_by(|a, b| a.input.cmp(&b.input));
    let count = |o: Outcome| records.iter().filter(|r| r.outcome == o).count();
    let blurred = count(Outcome::Blurred);
    let failed = count(Outcome::Failed);
    let walk_failed = records
        .iter()
        .filter(|r| r.outcome == Outcome::Failed && r.output.is_empty())
        .count();
    let total_s = t_total.elapsed().as_secs_f64();
    let megapixels: f64 = records.iter().map(|r| r.megapixels).sum();
    let sum = |f: fn(&FileRecord) -> f64| records.iter().map(f).sum::<f64>() * 1e-3;
    let devices = names
        .into_iter()
        .zip(stopped)
        .enumerate()
        .map(|(k, ((device, backend), stopped))| {
            let mine: Vec<&FileRecord> = records
                .iter()
                .filter(|r| r.outcome == Outcome::Blurred && r.worker == Some(k))
                .collect();
            WorkerSummary {
                worker: k,
                backend,
                images: mine.len(),
                megapixels: mine.iter().map(|r| r.megapixels).sum(),
                rust_fallbacks: mine
                    .iter()
                    .filter(|r| r.device.as_ref() != Some(&device))
                    .count(),
                blur_s: mine.iter().map(|r| r.blur_ms).sum::<f64>() * 1e-3,
                stopped,
                device,
            }
        })
        .collect();
    Ok(Summary {
        device: device_name,
        blurred,
        skipped_existing: count(Outcome::SkippedExisting),
        skipped_not_image: count(Outcome::SkippedNotImage),
        skipped_links: count(Outcome::SkippedLink),
        failed,
        not_started: total - blurred - (failed - walk_failed),
        interrupted: interrupted.load(Ordering::SeqCst),
        total_s,
        images_per_s: blurred as f64 / total_s,
        megapixels_per_s: megapixels / total_s,
        decode_s: sum(|r| r.decode_ms),
        blur_s: sum(|r| r.blur_ms),
        encode_s: sum(|r| r.encode_ms),
        devices,
        notes: device_note.into_iter().collect(),
        files: records,
    })
}

impl Summary {
    /// The end-of-batch report for stderr.
    pub fn table(&self) -> String {
        use std::fmt::Write as _;
        let mut s = String::new();
        if let [_] = self.devices[..] {
            let _ = writeln!(s, "device    {}", self.device);
        } else {
            for d in &self.devices {
                let _ = write!(
                    s,
                    "device    #{} {}: {} image{}, {:.1} MP, blur {:.2} s",
                    d.worker,
                    d.device,
                    d.images,
                    if d.images == 1 { "" } else { "s" },
                    d.megapixels,
                    d.blur_s
                );
                if d.rust_fallbacks > 0 {
                    let _ = write!(
                        s,
                        ", {} on the Rust path after a device failure",
                        d.rust_fallbacks
                    );
                }
                if let Some(why) = &d.stopped {
                    let _ = write!(s, "; {why}");
                }
                let _ = writeln!(s);
            }
        }
        for n in &self.notes {
            let _ = writeln!(s, "note      {n}");
        }
        let _ = writeln!(
            s,
            "files     {} blurred, {} skipped (output exists), {} skipped (not images), {}{} failed{}",
            self.blurred,
            self.skipped_existing,
            self.skipped_not_image,
            if self.skipped_links > 0 {
                format!("{} skipped (symbolic links), ", self.skipped_links)
            } else {
                String::new()
            },
            self.failed,
            if self.interrupted {
                format!(", {} not started (interrupted)", self.not_started)
            } else {
                String::new()
            }
        );
        let _ = writeln!(
            s,
            "time      {:.2} s wall, {:.1} images/s, {:.1} MP/s",
            self.total_s, self.images_per_s, self.megapixels_per_s
        );
        let _ = writeln!(
            s,
            "stages    decode {:.2} s, blur {:.2} s, encode {:.2} s (summed over threads)",
            self.decode_s, self.blur_s, self.encode_s
        );
        for f in self.files.iter().filter(|f| f.outcome == Outcome::Failed) {
            let _ = writeln!(s, "failed    {}", f.error.as_deref().unwrap_or("?"));
        }
        for f in &self.files {
            for n in &f.notes {
                let _ = writeln!(s, "note      {}: {n}", f.input);
            }
        }
        s
    }
}

/// Prints the summary (JSON on stdout when asked, the table on stderr unless quiet) and turns
/// failures into the exit status: 1 when any file failed or the batch was interrupted.
pub fn emit(summary: &Summary, json: bool, quiet: bool) -> Result<(), JobError> {
    use std::io::Write as _;
    if json {
        let text = serde_json::to_string_pretty(summary).expect("summary serialises");
        let _ = writeln!(std::io::stdout().lock(), "{text}");
    }
    if !quiet {
        eprint!("{}", summary.table());
    }
    if summary.interrupted {
        return Err(JobError::Failed(anyhow::anyhow!(
            "interrupted: {} files not started; every finished output is complete",
            summary.not_started
        )));
    }
    if summary.failed > 0 {
        return Err(JobError::Failed(anyhow::anyhow!(
            "{} of the files failed (listed above)",
            summary.failed
        )));
    }
    Ok(())
}
