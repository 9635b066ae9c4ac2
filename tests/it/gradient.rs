//! `gblur gradient` and `gblur::feature_map_file`: edge and blob maps of a file or a folder,
//! as float TIFF (the values the library computes) or scaled 16-bit PNG, and their refusals.

use crate::common;
use common::{fixture, gblur};
use gblur::nd::Filter;
use std::path::Path;

/// A gray float TIFF's samples.
fn read_float_tiff(path: &Path) -> (u32, u32, Vec<f32>) {
    let mut decoder = tiff::decoder::Decoder::new(std::fs::File::open(path).unwrap()).unwrap();
    let (w, h) = decoder.dimensions().unwrap();
    match decoder.read_image().unwrap() {
        tiff::decoder::DecodingResult::F32(v) => (w, h, v),
        _ => panic!("{}: not 32-bit float", path.display()),
    }
}

/// The coffee sample's luma (1 = full scale) and its shape.
fn coffee_luma() -> (Vec<f32>, [usize; 2]) {
    let luma = image::open(fixture("samples/coffee.png"))
        .unwrap()
        .to_luma32f();
    let shape = [luma.height() as usize, luma.width() as usize];
    (luma.into_raw(), shape)
}

#[test]
fn a_float_tiff_holds_the_librarys_gradient_magnitude() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("edges.tif");
    let json = gblur()
        .args(["gradient", "samples/coffee.png"])
        .arg(&out)
        .args(["--sigma", "2.5", "--json"])
        .current_dir(fixture("."))
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let report: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(report["feature"], "gradient_magnitude");
    assert_eq!(report["size"], serde_json::json!([600, 400]));
    let passes: Vec<&str> = report["passes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p[0].as_str().unwrap())
        .collect();
    assert_eq!(passes, ["decode", "luma", "filter", "encode", "write"]);
    let (w, h, got) = read_float_tiff(&out);
    assert_eq!((w, h), (600, 400));
    let (luma, shape) = coffee_luma();
    let mut want = vec![0f32; luma.len()];
    Filter::new(&[2.5, 2.5])
        .unwrap()
        .gradient_magnitude(&luma, &mut want, &shape)
        .unwrap();
    assert_eq!(got, want);
    assert_eq!(
        report["range"][1].as_f64().unwrap() as f32,
        want.iter().copied().fold(0.0, f32::max)
    );
}

#[test]
fn a_png_holds_the_laplacian_scaled_about_the_middle_level() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("blobs.png");
    // A global flag before the subcommand's name, as users write it.
    gblur()
        .args(["-q", "gradient", "samples/coffee.png"])
        .arg(&out)
        .args([
            "-s",
            "4",
            "--laplacian",
            "--png-scale",
            "20000",
            "--edge",
            "wrap",
        ])
        .current_dir(fixture("."))
        .assert()
        .success();
    let png = image::open(&out).unwrap();
    let image::DynamicImage::ImageLuma16(levels) = png else {
        panic!("not 16-bit gray: {:?}", png.color())
    };
    let (luma, shape) = coffee_luma();
    let mut want = vec![0f32; luma.len()];
    Filter::new(&[4.0, 4.0])
        .unwrap()
        .mode(gblur::EdgeMode::Wrap)
        .laplace(&luma, &mut want, &shape)
        .unwrap();
    for (&got, &v) in levels.as_raw().iter().zip(&want) {
        let level = (32768.0 + 20000.0 * v as f64).round().clamp(0.0, 65535.0);
        assert_eq!(got as f64, level);
    }
    // Blobs both ways: levels on both sides of the middle.
    assert!(
        levels.as_raw().iter().any(|&l| l < 32700) && levels.as_raw().iter().any(|&l| l > 32836)
    );
}

#[test]
fn a_folder_is_mapped_file_by_file_and_a_bad_file_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let (input, output) = (dir.path().join("in"), dir.path().join("out"));
    std::fs::create_dir_all(input.join("sub")).unwrap();
    std::fs::copy(fixture("samples/coffee.png"), input.join("a.png")).unwrap();
    std::fs::copy(fixture("samples/chelsea.jpg"), input.join("sub/b.jpg")).unwrap();
    // The same name as sub/b.jpg's map: refused, not written over it.
    std::fs::copy(fixture("samples/camera-gray.png"), input.join("sub/b.png")).unwrap();
    std::fs::write(input.join("notes.txt"), "not an image").unwrap();
    std::fs::write(input.join("broken.png"), b"\x89PNG\r\n\x1a\nbroken").unwrap();
    let run = gblur()
        .args(["gradient"])
        .args([&input, &output])
        .args(["-s", "2", "--format", "png", "--json"])
        .assert()
        .code(1);
    let stderr = String::from_utf8_lossy(&run.get_output().stderr).into_owned();
    assert!(stderr.contains("broken.png: cannot decode"), "{stderr}");
    assert!(stderr.contains("b.png: its map would be"), "{stderr}");
    assert!(
        stderr.contains("2 of 4 files could not be mapped"),
        "{stderr}"
    );
    // Every file in the JSON, the failed ones with their error.
    let json: serde_json::Value = serde_json::from_slice(&run.get_output().stdout).unwrap();
    let entries = json.as_array().unwrap();
    assert_eq!(entries.len(), 4);
    let failed: Vec<&str> = entries.iter().filter_map(|e| e["error"].as_str()).collect();
    assert_eq!(failed.len(), 2, "{json}");
    assert!(output.join("a.png").is_file() && output.join("sub/b.png").is_file());
    let (w, h) = image::image_dimensions(output.join("sub/b.png")).unwrap();
    assert_eq!((w, h), (451, 300), "chelsea's map, not camera-gray's");
    assert!(!output.join("broken.png").exists() && !output.join("notes.png").exists());
    let leftovers: Vec<_> = std::fs::read_dir(&output).unwrap().collect();
    assert_eq!(leftovers.len(), 2, "{leftovers:?}"); // a.png and sub/, no temporary file
}

#[test]
fn a_scale_that_clips_says_so_and_one_for_a_tiff_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let run = gblur()
        .args(["gradient", "samples/coffee.png"])
        .arg(dir.path().join("e.png"))
        .args(["-s", "2", "--png-scale", "1e7"])
        .current_dir(fixture("."))
        .assert()
        .success();
    let stderr = String::from_utf8_lossy(&run.get_output().stderr).into_owned();
    assert!(stderr.contains("lie beyond the PNG's levels"), "{stderr}");
    gblur()
        .args(["gradient", "samples/coffee.png"])
        .arg(dir.path().join("e.tif"))
        .args(["-s", "2", "--png-scale", "5"])
        .current_dir(fixture("."))
        .assert()
        .code(2);
    // A folder as the map of one image.
    let run = gblur()
        .args(["gradient", "samples/coffee.png"])
        .arg(dir.path())
        .args(["-s", "2"])
        .current_dir(fixture("."))
        .assert()
        .code(2);
    assert!(String::from_utf8_lossy(&run.get_output().stderr).contains("is a folder"));
    assert!(!dir.path().join("e.tif").exists());
}

#[test]
fn refusals_name_the_file_and_leave_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let jpeg = dir.path().join("edges.jpg");
    let run = gblur()
        .args(["gradient", "samples/coffee.png"])
        .arg(&jpeg)
        .args(["-s", "2"])
        .current_dir(fixture("."))
        .assert()
        .code(2);
    let stderr = String::from_utf8_lossy(&run.get_output().stderr).into_owned();
    assert!(
        stderr.contains("edges.jpg: a feature map is written as a float TIFF"),
        "{stderr}"
    );
    assert!(!jpeg.exists());
    // Never over the input.
    let input = dir.path().join("in.png");
    std::fs::copy(fixture("samples/coffee.png"), &input).unwrap();
    gblur()
        .args(["gradient"])
        .args([&input, &input])
        .args(["-s", "2"])
        .assert()
        .code(2);
    assert_eq!(
        std::fs::read(&input).unwrap(),
        std::fs::read(fixture("samples/coffee.png")).unwrap()
    );
    // A sigma of 0 maps nothing.
    gblur()
        .args(["gradient", "samples/coffee.png"])
        .arg(dir.path().join("x.tif"))
        .args(["-s", "0"])
        .current_dir(fixture("."))
        .assert()
        .code(2);
    // A missing input: exit 1, named.
    let run = gblur()
        .args(["gradient"])
        .arg(dir.path().join("nope.png"))
        .arg(dir.path().join("x.tif"))
        .args(["-s", "2"])
        .assert()
        .code(1);
    assert!(String::from_utf8_lossy(&run.get_output().stderr).contains("nope.png: cannot read"));
}
