//! The `gblur` command: its code is this package's library target (`src/lib.rs`), over the
//! gblur library; `gblur bench` runs the tutorial suite of the `gblur-bench` crate.

/// An allocation that fails is a one-line error, not an abort.
#[global_allocator]
static ALLOCATOR: gblur::command::process::ReportingAllocator =
    gblur::command::process::ReportingAllocator;

fn main() -> std::process::ExitCode {
    // Freed blocks leave the process, so that `--max-memory` counts what is alive.
    gblur::command::process::return_freed_blocks();
    gblur_cli::cli::main()
}
