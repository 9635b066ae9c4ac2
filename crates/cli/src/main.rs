//! The `gblur` command: the command line (`cli`: its arguments, one image's job and the other
//! subcommands), `gblur batch` (`batch`) and the device list (`devices`), over the gblur
//! library; `gblur bench` runs the tutorial suite of the `gblur-bench` crate.

mod batch;
mod cli;
mod devices;

/// An allocation that fails is a one-line error, not an abort.
#[global_allocator]
static ALLOCATOR: gblur::memory::ReportingAllocator = gblur::memory::ReportingAllocator;

fn main() -> std::process::ExitCode {
    cli::main()
}
