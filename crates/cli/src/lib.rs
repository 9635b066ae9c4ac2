//! The `gblur` command's code, as a library target for its binary (`src/main.rs`) and for the
//! fuzz target that feeds the argument parser (`fuzz/fuzz_targets/cli_args.rs`): the command
//! line (`cli`: its arguments, one image's job and the other subcommands), `gblur batch`
//! (`batch`) and the device list (`devices`). Not an API: what a program calls is the `gblur`
//! library's.

pub mod batch;
pub mod cli;
pub mod devices;
