//! Files a batch hands to the main command's whole-file jobs, one at a time on the host's
//! cores, after the other images: a TIFF of several pages written as a TIFF keeps every page,
//! blurred as the main command blurs a stack (`job::blur_stack`: each page as the image it
//! is); a CMYK JPEG or TIFF written as a JPEG or TIFF keeps its inks (`job::blur_inks`). What
//! an output may replace follows the batch's rules: an in-place batch's journal,
//! `--overwrite`, stale outputs.

use super::journal::Journal;
use super::made_with::SettingsLog;
use super::plan::{self, Task, WholeFile};
use super::summary::{FileRecord, Outcome};
use super::BatchJob;
use gblur::command::devices::DeviceChoice;
use gblur::command::devices::DeviceSet;
use gblur::command::formats::{self, ImageIoError};
use gblur::command::job::JobError;
use gblur::command::report::{self, Stage};

/// What the stacks share with the rest of the batch.
pub struct Stacks<'a> {
    pub job: &'a BatchJob,
    pub out_dir: &'a std::path::Path,
    pub journal: Option<&'a Journal>,
    pub made: Option<&'a SettingsLog>,
    /// The host's device name, for the records.
    pub rust_name: &'a str,
}

impl Stacks<'_> {
    /// Blurs every stack of `tasks` in turn, until the batch is interrupted, advancing `bar`.
    pub fn blur_all(
        &self,
        tasks: &[Task],
        bar: &indicatif::ProgressBar,
        interrupted: &std::sync::atomic::AtomicBool,
    ) -> Vec<FileRecord> {
        let going = || !interrupted.load(std::sync::atomic::Ordering::SeqCst);
        let mut records = Vec::new();
        for task in tasks.iter().take_while(|_| going()) {
            bar.set_message(format!("{}", task.input.display()));
            records.push(self.blur(task));
            bar.inc(1);
        }
        records
    }

    /// The main command's job for `task`, on the host's cores, quietly.
    fn job_of(&self, task: &Task) -> gblur::command::job::BlurJob {
        let mut job = self.job.blur.clone();
        job.input = task.input.clone();
        job.output = task.output.clone();
        job.output_format = Some(task.format);
        job.device = DeviceSet::One(DeviceChoice::Rust);
        job.progress = false;
        job.explain = false;
        job
    }

    /// `record` of `task`'s output, written as `report` says, with its settings logged.
    fn written(
        &self,
        mut record: FileRecord,
        report: gblur::command::report::Report,
        task: &Task,
    ) -> FileRecord {
        record.megapixels = report.megapixels();
        record.decode_ms = report::stage_ms(&report.passes, Stage::Decode);
        record.blur_ms = report::stage_ms(&report.passes, Stage::Blur);
        record.encode_ms = report::stage_ms(&report.passes, Stage::Encode);
        record.notes = report.notes;
        let logged = SettingsLog::note_written(self.made, &task.output, &task.input);
        record.notes.extend(logged);
        record
    }

    /// Blurs the stack or the CMYK file `task` names and says how it went.
    pub fn blur(&self, task: &Task) -> FileRecord {
        let output = &task.output;
        let job = self.job_of(task);
        let record_in_journal = |meta: &std::fs::Metadata| match self.journal {
            Some(journal) => journal.record(output, meta),
            None => Ok(()),
        };
        let replace = match (self.journal.is_some(), self.job.overwrite) {
            (true, _) => formats::Replace::Recorded(&record_in_journal),
            (false, true) => formats::Replace::Any,
            (false, false) if task.replaces_stale => formats::Replace::Any,
            (false, false) => formats::Replace::Never,
        };
        // Told when it was planned: a file that stops being a stack while it runs is told as
        // one that did.
        let stack = task.whole == Some(WholeFile::Stack);
        let ran = plan::check_inside(self.out_dir, output)
            .and_then(|()| plan::create_parent(output))
            .map_err(|e| JobError::Failed(e.into()))
            .and_then(|()| match stack {
                true => gblur::command::job::blur_stack(&job, replace),
                false => gblur::command::job::blur_inks(&job, replace),
            });
        let mut record = FileRecord::new(&task.input, Outcome::Blurred, output);
        record.replaced_stale = task.replaces_stale;
        record.device = Some(self.rust_name.to_string());
        let error = match ran {
            Ok(Some(report)) => return self.written(record, report, task),
            Ok(None) if stack => anyhow::anyhow!(
                "{}: no longer a TIFF of several pages (it changed while the batch ran)",
                task.input.display()
            ),
            // The usual decode recovers what it can of a damaged file, in RGB; a batch keeps
            // the inks or nothing.
            Ok(None) => anyhow::anyhow!(
                "{}: its CMYK inks could not be read whole (a damaged file?); `gblur IN OUT` recovers what it can, in RGB",
                task.input.display()
            ),
            Err(JobError::Setup(e) | JobError::Failed(e)) => e,
        };
        match error.downcast_ref::<ImageIoError>() {
            // Another writer's file appeared at the output meanwhile: it stays.
            Some(e @ ImageIoError::Appeared { .. }) => {
                record.outcome = Outcome::SkippedExisting;
                record.notes.push(report::one_line(&e.to_string()));
            }
            _ => {
                record.outcome = Outcome::Failed;
                record.error = Some(report::one_line(&format!("{error:#}")));
            }
        }
        record
    }
}
