//! `gblur batch --shard auto` under a scheduler's environment, `--summary` and
//! `gblur batch-report`: the same files as `--shard K/N`, a usage error outside any
//! scheduler, and a merged report that accounts for every file exactly once.

use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;

use crate::common;
use common::{fixture, gblur};

const SCHEDULER_VARS: [&str; 8] = [
    "SLURM_ARRAY_TASK_ID",
    "SLURM_ARRAY_TASK_COUNT",
    "SLURM_ARRAY_TASK_MIN",
    "SLURM_ARRAY_TASK_MAX",
    "SLURM_ARRAY_TASK_STEP",
    "JOB_COMPLETION_INDEX",
    "GBLUR_SHARD_COUNT",
    "GBLUR_FAULT",
];

/// IN with 12 small images in two folders and a text file.
fn folder() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..12 {
        let sub = dir.path().join(format!("part{}", i % 2));
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::copy(
            fixture("tests/fixtures/rgba_halo_9x9.png"),
            sub.join(format!("img{i}.png")),
        )
        .unwrap();
    }
    std::fs::write(dir.path().join("notes.txt"), "not an image").unwrap();
    dir
}

/// `gblur batch IN OUT --sigma 1 --json -q` with `args`, in an environment with no scheduler
/// variable but those of `env`.
fn batch(
    input: &Path,
    output: &Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> assert_cmd::assert::Assert {
    let mut cmd = gblur();
    for v in SCHEDULER_VARS {
        cmd.env_remove(v);
    }
    cmd.envs(env.iter().copied())
        .arg("batch")
        .arg(input)
        .arg(output)
        .args(["--sigma", "1", "--json", "-q"])
        .args(args)
        .assert()
}

fn inputs(out: &assert_cmd::assert::Assert, outcome: &str) -> BTreeSet<String> {
    let v: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    v["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["outcome"] == outcome)
        .map(|f| f["input"].as_str().unwrap().to_string())
        .collect()
}

fn report(dir: &Path, code: i32) -> (Value, String) {
    let out = gblur()
        .arg("batch-report")
        .arg(dir)
        .arg("--json")
        .assert()
        .code(code);
    let out = out.get_output();
    (
        serde_json::from_slice(&out.stdout).unwrap(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn shard_auto_under_slurm_takes_the_same_files_as_shard_k_of_n() {
    let input = folder();
    for (id, k) in [("10", "1/3"), ("11", "2/3"), ("12", "3/3")] {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let slurm = [
            ("SLURM_ARRAY_TASK_ID", id),
            ("SLURM_ARRAY_TASK_COUNT", "3"),
            ("SLURM_ARRAY_TASK_MIN", "10"),
            ("SLURM_ARRAY_TASK_MAX", "12"),
            ("SLURM_ARRAY_TASK_STEP", "1"),
        ];
        let auto = batch(input.path(), a.path(), &["--shard", "auto"], &slurm).code(0);
        let fixed = batch(input.path(), b.path(), &["--shard", k], &[]).code(0);
        assert_eq!(
            inputs(&auto, "blurred"),
            inputs(&fixed, "blurred"),
            "task {id}"
        );
        assert!(!inputs(&fixed, "blurred").is_empty(), "shard {k} is empty");
    }
}

#[test]
fn shard_auto_under_a_kubernetes_indexed_job_takes_the_same_files() {
    let input = folder();
    let (a, b, c) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let index = [("JOB_COMPLETION_INDEX", "1")];
    let flag = batch(
        input.path(),
        a.path(),
        &["--shard", "auto", "--shard-count", "3"],
        &index,
    );
    let var = batch(
        input.path(),
        b.path(),
        &["--shard", "auto"],
        &[("JOB_COMPLETION_INDEX", "1"), ("GBLUR_SHARD_COUNT", "3")],
    );
    let fixed = batch(input.path(), c.path(), &["--shard", "2/3"], &[]);
    let fixed = inputs(&fixed.code(0), "blurred");
    assert_eq!(inputs(&flag.code(0), "blurred"), fixed);
    assert_eq!(inputs(&var.code(0), "blurred"), fixed);
}

#[test]
fn shard_auto_outside_a_scheduler_is_a_usage_error_naming_the_variables() {
    let (input, output) = (folder(), tempfile::tempdir().unwrap());
    let out = batch(input.path(), output.path(), &["--shard", "auto"], &[]).code(2);
    let err = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    for name in &SCHEDULER_VARS[..3] {
        assert!(err.contains(name), "{err}");
    }
    assert!(err.contains("JOB_COMPLETION_INDEX"), "{err}");
    assert_eq!(
        std::fs::read_dir(output.path()).unwrap().count(),
        0,
        "nothing written"
    );
    // An array with a step is refused the same way, saying how to submit it.
    let stepped = [
        ("SLURM_ARRAY_TASK_ID", "2"),
        ("SLURM_ARRAY_TASK_COUNT", "3"),
        ("SLURM_ARRAY_TASK_MIN", "0"),
        ("SLURM_ARRAY_TASK_MAX", "4"),
        ("SLURM_ARRAY_TASK_STEP", "2"),
    ];
    let out = batch(input.path(), output.path(), &["--shard", "auto"], &stepped).code(2);
    let err = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(err.contains("--array=0-(N-1)"), "{err}");
}

/// Runs the 3 shards of `input` with `--summary`, into `out` and `summaries`.
fn three_shards(input: &Path, out: &Path, summaries: &Path) {
    for k in ["1/3", "2/3", "3/3"] {
        let s = summaries.to_str().unwrap();
        batch(input, out, &["--shard", k, "--summary", s], &[]).code(0);
    }
}

#[test]
fn summaries_of_three_shards_account_for_every_file_exactly_once() {
    let (input, out, sums) = (
        folder(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    three_shards(input.path(), out.path(), sums.path());
    let (v, table) = report(sums.path(), 0);
    assert_eq!(v["complete"], true, "{table}");
    assert_eq!(v["files"], 13, "12 images and the text file: {table}");
    assert_eq!(v["blurred"], 12);
    assert_eq!(v["skipped_not_image"], 1);
    assert_eq!(v["present"].as_array().unwrap().len(), 3);
    let shares: u64 = v["present"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["files"].as_u64().unwrap())
        .sum();
    assert_eq!(shares, 13, "each file in one shard only");
    assert!(table.contains("3 of 3 present"), "{table}");
    let names: BTreeSet<String> = std::fs::read_dir(sums.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let expected: BTreeSet<String> = (1..=3).map(|k| format!("shard-{k}-of-3.json")).collect();
    assert_eq!(names, expected, "one record per shard, no temporary file");

    // A re-run skips every output and still accounts for every file.
    three_shards(input.path(), out.path(), sums.path());
    let (v, _) = report(sums.path(), 0);
    assert_eq!(v["skipped_existing"], 12);
    assert_eq!(v["blurred"], 0);
}

#[test]
fn a_missing_shard_summary_fails_the_report_and_names_it() {
    let (input, out, sums) = (
        folder(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    three_shards(input.path(), out.path(), sums.path());
    std::fs::remove_file(sums.path().join("shard-2-of-3.json")).unwrap();
    let (v, table) = report(sums.path(), 1);
    assert_eq!(v["missing"], serde_json::json!([2]));
    assert!(table.contains("missing   shard 2 of 3"), "{table}");
    assert_eq!(v["complete"], false);
}

#[test]
fn a_file_in_two_summaries_fails_the_report() {
    let (input, out, sums) = (
        folder(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    three_shards(input.path(), out.path(), sums.path());
    // Shard 2's record claims a file of shard 1.
    let read = |k| -> Value {
        let p = sums.path().join(format!("shard-{k}-of-3.json"));
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
    };
    let (one, mut two) = (read(1), read(2));
    let stolen = one["files"][0].clone();
    two["files"].as_array_mut().unwrap().push(stolen.clone());
    std::fs::write(
        sums.path().join("shard-2-of-3.json"),
        serde_json::to_string(&two).unwrap(),
    )
    .unwrap();
    let (v, table) = report(sums.path(), 1);
    let dup = &v["duplicated"][0];
    assert_eq!(dup[0], stolen["path"], "{table}");
    assert_eq!(dup[1], serde_json::json!(["1/3", "2/3"]));
    assert!(table.contains("twice"), "{table}");
}

#[test]
fn a_failed_file_fails_the_report_and_is_listed() {
    let (input, out, sums) = (
        folder(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    std::fs::copy(
        fixture("tests/fixtures/truncated.png"),
        input.path().join("broken.png"),
    )
    .unwrap();
    for k in ["1/2", "2/2"] {
        let s = sums.path().to_str().unwrap();
        // The shard that owns broken.png exits 1; the other 0.
        let code = batch(
            input.path(),
            out.path(),
            &["--shard", k, "--summary", s],
            &[],
        )
        .get_output()
        .status
        .code();
        assert!(matches!(code, Some(0 | 1)), "{code:?}");
    }
    let (v, table) = report(sums.path(), 1);
    assert_eq!(v["failed"][0]["path"], "broken.png", "{table}");
    assert!(table.contains("failed    shard"), "{table}");
}

#[test]
fn batch_report_on_a_folder_without_summaries_is_a_usage_error() {
    let empty = tempfile::tempdir().unwrap();
    let out = gblur()
        .arg("batch-report")
        .arg(empty.path())
        .assert()
        .code(2);
    let err = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(err.contains("no shard summaries"), "{err}");
}
