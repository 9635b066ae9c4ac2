//! `gblur batch` in temporary folders: mixed good, corrupt and non-image files, nested
//! folders, skip vs overwrite, in-place, OUT inside IN, shards, exit codes, no temp files.

use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;

use crate::common;
use common::{files_under, fixture, gblur};

/// IN with 5 images (two nested), a truncated PNG and a text file.
pub(crate) fn photo_folder() -> tempfile::TempDir {
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
    let out = gblur()
        .arg("batch")
        .arg(input)
        .arg(output)
        .args(["--sigma", "1.5", "--json", "-q"])
        .args(args)
        .assert()
        .code(code);
    serde_json::from_slice(&out.get_output().stdout).unwrap()
}

pub(crate) fn blurred_inputs(v: &Value) -> BTreeSet<String> {
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
    // Quiet, the failed file is still named: its error is an error.
    let out = tempfile::tempdir().unwrap();
    let quiet = gblur()
        .arg("batch")
        .arg(input.path())
        .arg(out.path())
        .args(["--sigma", "1.5", "-q"])
        .assert()
        .code(1)
        .get_output()
        .stderr
        .clone();
    let quiet = String::from_utf8(quiet).unwrap();
    assert_eq!(quiet.lines().count(), 2, "{quiet}");
    assert!(quiet.contains("broken.png: cannot decode"), "{quiet}");
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
fn a_rerun_with_other_settings_redoes_the_outputs_and_skip_existing_counts_them_stale() {
    let input = photo_folder();
    let out = tempfile::tempdir().unwrap();
    batch(&[], input.path(), out.path(), 1);
    let first = std::fs::read(out.path().join("cat.jpg")).unwrap();
    // Another tool's file at an output is never taken for a stale one of ours.
    let foreign = out.path().join("gray.png");
    std::fs::write(&foreign, b"someone else's").unwrap();

    let kept = batch(
        &["--linear", "--skip-existing"],
        input.path(),
        out.path(),
        1,
    );
    assert_eq!(kept["blurred"], 0);
    assert_eq!(kept["skipped_stale"], 4, "{kept}");
    assert_eq!(kept["skipped_existing"], 1);
    assert_eq!(std::fs::read(out.path().join("cat.jpg")).unwrap(), first);

    let redone = batch(&["--linear"], input.path(), out.path(), 1);
    assert_eq!(redone["blurred"], 4, "{redone}");
    assert_eq!(redone["replaced_stale"], 4);
    assert_eq!(redone["skipped_existing"], 1);
    assert_ne!(std::fs::read(out.path().join("cat.jpg")).unwrap(), first);
    assert_eq!(std::fs::read(&foreign).unwrap(), b"someone else's");

    // The same settings again: nothing to do.
    let same = batch(&["--linear"], input.path(), out.path(), 1);
    assert_eq!(
        (same["blurred"].as_u64(), same["skipped_existing"].as_u64()),
        (Some(0), Some(5))
    );
    // A changed input is redone with the same settings.
    std::fs::copy(fixture("samples/rocket.jpg"), input.path().join("cat.jpg")).unwrap();
    let changed = batch(&["--linear"], input.path(), out.path(), 1);
    assert_eq!(changed["blurred"], 1, "{changed}");
    assert_eq!(changed["replaced_stale"], 1);
    // The settings log is gblur's, and never an input when OUT_DIR is walked as IN_DIR.
    assert!(out.path().join(".gblur.settings-1-of-1.log").is_file());
    let out2 = tempfile::tempdir().unwrap();
    let v = batch(&[], out.path(), out2.path(), 0);
    assert_eq!(v["skipped_not_image"], 1, "only the foreign file: {v}");
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
    gblur()
        .arg("batch")
        .arg(input.path())
        .arg(input.path())
        .args(["--sigma", "2"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("--in-place"));
    let before = std::fs::read(input.path().join("gray.png")).unwrap();
    let mut names = files_under(input.path());
    let v = batch(&["--in-place"], input.path(), input.path(), 1);
    assert_eq!(v["blurred"], 5);
    let blurred = std::fs::read(input.path().join("gray.png")).unwrap();
    assert_ne!(blurred, before);
    // No temporary file; the journal of what was replaced, beside the inputs.
    names.insert(".gblur.in-place-1-of-1.journal".into());
    assert_eq!(files_under(input.path()), names);
    // A second run blurs nothing twice: every file is in the journal, unchanged since.
    let again = batch(&["--in-place"], input.path(), input.path(), 1);
    assert_eq!(again["blurred"], 0);
    assert_eq!(again["skipped_existing"], 5);
    assert_eq!(
        std::fs::read(input.path().join("gray.png")).unwrap(),
        blurred
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
        let assert = gblur()
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
        gblur()
            .arg("batch")
            .arg(input.path())
            .arg(out.path())
            .args(["--sigma", "2"])
            .args(args)
            .assert()
            .code(2)
            .stderr(predicates::str::contains(msg));
    }
    gblur()
        .args(["batch", "/nonexistent-in", "--sigma", "2"])
        .arg(out.path())
        .assert()
        .code(2)
        .stderr(predicates::str::contains("/nonexistent-in: not a folder"));
}

#[test]
fn ctrl_c_stops_cleanly_leaving_only_complete_outputs() {
    // GBLUR_FAULT=slow-write holds every write once its temporary file exists (until the
    // batch takes the SIGINT, which lets the files in flight finish), and the SIGINT is sent
    // while the first one is held: the batch cannot have finished, and at most
    // 2 × cores + 5 images are in flight (docs/GUIDE.md), so the rest are certain not to start.
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let total = 2 * cores + 5 + 10;
    let input = tempfile::tempdir().unwrap();
    for i in 0..total {
        std::fs::copy(
            fixture("samples/coffee.png"),
            input.path().join(format!("p{i:02}.png")),
        )
        .unwrap();
    }
    let out = tempfile::tempdir().unwrap();
    let held = tempfile::tempdir().unwrap();
    let go = held.path().join("go");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_gblur"))
        .env("GBLUR_FAULT", "slow-write")
        .env("GBLUR_WRITE_GO", &go)
        .arg("batch")
        .arg(input.path())
        .arg(out.path())
        .args(["--sigma", "4", "-q", "--json", "--device", "rust"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    crate::common::wait_for_a_held_write(&go, &mut child);
    assert!(
        child.try_wait().unwrap().is_none(),
        "the batch ended while a write was held"
    );
    let killed = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let o = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(
        o.status.code(),
        Some(1),
        "an interrupted batch exits 1: {stderr}"
    );
    let summary: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(summary["interrupted"], true);
    assert_eq!(summary["failed"], 0);
    let blurred = summary["blurred"].as_u64().unwrap() as usize;
    let not_started = summary["not_started"].as_u64().unwrap() as usize;
    println!("{blurred} written, {not_started} not started, of {total}");
    assert!(blurred >= 1, "the write in flight was not finished");
    assert!(not_started >= 1, "nothing was left unstarted");
    assert_eq!(blurred + not_started, total, "{summary}");
    assert!(
        stderr.contains(&format!("interrupted: {not_started} files not started")),
        "{stderr}"
    );
    // Only the finished outputs are there, each exactly what the main command writes.
    let written = files_under(out.path());
    assert_eq!(
        written.len(),
        blurred,
        "temporary or extra files: {written:?}"
    );
    let reference = out.path().join("reference.png");
    gblur()
        .arg(fixture("samples/coffee.png"))
        .arg(&reference)
        .args(["--sigma", "4", "-q", "--device", "rust"])
        .assert()
        .success();
    let want = image::open(&reference).unwrap();
    for name in &written {
        assert!(name.starts_with('p') && name.ends_with(".png"), "{name}");
        let got = image::open(out.path().join(name))
            .unwrap_or_else(|e| panic!("{name} is incomplete: {e}"));
        assert!(got == want, "{name} differs from the main command's output");
    }
}

// ---- Several devices: --device all and lists ------------------------------------------------

/// The Rust path's lanes (one whole image per core) write each JPEG byte for byte as the main
/// command does on every core: with more images than cores and with fewer.
#[test]
fn rust_path_lanes_write_what_the_main_command_writes() {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    for count in [1, 2 * cores + 1] {
        let input = tempfile::tempdir().unwrap();
        for i in 0..count {
            std::fs::copy(
                fixture("samples/chelsea.jpg"),
                input.path().join(format!("c{i}.jpg")),
            )
            .unwrap();
        }
        let out = tempfile::tempdir().unwrap();
        let v = batch_with(
            &["--sigma", "3", "--device", "rust"],
            input.path(),
            out.path(),
            0,
        );
        assert_eq!(v["blurred"], count);
        let reference = out.path().join("reference.jpg");
        gblur()
            .arg(fixture("samples/chelsea.jpg"))
            .arg(&reference)
            .args(["--sigma", "3", "-q", "--device", "rust"])
            .assert()
            .success();
        let want = std::fs::read(&reference).unwrap();
        for i in 0..count {
            let got = std::fs::read(out.path().join(format!("c{i}.jpg"))).unwrap();
            assert!(
                got == want,
                "c{i}.jpg of {count} differs from the main command's"
            );
        }
    }
}

/// Runs a batch that is to exit `code` and returns its JSON summary.
pub(crate) fn batch_with(args: &[&str], input: &Path, output: &Path, code: i32) -> Value {
    let out = gblur()
        .arg("batch")
        .arg(input)
        .arg(output)
        .args(["--json", "-q"])
        .args(args)
        .assert()
        .code(code);
    serde_json::from_slice(&out.get_output().stdout).unwrap()
}

/// `--name` names each output by its template, under OUT_DIR; an extension it names decides
/// the format.
#[test]
fn name_templates_place_and_format_the_outputs() {
    let input = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(input.path().join("trip")).unwrap();
    std::fs::copy(fixture("samples/chelsea.jpg"), input.path().join("cat.jpg")).unwrap();
    std::fs::copy(
        fixture("samples/camera-gray.png"),
        input.path().join("trip/gray.png"),
    )
    .unwrap();
    let out = tempfile::tempdir().unwrap();
    batch(
        &["--name", "{dir}/{stem}_blur{sigma}.{ext}"],
        input.path(),
        out.path(),
        0,
    );
    let want: BTreeSet<String> = ["cat_blur1.5.jpg", "trip/gray_blur1.5.png"]
        .into_iter()
        .map(String::from)
        .collect();
    assert_eq!(files_under(out.path()), want);

    let pngs = tempfile::tempdir().unwrap();
    batch(&["--name", "{stem}.png"], input.path(), pngs.path(), 0);
    let cat = pngs.path().join("cat.png");
    let sniffed = image::ImageReader::open(&cat)
        .unwrap()
        .with_guessed_format()
        .unwrap()
        .format();
    assert_eq!(sniffed, Some(image::ImageFormat::Png), "named .png, so PNG");
}

/// Two inputs that would write one output refuse the batch before any file is written,
/// naming both, whether `--format` or `--name` brings them together, and across shards.
#[test]
fn names_that_collide_are_refused_before_anything_is_written() {
    let input = tempfile::tempdir().unwrap();
    let p = input.path();
    std::fs::create_dir_all(p.join("a")).unwrap();
    std::fs::create_dir_all(p.join("b")).unwrap();
    std::fs::copy(fixture("samples/camera-gray.png"), p.join("a/x.png")).unwrap();
    std::fs::copy(fixture("samples/chelsea.jpg"), p.join("b/x.jpg")).unwrap();
    std::fs::copy(fixture("samples/chelsea.jpg"), p.join("a/x.jpg")).unwrap();
    for args in [
        vec!["--format", "png"],
        vec!["--name", "{stem}.{ext}", "--shard", "1/2"],
        vec!["--name", "{stem}.{ext}", "--shard", "2/2"],
    ] {
        let out = tempfile::tempdir().unwrap();
        gblur()
            .arg("batch")
            .arg(p)
            .arg(out.path())
            .args(["--sigma", "2", "-q"])
            .args(&args)
            .assert()
            .code(2)
            .stderr(predicates::str::contains("would both be written to"));
        assert!(files_under(out.path()).is_empty(), "{args:?}");
    }
    for (bad, says) in [
        ("{stem}.{extension}", "unknown field"),
        ("../{stem}.{ext}", "inside OUT_DIR"),
        ("all.png", "must contain {stem}"),
    ] {
        let out = tempfile::tempdir().unwrap();
        gblur()
            .args(["batch", "--sigma", "2", "--name", bad])
            .arg(p)
            .arg(out.path())
            .assert()
            .code(2)
            .stderr(predicates::str::contains(says));
    }
}

#[test]
fn include_exclude_and_max_depth_choose_the_files() {
    let input = photo_folder();
    let out = tempfile::tempdir().unwrap();
    let v = batch(
        &["--include", "*.png", "--exclude", "day2"],
        input.path(),
        out.path(),
        1,
    );
    // gray.png, trip/g16.png and the broken trip/broken.png; nothing under day2, no JPEG.
    let want: BTreeSet<String> = ["gray.png", "trip/g16.png"].map(String::from).into();
    assert_eq!(files_under(out.path()), want);
    assert_eq!(
        (v["blurred"].as_u64(), v["failed"].as_u64()),
        (Some(2), Some(1))
    );
    let out = tempfile::tempdir().unwrap();
    let v = batch(&["--max-depth", "1"], input.path(), out.path(), 0);
    let want: BTreeSet<String> = ["cat.jpg", "gray.png"].map(String::from).into();
    assert_eq!(files_under(out.path()), want, "{v}");
    let out = tempfile::tempdir().unwrap();
    batch(&["--include", "trip/*/*.jpg"], input.path(), out.path(), 0);
    let want: BTreeSet<String> = ["trip/day2/misnamed.jpg"].map(String::from).into();
    assert_eq!(files_under(out.path()), want);
    gblur()
        .args(["batch", "in", "out", "--sigma", "2", "--exclude", "[z"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("--exclude '[z'"));
}

#[test]
fn a_dry_run_lists_every_decision_and_writes_nothing() {
    let input = photo_folder();
    let parent = tempfile::tempdir().unwrap();
    let out = parent.path().join("out");
    let plan = batch(&["--dry-run"], input.path(), &out, 0);
    assert!(!out.exists(), "a dry run creates nothing");
    assert_eq!(
        (plan["write"].as_u64(), plan["skip"].as_u64()),
        (Some(6), Some(1))
    );
    let action = |v: &Value, input: &str| {
        let files = v["files"].as_array().unwrap();
        let f = files.iter().find(|f| f["input"] == input).unwrap();
        (
            f["action"].as_str().unwrap().to_string(),
            f["reason"].as_str().unwrap().to_string(),
        )
    };
    assert_eq!(
        action(&plan, "trip/readme.txt"),
        ("skip".into(), "not an image".into())
    );
    // A real run, then a dry run with other settings: every output written would be redone.
    batch(&[], input.path(), &out, 1);
    let before = files_under(&out);
    let plan = batch(&["--dry-run", "--linear"], input.path(), &out, 0);
    assert_eq!(plan["redo"], 5, "{plan}");
    assert_eq!(action(&plan, "cat.jpg").0, "redo");
    assert_eq!(
        action(&plan, "trip/broken.png").0,
        "write",
        "it failed, so it has no output"
    );
    assert_eq!(files_under(&out), before);
    // The table names the action and the file.
    let text = gblur()
        .arg("batch")
        .arg(input.path())
        .arg(&out)
        .args(["--sigma", "1.5", "--dry-run"])
        .assert()
        .code(0);
    let text = String::from_utf8_lossy(&text.get_output().stdout).into_owned();
    assert!(
        text.contains("skip   cat.jpg (its output exists)"),
        "{text}"
    );
    assert!(text.ends_with("nothing was written\n"), "{text}");
}

#[test]
fn threads_sets_the_cpu_threads() {
    let input = photo_folder();
    let out = tempfile::tempdir().unwrap();
    let v = batch(
        &["--threads", "1", "--device", "rust"],
        input.path(),
        out.path(),
        1,
    );
    assert_eq!(v["device"], "built-in Rust (1 thread)", "{v}");
    let report = gblur()
        .arg(fixture("samples/chelsea.jpg"))
        .arg(out.path().join("one.jpg"))
        .args([
            "--sigma",
            "2",
            "--threads",
            "3",
            "--device",
            "rust",
            "--json",
        ])
        .assert()
        .success();
    let v: Value = serde_json::from_slice(&report.get_output().stdout).unwrap();
    assert_eq!(v["device"], "built-in Rust (3 threads)", "{v}");
    gblur()
        .args(["in.png", "out.png", "--sigma", "2", "--threads", "0"])
        .assert()
        .code(2);
}
