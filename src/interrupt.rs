//! Ctrl-C during the main command: the temporary file being written, if any, is removed
//! before the process exits with status 130, so an interrupted run leaves OUT as it was (the
//! rename that replaces it is atomic) and nothing beside it. `gblur batch` installs its own
//! handler instead, which lets the files in flight finish.

use crate::fault::{self, Fault};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

static WRITING: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Whether a stop was asked for that lets the files in flight finish (`stop_requested`).
static STOP_REQUESTED: AtomicBool = AtomicBool::new(false);

/// Records that the user asked to stop and the files in flight are to finish (a batch's
/// Ctrl-C): a write held by the `slow-write` drill goes on from then.
pub fn stop_requested() {
    STOP_REQUESTED.store(true, Ordering::SeqCst);
}

/// A temporary file being written; it is forgotten when this is dropped (renamed or removed
/// by then).
pub struct Writing(PathBuf);

/// Registers `path` for removal on Ctrl-C until the returned guard is dropped.
///
/// Test hook: with `GBLUR_FAULT=slow-write` the write is then held (`hold`), so that the
/// drills in tests/it can interrupt it, or put a file at its output, while the temporary
/// file exists.
pub fn writing(path: &Path) -> Writing {
    lock().push(path.to_path_buf());
    if fault::is(Fault::SlowWrite) {
        hold();
    }
    Writing(path.to_path_buf())
}

/// Test hook: where `GBLUR_WRITE_GO` names a file GO, a held write makes the file `GO.held`
/// (the write's temporary file exists and is registered) and goes on once GO exists or a
/// stop is requested (`stop_requested`): a test's handshake, whatever the machine's load.
/// Without it, the write goes on after 5 s.
const WRITE_GO_VAR: &str = "GBLUR_WRITE_GO";

/// Holds a write for the `slow-write` drill: until `GBLUR_WRITE_GO`'s file exists (two
/// minutes at most, so that a test that fails before it makes the file leaves no process
/// waiting), or 5 s.
fn hold() {
    use std::time::{Duration, Instant};
    match crate::fault::hook(WRITE_GO_VAR) {
        Some(go) => {
            let mut held = go.clone();
            held.push(".held");
            let _ = std::fs::write(&held, b"");
            let started = Instant::now();
            while !Path::new(&go).exists()
                && !STOP_REQUESTED.load(Ordering::SeqCst)
                && started.elapsed() < Duration::from_secs(120)
            {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        None => std::thread::sleep(Duration::from_secs(5)),
    }
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
