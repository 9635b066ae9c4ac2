//! The `gblur` command: parse the command line, run the command it names, print any error as
//! one line naming the file and the cause, and exit 0 (done), 1 (the blur or some file failed),
//! 2 (usage or set-up error) or 130 (interrupted).

use super::{Cli, Command};
use clap::Parser;
use gblur::job::JobError;
use std::process::ExitCode;

/// 0: done; 1: the blur failed (bad input, device failure); 2: usage or set-up error.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let args: Vec<String> = std::env::args().skip(1).collect();
            if let Some(hint) = sigma_hint(e.kind(), &args) {
                gblur::report::diagnostic(&format!("gblur: {hint}"));
                return ExitCode::from(2);
            }
            e.exit()
        }
    };
    if let Some(n) = cli.threads {
        // The first use of the pool would otherwise size it by the cores.
        let built = rayon::ThreadPoolBuilder::new()
            .num_threads(n.into())
            .build_global();
        if let Err(e) = built {
            return fail(&anyhow::anyhow!("--threads {n}: {e}"), cli.verbose, 2);
        }
    }
    let result = match &cli.command {
        Some(Command::Devices { json }) => crate::devices::print(*json).map_err(JobError::Setup),
        Some(Command::Calibrate { device, json }) => {
            crate::devices::calibrate(device, *json).map_err(JobError::Setup)
        }
        Some(Command::Bench(b)) => gblur_bench::run(&b.to_job(cli.quiet)).map_err(JobError::Failed),
        Some(Command::Batch(b)) => {
            let json = b.settings.json;
            let job = b.to_job(cli.verbose, cli.quiet);
            match job.map_err(|e| JobError::Setup(anyhow::anyhow!(e))) {
                Ok(job) if job.dry_run => crate::batch::dry_run::plan(&job)
                    .and_then(|plan| crate::batch::dry_run::emit(&plan, json)),
                Ok(job) => crate::batch::execute(&job)
                    .and_then(|summary| crate::batch::summary::emit(&summary, json, cli.quiet)),
                Err(e) => Err(e),
            }
        }
        Some(Command::Formats { json }) => {
            let rows = gblur::codec::formats::formats();
            match json {
                true => print(
                    (serde_json::to_string_pretty(&rows).expect("plain data") + "\n").as_bytes(),
                ),
                false => print(gblur::codec::formats::table(&rows).as_bytes()),
            }
        }
        Some(Command::Completions { shell }) => print(&super::completions(*shell)),
        Some(Command::Man {
            page: _,
            dir: Some(dir),
        }) => super::man_pages(dir).map_err(|e| JobError::Setup(anyhow::anyhow!(e))),
        Some(Command::Man { page, dir: None }) => super::man(page.as_deref())
            .map_err(|e| JobError::Setup(anyhow::anyhow!(e)))
            .and_then(|text| print(&text)),
        Some(Command::BatchReport { dir, json }) => {
            crate::batch::ledger::report(dir, *json, cli.quiet)
        }
        Some(Command::Sharpen(s)) => {
            remove_temp_files_on_ctrl_c();
            let job = s.to_job().map_err(|e| JobError::Setup(anyhow::anyhow!(e)));
            job.and_then(|job| one_image(&job, s.blur.settings.json, cli.quiet))
        }
        None => {
            remove_temp_files_on_ctrl_c();
            let job = cli
                .blur
                .to_job()
                .map_err(|e| JobError::Setup(anyhow::anyhow!(e)));
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
fn one_image(job: &gblur::job::BlurJob, json: bool, quiet: bool) -> Result<(), JobError> {
    let report = gblur::job::run(&job.clone().with_progress(!quiet))?;
    gblur::report::emit(&report, json, quiet)
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
        false => gblur::report::one_line(&format!("gblur: {e:#}")),
    };
    gblur::report::diagnostic(&text);
    ExitCode::from(code)
}

/// A usage error caused by a bare number where vips takes its sigma (`gblur in.jpg out.jpg 5`,
/// `gblur batch in out 5`): the message names the number and the flag. None for any other
/// error, which clap explains.
fn sigma_hint(kind: clap::error::ErrorKind, args: &[String]) -> Option<String> {
    use clap::error::ErrorKind;
    if matches!(kind, ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        return None;
    }
    let top = <Cli as clap::CommandFactory>::command();
    // A subcommand's flags are its own (`gblur batch IN OUT ...`).
    let sub = args
        .iter()
        .find(|a| !a.starts_with('-'))
        .and_then(|first| top.find_subcommand(first).cloned());
    let (command, args, prefix) = match &sub {
        Some(s) => {
            let at = args
                .iter()
                .position(|a| a == s.get_name())
                .expect("found above");
            (
                s.clone(),
                &args[at + 1..],
                format!("gblur {} ", s.get_name()),
            )
        }
        None => (top, args, "gblur ".to_string()),
    };
    // Whether a flag reads the next argument as its value (`--quality 5`), from the parser's
    // own definition, so a flag like `-q` does not swallow the INPUT that follows it.
    let takes_value = |flag: &str| {
        let name = flag.trim_start_matches('-');
        command.get_arguments().any(|a| {
            let named = match flag.starts_with("--") {
                true => a.get_long() == Some(name),
                false => name
                    .chars()
                    .last()
                    .is_some_and(|c| a.get_short() == Some(c)),
            };
            named && a.get_action().takes_values()
        })
    };
    let mut positional = Vec::new();
    let mut value_next = false;
    for a in args {
        let flag = a.starts_with('-') && a != "-" && a.parse::<f64>().is_err();
        if flag {
            value_next = !a.contains('=') && takes_value(a);
            continue;
        }
        if !value_next {
            positional.push(a.as_str());
        }
        value_next = false;
    }
    match positional[..] {
        [input, output, number, ..] if number.parse::<f64>().is_ok_and(|v| v.is_finite() && v >= 0.0) => Some(format!(
            "'{number}' after OUTPUT: the sigma is a flag, as in {prefix}{input} {output} --sigma {number}"
        )),
        _ => None,
    }
}

/// Ctrl-C during one image's job: the temporary file being written, if any, is removed before
/// the process exits with status 130 (`gblur::interrupt`). Installed once per process; a
/// second call changes nothing.
fn remove_temp_files_on_ctrl_c() {
    let _ = ctrlc::set_handler(|| gblur::interrupt::remove_temp_files_and_exit());
}

#[cfg(test)]
mod tests {
    use super::sigma_hint;
    use clap::error::ErrorKind;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn a_bare_number_after_output_is_taken_for_a_sigma() {
        let hint = sigma_hint(ErrorKind::ArgumentConflict, &args("in.jpg out.jpg 5")).unwrap();
        assert!(hint.contains("--sigma 5"), "{hint}");
        let hint = sigma_hint(
            ErrorKind::UnknownArgument,
            &args("-q in.jpg out.jpg 2.5 --linear"),
        );
        assert!(hint.unwrap().contains("--sigma 2.5"));
        // A number that is an option's value, or no number at all: clap's own message.
        assert!(sigma_hint(
            ErrorKind::UnknownArgument,
            &args("in.jpg out.jpg --quality 5 --x")
        )
        .is_none());
        assert!(sigma_hint(ErrorKind::UnknownArgument, &args("in.jpg out.jpg extra")).is_none());
        // After a subcommand, by its own flags.
        let hint = sigma_hint(ErrorKind::UnknownArgument, &args("batch photos out 4 -q")).unwrap();
        assert!(hint.contains("gblur batch photos out --sigma 4"), "{hint}");
        let hint = sigma_hint(
            ErrorKind::UnknownArgument,
            &args("sharpen --amount 2 a.jpg b.jpg 1.5"),
        )
        .unwrap();
        assert!(
            hint.contains("gblur sharpen a.jpg b.jpg --sigma 1.5"),
            "{hint}"
        );
    }
}
