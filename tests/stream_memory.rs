//! Large images through the strip engine within `--max-memory`, measured as the peak resident
//! set of the gblur process. This binary holds only these tests: Linux counts the memory of
//! the process that spawns a child in the child's peak (the spawner's address space is the
//! child's until it execs), so no test here holds an image of its own.

mod common;
#[path = "support/strips.rs"]
mod strips;
use common::gblur;
use image::ImageDecoder;
use strips::{large_png, run_measured};

#[test]
fn a_hundred_megapixels_stay_within_max_memory_at_any_sigma() {
    let dir = tempfile::tempdir().unwrap();
    let (input, out) = (dir.path().join("big.png"), dir.path().join("out.png"));
    large_png(&input, 10_000, 10_000);
    // The job at `sigma` within 64 MiB: its stderr.
    let within_budget = |sigma: &str| {
        let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("gblur"));
        cmd.args([input.as_os_str(), out.as_os_str()]).args([
            "--sigma",
            sigma,
            "--device",
            "rust",
            "--max-memory",
            "64",
        ]);
        let (code, err, peak) = run_measured(&mut cmd);
        assert_eq!(code, 0, "{err}");
        assert!(
            peak < 64 << 20,
            "sigma {sigma}: peak RSS {} MiB",
            peak >> 20
        );
        err
    };
    // auto streams it: 100 MB decoded is over the 64 MiB budget.
    let err = within_budget("20");
    assert!(err.contains("strip engine"), "{err}");
    let file = std::io::BufReader::new(std::fs::File::open(&out).unwrap());
    let d = image::codecs::png::PngDecoder::new(file).unwrap();
    assert_eq!(d.dimensions(), (10_000, 10_000));
    // Sigma 1000 reaches 5503 rows, a window of 55 MB: the exact two-pass method runs instead.
    let err = within_budget("1000");
    assert!(err.contains("exact two-pass method"), "{err}");
}

#[test]
fn a_large_jpeg_stays_within_max_memory() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name);
    // Made without holding the image in this process: a PNG row by row, then into JPEG by
    // gblur's strip engine.
    let (w, h) = (8000u32, 8000u32);
    large_png(&path("big.png"), w, h);
    gblur()
        .args([path("big.png").as_os_str(), path("big.jpg").as_os_str()])
        .args([
            "--sigma",
            "1",
            "--method",
            "recursive",
            "--engine",
            "strips",
        ])
        .args(["--device", "rust"])
        .assert()
        .success();
    // auto streams it: 64 MB decoded is over the 48 MiB budget.
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("gblur"));
    cmd.args([path("big.jpg").as_os_str(), path("out.jpg").as_os_str()])
        .args(["--sigma", "20", "--device", "rust", "--max-memory", "48"]);
    let (code, err, peak) = run_measured(&mut cmd);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("strip engine"), "{err}");
    assert!(peak < 48 << 20, "peak RSS {} MiB", peak >> 20);
    let file = std::io::BufReader::new(std::fs::File::open(path("out.jpg")).unwrap());
    let d = image::codecs::jpeg::JpegDecoder::new(file).unwrap();
    assert_eq!(d.dimensions(), (w, h));
}
