//! Arbitrary argument vectors → the clap parser → the checked job options, exactly as
//! `main` builds them (nothing is run). The input is the argument vector with NUL bytes
//! between arguments, so seeds are readable command lines. Must never panic: every bad vector
//! is a clap error, and every accepted one converts.
#![no_main]

use clap::Parser;
use gblur::cli::{BenchCommand, Cli, Command};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let args = data
        .split(|&b| b == 0)
        .map(|a| String::from_utf8_lossy(a).into_owned());
    let argv = std::iter::once("gblur".to_string()).chain(args);
    match Cli::try_parse_from(argv) {
        Ok(cli) => match &cli.command {
            Some(Command::Devices { .. }) => {}
            Some(Command::Bench(b)) => {
                match b {
                    BenchCommand::Peak(c) | BenchCommand::Transpose(c) => {
                        let _ = c.to_options(cli.quiet);
                    }
                    BenchCommand::Blur { common, .. } | BenchCommand::Cpu { common, .. } => {
                        let _ = common.to_options(cli.quiet);
                    }
                    BenchCommand::Matmul(m) => {
                        let _ = (m.out.to_options(cli.quiet, None), m.to_options());
                    }
                    BenchCommand::Reduce(r) => {
                        let _ = (r.out.to_options(cli.quiet, None), r.to_options());
                    }
                }
            }
            Some(Command::Batch(b)) => {
                let job = b.to_job(cli.verbose, cli.quiet);
                let _ = gblur::filter::Blur2d::checked(
                    job.blur.method,
                    job.blur.sigma_x,
                    job.blur.sigma_y,
                );
            }
            None => {
                let job = cli.blur.to_job();
                let _ = gblur::filter::Blur2d::checked(job.method, job.sigma_x, job.sigma_y);
            }
        },
        Err(e) => {
            let _ = e.render().to_string();
        }
    }
});
