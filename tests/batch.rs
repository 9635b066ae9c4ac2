//! `gblur batch` in temporary folders: mixed good, corrupt and non-image files, nested
//! folders, skip vs overwrite, in-place, OUT inside IN, shards, exit codes, no temp files.

use assert_cmd::Command;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(name)
}

/// IN with 5 images (two nested), a truncated PNG and a text file.
fn photo_folder() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    std::fs::create_dir_all(p.join("trip/day2")).unwrap();
    std::fs::copy(fixture("samples/camera-gray.png"), p.join("gray.png")).unwrap();
    std::fs::copy(fixture("samples/chelsea.jpg"), p.join("cat.jpg")).unwrap();
    std::fs::copy(
        fixture("tests/fixtures/gray16_7x5.png"),
        p.join("trip/g16.png"),
    )
    .unwrap();
    std::fs::copy(
        fixture("tests/fixtures/rgba_halo_9x9.png"),
        p.join("trip/day2/halo.png"),
    )
    .unwrap();
    std::fs::copy(
        fixture("tests/fixtures/png_named.jpg"),
        p.join("trip/day2/misnamed.jpg"),
    )
    .unwrap();
    std::fs::copy(
        fixture("tests/fixtures/truncated.png"),
        p.join("trip/broken.png"),
    )
    .unwrap();
    std::fs::write(p.join("trip/readme.txt"), "not an image").unwrap();
    dir
}

fn batch(args: &[&str], input: &Path, output: &Path, code: i32) -> Value {
    let out = Command::cargo_bin("gblur")
        .unwrap()
        .arg("batch")
        .arg(input)
        .arg(output)
        .args(["--sigma", "1.5", "--json", "-q"])
        .args(args)
        .assert()
        .code(code);
    serde_json::from_slice(&out.get_output().stdout).unwrap()
}

fn files_under(dir: &Path) -> BTreeSet<String> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .map(|e| {
            e.path()
                .strip_prefix(dir)
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect()
}

fn blurred_inputs(v: &Value) -> BTreeSet<String> {
    v["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["outcome"] == "blurred")
        .map(|f| f["input"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn mixed_folder_blurs_good_files_reports_bad_ones_and_exits_1() {
    let input = photo_folder();
    let out = tempfile::tempdir().unwrap();
    let v = batch(&[], input.path(), out.path(), 1);
    assert_eq!(
        (
            v["blurred"].as_u64(),
            v["failed"].as_u64(),
            v["skipped_not_image"].as_u64()
        ),
        (Some(5), Some(1), Some(1))
    );
    let failure = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["outcome"] == "failed")
        .unwrap();
    assert!(
        failure["error"]
            .as_str()
            .unwrap()
            .contains("broken.png: cannot decode"),
        "{failure}"
    );
    let want: BTreeSet<String> = [
        "gray.png",
        "cat.jpg",
        "trip/g16.png",
        "trip/day2/halo.png",
        "trip/day2/misnamed.jpg",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    assert_eq!(
        files_under(out.path()),
        want,
        "mirrored outputs only, no temporary files"
    );
    // Depth and channels are kept.
    assert_eq!(
        image::open(out.path().join("trip/g16.png"))
            .unwrap()
            .color(),
        image::ColorType::L16
    );
    assert_eq!(
        image::open(out.path().join("trip/day2/halo.png"))
            .unwrap()
            .color(),
        image::ColorType::Rgba8
    );
}

#[test]
fn existing_outputs_are_skipped_unless_overwrite() {
    let input = photo_folder();
    let out = tempfile::tempdir().unwrap();
    batch(&[], input.path(), out.path(), 1);
    let again = batch(&[], input.path(), out.path(), 1);
    assert_eq!(again["blurred"], 0);
    assert_eq!(again["skipped_existing"], 5);
    let forced = batch(&["--overwrite"], input.path(), out.path(), 1);
    assert_eq!(forced["blurred"], 5);
}

#[test]
fn format_option_changes_every_output() {
    let input = photo_folder();
    let out = tempfile::tempdir().unwrap();
    batch(&["--format", "png"], input.path(), out.path(), 1);
    assert!(
        out.path().join("cat.png").exists() && out.path().join("trip/day2/misnamed.png").exists()
    );
    assert!(!out.path().join("cat.jpg").exists());
}

#[test]
fn same_folder_needs_in_place_and_then_replaces_atomically() {
    let input = photo_folder();
    Command::cargo_bin("gblur")
        .unwrap()
        .arg("batch")
        .arg(input.path())
        .arg(input.path())
        .args(["--sigma", "2"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("--in-place"));
    let before = std::fs::read(input.path().join("gray.png")).unwrap();
    let names = files_under(input.path());
    let v = batch(&["--in-place"], input.path(), input.path(), 1);
    assert_eq!(v["blurred"], 5);
    assert_ne!(
        std::fs::read(input.path().join("gray.png")).unwrap(),
        before
    );
    assert_eq!(
        files_under(input.path()),
        names,
        "no temporary or extra files"
    );
}

#[test]
fn out_dir_inside_in_dir_is_never_read_back() {
    let input = photo_folder();
    let out = input.path().join("blurred");
    let first = batch(&[], input.path(), &out, 1);
    assert_eq!(first["blurred"], 5);
    let second = batch(&["--overwrite"], input.path(), &out, 1);
    assert_eq!(second["blurred"], 5, "outputs must not become inputs");
    assert!(!out.join("blurred").exists());
}

#[test]
fn shards_cover_every_file_exactly_once() {
    let input = photo_folder();
    let mut seen = Vec::new();
    for k in 1..=3 {
        let out = tempfile::tempdir().unwrap();
        let out_dir = out.path();
        let assert = Command::cargo_bin("gblur")
            .unwrap()
            .arg("batch")
            .arg(input.path())
            .arg(out_dir)
            .args([
                "--sigma",
                "1.5",
                "--json",
                "-q",
                "--shard",
                &format!("{k}/3"),
            ])
            .assert();
        let v: Value = serde_json::from_slice(&assert.get_output().stdout).unwrap();
        seen.extend(blurred_inputs(&v));
        seen.extend(
            v["files"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|f| f["outcome"] == "failed")
                .map(|f| f["input"].as_str().unwrap().to_string()),
        );
    }
    let unique: BTreeSet<String> = seen.iter().cloned().collect();
    assert_eq!(
        unique.len(),
        seen.len(),
        "a file was processed by two shards"
    );
    assert_eq!(
        unique.len(),
        6,
        "5 images and the broken one, each in exactly one shard"
    );
}

#[test]
fn bad_batch_arguments() {
    let input = photo_folder();
    let out = tempfile::tempdir().unwrap();
    for (args, msg) in [
        (vec!["--shard", "4/3"], "K/N"),
        (vec!["--format", "xyz"], "not a format"),
    ] {
        Command::cargo_bin("gblur")
            .unwrap()
            .arg("batch")
            .arg(input.path())
            .arg(out.path())
            .args(["--sigma", "2"])
            .args(args)
            .assert()
            .code(2)
            .stderr(predicates::str::contains(msg));
    }
    Command::cargo_bin("gblur")
        .unwrap()
        .args(["batch", "/nonexistent-in", "--sigma", "2"])
        .arg(out.path())
        .assert()
        .code(2)
        .stderr(predicates::str::contains("/nonexistent-in: not a folder"));
}

#[test]
fn ctrl_c_stops_cleanly_leaving_only_complete_outputs() {
    let input = tempfile::tempdir().unwrap();
    for i in 0..60 {
        std::fs::copy(
            fixture("samples/coffee.png"),
            input.path().join(format!("p{i:02}.png")),
        )
        .unwrap();
    }
    let out = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_gblur"))
        .arg("batch")
        .arg(input.path())
        .arg(out.path())
        .args(["--sigma", "4", "-q", "--device", "rust"])
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(700));
    let killed = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = child.wait().unwrap();
    let written = files_under(out.path());
    if status.success() {
        // The batch won the race; nothing was interrupted.
        assert_eq!(written.len(), 60);
        return;
    }
    assert_eq!(status.code(), Some(1), "an interrupted batch exits 1");
    assert!(written.len() < 60, "it stopped early");
    for name in &written {
        assert!(!name.contains(".gblur-"), "temporary file left: {name}");
        image::open(out.path().join(name)).unwrap_or_else(|e| panic!("{name} is incomplete: {e}"));
    }
}
