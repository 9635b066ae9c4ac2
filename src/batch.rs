//! `gblur batch`: blur every image under a folder into a mirrored folder. Decoding and encoding
//! run on a pool of CPU threads and blurring on the device, overlapped through bounded queues,
//! so at most `2 × threads + 5` images are in memory at once whatever the folder's size. A
//! file that fails is reported and the batch goes on; outputs are written through temporary
//! files, so an interrupted batch leaves only complete files.

use crate::fallback;
use crate::filter::Blur2d;
use crate::image_io::{self, ImageIoError};
use crate::job::{self, BlurJob, JobError, Loaded};
use crate::opencl::{ClContext, ClError};
use crate::pipeline::Pass;
use crossbeam_channel::{bounded, unbounded};
use image::ImageFormat;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
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
}

#[derive(Clone, Debug, Serialize)]
pub struct Summary {
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
    pub files: Vec<FileRecord>,
}

/// Depth of each queue between stages.
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
        let sniffed = image_io::sniff(&input).ok().flatten();
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

fn stage_ms(passes: &[Pass], names: &[&str]) -> f64 {
    passes
        .iter()
        .filter(|p| names.contains(&p.name.as_str()))
        .map(|p| p.ms)
        .sum()
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
}

pub fn run(job: &BatchJob) -> Result<Summary, JobError> {
    let t_total = Instant::now();
    let setup = |e: anyhow::Error| JobError::Setup(e);
    let (in_dir, out_dir) = (&job.blur.input, &job.blur.output);
    if !in_dir.is_dir() {
        return Err(setup(anyhow::anyhow!("{}: not a folder", in_dir.display())));
    }
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
        if !image_io::can_write(f) {
            return Err(setup(anyhow::anyhow!(
                "--format {f:?}: gblur cannot write it"
            )));
        }
    }
    let (selected, _) =
        job::choose_device(&job.blur.device, job.blur.pipeline).map_err(|e| setup(e.into()))?;
    let ctx = match selected {
        Some(info) => Some(ClContext::new(info).map_err(|e| setup(e.into()))?),
        None => None,
    };
    let device_name = ctx
        .as_ref()
        .map_or_else(job::rust_device_name, |c| c.device_name());
    let blur = Blur2d::checked(job.blur.method, job.blur.sigma_x, job.blur.sigma_y)
        .map_err(|e| setup(anyhow::anyhow!(e)))?;
    let pipe = ctx.as_ref().map(|c| job.blur.pipeline.resolve(&c.info));
    let keep = job::Keep::for_path(pipe, &blur);

    let (tasks, mut records) = plan(job, &in_dir, &out_dir);
    let total = tasks.len();
    let interrupted = Arc::new(AtomicBool::new(false));
    {
        let flag = interrupted.clone();
        // Only one handler per process; a second batch in the same process keeps the first.
        let _ = ctrlc::set_handler(move || flag.store(true, Ordering::SeqCst));
    }
    let bar = crate::report::progress_bar(total, job.quiet, crate::report::FILES);

    let megapixels_done = std::sync::atomic::AtomicU64::new(0);
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let (task_tx, task_rx) = unbounded::<Task>();
    for t in tasks {
        task_tx.send(t).expect("receiver alive");
    }
    drop(task_tx);
    let (dec_tx, dec_rx) = bounded::<Decoded>(QUEUE);
    let (enc_tx, enc_rx) = bounded::<Blurred>(QUEUE);
    let (rec_tx, rec_rx) = unbounded::<FileRecord>();
    let failed_record = |task: &Task, err: String, passes: &[Pass]| FileRecord {
        input: task.input.display().to_string(),
        output: task.output.display().to_string(),
        outcome: Outcome::Failed,
        error: Some(err),
        megapixels: 0.0,
        decode_ms: stage_ms(passes, &["decode", "to planar f32"]),
        blur_ms: 0.0,
        encode_ms: 0.0,
        notes: Vec::new(),
    };

    std::thread::scope(|scope| {
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
                        decode_ms: stage_ms(&passes, &["decode", "to planar f32"]),
                        blur_ms: b.blur_ms,
                        encode_ms: stage_ms(&passes, &["from planar", "encode", "write"]),
                        notes,
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
        let rec_fail = rec_tx.clone();
        drop(rec_tx);

        // The device stage runs here: the OpenCL context stays on one thread.
        let mut device_broken = false;
        while let Ok(d) = dec_rx.recv() {
            let done_mp = megapixels_done.load(Ordering::Relaxed) as f64 * 1e-6;
            let secs = t_total.elapsed().as_secs_f64();
            bar.set_message(format!(
                "{:.1} MP/s  {}",
                done_mp / secs,
                d.task.input.display()
            ));
            let t = Instant::now();
            let Decoded {
                task,
                mut loaded,
                mut passes,
            } = d;
            let mut notes = std::mem::take(&mut loaded.notes);
            // Too large for the device, out of device memory and the like: this image goes
            // the Rust way (crate::fallback).
            let reload = || {
                let (limit, linear) = (job.blur.max_memory_mib, job.blur.linear);
                job::load(
                    &task.input,
                    limit,
                    linear,
                    job::Keep::for_path(None, &blur),
                    &mut Vec::new(),
                )
            };
            let device = if device_broken { None } else { ctx.as_ref() };
            let pipeline = job.blur.pipeline;
            match fallback::blur(device, &mut loaded, &blur, pipeline, &mut passes, reload) {
                Ok(done) => {
                    notes.extend(done.note);
                    if let Some(ClError::Build { .. }) = done.failure {
                        // Kernels that did not build will not build for the next image.
                        device_broken = true;
                        if !job.quiet {
                            bar.suspend(|| eprintln!("gblur: {device_name}: the kernels did not build; the rest of the batch runs on the built-in Rust path"));
                        }
                    }
                }
                Err(e) => {
                    let _ = rec_fail.send(failed_record(&task, e.to_string(), &passes));
                    continue;
                }
            }
            let megapixels = loaded.width as u64 * loaded.height as u64;
            megapixels_done.fetch_add(megapixels, Ordering::Relaxed);
            let _ = enc_tx.send(Blurred {
                task,
                loaded,
                passes,
                notes,
                blur_ms: t.elapsed().as_secs_f64() * 1e3,
            });
        }
        drop(enc_tx);
        drop(rec_fail);
        // Records arrive as encoders finish; the bar counts them.
        for r in rec_rx.iter() {
            bar.inc(1);
            records.push(r);
        }
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
        files: records,
    })
}

impl Summary {
    /// The end-of-batch report for stderr.
    pub fn table(&self) -> String {
        use std::fmt::Write as _;
        let mut s = String::new();
        let _ = writeln!(s, "device    {}", self.device);
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
