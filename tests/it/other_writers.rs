//! What others put in gblur's folders, before or while it runs: a batch's records replaced by
//! a symbolic link or a named pipe. gblur never writes through the link, never waits on the
//! pipe, and refuses in one line naming the file.

use crate::common;
use common::{fixture, gblur};
use std::path::Path;
use std::time::Duration;

/// A folder of three small PNGs.
fn photos(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    for name in ["a.png", "b.png", "c.png"] {
        std::fs::copy(fixture("samples/camera-gray.png"), dir.join(name)).unwrap();
    }
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path and a mode.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
}

fn one_line(stderr: &[u8]) -> String {
    let err = String::from_utf8_lossy(stderr).to_string();
    assert_eq!(err.trim_end().lines().count(), 1, "not one line: {err}");
    err
}

/// The batch's settings log replaced by a symbolic link (to a file outside OUT_DIR) or by a
/// named pipe, and an in-place journal replaced by a link: the batch refuses before it writes
/// anything, in one line naming the file; the file the link points to is left as it was, and
/// the pipe never blocks the batch (nor another shard's log that is one).
#[test]
fn a_record_file_that_is_a_link_or_a_pipe_is_refused_and_named() {
    let root = tempfile::tempdir().unwrap();
    let (input, output) = (root.path().join("in"), root.path().join("out"));
    photos(&input);
    let outside = root.path().join("outside.txt");
    std::fs::write(&outside, b"someone else's file\n").unwrap();
    let batch = |input: &Path, output: &Path, extra: &[&str]| {
        let out = gblur()
            .arg("batch")
            .arg(input)
            .arg(output)
            .args(["--sigma", "2", "--device", "rust", "-q"])
            .args(extra)
            .timeout(Duration::from_secs(60))
            .assert()
            .code(2);
        one_line(&out.get_output().stderr)
    };
    let unwritten = |dir: &Path| {
        for name in ["a.png", "b.png", "c.png"] {
            assert!(!dir.join(name).exists(), "{name} was written");
        }
    };

    std::fs::create_dir_all(&output).unwrap();
    let log = output.join(".gblur.settings-1-of-1.log");
    std::os::unix::fs::symlink(&outside, &log).unwrap();
    let err = batch(&input, &output, &[]);
    assert!(
        err.contains(".gblur.settings-1-of-1.log: is a symbolic link"),
        "{err}"
    );
    assert_eq!(std::fs::read(&outside).unwrap(), b"someone else's file\n");
    unwritten(&output);

    // The same link as the log of a shard that is not this one's: it is read, not followed.
    std::fs::rename(&log, output.join(".gblur.settings-2-of-2.log")).unwrap();
    let err = batch(&input, &output, &["--shard", "1/2"]);
    assert!(
        err.contains(".gblur.settings-2-of-2.log: is a symbolic link"),
        "{err}"
    );
    std::fs::remove_file(output.join(".gblur.settings-2-of-2.log")).unwrap();

    mkfifo(&log);
    let err = batch(&input, &output, &[]);
    assert!(
        err.contains(".gblur.settings-1-of-1.log: is a named pipe"),
        "{err}"
    );
    unwritten(&output);

    let journal = input.join(".gblur.in-place-1-of-1.journal");
    std::os::unix::fs::symlink(&outside, &journal).unwrap();
    let err = batch(&input, &input, &["--in-place"]);
    assert!(
        err.contains(".gblur.in-place-1-of-1.journal: is a symbolic link"),
        "{err}"
    );
    assert_eq!(std::fs::read(&outside).unwrap(), b"someone else's file\n");
    assert_eq!(
        std::fs::read(input.join("a.png")).unwrap(),
        std::fs::read(fixture("samples/camera-gray.png")).unwrap(),
        "an original was replaced"
    );
}
