//! Shared test helpers: the gblur binary, the repository's files, the OpenCL device the
//! device tests run on, and deterministic noise.
#![allow(dead_code)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The gblur binary this test build made, as an `assert_cmd` command run from the
/// repository's root, where the tests' relative paths (`samples/...`) start.
pub fn gblur() -> assert_cmd::Command {
    let mut command = assert_cmd::Command::cargo_bin("gblur").unwrap();
    command.current_dir(fixture(""));
    command
}

/// Blurs `input` into `out` at sigma 1.5 with `extra` arguments, quietly, and returns the
/// output's bytes; the run must succeed.
pub fn blur_to(input: &Path, out: &Path, extra: &[&str]) -> Vec<u8> {
    gblur()
        .arg(input)
        .arg(out)
        .args(["-s", "1.5", "-q"])
        .args(extra)
        .assert()
        .success();
    std::fs::read(out).unwrap()
}

/// The JSON report a run of `command` (given `--json`) prints on stdout; the run must succeed.
pub fn json_report(command: &mut assert_cmd::Command) -> serde_json::Value {
    let out = command.assert().success().get_output().stdout.clone();
    serde_json::from_slice(&out).unwrap()
}

/// The mean absolute difference of two images' samples, in levels.
pub fn mean_abs_diff(a: &[u8], b: &[u8]) -> f64 {
    assert_eq!(a.len(), b.len(), "images of one size");
    let sum: f64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| (*x as f64 - *y as f64).abs())
        .sum();
    sum / a.len() as f64
}

/// A path inside the repository (`samples/...`, `tests/fixtures/...`).
pub fn fixture(name: &str) -> PathBuf {
    // This suite belongs to the `gblur-cli` package, in crates/cli.
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(name)
}

/// The OpenCL device the device tests run on, which must exist: the one GBLUR_TEST_DEVICE
/// names, else a GPU, else the first device (PoCL's CPU device in CI). Every test that needs
/// a device calls this first; without one it fails with what to install. No test skips
/// itself: a test left out on purpose is `#[ignore]`d with its reason.
pub fn require_opencl() -> gblur::Device {
    let opened = match std::env::var("GBLUR_TEST_DEVICE") {
        Ok(name) => gblur::Device::open(&name),
        Err(_) => gblur::Device::open("gpu").or_else(|_| gblur::Device::open("0")),
    };
    let device = opened.expect("no OpenCL device: the tests need one (Debian: apt-get install pocl-opencl-icd ocl-icd-libopencl1; .ci/run installs them)");
    assert!(
        device.is_opencl(),
        "{} is not an OpenCL device",
        device.name()
    );
    device
}

/// Deterministic pseudo-random planes in [0, 1): `channels` planes of `width`×`height`.
pub struct Noise {
    pub data: Vec<f32>,
}

/// `Noise` from `seed`.
pub fn noise(width: usize, height: usize, channels: usize, seed: u64) -> Noise {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407)
        | 1;
    let data = (0..width * height * channels)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 40) as f32 / (1u64 << 24) as f32
        })
        .collect();
    Noise { data }
}

/// A command that runs `program` as an unprivileged user: directly when the tests are not
/// root; as `nobody` through setpriv (util-linux) when they are, because root ignores file
/// permissions. The drill must not pass vacuously, so this fails loudly if neither works.
pub fn unprivileged(program: &Path) -> std::process::Command {
    let uid = std::process::Command::new("id").arg("-u").output().unwrap();
    if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
        return std::process::Command::new(program);
    }
    let probe = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "true"])
        .status();
    assert!(
        probe.is_ok_and(|s| s.success()),
        "running as root without a working setpriv: cannot drop privileges for this drill"
    );
    let mut c = std::process::Command::new("setpriv");
    c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(program);
    c
}

/// A folder every user can enter, holding a copy of the gblur binary every user can run (the
/// build folder may sit under a private home).
pub fn shared_dir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let bin = dir.path().join("gblur");
    std::fs::copy(env!("CARGO_BIN_EXE_gblur"), &bin).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    (dir, bin)
}

pub fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// A new folder of `n` copies of the gray camera sample (`g0.png`, `g1.png`, ...): a batch's
/// input.
pub fn gray_batch_input(n: usize) -> tempfile::TempDir {
    let input = tempfile::tempdir().unwrap();
    for i in 0..n {
        let to = input.path().join(format!("g{i}.png"));
        std::fs::copy(fixture("samples/camera-gray.png"), to).unwrap();
    }
    input
}

/// `input` blurred by `gblur batch --sigma 2 --device rust` into a new folder: what a batch
/// on any device, with any fault, must write.
pub fn rust_batch(input: &Path) -> tempfile::TempDir {
    let out = tempfile::tempdir().unwrap();
    let o = gblur()
        .arg("batch")
        .arg(input)
        .arg(out.path())
        .args(["--sigma", "2", "-q", "--device", "rust"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    out
}

/// `got` holds the files `want` holds, each byte for byte (`what` names the run).
pub fn assert_same_files(got: &Path, want: &Path, what: &str) {
    assert_eq!(files_under(got), files_under(want), "{what}");
    for name in files_under(want) {
        assert!(
            std::fs::read(got.join(&name)).unwrap() == std::fs::read(want.join(&name)).unwrap(),
            "{what}: {name}"
        );
    }
}

/// Every file (and link) under `dir`, relative and sorted, but for the record a batch keeps of
/// the settings behind its outputs (`.gblur.settings-K-of-N.log`).
pub fn files_under(dir: &Path) -> std::collections::BTreeSet<String> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| !e.file_type().is_dir())
        .filter(|e| {
            !e.file_name()
                .to_string_lossy()
                .starts_with(".gblur.settings-")
        })
        .map(|e| {
            let rel = e.path().strip_prefix(dir).unwrap();
            rel.to_string_lossy().into_owned()
        })
        .collect()
}

/// The EXIF Make of the file at `path`, as kamadak-exif shows it (quoted), where it has one.
pub fn exif_make(path: &Path) -> Option<String> {
    let file = std::fs::File::open(path).ok()?;
    let exif = exif::Reader::new()
        .read_from_container(&mut std::io::BufReader::new(file))
        .ok()?;
    let make = exif.get_field(exif::Tag::Make, exif::In::PRIMARY)?;
    Some(make.display_value().to_string())
}

/// Waits until `child`, run with `GBLUR_FAULT=slow-write` and `GBLUR_WRITE_GO=go`, holds a
/// write: its temporary file exists and is registered for removal (gblur has made
/// `go.held`). Panics where `child` ends first.
pub fn wait_for_a_held_write(go: &Path, child: &mut std::process::Child) {
    let mut held = go.as_os_str().to_owned();
    held.push(".held");
    while !Path::new(&held).exists() {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("gblur ended ({status}) before it held a write");
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}
