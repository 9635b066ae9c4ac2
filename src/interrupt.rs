//! Ctrl-C during the main command: the temporary file being written, if any, is removed
//! before the process exits with status 130, so an interrupted run leaves OUT as it was (the
//! rename that replaces it is atomic) and nothing beside it. `gblur batch` installs its own
//! handler instead, which lets the files in flight finish.

use crate::fault::{self, Fault};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

static WRITING: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// A temporary file being written; it is forgotten when this is dropped (renamed or removed
/// by then).
pub struct Writing(PathBuf);

/// Registers `path` for removal on Ctrl-C until the returned guard is dropped.
///
/// Test hook: with `GBLUR_FAULT=slow-write` the write then waits 5 s, so that the Ctrl-C
/// drill in tests/it/faults.rs can interrupt it while the temporary file exists.
pub fn writing(path: &Path) -> Writing {
    lock().push(path.to_path_buf());
    if fault::is(Fault::SlowWrite) {
        std::thread::sleep(std::time::Duration::from_secs(5));
    }
    Writing(path.to_path_buf())
}

impl Drop for Writing {
    fn drop(&mut self) {
        lock().retain(|p| *p != self.0);
    }
}

fn lock() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    WRITING.lock().unwrap_or_else(|e| e.into_inner())
}

/// Removes the temporary files being written, without waiting for a lock another thread may
/// hold: for a process that is about to end (memory ran out).
pub fn remove_temp_files() {
    if let Ok(pending) = WRITING.try_lock() {
        for p in pending.iter() {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// What the command's Ctrl-C handler does: removes the temporary files being written, says
/// so, and ends the process with status 130.
pub fn remove_temp_files_and_exit() -> ! {
    // The lock is held until exit: the writer cannot rename a file being removed.
    let pending = lock();
    for p in pending.iter() {
        let _ = std::fs::remove_file(p);
    }
    crate::report::diagnostic("gblur: interrupted");
    std::process::exit(130);
}
