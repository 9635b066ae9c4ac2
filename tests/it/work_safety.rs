//! Nothing the user has is lost or mangled, whatever they point gblur at: folders inside each
//! other, devices and pipes as inputs and outputs, names that climb out of OUT_DIR or are not
//! UTF-8, batches run twice or side by side, inputs larger than the memory budget, a full
//! disk under the report; and every refusal is one line.

use crate::common;
use common::{fixture, gblur};
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::os::unix::fs::FileTypeExt;
use std::path::Path;

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path and a mode.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
}

fn is_fifo(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_fifo())
}

/// A folder of three small PNGs.
fn photos(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    for name in ["a.png", "b.png", "c.png"] {
        std::fs::copy(fixture("samples/camera-gray.png"), dir.join(name)).unwrap();
    }
}

fn json(out: &assert_cmd::assert::Assert) -> serde_json::Value {
    serde_json::from_slice(&out.get_output().stdout).unwrap()
}

fn one_line(out: &assert_cmd::assert::Assert) -> String {
    let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert_eq!(err.trim_end().lines().count(), 1, "not one line: {err}");
    err
}

/// `gblur batch photos .`: IN_DIR inside OUT_DIR is walked like any other, and its outputs
/// land beside it.
#[test]
fn a_batch_into_the_folder_around_its_input_blurs_every_file() {
    let root = tempfile::tempdir().unwrap();
    photos(&root.path().join("photos"));
    let out = gblur()
        .current_dir(root.path())
        .args(["batch", "photos", ".", "--sigma", "2", "--json", "-q"])
        .assert()
        .success();
    let v = json(&out);
    assert_eq!(v["blurred"], 3, "{v}");
    assert!(root.path().join("a.png").is_file());
}

/// An output that is a named pipe (or a device) is refused before any work, and stays what
/// it was; `-` is the way to write to a stream.
#[test]
fn an_output_that_is_a_pipe_is_refused_and_left_as_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("out.png");
    mkfifo(&fifo);
    let out = gblur()
        .arg(fixture("samples/coffee.png"))
        .arg(&fifo)
        .args(["--sigma", "2"])
        .assert()
        .code(2);
    assert!(one_line(&out).contains("not a regular file"));
    assert!(is_fifo(&fifo));
}

/// A named pipe as the input is read once, from one open handle: it does not hang.
#[test]
fn a_named_pipe_as_input_is_read_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("in.png");
    mkfifo(&fifo);
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            let bytes = std::fs::read(fixture("samples/coffee.png")).unwrap();
            std::fs::write(&fifo, bytes).unwrap();
        })
    };
    let out = dir.path().join("out.png");
    gblur()
        .arg(&fifo)
        .arg(&out)
        .args(["--sigma", "2", "-q"])
        .timeout(std::time::Duration::from_secs(60))
        .assert()
        .success();
    writer.join().unwrap();
    assert_eq!(image::open(&out).unwrap().width(), 600);
}

/// Stdin, a device and a pipe are read only as far as the memory budget: /dev/zero is refused
/// in one line, an empty pipe is called empty.
#[test]
fn endless_inputs_stop_at_the_budget_and_empty_ones_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o.png");
    let stdin = std::process::Command::new(assert_cmd::cargo::cargo_bin("gblur"))
        .args(["-", "--sigma", "2", "--max-memory", "16"])
        .arg(&out)
        .stdin(std::fs::File::open("/dev/zero").unwrap())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&stdin.stderr);
    assert_eq!(stdin.status.code(), Some(1), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("stdin: more than the memory limit of 16 MiB to read"),
        "{err}"
    );
    let device = gblur()
        .args(["/dev/zero", "--sigma", "2", "--max-memory", "16"])
        .arg(&out)
        .timeout(std::time::Duration::from_secs(60))
        .assert()
        .code(1);
    assert!(one_line(&device).contains("/dev/zero: more than the memory limit"));
    let empty = gblur()
        .args(["-", "png:-", "--sigma", "2"])
        .write_stdin(Vec::new())
        .assert()
        .code(1);
    assert!(one_line(&empty).contains("empty (0 bytes)"));
    assert!(!out.exists());
}

/// `--name` expanded with a stem of `..` (an input named `...png`) would leave OUT_DIR: that
/// file fails in one line and nothing is written outside.
#[test]
fn a_name_that_climbs_out_of_out_dir_is_refused_per_file() {
    let root = tempfile::tempdir().unwrap();
    let (input, output) = (root.path().join("in"), root.path().join("out"));
    photos(&input);
    std::fs::copy(fixture("samples/camera-gray.png"), input.join("...png")).unwrap();
    let out = gblur()
        .arg("batch")
        .args([&input, &output])
        .args(["--sigma", "2", "--name", "{stem}/x.{ext}", "--json", "-q"])
        .assert()
        .code(1);
    let v = json(&out);
    assert_eq!(v["blurred"], 3, "{v}");
    assert_eq!(v["failed"], 1, "{v}");
    assert!(v.to_string().contains("leaves OUT_DIR"), "{v}");
    assert!(!root.path().join("x.png").exists());
}

/// A second in-place run blurs only what the first did not: files it replaced are in its
/// journal; a file replaced since by a new original, and a new file, are blurred.
#[test]
fn an_in_place_batch_never_blurs_a_file_twice() {
    let dir = tempfile::tempdir().unwrap();
    photos(dir.path());
    let run = || {
        let out = gblur()
            .arg("batch")
            .args([dir.path(), dir.path()])
            .args(["--sigma", "2", "--in-place", "--json", "-q"])
            .assert()
            .success();
        json(&out)
    };
    assert_eq!(run()["blurred"], 3);
    let once = std::fs::read(dir.path().join("b.png")).unwrap();
    std::fs::copy(fixture("samples/camera-gray.png"), dir.path().join("a.png")).unwrap();
    std::fs::copy(fixture("samples/camera-gray.png"), dir.path().join("d.png")).unwrap();
    let v = run();
    assert_eq!(v["blurred"], 2, "{v}");
    assert_eq!(v["skipped_existing"], 2, "{v}");
    assert_eq!(std::fs::read(dir.path().join("b.png")).unwrap(), once);
}

/// A file that appears at an output while the batch runs (another batch into the same
/// OUT_DIR) is left as it is, and counted as an output that exists.
#[test]
fn a_file_another_writer_puts_at_an_output_is_not_replaced() {
    let root = tempfile::tempdir().unwrap();
    let (input, output) = (root.path().join("in"), root.path().join("out"));
    std::fs::create_dir_all(&input).unwrap();
    std::fs::copy(fixture("samples/camera-gray.png"), input.join("a.png")).unwrap();
    std::fs::create_dir_all(&output).unwrap();
    // The write is held once its temporary file exists (the fault drills' hook), until the
    // go file is made.
    let go = root.path().join("go");
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("gblur"))
        .env("GBLUR_FAULT", "slow-write")
        .env("GBLUR_WRITE_GO", &go)
        .arg("batch")
        .args([&input, &output])
        .args(["--sigma", "2", "--device", "rust", "--json", "-q"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    crate::common::wait_for_a_held_write(&go, &mut child);
    std::fs::write(output.join("a.png"), b"another writer's").unwrap();
    std::fs::write(&go, b"").unwrap();
    let done = child.wait_with_output().unwrap();
    assert!(done.status.success(), "{done:?}");
    let v: serde_json::Value = serde_json::from_slice(&done.stdout).unwrap();
    assert_eq!(v["skipped_existing"], 1, "{v}");
    assert!(
        v.to_string().contains("appeared while the batch ran"),
        "{v}"
    );
    assert_eq!(
        std::fs::read(output.join("a.png")).unwrap(),
        b"another writer's"
    );
}

/// A name that is not UTF-8 is kept exactly in the shard's record, and batch-report finds
/// its output.
#[test]
fn a_name_that_is_not_utf8_is_accounted_for() {
    let root = tempfile::tempdir().unwrap();
    let (input, output, records) = (
        root.path().join("in"),
        root.path().join("out"),
        root.path().join("records"),
    );
    std::fs::create_dir_all(&input).unwrap();
    let name = OsString::from_vec(b"caf\xe9.png".to_vec());
    std::fs::copy(fixture("samples/camera-gray.png"), input.join(&name)).unwrap();
    gblur()
        .arg("batch")
        .args([&input, &output])
        .args(["--sigma", "2", "-q", "--summary"])
        .arg(&records)
        .assert()
        .success();
    assert!(output.join(&name).is_file());
    gblur().arg("batch-report").arg(&records).assert().success();
}

/// Records written for two shard counts: the report counts the shards of the set it merges
/// ("3 of 3"), names each record by its own K and N (the odd one as not of the set), and
/// calls the odd one a problem.
#[test]
fn batch_report_counts_only_the_shards_of_its_set() {
    let root = tempfile::tempdir().unwrap();
    let (input, records) = (root.path().join("in"), root.path().join("records"));
    photos(&input);
    for shard in ["1/2", "1/3", "2/3", "3/3"] {
        gblur()
            .arg("batch")
            .arg(&input)
            .arg(root.path().join(format!("out{}", shard.replace('/', "-"))))
            .args(["--sigma", "2", "-q", "--shard", shard, "--summary"])
            .arg(&records)
            .assert()
            .success();
    }
    let out = gblur().arg("batch-report").arg(&records).assert().code(1);
    let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(err.contains("shards    3 of 3 present"), "{err}");
    assert_eq!(err.matches("shard     1 of 3: ").count(), 1, "{err}");
    assert!(
        err.contains("shard     1 of 2 (not of this set of 3): "),
        "{err}"
    );
    assert!(err.contains("written for 2 shards"), "{err}");
}

/// A report that cannot be written (stdout or stderr on a full disk) is exit 1, never a
/// panic; with --quiet nothing is written and nothing fails.
#[test]
fn a_report_that_cannot_be_written_is_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let full = || {
        std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap()
    };
    let run = |args: &[&str], stdout: bool| {
        let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("gblur"));
        cmd.env("RUST_BACKTRACE", "1")
            .arg(fixture("samples/coffee.png"))
            .arg(dir.path().join("out.png"))
            .args(["--sigma", "2"])
            .args(args);
        match stdout {
            true => cmd.stdout(full()).stderr(std::process::Stdio::null()),
            false => cmd.stderr(full()),
        };
        cmd.status().unwrap().code()
    };
    assert_eq!(run(&[], false), Some(1), "table to a full stderr");
    assert_eq!(
        run(&["--json", "-q"], true),
        Some(1),
        "JSON to a full stdout"
    );
    assert_eq!(run(&["-q"], false), Some(0), "nothing to write");
}

/// Usage errors are exit 2, and the final error is one line whatever the file's name holds.
#[test]
fn zero_memory_is_a_usage_error_and_names_stay_on_one_line() {
    let dir = tempfile::tempdir().unwrap();
    gblur()
        .arg(fixture("samples/coffee.png"))
        .arg(dir.path().join("o.png"))
        .args(["--sigma", "2", "--max-memory", "0"])
        .assert()
        .code(2);
    let odd = dir.path().join("two\nlines.png");
    std::fs::write(&odd, b"not an image").unwrap();
    let out = gblur()
        .arg(&odd)
        .arg(dir.path().join("o.png"))
        .args(["--sigma", "2"])
        .assert()
        .code(1);
    assert!(one_line(&out).contains("two\\nlines.png"));
}

/// An allocation the system refuses (here a cap on the address space, as a short machine
/// would) ends the command in one line naming the input, exit 1, not an abort.
#[test]
fn a_refused_allocation_is_one_line_naming_the_input() {
    use std::os::unix::process::CommandExt;
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("big.png");
    // 6000 × 6000 RGBA16, 275 MB decoded, a few hundred KiB as a PNG of zeros.
    {
        let file = std::io::BufWriter::new(std::fs::File::create(&input).unwrap());
        let mut e = png::Encoder::new(file, 6000, 6000);
        e.set_color(png::ColorType::Rgba);
        e.set_depth(png::BitDepth::Sixteen);
        let mut w = e.write_header().unwrap();
        let mut stream = w.stream_writer().unwrap();
        let row = vec![0u8; 6000 * 8];
        for _ in 0..6000 {
            std::io::Write::write_all(&mut stream, &row).unwrap();
        }
        stream.finish().unwrap();
        w.finish().unwrap();
    }
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("gblur"));
    // One thread, one malloc arena and no OpenCL driver: the address space the process takes
    // before the image is the same on any machine, far under the cap.
    cmd.env("RUST_BACKTRACE", "1")
        .env("MALLOC_ARENA_MAX", "1")
        .arg(&input)
        .arg(dir.path().join("out.png"))
        .args(["--sigma", "2", "--max-memory", "4000", "--engine", "whole"])
        .args(["--threads", "1", "--device", "rust"]);
    // SAFETY: setrlimit between fork and exec touches only this process's limits.
    unsafe {
        cmd.pre_exec(|| {
            let cap = libc::rlimit {
                rlim_cur: 200 << 20,
                rlim_max: 200 << 20,
            };
            match libc::setrlimit(libc::RLIMIT_AS, &cap) {
                0 => Ok(()),
                _ => Err(std::io::Error::last_os_error()),
            }
        });
    }
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("big.png") && (err.contains("out of memory") || err.contains("memory")),
        "{err}"
    );
    assert!(!dir.path().join("out.png").exists());
}
