//! The strip engine (`--engine strips`) through the command: the same pixels as the
//! whole-image path within one step, with strips forced tiny (`GBLUR_STRIP_ROWS`) so that
//! small images cross many strips, the reach runs past the image and the last strip is
//! short; the same metadata; a one-line refusal of what it does not run; no output after a
//! failure (`stream_memory.rs`: large images within `--max-memory`).

use crate::common;
use crate::support::strips;
use common::gblur;
use image::{DynamicImage, ImageDecoder};
use std::path::Path;
use strips::{
    assert_refused, check_metadata_like_the_whole_image, files_apart, image, max_steps,
    metadata_of, png_with_metadata, run, run_two_pass, LAYOUTS,
};

#[test]
fn strips_match_the_whole_image() {
    let dir = tempfile::tempdir().unwrap();
    let (input, whole, strips) = (
        dir.path().join("in.png"),
        dir.path().join("whole.png"),
        dir.path().join("strips.png"),
    );
    // Odd sizes; one row and one column; heights of many strips and of less than the reach.
    let sizes = [(37, 29), (1, 70), (61, 1), (130, 301)];
    let mut cases = 0;
    for (i, &(w, h)) in sizes.iter().enumerate() {
        for (j, &(channels, sixteen)) in LAYOUTS.iter().enumerate() {
            image(w, h, channels, sixteen, (i * 10 + j) as u64)
                .save(&input)
                .unwrap();
            for sigma in [0.5, 3.0, 20.0, 100.0] {
                let rows = [16, 48, 256][cases % 3];
                run(&input, &whole, "whole", sigma, rows, &[]);
                run(&input, &strips, "strips", sigma, rows, &[]);
                let (a, b) = (image::open(&whole).unwrap(), image::open(&strips).unwrap());
                let d = max_steps(&a, &b);
                assert!(
                    d <= 1,
                    "{w}x{h} {:?} sigma {sigma} strips of {rows}: {d} steps",
                    a.color()
                );
                cases += 1;
            }
        }
    }
}

#[test]
fn the_exact_two_pass_method_matches_the_whole_image() {
    // Forced (`GBLUR_TWO_PASS`): every layout, odd sizes, one row, strips shorter and longer
    // than the image, sigma past the image's height, states in memory and in a file; PNG and
    // JPEG read twice.
    let dir = tempfile::tempdir().unwrap();
    let d = |name: &str| dir.path().join(name);
    let sizes = [(37, 29), (61, 1), (130, 301)];
    let mut cases = 0;
    for (i, &(w, h)) in sizes.iter().enumerate() {
        for (j, &(channels, sixteen)) in LAYOUTS.iter().enumerate() {
            image(w, h, channels, sixteen, (i * 10 + j) as u64)
                .save(d("in.png"))
                .unwrap();
            for sigma in [3.0, 100.0, 1000.0] {
                let rows = [16, 48, 256][cases % 3];
                run(&d("in.png"), &d("whole.png"), "whole", sigma, rows, &[]);
                let spill = cases % 2 == 1;
                run_two_pass(&d("in.png"), &d("exact.png"), (sigma, rows), spill, &[]);
                let steps = files_apart(&d("whole.png"), &d("exact.png"));
                assert!(
                    steps <= 1,
                    "{w}x{h} {channels} channels, 16-bit {sixteen}, sigma {sigma} strips of {rows}: {steps} steps"
                );
                cases += 1;
            }
        }
    }
    image(90, 200, 4, false, 7).save(d("in.png")).unwrap();
    run(
        &d("in.png"),
        &d("whole.png"),
        "whole",
        60.0,
        16,
        &["--linear"],
    );
    run_two_pass(
        &d("in.png"),
        &d("exact.png"),
        (60.0, 16),
        true,
        &["--linear"],
    );
    assert!(
        files_apart(&d("whole.png"), &d("exact.png")) <= 1,
        "--linear"
    );
    image(300, 200, 3, false, 8).save(d("in.jpg")).unwrap();
    run(&d("in.jpg"), &d("window.png"), "strips", 400.0, 48, &[]);
    run_two_pass(&d("in.jpg"), &d("exact.png"), (400.0, 48), false, &[]);
    assert!(files_apart(&d("window.png"), &d("exact.png")) <= 1, "JPEG");
}

/// gblur at sigma 1000 on `input` within `max_memory` MiB (`extra` arguments after), which must
/// succeed; returns its stdout and its stderr.
fn sigma_1000_within(
    input: &Path,
    output: &Path,
    max_memory: &str,
    extra: &[&str],
) -> (String, String) {
    let assert = gblur()
        .args([input.as_os_str(), output.as_os_str()])
        .args(["--sigma", "1000", "--engine", "strips", "--device", "rust"])
        .args(["--max-memory", max_memory])
        .args(extra)
        .assert()
        .success();
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    (
        text(&assert.get_output().stdout),
        text(&assert.get_output().stderr),
    )
}

#[test]
fn a_window_over_the_budget_runs_the_exact_two_pass_method() {
    let dir = tempfile::tempdir().unwrap();
    let d = |name: &str| dir.path().join(name);
    image(2000, 3000, 3, false, 5).save(d("in.png")).unwrap();
    // Sigma 1000 reaches 5503 rows: a window of the whole image and its scratch, 21 MB, over
    // the 10–12.5 MiB share of a 32 MiB budget beside the process's 7–12 MiB; the two-pass
    // method needs 7 MB with its states in memory.
    let (json, _) = sigma_1000_within(&d("in.png"), &d("exact.png"), "32", &["--json"]);
    let report: serde_json::Value = serde_json::from_str(&json).unwrap();
    let text = report.to_string();
    assert!(text.contains("exact two-pass method"), "{text}");
    assert!(text.contains("pass 1"), "{text}");
    assert!(!text.contains("temporary file"), "{text}");
    run(&d("in.png"), &d("whole.png"), "whole", 1000.0, 256, &[]);
    assert!(files_apart(&d("whole.png"), &d("exact.png")) <= 1);
}

#[test]
fn states_over_the_budget_go_to_a_temporary_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = |name: &str| dir.path().join(name);
    image(4000, 15_000, 1, false, 6).save(d("in.png")).unwrap();
    // Sigma 1000 on a wide gray image at a 24 MiB budget, of which the process holds 7–12 MiB
    // and the codecs and rows in flight 11 MiB: the window needs 43 MiB, the two-pass method
    // 7 MiB with its states in memory, over the 0–4 MiB share; a window of 64 rows with its
    // scratch, 1.4 MB, fits.
    let (_, err) = sigma_1000_within(&d("in.png"), &d("exact.png"), "24", &[]);
    assert!(err.contains("kept in a temporary file"), "{err}");
    run(&d("in.png"), &d("whole.png"), "whole", 1000.0, 256, &[]);
    assert!(files_apart(&d("whole.png"), &d("exact.png")) <= 1);
    let mut left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    left.sort();
    assert_eq!(left, ["exact.png", "in.png", "whole.png"]);
}

#[test]
fn linear_light_matches_the_whole_image() {
    let dir = tempfile::tempdir().unwrap();
    let (input, whole, strips) = (
        dir.path().join("in.png"),
        dir.path().join("whole.png"),
        dir.path().join("strips.png"),
    );
    image(90, 200, 4, false, 7).save(&input).unwrap();
    run(&input, &whole, "whole", 6.0, 16, &["--linear"]);
    run(&input, &strips, "strips", 6.0, 16, &["--linear"]);
    let (a, b) = (image::open(&whole).unwrap(), image::open(&strips).unwrap());
    assert!(max_steps(&a, &b) <= 1);
}

#[test]
fn writes_the_metadata_the_whole_image_path_writes() {
    let dir = tempfile::tempdir().unwrap();
    check_metadata_like_the_whole_image(dir.path(), "png", |p| {
        metadata_of(p, image::codecs::png::PngDecoder::new)
    });
}

#[test]
fn refuses_what_it_does_not_run_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.png");
    image(20, 20, 3, false, 1).save(&input).unwrap();
    let out = dir.path().join("out.png");
    let cases: [(&[&str], &str); 5] = [
        (&["--region", "0,0,5,5"], "--region"),
        (&["--edge", "reflect"], "clamp"),
        (&["--method", "fir"], "recursive"),
        (
            &["--device", "cpu", "--pipeline", "transpose"],
            "blocked pipeline",
        ),
        (&[], "writes PNG, TIFF and JPEG only"),
    ];
    for (i, (extra, says)) in cases.iter().enumerate() {
        let target = if i == 4 {
            dir.path().join("out.webp")
        } else {
            out.clone()
        };
        assert_refused(&input, &target, extra, says);
    }
}

#[test]
fn a_truncated_input_leaves_no_output() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.png");
    image(300, 400, 3, false, 2).save(&input).unwrap();
    let bytes = std::fs::read(&input).unwrap();
    std::fs::write(&input, &bytes[..bytes.len() * 2 / 3]).unwrap();
    let out = dir.path().join("out.png");
    let assert = gblur()
        .env("GBLUR_STRIP_ROWS", "16")
        .args([input.as_os_str(), out.as_os_str()])
        .args(["--sigma", "3", "--engine", "strips", "--device", "rust"])
        .assert()
        .failure()
        .code(1);
    let err = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
    assert!(err.contains("in.png") && err.contains("decode"), "{err}");
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(left.len(), 1, "only the input is left: {left:?}");
}

/// A delay before the bar that no job here reaches (an hour): a job shorter than the delay
/// shows no bar, however loaded the machine.
const NEVER_MS: &str = "3600000";

/// Runs gblur on a terminal (util-linux's `script` gives it one) and returns what it printed
/// there; None where `script` is missing.
fn on_a_terminal(args: &[&str], progress_after_ms: Option<&str>) -> Option<String> {
    let line = std::iter::once(env!("CARGO_BIN_EXE_gblur"))
        .chain(args.iter().copied())
        .map(|a| format!("'{a}'"))
        .collect::<Vec<_>>()
        .join(" ");
    let mut cmd = std::process::Command::new("script");
    cmd.args(["-qec", &line, "/dev/null"])
        .env("GBLUR_STRIP_ROWS", "16")
        .env_remove("GBLUR_PROGRESS_AFTER_MS");
    if let Some(ms) = progress_after_ms {
        cmd.env("GBLUR_PROGRESS_AFTER_MS", ms);
    }
    let out = cmd.output().ok()?;
    assert!(out.status.success(), "{line}: {out:?}");
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// One long image shows its rows, MP/s and time left on a terminal once it has run a while
/// (here at once, through the test hook); a job shorter than the delay, and any job under
/// --quiet, shows none.
#[test]
fn a_long_image_shows_its_progress_on_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let (input, output) = (dir.path().join("in.png"), dir.path().join("out.png"));
    image(300, 400, 3, false, 7).save(&input).unwrap();
    let (i, o) = (input.to_str().unwrap(), output.to_str().unwrap());
    let args = [
        i, o, "--sigma", "5", "--engine", "strips", "--device", "rust",
    ];
    let shown = on_a_terminal(&args, Some("0"))
        .expect("util-linux's `script`, which runs gblur on a terminal");
    assert!(
        shown.contains("/400 rows") && shown.contains("MP/s") && shown.contains("left"),
        "{shown}"
    );
    let short = on_a_terminal(&args, Some(NEVER_MS)).unwrap();
    assert!(!short.contains("/400 rows"), "{short}");
    let quiet = on_a_terminal(&[&args[..], &["-q"]].concat(), Some("0")).unwrap();
    assert!(quiet.is_empty(), "{quiet}");
}

/// A whole-image job shows its stage on a terminal once it has run a while, in the same
/// layout; one shorter than the delay shows nothing.
#[test]
fn a_long_whole_image_job_shows_its_stage_on_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let (input, output) = (dir.path().join("in.png"), dir.path().join("out.png"));
    image(300, 400, 3, false, 7).save(&input).unwrap();
    let (i, o) = (input.to_str().unwrap(), output.to_str().unwrap());
    let args = [
        i, o, "--sigma", "5", "--engine", "whole", "--device", "rust",
    ];
    let shown = on_a_terminal(&args, Some("0")).unwrap();
    assert!(shown.contains("/3 stages"), "{shown}");
    assert!(["decode", "blur", "encode and write"]
        .iter()
        .any(|s| shown.contains(s)));
    let short = on_a_terminal(&args, Some(NEVER_MS)).unwrap();
    assert!(!short.contains("stages"), "{short}");
}

/// Writes `img` (8 or 16 bits, gray, RGB or RGBA) as a strip TIFF with `rows_per_strip`, so
/// that a small image still spans many strips.
fn write_tiff(path: &Path, img: &DynamicImage, rows_per_strip: u32) {
    use tiff::encoder::{colortype, TiffEncoder};
    let file = std::fs::File::create(path).unwrap();
    let mut e = TiffEncoder::new(file).unwrap();
    let (w, h) = (img.width(), img.height());
    macro_rules! put {
        ($c:ty, $data:expr) => {{
            let mut image = e.new_image::<$c>(w, h).unwrap();
            image.rows_per_strip(rows_per_strip).unwrap();
            image.write_data($data).unwrap();
        }};
    }
    match img {
        DynamicImage::ImageLuma8(b) => put!(colortype::Gray8, b.as_raw()),
        DynamicImage::ImageRgb8(b) => put!(colortype::RGB8, b.as_raw()),
        DynamicImage::ImageRgba8(b) => put!(colortype::RGBA8, b.as_raw()),
        DynamicImage::ImageLuma16(b) => put!(colortype::Gray16, b.as_raw()),
        DynamicImage::ImageRgb16(b) => put!(colortype::RGB16, b.as_raw()),
        DynamicImage::ImageRgba16(b) => put!(colortype::RGBA16, b.as_raw()),
        other => panic!("no TIFF layout for {:?}", other.color()),
    }
}

#[test]
fn tiff_strips_match_the_whole_image() {
    let dir = tempfile::tempdir().unwrap();
    let d = |name: &str| dir.path().join(name);
    // Gray with alpha has no streamed TIFF layout (`tiffs_it_does_not_stream_…`).
    let layouts = LAYOUTS.iter().filter(|(channels, _)| *channels != 2);
    let mut cases = 0;
    for (i, &(w, h)) in [(37, 29), (1, 70), (130, 301)].iter().enumerate() {
        for (j, &(channels, sixteen)) in layouts.clone().enumerate() {
            let img = image(w, h, channels, sixteen, (i * 10 + j) as u64);
            // Input strips of 1, 7 and 64 rows: strips end inside the blur's batches.
            write_tiff(&d("in.tif"), &img, [1, 7, 64][cases % 3]);
            for sigma in [3.0, 20.0] {
                let rows = [16, 48][cases % 2];
                run(&d("in.tif"), &d("whole.tif"), "whole", sigma, rows, &[]);
                // Output strips of 1 to 10 rows: some go out straight from the blur's
                // strips, some gathered across two of them.
                let depth = if sixteen { 2 } else { 1 };
                let strip_bytes = w as usize * channels * depth * (1 + cases % 10);
                gblur()
                    .env("GBLUR_STRIP_ROWS", rows.to_string())
                    .env("GBLUR_TIFF_STRIP_BYTES", strip_bytes.to_string())
                    .args([d("in.tif").as_os_str(), d("strips.tif").as_os_str()])
                    .args(["--sigma", &sigma.to_string(), "--method", "recursive"])
                    .args(["--device", "rust", "--engine", "strips"])
                    .assert()
                    .success();
                let (a, b) = (
                    image::open(d("whole.tif")).unwrap(),
                    image::open(d("strips.tif")).unwrap(),
                );
                let steps = max_steps(&a, &b);
                assert!(
                    steps <= 1,
                    "{w}x{h} {:?} sigma {sigma}: {steps} steps",
                    a.color()
                );
                cases += 1;
            }
        }
    }
    // Across formats: PNG in, TIFF out and back.
    let img = image(130, 301, 3, false, 7);
    img.save(d("in.png")).unwrap();
    run(&d("in.png"), &d("whole.tif"), "whole", 5.0, 16, &[]);
    run(&d("in.png"), &d("strips.tif"), "strips", 5.0, 16, &[]);
    let (a, b) = (
        image::open(d("whole.tif")).unwrap(),
        image::open(d("strips.tif")).unwrap(),
    );
    assert!(max_steps(&a, &b) <= 1);
    run(&d("strips.tif"), &d("back.png"), "strips", 5.0, 16, &[]);
    run(
        &d("strips.tif"),
        &d("back_whole.png"),
        "whole",
        5.0,
        16,
        &[],
    );
    assert!(files_apart(&d("back.png"), &d("back_whole.png")) <= 1);
}

/// The ICC profile goes into the streamed TIFF as the whole-image path writes it.
#[test]
fn a_streamed_tiff_carries_the_icc_profile() {
    let dir = tempfile::tempdir().unwrap();
    let d = |name: &str| dir.path().join(name);
    let img = image(40, 50, 3, false, 3);
    let mut info = png::Info::with_size(40, 50);
    info.color_type = png::ColorType::Rgb;
    info.bit_depth = png::BitDepth::Eight;
    info.icc_profile = Some(vec![7u8; 300].into());
    let file = std::io::BufWriter::new(std::fs::File::create(d("icc.png")).unwrap());
    let mut w = png::Encoder::with_info(file, info)
        .unwrap()
        .write_header()
        .unwrap();
    w.write_image_data(img.as_bytes()).unwrap();
    w.finish().unwrap();
    run(&d("icc.png"), &d("strips.tif"), "strips", 3.0, 16, &[]);
    run(&d("icc.png"), &d("whole.tif"), "whole", 3.0, 16, &[]);
    let icc = |p: &Path| {
        let file = std::io::BufReader::new(std::fs::File::open(p).unwrap());
        image::codecs::tiff::TiffDecoder::new(file)
            .unwrap()
            .icc_profile()
            .unwrap()
    };
    assert_eq!(icc(&d("strips.tif")), Some(vec![7u8; 300]));
    assert_eq!(icc(&d("strips.tif")), icc(&d("whole.tif")));
}

/// Past the classic format's offsets the output is BigTIFF (forced here by the test hook at
/// 0 bytes): the same pixels, read back by the `image` crate.
#[test]
fn a_large_tiff_output_is_bigtiff() {
    let dir = tempfile::tempdir().unwrap();
    let d = |name: &str| dir.path().join(name);
    write_tiff(&d("in.tif"), &image(90, 70, 3, true, 3), 5);
    run(&d("in.tif"), &d("classic.tif"), "strips", 4.0, 16, &[]);
    gblur()
        .env("GBLUR_STRIP_ROWS", "16")
        .env("GBLUR_BIGTIFF_OVER", "0")
        .args([d("in.tif").as_os_str(), d("big.tif").as_os_str()])
        .args([
            "--sigma",
            "4",
            "--method",
            "recursive",
            "--device",
            "rust",
            "--engine",
            "strips",
        ])
        .assert()
        .success();
    let (classic, big) = (
        std::fs::read(d("classic.tif")).unwrap(),
        std::fs::read(d("big.tif")).unwrap(),
    );
    assert_eq!(&classic[..4], b"II*\0");
    assert_eq!(&big[..4], b"II+\0", "BigTIFF's version 43");
    let (a, b) = (
        image::open(d("classic.tif")).unwrap(),
        image::open(d("big.tif")).unwrap(),
    );
    assert_eq!(a, b);
}

#[test]
fn tiffs_it_does_not_stream_are_refused_or_left_to_the_whole_image() {
    let dir = tempfile::tempdir().unwrap();
    let d = |name: &str| dir.path().join(name);
    // Gray with alpha streams into TIFF as the whole-image path writes it: two samples, the
    // alpha declared unassociated.
    image(30, 20, 2, false, 4).save(d("la.png")).unwrap();
    let rust = ["--device", "rust"];
    run(&d("la.png"), &d("la-strips.tif"), "strips", 3.0, 16, &[]);
    run(&d("la.png"), &d("la-whole.tif"), "whole", 3.0, 16, &[]);
    // Read as gblur reads them: through the command at sigma 0.001 (the identity) into PNG.
    let read = |name: &str| {
        let png = d(&format!("{name}.png"));
        gblur()
            .args([d(name).as_os_str(), png.as_os_str()])
            .args(["--sigma", "0.001", "--device", "rust", "-q"])
            .assert()
            .success();
        image::open(png).unwrap()
    };
    let (strips, whole) = (read("la-strips.tif"), read("la-whole.tif"));
    assert_eq!(strips.color(), image::ColorType::La8);
    assert!(max_steps(&strips, &whole) <= 1);
    // EXIF and XMP go to TIFF through the whole-image path, which writes them.
    png_with_metadata(&d("meta.png"));
    assert_refused(&d("meta.png"), &d("meta.tif"), &rust, "EXIF, XMP or IPTC");
    // A TIFF cut short: exit 1 naming the file, nothing written.
    write_tiff(&d("in.tif"), &image(200, 300, 3, false, 5), 8);
    let bytes = std::fs::read(d("in.tif")).unwrap();
    std::fs::write(d("cut.tif"), &bytes[..bytes.len() / 2]).unwrap();
    let cut = gblur()
        .env("GBLUR_STRIP_ROWS", "16")
        .args([d("cut.tif").as_os_str(), d("out.tif").as_os_str()])
        .args(["--sigma", "3", "--device", "rust", "--engine", "strips"])
        .assert()
        .failure();
    let err = String::from_utf8_lossy(&cut.get_output().stderr).to_string();
    assert!(err.contains("cut.tif"), "{err}");
    assert!(!d("out.tif").exists());
}

#[test]
fn a_job_over_the_budget_either_way_is_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let (input, out) = (dir.path().join("in.png"), dir.path().join("out.png"));
    image(20_000, 40, 3, false, 4).save(&input).unwrap();
    // Sigma 1000 reaches 5503 rows: the window is the whole 40-row image, 2.4 MB, and the
    // two-pass method's shortest strips, 16 rows with their scratch, take 4.8 MB; a 1 MiB
    // budget leaves them nothing beside the process's own 7–12 MiB.
    let assert = gblur()
        .args([input.as_os_str(), out.as_os_str()])
        .args(["--sigma", "1000", "--engine", "strips", "--device", "rust"])
        .args(["--max-memory", "1"])
        .assert()
        .failure()
        .code(1);
    let err = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
    assert!(
        err.contains("in.png")
            && err.contains("window")
            && err.contains("two-pass")
            && err.contains("--max-memory"),
        "{err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(!out.exists());
}
