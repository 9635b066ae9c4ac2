//! What the command says of itself beyond `--help`: shell completions and manual pages, each
//! generated from the same clap command that parses the arguments, so none falls behind them.

use super::Cli;
use std::path::Path;

/// The completion script for `shell`, generated from the same clap command that parses the
/// arguments, so it never falls behind them. Made in memory: clap_complete panics on a write
/// error, and a closed stdout (`| head`) is no error.
pub fn completions(shell: clap_complete::Shell) -> Vec<u8> {
    let mut command = <Cli as clap::CommandFactory>::command();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, "gblur", &mut script);
    script
}

/// The command every manual page is made from: the parser itself, built, so that each
/// subcommand has its page's name (`gblur-batch`).
fn man_command() -> clap::Command {
    let mut command = <Cli as clap::CommandFactory>::command().disable_help_subcommand(true);
    command.build();
    command
}

/// A manual page (roff), generated from the same clap command as `--help`: gblur's own, or
/// the subcommand `page` names (`batch`, `bench-blur`).
pub fn man(page: Option<&str>) -> Result<Vec<u8>, String> {
    let mut command = man_command();
    for word in page.into_iter().flat_map(|p| p.split('-')) {
        let names: Vec<String> = command
            .get_subcommands()
            .map(|s| s.get_name().to_string())
            .collect();
        command = command.find_subcommand(word).cloned().ok_or_else(|| {
            format!(
                "'{}' names no manual page: the pages are gblur and its subcommands ({})",
                page.unwrap_or_default(),
                names.join(", ")
            )
        })?;
    }
    let mut out = Vec::new();
    clap_mangen::Man::new(command)
        .render(&mut out)
        .map_err(|e| e.to_string())?;
    Ok(out)
}

/// Writes every manual page into `dir`.
pub fn man_pages(dir: &Path) -> Result<(), String> {
    clap_mangen::generate_to(man_command(), dir)
        .map_err(|e| format!("{}: cannot write the manual pages: {e}", dir.display()))
}
