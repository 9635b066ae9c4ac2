//! What others put in gblur's folders, before or while it runs: a batch's records replaced by
//! a symbolic link or a named pipe, a file created at an output under `--no-clobber`, a file
//! dropped into OUT_DIR during a batch. gblur never writes through the link, never waits on
//! the pipe, never replaces the file, and reports each case as what it is.

use crate::common;
use common::{fixture, gblur};
use std::ffi::{OsStr, OsString};
use std::path::Path;
use std::process::{Command, Output, Stdio};
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

/// Runs `gblur ARGS` with its writes held once their temporary file exists (the fault drills'
/// hook); once one exists in `dir`, calls `meanwhile`, then lets the writes go on and waits
/// for the end.
fn with_a_slow_write(args: &[&OsStr], dir: &Path, meanwhile: impl FnOnce()) -> Output {
    let go = tempfile::tempdir().unwrap();
    let go = go.path().join("go");
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("gblur"))
        .env("GBLUR_FAULT", "slow-write")
        .env("GBLUR_WRITE_GO", &go)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    crate::common::wait_for_a_held_write(&go, &mut child);
    assert!(std::fs::read_dir(dir).unwrap().any(|e| e
        .unwrap()
        .file_name()
        .to_string_lossy()
        .starts_with(".gblur-")));
    meanwhile();
    std::fs::write(&go, b"").unwrap();
    child.wait_with_output().unwrap()
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

/// `--no-clobber` keeps a file another writer creates at OUT while gblur runs, on the
/// whole-image path and through the strip engine: the final rename never replaces it, and the
/// run ends as one refused at the start does (exit 2, one line naming OUT).
#[test]
fn no_clobber_keeps_an_output_that_appears_while_gblur_runs() {
    for engine in ["whole", "strips"] {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out.png");
        let input = fixture("samples/coffee.png");
        let flags = [
            "--sigma",
            "2",
            "--device",
            "rust",
            "--engine",
            engine,
            "--no-clobber",
            "-q",
        ];
        let mut args = vec![input.as_os_str(), out.as_os_str()];
        args.extend(flags.iter().map(OsStr::new));
        let done = with_a_slow_write(&args, dir.path(), || {
            std::fs::write(&out, b"another writer's").unwrap();
        });
        assert_eq!(done.status.code(), Some(2), "--engine {engine}: {done:?}");
        let err = one_line(&done.stderr);
        assert!(
            err.contains("out.png: the output appeared while gblur ran, and --no-clobber keeps it"),
            "--engine {engine}: {err}"
        );
        assert_eq!(
            std::fs::read(&out).unwrap(),
            b"another writer's",
            "--engine {engine}"
        );
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, vec![OsString::from("out.png")], "--engine {engine}");
    }
}

/// Files another writer puts into OUT_DIR while a batch runs, at its outputs' paths and beside
/// them: the batch keeps them and counts those at its outputs as outputs that exist; none is
/// a file "not started", and `gblur batch-report` finds the folder complete.
#[test]
fn files_put_into_out_dir_during_a_batch_leave_its_report_complete() {
    let root = tempfile::tempdir().unwrap();
    let (input, output, records) = (
        root.path().join("in"),
        root.path().join("out"),
        root.path().join("records"),
    );
    photos(&input);
    std::fs::create_dir_all(&output).unwrap();
    let mut args = vec![OsStr::new("batch"), input.as_os_str(), output.as_os_str()];
    args.extend(
        [
            "--sigma",
            "2",
            "--device",
            "rust",
            "--json",
            "-q",
            "--summary",
        ]
        .map(OsStr::new),
    );
    args.push(records.as_os_str());
    let done = with_a_slow_write(&args, &output, || {
        for name in ["a.png", "b.png", "c.png", "notes.txt"] {
            std::fs::write(output.join(name), b"another writer's").unwrap();
        }
    });
    assert!(done.status.success(), "{done:?}");
    let v: serde_json::Value = serde_json::from_slice(&done.stdout).unwrap();
    assert_eq!(v["skipped_existing"], 3, "{v}");
    assert_eq!(v["not_started"], 0, "{v}");
    assert_eq!(v["interrupted"], false, "{v}");
    for name in ["a.png", "b.png", "c.png", "notes.txt"] {
        assert_eq!(
            std::fs::read(output.join(name)).unwrap(),
            b"another writer's"
        );
    }
    let report = gblur()
        .arg("batch-report")
        .arg(&records)
        .arg("--json")
        .assert()
        .success();
    let r: serde_json::Value = serde_json::from_slice(&report.get_output().stdout).unwrap();
    assert_eq!(r["complete"], true, "{r}");
    assert_eq!(r["skipped_existing"], 3, "{r}");
    assert_eq!(r["problems"], serde_json::json!([]), "{r}");
}
