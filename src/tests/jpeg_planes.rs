//! JPEG → JPEG in YCbCr planes: which jobs take the planes path and which go through RGB, the
//! layout and quality written (`--subsampling`, `--quality same`), and the picture: within a
//! stated distance of the RGB path and of the exact Gaussian blur of the decoded input.

use super::common;

use crate::codec::jpeg::{encode_stripe, Chroma, JpegColor, JpegSettings, JpegTraits};
use common::gblur;
use std::path::{Path, PathBuf};

/// A photo-like picture: smooth gradients, an edge, and seeded noise.
fn photo(w: u32, h: u32) -> Vec<u8> {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut noise = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % 41) as i32 - 20
    };
    let mut out = Vec::with_capacity((w * h * 3) as usize);
    for y in 0..h {
        for x in 0..w {
            let edge = if x > w / 2 { 90 } else { 0 };
            for base in [x * 200 / w + 20, y * 180 / h + 30, 120 + edge] {
                out.push((base as i32 + noise()).clamp(0, 255) as u8);
            }
        }
    }
    out
}

fn write_jpeg(dir: &Path, name: &str, (w, h): (u32, u32), chroma: Chroma, q: u8) -> PathBuf {
    let settings = JpegSettings { quality: q, chroma };
    let bytes = encode_stripe(&photo(w, h), w, JpegColor::Rgb, settings, None).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

/// Runs gblur on `input` into `out` with `args` on the Rust path; returns the report's
/// pipeline.
fn run(input: &Path, out: &Path, args: &[&str]) -> String {
    report(input, out, &[&["--device", "rust"][..], args].concat())["pipeline"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Runs gblur on `input` into `out` with `args`; returns the report.
fn report(input: &Path, out: &Path, args: &[&str]) -> serde_json::Value {
    let assert = gblur()
        .arg(input)
        .arg(out)
        .arg("--json")
        .args(args)
        .assert()
        .success();
    serde_json::from_slice(&assert.get_output().stdout).unwrap()
}

fn rgb(path: &Path) -> image::RgbImage {
    super::common::open_image(path).to_rgb8()
}

/// Mean and largest absolute difference over the interior (`margin` from every edge).
fn distance(a: &image::RgbImage, b: &[f64], margin: u32) -> (f64, f64) {
    let (w, h) = a.dimensions();
    let (mut sum, mut worst, mut n) = (0.0, 0.0f64, 0usize);
    for y in margin..h - margin {
        for x in margin..w - margin {
            for c in 0..3 {
                let d = (a.get_pixel(x, y).0[c] as f64 - b[((y * w + x) * 3) as usize + c]).abs();
                sum += d;
                worst = worst.max(d);
                n += 1;
            }
        }
    }
    (sum / n as f64, worst)
}

/// The exact Gaussian blur (sampled, radius 8 sigma, normalised, clamped edges) of `img`.
fn exact_blur(img: &image::RgbImage, sigma: f64) -> Vec<f64> {
    let r = (8.0 * sigma).ceil() as i64;
    let taps: Vec<f64> = (-r..=r)
        .map(|i| (-(i * i) as f64 / (2.0 * sigma * sigma)).exp())
        .collect();
    let norm: f64 = taps.iter().sum();
    let (w, h) = (img.width() as i64, img.height() as i64);
    let at = |x: i64, y: i64| ((y * w + x) * 3) as usize;
    let src: Vec<f64> = img.as_raw().iter().map(|&v| v as f64).collect();
    let pass = |src: &[f64], dx: i64, dy: i64| {
        let mut out = vec![0.0; src.len()];
        for y in 0..h {
            for x in 0..w {
                for c in 0..3 {
                    let mut s = 0.0;
                    for (k, t) in taps.iter().enumerate() {
                        let o = k as i64 - r;
                        let (sx, sy) = ((x + o * dx).clamp(0, w - 1), (y + o * dy).clamp(0, h - 1));
                        s += t * src[at(sx, sy) + c];
                    }
                    out[at(x, y) + c] = s / norm;
                }
            }
        }
        out
    };
    pass(&pass(&src, 1, 0), 0, 1)
}

/// Every layout blurs as planes, keeps its layout, and lands as close to the exact blur of
/// the decoded input as the RGB path does (both then lose what a q95 JPEG loses).
#[test]
fn every_layout_blurs_as_planes_as_close_as_rgb() {
    let dir = tempfile::tempdir().unwrap();
    for chroma in [Chroma::S420, Chroma::S422, Chroma::S444] {
        let input = write_jpeg(dir.path(), "in.jpg", (161, 97), chroma, 95);
        let (planes, via_rgb) = (dir.path().join("p.jpg"), dir.path().join("r.jpg"));
        let pipeline = run(&input, &planes, &["--sigma", "5", "--quality", "95"]);
        assert!(
            pipeline.contains(&format!("YCbCr {} planes", chroma.name())),
            "{pipeline}"
        );
        let pipeline = run(
            &input,
            &via_rgb,
            &["--sigma", "5", "--quality", "95", "--jpeg-path", "rgb"],
        );
        assert!(!pipeline.contains("YCbCr"), "{pipeline}");
        for out in [&planes, &via_rgb] {
            let traits = JpegTraits::read(&std::fs::read(out).unwrap());
            assert_eq!(traits.chroma, Some(chroma));
            assert_eq!(traits.quality, Some(95));
        }
        let exact = exact_blur(&rgb(&input), 5.0);
        let (p_mean, p_worst) = distance(&rgb(&planes), &exact, 20);
        let (r_mean, r_worst) = distance(&rgb(&via_rgb), &exact, 20);
        assert!(
            p_mean < 1.5 && p_worst <= 12.0,
            "{chroma:?} planes: {p_mean} {p_worst}"
        );
        assert!(
            p_mean <= r_mean * 1.25 + 0.1,
            "{chroma:?}: planes {p_mean}, rgb {r_mean} ({r_worst})"
        );
    }
}

/// On the blocked pipeline the device blurs the planes, up and down as bytes (a chroma plane
/// whose sigma takes the FIR on the host, as the Rust path does), and writes what the Rust path
/// writes within its rounding: at quality 100, a mean under 0.3 LSB and at most 4 LSB apart
/// after both are decoded to RGB.
#[test]
fn the_blocked_pipeline_blurs_the_planes_on_the_device() {
    common::require_opencl();
    let dir = tempfile::tempdir().unwrap();
    let (on_device, on_rust) = (dir.path().join("d.jpg"), dir.path().join("r.jpg"));
    for chroma in [Chroma::S420, Chroma::S422, Chroma::S444] {
        let input = write_jpeg(dir.path(), "in.jpg", (161, 97), chroma, 95);
        // Sigma 3: the subsampled chroma (1.5) is an FIR, blurred on the host.
        for sigma in ["5", "3"] {
            let args = ["--sigma", sigma, "--quality", "100"];
            let device = ["--device", "0", "--pipeline", "blocked"];
            let r = report(&input, &on_device, &[&device[..], &args].concat());
            let want = format!("blocked, YCbCr {} planes 8-bit in and out", chroma.name());
            assert_eq!(r["pipeline"], want.as_str(), "{chroma:?} sigma {sigma}");
            assert_eq!(r["backend"], "opencl", "{r}");
            run(&input, &on_rust, &args);
            let rust: Vec<f64> = rgb(&on_rust).as_raw().iter().map(|&v| v as f64).collect();
            let (mean, worst) = distance(&rgb(&on_device), &rust, 0);
            assert!(
                mean < 0.3 && worst <= 4.0,
                "{chroma:?} sigma {sigma}: {mean} {worst}"
            );
        }
    }
}

/// A batch on the device stages JPEG planes in pinned memory (after the first images, which
/// make the slots) and writes byte for byte what the main command writes on the same device,
/// also where the chroma is blurred on the host (sigma 3) and where the images differ in
/// size, so that a slot sized for a smaller image is replaced.
#[test]
fn a_device_batch_through_pinned_memory_writes_what_the_main_command_writes() {
    common::require_opencl();
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    std::fs::create_dir(&input).unwrap();
    let sizes = (0..10).map(|i| if i < 6 { (96, 64) } else { (161, 97) });
    for (i, size) in sizes.enumerate() {
        write_jpeg(&input, &format!("{i:02}.jpg"), size, Chroma::S420, 90);
    }
    let device = ["--device", "0", "--pipeline", "blocked", "--quality", "90"];
    for sigma in ["5", "3"] {
        let out = dir.path().join(format!("out{sigma}"));
        let run = gblur()
            .args(["batch", "--json", "--sigma", sigma])
            .args(device)
            .arg(&input)
            .arg(&out)
            .assert()
            .success();
        let v: serde_json::Value = serde_json::from_slice(&run.get_output().stdout).unwrap();
        assert_eq!(v["blurred"], 10);
        let pinned = v["devices"][0]["pinned"].as_u64().unwrap();
        let files = v["files"].as_array().unwrap();
        let flagged = files.iter().filter(|f| f["pinned"] == true).count() as u64;
        assert!(
            pinned >= 1 && pinned == flagged,
            "sigma {sigma}: {pinned}, {flagged}"
        );
        for f in files {
            let single = dir.path().join("single.jpg");
            let from = Path::new(f["input"].as_str().unwrap());
            report(from, &single, &[&["--sigma", sigma][..], &device].concat());
            let got = std::fs::read(f["output"].as_str().unwrap()).unwrap();
            assert!(got == std::fs::read(&single).unwrap(), "sigma {sigma}: {f}");
        }
    }
}

/// Small sigmas put the chroma below the recursive filter's range: it runs as the FIR.
#[test]
fn small_sigmas_blur_the_chroma_with_the_fir() {
    let dir = tempfile::tempdir().unwrap();
    let input = write_jpeg(dir.path(), "in.jpg", (64, 48), Chroma::S420, 90);
    let out = dir.path().join("o.jpg");
    let pipeline = run(&input, &out, &["--sigma", "2.5"]);
    assert!(pipeline.contains("planes"), "{pipeline}");
    let exact = exact_blur(&rgb(&input), 2.5);
    let (mean, _) = distance(&rgb(&out), &exact, 10);
    assert!(mean < 2.0, "{mean}");
}

/// What needs RGB samples, or another layout, goes through RGB.
#[test]
fn jobs_that_need_rgb_take_the_rgb_path() {
    let dir = tempfile::tempdir().unwrap();
    let input = write_jpeg(dir.path(), "in.jpg", (80, 60), Chroma::S420, 90);
    let out = dir.path().join("o.jpg");
    for args in [
        &["--linear"][..],
        &["--subsampling", "444"],
        &["--jpeg-path", "rgb"],
        &["--region", "0,0,20,20"],
        &["--edge", "reflect"],
    ] {
        let pipeline = run(&input, &out, &[&["--sigma", "4"][..], args].concat());
        assert!(!pipeline.contains("YCbCr"), "{args:?}: {pipeline}");
        let written = JpegTraits::read(&std::fs::read(&out).unwrap()).chroma;
        let want = if args == ["--subsampling", "444"] {
            Chroma::S444
        } else {
            Chroma::S420
        };
        assert_eq!(written, Some(want), "{args:?}");
    }
    let png = dir.path().join("o.png");
    assert!(!run(&input, &png, &["--sigma", "4"]).contains("YCbCr"));
    // The layout asked for is the input's: planes still.
    assert!(run(&input, &out, &["--sigma", "4", "--subsampling", "420"]).contains("YCbCr"));
}

/// `--quality same` writes the input's quality; from a PNG it writes 90 and says so.
#[test]
fn quality_same_copies_the_input() {
    let dir = tempfile::tempdir().unwrap();
    for q in [55, 83] {
        let input = write_jpeg(dir.path(), "in.jpg", (48, 40), Chroma::S422, q);
        let out = dir.path().join("o.jpg");
        run(&input, &out, &["--sigma", "3", "--quality", "same"]);
        assert_eq!(
            JpegTraits::read(&std::fs::read(&out).unwrap()).quality,
            Some(q)
        );
    }
    let png = dir.path().join("in.png");
    image::RgbImage::from_raw(48, 40, photo(48, 40))
        .unwrap()
        .save(&png)
        .unwrap();
    let out = dir.path().join("o.jpg");
    let assert = gblur()
        .arg(&png)
        .arg(&out)
        .args(["--sigma", "3", "--quality", "same"])
        .assert()
        .success();
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
    assert!(stderr.contains("--quality same"), "{stderr}");
    assert_eq!(
        JpegTraits::read(&std::fs::read(&out).unwrap()).quality,
        Some(90)
    );
    gblur()
        .arg(&png)
        .arg(&out)
        .args(["--sigma", "3", "--quality", "best"])
        .assert()
        .code(2);
}

/// A damaged JPEG on the planes path gets the same one-line error and leaves no output.
#[test]
fn a_truncated_jpeg_is_refused_with_nothing_written() {
    let dir = tempfile::tempdir().unwrap();
    let input = write_jpeg(dir.path(), "in.jpg", (64, 64), Chroma::S420, 90);
    let bytes = std::fs::read(&input).unwrap();
    std::fs::write(&input, &bytes[..bytes.len() / 2]).unwrap();
    let out = dir.path().join("o.jpg");
    let assert = gblur()
        .arg(&input)
        .arg(&out)
        .args(["--sigma", "5"])
        .assert()
        .code(1);
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
    assert!(
        stderr.contains("in.jpg") && stderr.contains("truncated"),
        "{stderr}"
    );
    assert!(!out.exists());
}

/// `gblur batch` blurs JPEG → JPEG as planes too: its files are the main command's, byte for
/// byte, and differ from the RGB path's.
#[test]
fn batch_writes_what_the_main_command_writes() {
    let dir = tempfile::tempdir().unwrap();
    let input_dir = dir.path().join("in");
    std::fs::create_dir(&input_dir).unwrap();
    let input = write_jpeg(&input_dir, "a.jpg", (90, 70), Chroma::S420, 90);
    let (single, via_rgb) = (dir.path().join("one.jpg"), dir.path().join("rgb.jpg"));
    run(&input, &single, &["--sigma", "4"]);
    run(&input, &via_rgb, &["--sigma", "4", "--jpeg-path", "rgb"]);
    let out_dir = dir.path().join("out");
    gblur()
        .arg("batch")
        .arg(&input_dir)
        .arg(&out_dir)
        .args(["--sigma", "4", "--device", "rust", "-q"])
        .assert()
        .success();
    let batch = std::fs::read(out_dir.join("a.jpg")).unwrap();
    assert_eq!(batch, std::fs::read(&single).unwrap());
    assert_ne!(batch, std::fs::read(&via_rgb).unwrap());
}

/// `jpeg` with an EXIF segment whose Orientation is `orientation`, as a phone writes it.
fn with_orientation(jpeg: &[u8], orientation: u16) -> Vec<u8> {
    let mut tiff = b"MM\0\x2a\0\0\0\x08\0\x01".to_vec();
    tiff.extend_from_slice(&[0x01, 0x12, 0, 3, 0, 0, 0, 1]);
    tiff.extend_from_slice(&orientation.to_be_bytes());
    tiff.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
    let body = [&b"Exif\0\0"[..], &tiff].concat();
    let mut out = jpeg[..2].to_vec();
    out.extend_from_slice(&[0xFF, 0xE1]);
    out.extend_from_slice(&((body.len() + 2) as u16).to_be_bytes());
    out.extend_from_slice(&body);
    out.extend_from_slice(&jpeg[2..]);
    out
}

/// A photo with an EXIF orientation (a portrait phone photo: 6) is blurred as planes turned
/// upright, in its layout: as close to what the RGB path gives (which turns the decoded
/// pixels) as the same photo unturned is. 4:2:2 turned a quarter goes through RGB.
#[test]
fn turned_photos_blur_as_planes_upright() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["--sigma", "5", "--sigma-y", "2", "--quality", "95"];
    let (planes, via_rgb) = (dir.path().join("p.jpg"), dir.path().join("r.jpg"));
    // Mean and largest distance between the two paths' outputs for `input`, and whether the
    // first took the planes.
    let both = |input: &Path| {
        let pipeline = run(input, &planes, &args);
        run(
            input,
            &via_rgb,
            &[&args[..], &["--jpeg-path", "rgb"]].concat(),
        );
        let (p, r) = (rgb(&planes), rgb(&via_rgb));
        assert_eq!(p.dimensions(), r.dimensions());
        let r: Vec<f64> = r.as_raw().iter().map(|&v| v as f64).collect();
        let (mean, worst) = distance(&p, &r, 0);
        (mean, worst, pipeline.contains("YCbCr"), p.dimensions())
    };
    // Odd sides: a subsampled axis read backwards goes through RGB (`YccPlanes::turn`).
    for ((w, h), chroma) in [
        ((162, 98), Chroma::S420),
        ((161, 97), Chroma::S444),
        ((162, 97), Chroma::S422),
        ((161, 97), Chroma::S420),
    ] {
        let upright = write_jpeg(dir.path(), "up.jpg", (w, h), chroma, 95);
        let (mean0, worst0, planes0, _) = both(&upright);
        assert!(planes0);
        for orientation in [2u16, 3, 4, 5, 6, 7, 8] {
            let input = dir.path().join("in.jpg");
            std::fs::write(
                &input,
                with_orientation(&std::fs::read(&upright).unwrap(), orientation),
            )
            .unwrap();
            let (mean, worst, took_planes, size) = both(&input);
            let quarter = orientation >= 5;
            // The 161 × 97 4:2:0 file is odd on both subsampled axes: only EXIF 5, a
            // transpose, reads neither backwards. 4:2:2 is subsampled across only, and even.
            let want = match (chroma, w % 2 == 1) {
                (Chroma::S420, true) => orientation == 5,
                (Chroma::S422, _) => !quarter,
                _ => true,
            };
            assert_eq!(took_planes, want, "{chroma:?} {w}x{h} {orientation}");
            assert_eq!(
                size,
                if quarter { (h, w) } else { (w, h) },
                "{chroma:?} {orientation}"
            );
            assert_eq!(
                JpegTraits::read(&std::fs::read(&planes).unwrap()).chroma,
                Some(chroma)
            );
            assert!(
                mean <= mean0 * 1.25 + 0.1 && worst <= worst0 + 4.0,
                "{chroma:?} {orientation}: mean {mean}, worst {worst}; unturned {mean0}, {worst0}"
            );
        }
    }
}
