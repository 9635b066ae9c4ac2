//! What a batch will do, decided before any image is decoded: every file under IN_DIR (never
//! inside an OUT_DIR that lies in IN_DIR) in a stable order, its output path under OUT_DIR
//! (checked for every file: it stays inside OUT_DIR and out of IN_DIR), and the files skipped
//! up front (existing outputs, files an in-place run finished, non-images, links), each with
//! its reason.

use super::journal::Journal;
use super::made_with::{Made, SettingsLog};
use super::summary::{FileRecord, Outcome};
use super::{names, naming, BatchJob};
use gblur::command::formats::{self, ImageIoError, Input};
use image::ImageFormat;
use std::path::{Path, PathBuf};

/// Whether `rel` (a path relative to IN_DIR) belongs to shard `k` of `n`.
pub fn in_shard(rel: &Path, (k, n): (usize, usize)) -> bool {
    let key = rel.to_string_lossy().replace('\\', "/");
    (names::fnv1a(key.as_bytes()) % n as u64) as usize == k - 1
}

pub struct Task {
    pub input: PathBuf,
    pub output: PathBuf,
    pub format: ImageFormat,
    /// Its output exists, made by an earlier batch with other settings: it is replaced.
    pub replaces_stale: bool,
    /// A TIFF stack or a CMYK file, blurred whole after the rest (`stacks.rs`); None: the
    /// batch's stages take it. Told from the input's head when it is planned, in the one open
    /// that recognises it.
    pub whole: Option<WholeFile>,
}

/// A file the batch's stages do not take, blurred whole by the main command's job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WholeFile {
    /// A TIFF of several pages written as a TIFF: every page kept.
    Stack,
    /// A CMYK JPEG or TIFF written as a JPEG or TIFF whose inks the job keeps.
    Inks,
}

/// Which whole-file job `input` (opened), written in `format`, goes to, from its head; None:
/// the batch's stages.
pub fn whole_file(input: &Input, format: ImageFormat, job: &BatchJob) -> Option<WholeFile> {
    let pages = || formats::Quirks::read(&mut *input.reader()).pages;
    let stacks = formats::holds_pages;
    if stacks(format) && input.sniffed.is_some_and(stacks) && pages() > 1 {
        return Some(WholeFile::Stack);
    }
    let inks = formats::holds_inks(format)
        && !gblur::command::job::needs_colour(&job.blur)
        && formats::may_be_cmyk_as(input, input.sniffed);
    inks.then_some(WholeFile::Inks)
}

/// Every entry under IN_DIR that `--include`, `--exclude` and `--max-depth` take, in a stable
/// order, links followed where `--follow-links` says.
/// OUT_DIR inside IN_DIR is not walked: outputs never become inputs. (IN_DIR inside OUT_DIR is
/// walked whole.) The files gblur keeps at the top of a folder (`.gblur.*`: an in-place
/// batch's journals, the settings logs) are not inputs.
fn walk<'a>(
    job: &'a BatchJob,
    in_dir: &'a Path,
    out_dir: &'a Path,
) -> impl Iterator<Item = walkdir::Result<walkdir::DirEntry>> + 'a {
    let out_inside = out_dir != in_dir && out_dir.starts_with(in_dir);
    let filter = &job.filter;
    walkdir::WalkDir::new(in_dir)
        .follow_links(job.follow_links)
        .max_depth(filter.max_depth.unwrap_or(usize::MAX))
        .sort_by_file_name()
        .into_iter()
        .filter_entry(move |e| {
            let ours = e.depth() == 1 && e.file_name().to_string_lossy().starts_with(".gblur.");
            let rel = e.path().strip_prefix(in_dir).unwrap_or(e.path());
            let taken = match (e.depth(), e.file_type().is_dir()) {
                (0, _) => true,
                (_, true) => filter.enters(rel),
                (_, false) => filter.takes(rel),
            };
            taken && !(ours || out_inside && e.path().starts_with(out_dir))
        })
}

/// Finds the work: every file under IN_DIR (never inside OUT_DIR), in a stable order, split
/// into tasks and the records of files skipped up front. `journal`: an in-place batch's,
/// whose finished files are skipped. `made`: the settings logs, which tell an output made with
/// these settings (skipped) from a stale one (redone, unless `--skip-existing`).
pub fn plan(
    job: &BatchJob,
    (in_dir, out_dir): (&Path, &Path),
    journal: Option<&Journal>,
    made: Option<&SettingsLog>,
) -> (Vec<Task>, Vec<FileRecord>) {
    let mut tasks = Vec::new();
    let mut skipped = Vec::new();
    let found = Found {
        job,
        dirs: (in_dir, out_dir),
        journal,
        made,
    };
    for entry in walk(job, in_dir, out_dir) {
        let planned = match entry {
            Ok(entry) => found.plan(&entry),
            Err(e) => Planned::Skipped(walk_error(&e, in_dir, FileRecord::new)),
        };
        match planned {
            Planned::Task(task) => tasks.push(task),
            Planned::Skipped(record) => skipped.push(record),
            Planned::Passed => {}
        }
    }
    (tasks, skipped)
}

/// What the plan makes of one entry under IN_DIR.
enum Planned {
    Task(Task),
    /// Accounted for without work: skipped, or failed before any.
    Skipped(FileRecord),
    /// Not the batch's: a folder, or another shard's file.
    Passed,
}

/// What `plan` weighs each file against.
struct Found<'a> {
    job: &'a BatchJob,
    dirs: (&'a Path, &'a Path),
    journal: Option<&'a Journal>,
    made: Option<&'a SettingsLog>,
}

impl Found<'_> {
    fn plan(&self, entry: &walkdir::DirEntry) -> Planned {
        let (job, (in_dir, out_dir)) = (self.job, self.dirs);
        let input = entry.path().to_path_buf();
        let record = |outcome, output: &Path| FileRecord::new(&input, outcome, output);
        if entry.path_is_symlink() && !job.follow_links {
            let mut r = record(Outcome::SkippedLink, Path::new(""));
            r.notes
                .push("symbolic link, not followed (--follow-links follows links)".into());
            return Planned::Skipped(r);
        }
        let rel = input.strip_prefix(in_dir).unwrap_or(&input).to_path_buf();
        if !entry.file_type().is_file() || job.shard.is_some_and(|s| !in_shard(&rel, s)) {
            return Planned::Passed;
        }
        // Opened once here, to recognise it and to tell a stack or a CMYK file; the decode
        // opens it again when its turn comes (the batch holds no file open meanwhile).
        let opened = formats::open(&input, 0).ok();
        let Some((opened, in_format)) = opened.and_then(|i| i.sniffed.map(|f| (i, f))) else {
            if job.verbose {
                gblur::command::report::diagnostic(&format!(
                    "gblur: {}: not an image, skipped",
                    input.display()
                ));
            }
            let mut r = record(Outcome::SkippedNotImage, Path::new(""));
            if entry.metadata().is_ok_and(|m| m.len() == 0) {
                // Most likely a copy that failed: worth naming even without -v.
                r.notes.push("empty file, skipped".into());
            }
            return Planned::Skipped(r);
        };
        let (output, format) = output_of(job, out_dir, &rel, in_format);
        let refused = unwritable(&opened, (in_format, &output, format)).or_else(|| {
            misplaced(job, self.dirs, &output).map(|w| gblur::command::report::one_line(&w))
        });
        if let Some(error) = refused {
            let mut r = record(Outcome::Failed, &output);
            r.error = Some(error);
            return Planned::Skipped(r);
        }
        let whole = whole_file(&opened, format, job);
        drop(opened);
        self.unless_done_before(Task {
            input,
            output,
            format,
            replaces_stale: false,
            whole,
        })
    }

    /// `task`, unless its output stands from an earlier run: then the record of its skipping,
    /// or the task marked as replacing a stale output.
    fn unless_done_before(&self, mut task: Task) -> Planned {
        let (job, journal) = (self.job, self.journal);
        let (input, output) = (&task.input, &task.output);
        let record = |outcome| FileRecord::new(input, outcome, output);
        if journal.is_some_and(|j| j.finished(input)) {
            let mut r = record(Outcome::SkippedExisting);
            r.notes.push(format!(
                "already blurred in place by an earlier run ({} says so); delete the journal to blur it again",
                journal.map_or_else(String::new, |j| j.path().display().to_string())
            ));
            return Planned::Skipped(r);
        }
        if !output.exists() || job.overwrite || job.in_place {
            return Planned::Task(task);
        }
        match self.made.map_or(Made::Unknown, |m| m.made(output, input)) {
            Made::Other if !job.skip_existing => {
                task.replaces_stale = true;
                Planned::Task(task)
            }
            Made::Other => Planned::Skipped(record(Outcome::SkippedStale)),
            Made::Same | Made::Unknown => Planned::Skipped(record(Outcome::SkippedExisting)),
        }
    }
}

/// Why `input` (in `in_format`) cannot be written to `output` in `format`, said before any
/// work so that --dry-run says it too: a HEIF file libheif cannot read, or a format gblur
/// does not write.
fn unwritable(
    input: &Input,
    (in_format, output, format): (ImageFormat, &Path, ImageFormat),
) -> Option<String> {
    if in_format == formats::HEIF {
        if let Err(e) = formats::heif_readable(&input.name) {
            return Some(e.to_string());
        }
    }
    // HEIF is written as AVIF, or as HEIC into a file named for it where libheif has an
    // HEVC encoder: a HEIC input whose output is named otherwise is not written as itself.
    let extension = output
        .extension()
        .map(|e| e.to_string_lossy().into_owned())
        .unwrap_or_default();
    let named_avif = extension.eq_ignore_ascii_case("avif");
    let writes_heic =
        formats::is_heic_name(&extension) && formats::heif_encoder(formats::Coding::Hevc).is_ok();
    let heic =
        format == formats::HEIF && !named_avif && !writes_heic && input.own_format().is_none();
    if formats::can_write(format) && !heic {
        return None;
    }
    let name = if heic {
        "HEIC".into()
    } else {
        formats::format_name(format)
    };
    Some(format!(
        "{}: gblur does not write {name}, the input's format: give --format jpg (or avif, png, tif, ...)",
        input.name.display(),
    ))
}

/// Where an encoder option for one format was given (`--quality` and `--subsampling` for
/// JPEG, `--png-compression` for PNG, `--tiff-compression` for TIFF): an error if no output of
/// the batch is in that format (it would be ignored), else a note for each that applies to
/// some outputs only.
pub fn encoder_options_apply(job: &BatchJob, tasks: &[Task]) -> anyhow::Result<Vec<String>> {
    let mut notes = Vec::new();
    if tasks.is_empty() {
        return Ok(notes);
    }
    // `same` refuses the outputs it cannot serve; `lossless` applies to the WebP ones alone.
    let lossless = job.blur.encode.jpeg.quality == formats::Quality::Lossless;
    if let Some(why) = tasks
        .iter()
        .filter(|_| !lossless)
        .find_map(|t| job.blur.encode.quality_refused(t.format))
    {
        anyhow::bail!(why);
    }
    for (flag, formats, name) in job.blur.encode.given() {
        let matching = tasks.iter().filter(|t| formats.contains(&t.format)).count();
        anyhow::ensure!(
            matching > 0,
            "{flag} applies to {name} output, and none of the {} outputs to write is a {name}",
            tasks.len()
        );
        if matching < tasks.len() {
            notes.push(format!(
                "{flag} applied to the {matching} {name} outputs; the other {} are not {name}",
                tasks.len() - matching
            ));
        }
    }
    Ok(notes)
}

/// Refuses IN_DIR = OUT_DIR (both canonical, or OUT_DIR as it would be) without `--in-place`.
pub fn check_folders(job: &BatchJob, (in_dir, out_dir): (&Path, &Path)) -> anyhow::Result<()> {
    anyhow::ensure!(
        in_dir != out_dir || job.in_place,
        "{}: IN_DIR and OUT_DIR are the same folder; pass --in-place to replace the originals",
        in_dir.display()
    );
    Ok(())
}

/// Why `output` is not written, where it would leave OUT_DIR (a `--name` template expanded
/// with a name such as `...png`, whose stem is `..`) or land inside IN_DIR, among the inputs
/// (IN_DIR inside OUT_DIR, without `--in-place`).
fn misplaced(job: &BatchJob, (in_dir, out_dir): (&Path, &Path), output: &Path) -> Option<String> {
    let rel = output.strip_prefix(out_dir).ok();
    let climbs = rel.is_none_or(|r| {
        r.components().any(|c| {
            use std::path::Component::{CurDir, Normal};
            !matches!(c, Normal(_) | CurDir)
        })
    });
    if climbs {
        return Some(format!(
            "{}: not written: its name leaves OUT_DIR (a '..' or an absolute path)",
            output.display()
        ));
    }
    let among_inputs = !job.in_place
        && in_dir != out_dir
        && in_dir.starts_with(out_dir)
        && output.starts_with(in_dir);
    among_inputs.then(|| {
        format!(
            "{}: not written: it lies inside IN_DIR {}, among the inputs",
            output.display(),
            in_dir.display()
        )
    })
}

/// Where `rel` (relative to IN_DIR, decoded as `in_format`) is written, and in which format:
/// `--format` where given; else, under a `--name` template, the format its extension names
/// (if gblur writes it); else the input's own.
pub fn output_of(
    job: &BatchJob,
    out_dir: &Path,
    rel: &Path,
    in_format: ImageFormat,
) -> (PathBuf, ImageFormat) {
    let Some(template) = &job.name else {
        let mut output = out_dir.join(rel);
        let format = job.format.unwrap_or(in_format);
        if job.format.is_some() {
            output.set_extension(format.extensions_str()[0]);
        }
        return (output, format);
    };
    // {ext}: the format's own extension where --format changes it, else the input's as it is.
    let ext = match job.format {
        Some(f) => f.extensions_str()[0].to_string(),
        None => rel
            .extension()
            .map_or_else(String::new, |e| e.to_string_lossy().into_owned()),
    };
    let sigma = naming::sigma_text(job.blur.filter.x.sigma(), job.blur.filter.y.sigma());
    let output = out_dir.join(template.expand(rel, &ext, &sigma));
    let heic = output
        .extension()
        .is_some_and(|e| formats::is_heic_name(&e.to_string_lossy()));
    let named = ImageFormat::from_path(&output)
        .ok()
        .or(heic.then_some(formats::HEIF))
        .filter(|f| formats::can_write(*f));
    (output, job.format.or(named).unwrap_or(in_format))
}

/// Refuses a batch in which two inputs would write the same output (`--format` or `--name`
/// can make them), before any file is written. It looks at every image under IN_DIR, not only
/// this shard's, since the shards write into one OUT_DIR.
pub fn check_names(job: &BatchJob, in_dir: &Path, out_dir: &Path) -> Result<(), String> {
    let walker = walk(job, in_dir, out_dir)
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file() && (job.follow_links || !e.path_is_symlink()));
    let mut outputs = Vec::new();
    for entry in walker {
        let input = entry.path();
        let Some(in_format) = formats::sniff(input).ok().flatten() else {
            continue;
        };
        let rel = input.strip_prefix(in_dir).unwrap_or(input);
        outputs.push((
            input.to_path_buf(),
            output_of(job, out_dir, rel, in_format).0,
        ));
    }
    match naming::first_collision(&outputs) {
        Some((a, b, output)) => Err(format!(
            "{} and {} would both be written to {}: change --name (add {{ext}} or {{dir}}) or \
             --format",
            a.display(),
            b.display(),
            output.display()
        )),
        None => Ok(()),
    }
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
pub fn check_inside(out_dir: &Path, output: &Path) -> Result<(), ImageIoError> {
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

/// Creates the folders `output` lies in.
pub fn create_parent(output: &Path) -> Result<(), ImageIoError> {
    match output.parent() {
        Some(parent) => std::fs::create_dir_all(parent).map_err(|cause| ImageIoError::Write {
            path: output.to_path_buf(),
            cause,
        }),
        None => Ok(()),
    }
}
