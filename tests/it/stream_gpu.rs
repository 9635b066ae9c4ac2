//! The strip engine on an OpenCL device (PoCL's CPU device in CI): bands of rows blurred by
//! the blocked 8-bit pipeline with their reach above and below, against the whole image on the
//! Rust path, within one step. Bands are forced small (`GBLUR_BAND_ROWS`) so that small
//! images cross many of them, the reach runs past the image, and the last band is short.

use crate::common;
use crate::support::strips;
use common::gblur;
use strips::{image, max_steps, run};

/// `--engine strips` on the OpenCL device with bands of `rows` rows.
fn on_device(
    input: &std::path::Path,
    output: &std::path::Path,
    sigma: f64,
    rows: usize,
    extra: &[&str],
) -> String {
    let assert = gblur()
        .env("GBLUR_BAND_ROWS", rows.to_string())
        .args([input.as_os_str(), output.as_os_str()])
        .args(["--sigma", &sigma.to_string(), "--method", "recursive"])
        .args([
            "--device",
            "cpu",
            "--pipeline",
            "blocked",
            "--engine",
            "strips",
        ])
        .args(extra)
        .assert()
        .success();
    String::from_utf8_lossy(&assert.get_output().stderr).into_owned()
}

#[test]
fn device_bands_match_the_whole_image() {
    common::require_opencl();
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name);
    let sizes = [(37, 29), (1, 70), (61, 1), (130, 301)];
    let mut cases = 0;
    // Every size with both sigmas, and every channel count with both sigmas and both colour
    // handlings (a covering set: each case is a process that builds the device's programs
    // for its own defines, seconds apiece on a CPU device).
    for (i, &(w, h)) in sizes.iter().enumerate() {
        for (k, sigma) in [2.0, 30.0].into_iter().enumerate() {
            let channels = 1 + (i + 2 * k) % 4;
            image(w, h, channels, false, (i * 10 + channels) as u64)
                .save(path("in.png"))
                .unwrap();
            // Bands of one row, of fewer rows than the reach and of more; linear light
            // every other case.
            let rows = [1, 16, 100][cases % 3];
            let linear = cases % 2 == 1;
            cases += 1;
            let extra: &[&str] = if linear { &["--linear"] } else { &[] };
            run(
                &path("in.png"),
                &path("whole.png"),
                "whole",
                sigma,
                16,
                extra,
            );
            let said = on_device(&path("in.png"), &path("bands.png"), sigma, rows, extra);
            assert!(said.contains("device bands of"), "{said}");
            let (a, b) = (
                image::open(path("whole.png")).unwrap(),
                image::open(path("bands.png")).unwrap(),
            );
            let d = max_steps(&a, &b);
            let what = format!("{w}x{h}x{channels} sigma {sigma} linear {linear} bands of {rows}");
            assert!(d <= 1, "{what}: {d} steps");
        }
    }
}

#[test]
fn sixteen_bit_images_stream_on_the_rust_path_and_say_so() {
    common::require_opencl();
    let dir = tempfile::tempdir().unwrap();
    let (input, output) = (dir.path().join("in.png"), dir.path().join("out.png"));
    image(40, 30, 3, true, 5).save(&input).unwrap();
    let said = on_device(&input, &output, 3.0, 16, &[]);
    assert!(
        said.contains("8-bit images in bands") && said.contains("Rust path"),
        "{said}"
    );
    run(&input, &dir.path().join("whole.png"), "whole", 3.0, 16, &[]);
    let (a, b) = (
        image::open(dir.path().join("whole.png")).unwrap(),
        image::open(&output).unwrap(),
    );
    assert!(max_steps(&a, &b) <= 1);
}

#[test]
fn an_image_larger_than_the_device_allows_goes_through_in_bands() {
    common::require_opencl();
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name);
    // 400 × 300 RGB: 360 KB as bytes, 1.4 MB as the f32 intermediate, over a 1 MiB device.
    image(400, 300, 3, false, 8).save(path("in.png")).unwrap();
    let assert = gblur()
        .env("GBLUR_MAX_ALLOC_MIB", "1")
        .args([path("in.png").as_os_str(), path("bands.png").as_os_str()])
        .args(["--sigma", "6", "--device", "cpu", "--pipeline", "blocked"])
        .args(["--engine", "strips"])
        .assert()
        .success();
    let said = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
    let band: usize = said
        .split("device bands of ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{said}"));
    assert!(band < 300, "{said}");
    run(&path("in.png"), &path("whole.png"), "whole", 6.0, 16, &[]);
    let (a, b) = (
        image::open(path("whole.png")).unwrap(),
        image::open(path("bands.png")).unwrap(),
    );
    assert!(max_steps(&a, &b) <= 1);
}
