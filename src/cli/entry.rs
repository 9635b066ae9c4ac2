//! The `gblur` command: parse the command line, run the command it names, print any error as
//! one line naming the file and the cause, and exit 0 (done), 1 (the blur or some file failed),
//! 2 (usage or set-up error) or 130 (interrupted).

use super::{Cli, Command};
use crate::job::JobError;
use clap::Parser;
use std::process::ExitCode;

/// 0: done; 1: the blur failed (bad input, device failure); 2: usage or set-up error.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Some(Command::Devices { json }) => crate::devices::print(*json).map_err(JobError::Setup),
        Some(Command::Calibrate { device, json }) => {
            crate::devices::calibrate(device, *json).map_err(JobError::Setup)
        }
        Some(Command::Bench(b)) => {
            crate::bench::run(&b.to_job(cli.quiet)).map_err(JobError::Failed)
        }
        Some(Command::Batch(b)) => b
            .to_job(cli.verbose, cli.quiet)
            .map_err(|e| JobError::Setup(anyhow::anyhow!(e)))
            .and_then(|job| crate::batch::execute(&job))
            .and_then(|summary| crate::batch::summary::emit(&summary, b.settings.json, cli.quiet)),
        Some(Command::Completions { shell }) => print(&super::completions(*shell)),
        Some(Command::Man { page: _, dir: Some(dir) }) => {
            super::man_pages(dir).map_err(|e| JobError::Setup(anyhow::anyhow!(e)))
        }
        Some(Command::Man { page, dir: None }) => super::man(page.as_deref())
            .map_err(|e| JobError::Setup(anyhow::anyhow!(e)))
            .and_then(|text| print(&text)),
        Some(Command::BatchReport { dir, json }) => {
            crate::batch::ledger::report(dir, *json, cli.quiet)
        }
        Some(Command::Sharpen(s)) => {
            crate::interrupt::remove_temp_files_on_ctrl_c();
            let job = s.to_job().map_err(|e| JobError::Setup(anyhow::anyhow!(e)));
            job.and_then(|job| one_image(&job, s.blur.settings.json, cli.quiet))
        }
        None => {
            crate::interrupt::remove_temp_files_on_ctrl_c();
            let job = cli.blur.to_job().map_err(|e| JobError::Setup(anyhow::anyhow!(e)));
            job.and_then(|job| one_image(&job, cli.blur.settings.json, cli.quiet))
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(JobError::Setup(e)) => fail(&e, cli.verbose, 2),
        Err(JobError::Failed(e)) => fail(&e, cli.verbose, 1),
    }
}

/// Runs the main command's `job` (a blur, or `gblur sharpen`) and prints its report.
fn one_image(job: &crate::job::BlurJob, json: bool, quiet: bool) -> Result<(), JobError> {
    let report = crate::job::run(&job.clone().with_progress(!quiet))?;
    crate::report::emit(&report, json, quiet)
        .map_err(|e| JobError::Failed(anyhow::anyhow!("cannot write the report: {e}")))
}

/// Writes `text` to stdout; a closed stdout (`| head`) is not an error.
fn print(text: &[u8]) -> Result<(), JobError> {
    use std::io::Write;
    let _ = std::io::stdout().lock().write_all(text);
    Ok(())
}

/// Prints the error (on one line, unless verbose) where stderr takes it, and the exit code.
fn fail(e: &anyhow::Error, verbose: bool, code: u8) -> ExitCode {
    let text = match verbose {
        true => format!("gblur: {e:?}"),
        false => crate::report::one_line(&format!("gblur: {e:#}")),
    };
    crate::report::diagnostic(&text);
    ExitCode::from(code)
}
