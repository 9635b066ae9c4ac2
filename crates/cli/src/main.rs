//! The `gblur` command: everything it does lives in the library's command-line layer
//! (`src/cli/`), behind the `cli` feature.

/// An allocation that fails is a one-line error, not an abort.
#[global_allocator]
static ALLOCATOR: gblur::command_line::ReportingAllocator = gblur::command_line::ReportingAllocator;

fn main() -> std::process::ExitCode {
    gblur::command_line::main()
}
