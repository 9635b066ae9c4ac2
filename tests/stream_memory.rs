//! Large images through the strip engine within `--max-memory`, measured as the peak resident
//! set of the gblur process. This binary holds only these tests: Linux counts the memory of
//! the process that spawns a child in the child's peak (the spawner's address space is the
//! child's until it execs), so no test here holds an image of its own.

#[path = "it/common/mod.rs"]
mod common;
#[path = "it/support/strips.rs"]
mod strips;
use common::gblur;
use image::ImageDecoder;
use strips::{large_png, noise_png, run_measured};

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

/// A JPEG with a long trailer (a motion photo's video) is read up to its end marker: the
/// trailer counts for nothing against the budget, which holds.
#[test]
fn a_jpegs_trailer_is_never_read() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("motion.jpg");
    // Written a piece at a time: this process's memory counts in its children's peaks.
    std::fs::copy(common::fixture("samples/chelsea.jpg"), &input).unwrap();
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&input)
        .unwrap();
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..80 {
        std::io::Write::write_all(&mut file, &zeros).unwrap();
    }
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("gblur"));
    cmd.arg(&input).arg(dir.path().join("out.jpg")).args([
        "--sigma",
        "2",
        "--max-memory",
        "16",
        "-q",
    ]);
    let (code, err, peak) = run_measured(&mut cmd);
    assert_eq!(code, 0, "{err}");
    assert!(peak <= 16 << 20, "peak {} MiB", peak >> 20);
}

/// An endless stdin is refused once it passes what the budget leaves, with the process's peak
/// within the budget.
#[test]
fn stdin_is_read_within_max_memory() {
    let dir = tempfile::tempdir().unwrap();
    for budget in [32u64, 64] {
        let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("gblur"));
        cmd.arg("-")
            .arg(format!("png:{}", dir.path().join("o.png").display()))
            .args(["--sigma", "5", "--max-memory", &budget.to_string()])
            .stdin(std::fs::File::open("/dev/zero").unwrap());
        let (code, err, peak) = run_measured(&mut cmd);
        assert_eq!(code, 1, "{err}");
        assert!(err.contains("stdin: more than the memory limit"), "{err}");
        assert!(
            peak <= budget << 20,
            "{} MiB at --max-memory {budget}",
            peak >> 20
        );
    }
}

/// The strip engine's whole job stays within small budgets by peak resident memory, whatever
/// the codecs hold (a 16 000-pixel gray row makes a JPEG stripe of 4 MB); below the least
/// budget the job needs it is refused in one line that names that budget, which then runs.
#[test]
fn small_budgets_hold_or_name_the_least_that_would() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name);
    large_png(&path("wide.png"), 16_000, 1_500);
    gblur()
        .args([path("wide.png").as_os_str(), path("wide.jpg").as_os_str()])
        .args([
            "--sigma", "2", "--engine", "strips", "--device", "rust", "-q",
        ])
        .assert()
        .success();
    let run = |input: &str, output: &str, budget: u64, sigma: &str| {
        let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("gblur"));
        cmd.args([path(input).as_os_str(), path(output).as_os_str()])
            .args([
                "--sigma", sigma, "--engine", "strips", "--device", "rust", "-q",
            ])
            .args(["--max-memory", &budget.to_string()]);
        run_measured(&mut cmd)
    };
    for (input, output) in [
        ("wide.png", "o.png"),
        ("wide.jpg", "o.jpg"),
        ("wide.png", "o.tif"),
    ] {
        for sigma in ["5", "50"] {
            // From a budget under what the job needs: the refusal names the least budget.
            let (code, err, _) = run(input, output, 16, sigma);
            let named = match code {
                0 => 16,
                _ => {
                    assert_eq!(code, 1, "{err}");
                    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
                    let at = err.find("needs --max-memory ").expect(&err) + 19;
                    let digits: String =
                        err[at..].chars().take_while(char::is_ascii_digit).collect();
                    digits.parse::<u64>().unwrap()
                }
            };
            for budget in [named, named.max(32), 64] {
                let (code, err, peak) = run(input, output, budget, sigma);
                assert_eq!(
                    code, 0,
                    "{input} → {output}, sigma {sigma}, {budget} MiB: {err}"
                );
                assert!(
                    peak <= budget << 20,
                    "{input} → {output}, sigma {sigma}: {} MiB at --max-memory {budget}",
                    peak >> 20
                );
            }
        }
    }
}

/// A HEIC or AVIF output's encoder (libheif's, which holds a copy of the image and its own
/// buffers) counts against the budget: below what it needs beside the process, the job is
/// refused in one line that names the least budget, at which it runs within it.
#[test]
fn heif_encoders_stay_within_max_memory() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("photo.png");
    noise_png(&input, (1500, 1000), 3);
    for out in ["o.heic", "o.avif"] {
        let run = |budget: u64| {
            let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("gblur"));
            cmd.arg(&input)
                .arg(dir.path().join(out))
                .args(["--sigma", "2", "--device", "rust", "-q"])
                .args(["--max-memory", &budget.to_string()]);
            run_measured(&mut cmd)
        };
        let (code, err, _) = run(24);
        assert_eq!(code, 1, "{out}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        let at = err.find("needs --max-memory ").expect(&err) + 19;
        let digits: String = err[at..].chars().take_while(char::is_ascii_digit).collect();
        let named: u64 = digits.parse().unwrap();
        assert!(!dir.path().join(out).exists(), "{out} was written");
        let (code, err, peak) = run(named);
        assert_eq!(code, 0, "{out} at {named} MiB: {err}");
        assert!(
            peak <= named << 20,
            "{out}: {} MiB at --max-memory {named}",
            peak >> 20
        );
    }
}
