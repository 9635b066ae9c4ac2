//! The `gblur` command: parse the command line, run the command it names, print any error as
//! one line naming the file and the cause, and exit 0 (done), 1 (the blur or some file failed),
//! 2 (usage or set-up error) or 130 (interrupted).

use super::{Cli, Command};
use clap::Parser;
use gblur::command::job::JobError;
use std::process::ExitCode;

/// 0: done; 1: the blur failed (bad input, device failure); 2: usage or set-up error.
pub fn main() -> ExitCode {
    let argv = global_flags_after_subcommand(std::env::args().collect());
    let cli = match Cli::try_parse_from(&argv) {
        Ok(cli) => cli,
        Err(e) => {
            let args: Vec<String> = argv[1..].to_vec();
            if let Some(hint) = sigma_hint(e.kind(), &args) {
                gblur::command::report::diagnostic(&format!("gblur: {hint}"));
                return ExitCode::from(2);
            }
            e.exit()
        }
    };
    match set_threads(&cli).and_then(|()| run(&cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e, cli.verbose),
    }
}

/// Sizes the thread pool: `--threads`, else `RAYON_NUM_THREADS`, each checked against the
/// cores (`pool_threads`).
fn set_threads(cli: &Cli) -> Result<(), JobError> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if let Err(e) = pool_threads(cli.threads, |name| std::env::var(name).ok(), cores) {
        return Err(JobError::Setup(anyhow::anyhow!(e)));
    }
    if let Some(n) = cli.threads {
        // The first use of the pool would otherwise size it by the cores.
        let built = rayon::ThreadPoolBuilder::new()
            .num_threads(n.into())
            .build_global();
        if let Err(e) = built {
            return Err(JobError::Setup(anyhow::anyhow!("--threads {n}: {e}")));
        }
    }
    Ok(())
}

/// Runs the command `cli` names.
fn run(cli: &Cli) -> Result<(), JobError> {
    match &cli.command {
        Some(Command::Devices { json }) => crate::devices::print(*json).map_err(JobError::Setup),
        Some(Command::Calibrate { device, json }) => {
            crate::devices::calibrate(device, *json).map_err(JobError::Setup)
        }
        #[cfg(feature = "bench")]
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
            let rows = gblur::command::formats::formats();
            match json {
                true => print(
                    (serde_json::to_string_pretty(&rows).expect("plain data") + "\n").as_bytes(),
                ),
                false => print(gblur::command::formats::table(&rows).as_bytes()),
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
        Some(Command::Gradient(g)) => {
            remove_temp_files_on_ctrl_c();
            g.run(cli.quiet)
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
    }
}

/// The most CPU threads for each core gblur may use. Its CPU work (decoding, encoding, the
/// blur) runs no faster on more threads than cores; a few per core cover threads that wait on
/// I/O or a device, and a machine that shows a job fewer cores than it runs on. Far more only
/// cost time and memory: on 2 cores a 600×400 PNG's blur takes 0.03 s on 64 threads, 1.8 s on
/// 1024, and had not finished after two minutes on 65535. The bound follows the cores rather
/// than being fixed: a fixed one high enough for a large machine lets that slowdown through on
/// a small one.
const THREADS_PER_CORE: usize = 16;

/// The number of threads the global pool gets (None: one per core): `--threads`, else rayon's
/// own variables as rayon reads them (RAYON_NUM_THREADS, 0 for one per core; else the older
/// RAYON_RS_NUM_CPUS; a value that is not a number is skipped). An error, naming the option
/// or variable, where that is more than `THREADS_PER_CORE` for each of `cores`.
fn pool_threads(
    flag: Option<u16>,
    env: impl Fn(&str) -> Option<String>,
    cores: usize,
) -> Result<Option<usize>, String> {
    let read = |name: &str| env(name).and_then(|v| v.parse::<usize>().ok());
    let (n, asked) = match flag {
        Some(n) => (usize::from(n), format!("--threads {n}")),
        None => match read("RAYON_NUM_THREADS") {
            Some(0) => return Ok(None),
            Some(n) => (n, format!("RAYON_NUM_THREADS={n}")),
            None => match read("RAYON_RS_NUM_CPUS") {
                Some(n @ 1..) => (n, format!("RAYON_RS_NUM_CPUS={n}")),
                _ => return Ok(None),
            },
        },
    };
    let cores = cores.max(1);
    let most = THREADS_PER_CORE * cores;
    if n > most {
        let each = match cores {
            1 => "this machine's one core".to_string(),
            _ => format!("each of this machine's {cores} cores"),
        };
        return Err(format!(
            "{asked}: at most {most} threads ({THREADS_PER_CORE} for {each}); more only slow a job down"
        ));
    }
    Ok(Some(n))
}

/// Runs the main command's `job` (a blur, or `gblur sharpen`) and prints its report.
fn one_image(job: &gblur::command::job::BlurJob, json: bool, quiet: bool) -> Result<(), JobError> {
    let report = gblur::command::job::run(&job.clone().with_progress(!quiet))?;
    gblur::command::report::emit(&report, json, quiet)
        .map_err(|e| JobError::Failed(anyhow::anyhow!("cannot write the report: {e}")))
}

/// Writes `text` to stdout; a closed stdout (`| head`) is not an error.
fn print(text: &[u8]) -> Result<(), JobError> {
    use std::io::Write;
    let _ = std::io::stdout().lock().write_all(text);
    Ok(())
}

/// Prints the error (on one line, unless verbose) where stderr takes it, and the exit code.
fn fail(e: &JobError, verbose: bool) -> ExitCode {
    let text = match e {
        JobError::Setup(e) | JobError::Failed(e) if verbose => format!("gblur: {e:?}"),
        e => gblur::command::report::one_line(&format!("gblur: {e}")),
    };
    gblur::command::report::diagnostic(&text);
    ExitCode::from(e.exit_code())
}

/// `argv` with the global flags written before a subcommand's name (`gblur -q batch IN OUT`,
/// `gblur --threads 4 devices`) moved after it, where the parser takes them: the main command's
/// own arguments may not come with a subcommand, and a flag before its name would count as
/// one. Only `-q`, `-v` (and their long forms) and `--threads N` move, and only where nothing
/// else comes before the name; every other command line is left as it is.
fn global_flags_after_subcommand(argv: Vec<String>) -> Vec<String> {
    let command = <Cli as clap::CommandFactory>::command();
    let mut i = 1;
    while let Some(arg) = argv.get(i) {
        match arg.as_str() {
            "-q" | "--quiet" | "-v" | "--verbose" => i += 1,
            "--threads" => i += 2,
            a if a.starts_with("--threads=") => i += 1,
            _ => break,
        }
    }
    let named = argv
        .get(i)
        .is_some_and(|a| command.find_subcommand(a).is_some());
    if i == 1 || i >= argv.len() || !named {
        return argv;
    }
    let mut out = vec![argv[0].clone(), argv[i].clone()];
    out.extend_from_slice(&argv[1..i]);
    out.extend_from_slice(&argv[i + 1..]);
    out
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
    // A flag the command does not know (`--radius 5`) is taken to have its value after it,
    // so that the number is not taken for a sigma: clap's own message names the flag.
    let takes_value = |flag: &str| {
        let name = flag.trim_start_matches('-');
        let named = |a: &clap::Arg| match flag.starts_with("--") {
            true => a.get_long() == Some(name),
            false => name
                .chars()
                .last()
                .is_some_and(|c| a.get_short() == Some(c)),
        };
        match command.get_arguments().find(|a| named(a)) {
            Some(a) => a.get_action().takes_values(),
            None => true,
        }
    };
    match positionals(args, takes_value)[..] {
        [input, output, number, ..] if number.parse::<f64>().is_ok_and(|v| v.is_finite() && v >= 0.0) => Some(format!(
            "'{number}' after OUTPUT: the sigma is a flag, as in {prefix}{input} {output} --sigma {number}"
        )),
        _ => None,
    }
}

/// The arguments that are neither flags nor a flag's value (`takes_value`: whether a flag
/// reads the next argument as its value).
fn positionals(args: &[String], takes_value: impl Fn(&str) -> bool) -> Vec<&str> {
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
    positional
}

/// Ctrl-C during one image's job: the temporary file being written, if any, is removed before
/// the process exits with status 130 (`gblur::command::process`). Installed once per process; a
/// second call changes nothing.
fn remove_temp_files_on_ctrl_c() {
    let _ = ctrlc::set_handler(|| gblur::command::process::remove_temp_files_and_exit());
}

#[cfg(test)]
mod tests {
    use super::{global_flags_after_subcommand, pool_threads, sigma_hint};
    use clap::error::ErrorKind;

    /// No variable set.
    fn none(_: &str) -> Option<String> {
        None
    }

    /// RAYON_NUM_THREADS set to `value`.
    fn rayon_var(value: &'static str) -> impl Fn(&str) -> Option<String> {
        move |name| (name == "RAYON_NUM_THREADS").then(|| value.to_string())
    }

    /// The older RAYON_RS_NUM_CPUS set to 1000.
    fn older_var(name: &str) -> Option<String> {
        (name == "RAYON_RS_NUM_CPUS").then(|| "1000".to_string())
    }

    fn argv(line: &str) -> Vec<String> {
        line.split(' ').map(String::from).collect()
    }

    #[test]
    fn global_flags_before_a_subcommand_go_after_its_name() {
        let moved = |line: &str| global_flags_after_subcommand(argv(line)).join(" ");
        assert_eq!(moved("gblur -q batch a b"), "gblur batch -q a b");
        assert_eq!(
            moved("gblur --threads 4 -v gradient a.png b.tif -s 2"),
            "gblur gradient --threads 4 -v a.png b.tif -s 2"
        );
        assert_eq!(
            moved("gblur --threads=4 devices"),
            "gblur devices --threads=4"
        );
        // Anything else before the name, or no subcommand: as it was.
        assert_eq!(
            moved("gblur -s 2 batch out.png"),
            "gblur -s 2 batch out.png"
        );
        assert_eq!(
            moved("gblur -q in.png out.png -s 2"),
            "gblur -q in.png out.png -s 2"
        );
        assert_eq!(moved("gblur batch -q a b"), "gblur batch -q a b");
        assert_eq!(moved("gblur -q"), "gblur -q");
    }

    #[test]
    fn thread_counts_over_sixteen_per_core_are_refused_naming_their_source() {
        assert_eq!(pool_threads(Some(32), none, 2), Ok(Some(32)));
        assert_eq!(pool_threads(None, none, 2), Ok(None));
        let err = pool_threads(Some(65535), none, 2).unwrap_err();
        assert!(
            err.starts_with("--threads 65535: at most 32 threads"),
            "{err}"
        );
        assert!(pool_threads(Some(17), none, 1)
            .unwrap_err()
            .contains("one core"));
        let err = pool_threads(None, rayon_var("65535"), 4).unwrap_err();
        assert!(
            err.starts_with("RAYON_NUM_THREADS=65535: at most 64 threads"),
            "{err}"
        );
        assert_eq!(pool_threads(None, rayon_var("8"), 4), Ok(Some(8)));
        assert_eq!(pool_threads(None, rayon_var("0"), 4), Ok(None));
        // --threads wins over the variable, as rayon takes it.
        assert_eq!(pool_threads(Some(2), rayon_var("65535"), 4), Ok(Some(2)));
        let err = pool_threads(None, older_var, 4).unwrap_err();
        assert!(err.starts_with("RAYON_RS_NUM_CPUS=1000"), "{err}");
    }

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
        // The value of a flag the command does not know, with or without a sigma given.
        for line in [
            "in.jpg out.jpg --radius 5",
            "in.jpg out.jpg --sigma 2 --radius 5",
        ] {
            assert!(
                sigma_hint(ErrorKind::UnknownArgument, &args(line)).is_none(),
                "{line}"
            );
        }
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
