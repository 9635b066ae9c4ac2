//! Arbitrary argument vectors → the clap parser → the checked job options, exactly as
//! `main` builds them (nothing is run). The input is the argument vector with NUL bytes
//! between arguments, so seeds are readable command lines. Must never panic: every bad vector
//! is a clap error, and every accepted one converts.
#![no_main]

use clap::Parser;
use gblur_cli::cli::{Cli, Command};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let args = data
        .split(|&b| b == 0)
        .map(|a| String::from_utf8_lossy(a).into_owned());
    let argv = std::iter::once("gblur".to_string()).chain(args);
    match Cli::try_parse_from(argv) {
        Ok(cli) => match &cli.command {
            Some(Command::Bench(b)) => {
                let _ = b.to_job(cli.quiet);
            }
            // A job refused here (its filter included) is a usage error (exit 2), as in main.
            Some(Command::Batch(b)) => {
                let _ = b.to_job(cli.verbose, cli.quiet);
            }
            Some(_) => {}
            None => {
                let _ = cli.blur.to_job();
            }
        },
        Err(e) => {
            let _ = e.render().to_string();
        }
    }
});
