//! Symbolic links and OUT_DIR: links are not followed unless asked, loops and dangling links
//! survive `--follow-links`, outputs never leave OUT_DIR through a linked folder, and odd file
//! names are mirrored exactly.

use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::common;
use crate::faults::stderr;
use common::{files_under, fixture, gblur};

/// IN with a real image, a link to it, a link out of IN, a link to a folder out of IN, a
/// link loop and a dangling link; and the folder outside.
fn linked_folder() -> (tempfile::TempDir, PathBuf, PathBuf) {
    use std::os::unix::fs::symlink;
    let root = tempfile::tempdir().unwrap();
    let input = root.path().join("in");
    let outside = root.path().join("outside");
    std::fs::create_dir_all(input.join("sub")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::copy(fixture("samples/camera-gray.png"), input.join("real.png")).unwrap();
    std::fs::copy(
        fixture("tests/fixtures/gray16_7x5.png"),
        outside.join("secret.png"),
    )
    .unwrap();
    symlink("real.png", input.join("link-in.png")).unwrap();
    symlink("../../outside/secret.png", input.join("sub/link-out.png")).unwrap();
    symlink("../outside", input.join("linked-folder")).unwrap();
    symlink("..", input.join("sub/loop")).unwrap();
    symlink("nowhere.png", input.join("dangling.png")).unwrap();
    (root, input, outside)
}

fn batch_json(input: &Path, out: &Path, extra: &[&str]) -> (Option<i32>, Value, String) {
    let o = gblur()
        .arg("batch")
        .arg(input)
        .arg(out)
        .args(["--sigma", "2", "--device", "rust", "--json"])
        .args(extra)
        .output()
        .unwrap();
    let v = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
    (o.status.code(), v, stderr(&o))
}

#[test]
fn symbolic_links_are_not_followed_unless_asked() {
    let (root, input, _) = linked_folder();
    let out = root.path().join("out");
    let (code, v, err) = batch_json(&input, &out, &[]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(v["blurred"], 1);
    assert_eq!(v["skipped_links"], 5);
    assert_eq!(files_under(&out), BTreeSet::from(["real.png".to_string()]));
    for link in [
        "link-in.png",
        "sub/link-out.png",
        "linked-folder",
        "sub/loop",
        "dangling.png",
    ] {
        assert!(
            err.contains(&format!("{link}: symbolic link, not followed")),
            "{link} not named: {err}"
        );
    }
}

#[test]
fn follow_links_follows_them_and_survives_loops_and_dangling_links() {
    let (root, input, outside) = linked_folder();
    let secret = std::fs::read(outside.join("secret.png")).unwrap();
    let out = root.path().join("out");
    let (code, v, err) = batch_json(&input, &out, &["--follow-links"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(v["blurred"], 4, "{v}");
    assert_eq!(v["skipped_links"], 2, "{v}");
    assert_eq!(
        files_under(&out),
        [
            "real.png",
            "link-in.png",
            "sub/link-out.png",
            "linked-folder/secret.png"
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    );
    assert!(err.contains("sub/loop: symbolic link loop"), "{err}");
    assert!(
        err.contains("dangling.png: symbolic link to nothing"),
        "{err}"
    );
    // Followed links are read, never written: outputs are regular files under OUT_DIR.
    assert_eq!(std::fs::read(outside.join("secret.png")).unwrap(), secret);
    assert!(!out
        .join("link-in.png")
        .symlink_metadata()
        .unwrap()
        .is_symlink());
}

#[test]
fn outputs_never_leave_out_dir_through_a_linked_folder() {
    use std::os::unix::fs::symlink;
    let root = tempfile::tempdir().unwrap();
    let input = root.path().join("in");
    std::fs::create_dir_all(input.join("trip")).unwrap();
    std::fs::copy(fixture("samples/camera-gray.png"), input.join("trip/a.png")).unwrap();
    std::fs::copy(fixture("samples/camera-gray.png"), input.join("b.png")).unwrap();
    let elsewhere = root.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let out = root.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    symlink(&elsewhere, out.join("trip")).unwrap();
    // And an existing output that is a link to a file outside: replaced, never written through.
    let victim = root.path().join("victim.png");
    std::fs::write(&victim, "victim").unwrap();
    symlink(&victim, out.join("b.png")).unwrap();

    let (code, v, err) = batch_json(&input, &out, &["--overwrite"]);
    assert_eq!(code, Some(1), "{err}");
    assert_eq!(
        (v["blurred"].as_u64(), v["failed"].as_u64()),
        (Some(1), Some(1))
    );
    assert!(
        err.contains("trip/a.png: not written:") && err.contains("is a symbolic link"),
        "{err}"
    );
    assert!(files_under(&elsewhere).is_empty(), "wrote through the link");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "victim");
    let b = out.join("b.png");
    assert!(!b.symlink_metadata().unwrap().is_symlink());
    image::open(&b).unwrap();
}

#[test]
fn odd_file_names_are_mirrored_exactly_under_out_dir() {
    let input = tempfile::tempdir().unwrap();
    let names = [
        "with space.png",
        "ünïcödé ñame.png",
        "-looks-like-a-flag.png",
        "..two-dots-prefix.png",
        "a.b.c.png",
        "dir with space/.hidden.png",
        "日本/写真.png",
    ];
    for n in names {
        let p = input.path().join(n);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::copy(fixture("tests/fixtures/rgba_halo_9x9.png"), &p).unwrap();
    }
    let out = tempfile::tempdir().unwrap();
    let nested = out.path().join("o");
    let (code, v, err) = batch_json(input.path(), &nested, &[]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(v["blurred"], names.len());
    let want: BTreeSet<String> = names.iter().map(|s| s.to_string()).collect();
    assert_eq!(files_under(&nested), want);
    assert_eq!(
        files_under(out.path()).len(),
        names.len(),
        "nothing written beside OUT_DIR"
    );
}
