//! The strip engine (`--engine strips`) through the command: the same pixels as the
//! whole-image path within one step, with strips forced tiny (`GBLUR_STRIP_ROWS`) so that
//! small images cross many strips, the reach runs past the image and the last strip is
//! short; the same metadata; a one-line refusal of what it does not run; no output after a
//! failure; and a ~100 MP image within `--max-memory 64`.

mod common;
use common::gblur;
use image::{DynamicImage, ImageDecoder};
use std::path::Path;

/// Smooth structure plus noise, `channels` of 8 or 16 bits, alpha kept in [1/4, 1] so that
/// un-premultiplying does not magnify what the window's start leaves out.
fn image(w: u32, h: u32, channels: usize, sixteen: bool, seed: u64) -> DynamicImage {
    let p = common::noise(w as usize, h as usize, channels, seed);
    let plane = (w * h) as usize;
    let value = |x: u32, y: u32, c: usize| {
        let n = p.data[c * plane + (y * w + x) as usize];
        let wave = 0.5 + 0.4 * ((x as f32 * 0.11 + c as f32).sin() * (y as f32 * 0.07).cos());
        let v = 0.7 * wave + 0.3 * n;
        match channels == 2 || channels == 4 {
            true if c == channels - 1 => 0.25 + 0.75 * n,
            _ => v,
        }
    };
    let f = image::Rgba32FImage::from_fn(w, h, |x, y| {
        image::Rgba(std::array::from_fn(|c| value(x, y, c.min(channels - 1))))
    });
    use image::ColorType::*;
    let color = match (channels, sixteen) {
        (1, false) => L8,
        (2, false) => La8,
        (3, false) => Rgb8,
        (4, false) => Rgba8,
        (1, true) => L16,
        (2, true) => La16,
        (3, true) => Rgb16,
        _ => Rgba16,
    };
    let f = DynamicImage::ImageRgba32F(f);
    match color {
        L8 => f.to_luma8().into(),
        La8 => f.to_luma_alpha8().into(),
        Rgb8 => f.to_rgb8().into(),
        Rgba8 => f.to_rgba8().into(),
        L16 => f.to_luma16().into(),
        La16 => f.to_luma_alpha16().into(),
        Rgb16 => f.to_rgb16().into(),
        _ => f.to_rgba16().into(),
    }
}

/// The sample layouts the strip engine streams: (channels, 16-bit).
const LAYOUTS: [(usize, bool); 7] = [
    (1, false),
    (2, false),
    (3, false),
    (4, false),
    (1, true),
    (3, true),
    (4, true),
];

/// Runs gblur on `input` into `output` with `engine`, strips of `rows` rows.
fn run(input: &Path, output: &Path, engine: &str, sigma: f64, rows: usize, extra: &[&str]) {
    let sigma = sigma.to_string();
    gblur()
        .env("GBLUR_STRIP_ROWS", rows.to_string())
        .args([input.as_os_str(), output.as_os_str()])
        .args([
            "--sigma",
            &sigma,
            "--method",
            "recursive",
            "--device",
            "rust",
        ])
        .args(["--engine", engine])
        .args(extra)
        .assert()
        .success();
}

/// The largest difference between two images' samples, in steps.
fn max_steps(a: &DynamicImage, b: &DynamicImage) -> u32 {
    assert_eq!(a.color(), b.color());
    let (a16, b16) = (a.to_rgba16(), b.to_rgba16());
    let step = if a.color().bytes_per_pixel() == a.color().channel_count() {
        257
    } else {
        1
    };
    a16.iter()
        .zip(b16.iter())
        .map(|(x, y)| x.abs_diff(*y) as u32 / step)
        .max()
        .unwrap_or(0)
}

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

/// A PNG with an ICC profile, EXIF and XMP, written by the `png` crate.
fn png_with_metadata(path: &Path) {
    let img = image(40, 50, 3, false, 3);
    let mut info = png::Info::with_size(40, 50);
    info.color_type = png::ColorType::Rgb;
    info.bit_depth = png::BitDepth::Eight;
    info.icc_profile = Some(vec![7u8; 300].into());
    let file = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut w = png::Encoder::with_info(file, info)
        .unwrap()
        .write_header()
        .unwrap();
    // A little-endian TIFF header with an empty IFD.
    let exif = [b'I', b'I', 42, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    w.write_chunk(png::chunk::ChunkType(*b"eXIf"), &exif)
        .unwrap();
    let mut xmp = b"XML:com.adobe.xmp\0\0\0\0\0".to_vec();
    xmp.extend_from_slice(b"<x:xmpmeta xmlns:x='adobe:ns:meta/'></x:xmpmeta>");
    w.write_chunk(png::chunk::ChunkType(*b"iTXt"), &xmp)
        .unwrap();
    w.write_image_data(img.as_bytes()).unwrap();
    w.finish().unwrap();
}

/// ICC profile, EXIF and XMP.
type Meta = (Option<Vec<u8>>, Option<Vec<u8>>, Option<Vec<u8>>);

fn metadata_of(path: &Path) -> Meta {
    let file = std::io::BufReader::new(std::fs::File::open(path).unwrap());
    let mut d = image::codecs::png::PngDecoder::new(file).unwrap();
    (
        d.icc_profile().unwrap(),
        d.exif_metadata().unwrap(),
        d.xmp_metadata().unwrap(),
    )
}

#[test]
fn writes_the_metadata_the_whole_image_path_writes() {
    let dir = tempfile::tempdir().unwrap();
    let (input, whole, strips) = (
        dir.path().join("in.png"),
        dir.path().join("whole.png"),
        dir.path().join("strips.png"),
    );
    png_with_metadata(&input);
    run(&input, &whole, "whole", 4.0, 16, &[]);
    run(&input, &strips, "strips", 4.0, 16, &[]);
    let (a, b) = (metadata_of(&whole), metadata_of(&strips));
    assert_eq!(a.0.as_deref(), Some(&[7u8; 300][..]));
    assert!(
        a.1.is_some() && a.2.is_some(),
        "the whole path kept EXIF and XMP"
    );
    assert_eq!(a, b);
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
        (&["--device", "cpu"], "Rust path"),
        (&[], "writes PNG and TIFF only"),
    ];
    for (i, (extra, says)) in cases.iter().enumerate() {
        let target = if i == 4 {
            dir.path().join("out.jpg")
        } else {
            out.clone()
        };
        let assert = gblur()
            .args([input.as_os_str(), target.as_os_str()])
            .args(["--sigma", "3", "--engine", "strips"])
            .args(*extra)
            .assert()
            .failure()
            .code(2);
        let err = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
        assert!(
            err.contains("--engine strips") && err.contains(says),
            "{extra:?}: {err}"
        );
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(!target.exists());
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

/// Writes a `w`×`h` gray PNG of smooth noise row by row, never holding the image.
fn large_png(path: &Path, w: u32, h: u32) {
    let file = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut e = png::Encoder::new(file, w, h);
    e.set_color(png::ColorType::Grayscale);
    e.set_compression(png::Compression::Fast);
    let mut writer = e.write_header().unwrap();
    let mut stream = writer.stream_writer().unwrap();
    let mut s = 0x2545F4914F6CDD1Du64;
    let mut row = vec![0u8; w as usize];
    for y in 0..h {
        let mut v = (y % 251) as i32;
        for px in row.iter_mut() {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            v = (v + (s >> 61) as i32 - 3).clamp(0, 255);
            *px = v as u8;
        }
        std::io::Write::write_all(&mut stream, &row).unwrap();
    }
    stream.finish().unwrap();
    writer.finish().unwrap();
}

/// Runs `cmd` to its end; returns its exit status, its stderr and its peak resident set in
/// bytes, measured for this child alone (`wait4`), whatever other tests run at once.
// The child is reaped by `wait4`, which gives its own resource use; `Child::wait` would not.
#[allow(clippy::zombie_processes)]
fn run_measured(cmd: &mut std::process::Command) -> (i32, String, u64) {
    use std::io::Read;
    let mut child = cmd.stderr(std::process::Stdio::piped()).spawn().unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let (mut status, pid) = (0, child.id() as libc::pid_t);
    // SAFETY: wait4 fills the status and the struct it is given; the child is ours and not
    // waited for elsewhere (`Child` does not wait on drop).
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    assert_eq!(unsafe { libc::wait4(pid, &mut status, 0, &mut usage) }, pid);
    (
        libc::WEXITSTATUS(status),
        err,
        usage.ru_maxrss as u64 * 1024,
    )
}

#[test]
fn a_hundred_megapixels_stay_within_max_memory() {
    let dir = tempfile::tempdir().unwrap();
    let (input, out) = (dir.path().join("big.png"), dir.path().join("out.png"));
    large_png(&input, 10_000, 10_000);
    // auto streams it: 100 MB decoded is over the 64 MiB budget.
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("gblur"));
    cmd.args([input.as_os_str(), out.as_os_str()]).args([
        "--sigma",
        "20",
        "--device",
        "rust",
        "--max-memory",
        "64",
    ]);
    let (code, err, peak) = run_measured(&mut cmd);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("strip engine"), "{err}");
    assert!(peak < 64 << 20, "peak RSS {} MiB", peak >> 20);
    let file = std::io::BufReader::new(std::fs::File::open(&out).unwrap());
    let d = image::codecs::png::PngDecoder::new(file).unwrap();
    assert_eq!(d.dimensions(), (10_000, 10_000));
}

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
/// (here at once, through the test hook); a short job, and any job under --quiet, shows none.
#[test]
fn a_long_image_shows_its_progress_on_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let (input, output) = (dir.path().join("in.png"), dir.path().join("out.png"));
    image(300, 400, 3, false, 7).save(&input).unwrap();
    let (i, o) = (input.to_str().unwrap(), output.to_str().unwrap());
    let args = [
        i, o, "--sigma", "5", "--engine", "strips", "--device", "rust",
    ];
    let Some(shown) = on_a_terminal(&args, Some("0")) else {
        eprintln!("no `script` to run gblur on a terminal: skipped");
        return;
    };
    assert!(
        shown.contains("/400 rows") && shown.contains("MP/s") && shown.contains("left"),
        "{shown}"
    );
    let short = on_a_terminal(&args, None).unwrap();
    assert!(!short.contains("/400 rows"), "{short}");
    let quiet = on_a_terminal(&[&args[..], &["-q"]].concat(), Some("0")).unwrap();
    assert!(quiet.is_empty(), "{quiet}");
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
    let (a, b) = (
        image::open(d("back.png")).unwrap(),
        image::open(d("back_whole.png")).unwrap(),
    );
    assert!(max_steps(&a, &b) <= 1);
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
    // Gray with alpha has no TIFF layout in the streamed writer: forced, a one-line refusal;
    // by default the whole-image path writes it.
    image(30, 20, 2, false, 4).save(d("la.png")).unwrap();
    let forced = gblur()
        .args([d("la.png").as_os_str(), d("la.tif").as_os_str()])
        .args(["--sigma", "3", "--device", "rust", "--engine", "strips"])
        .assert()
        .failure()
        .code(2);
    let err = String::from_utf8_lossy(&forced.get_output().stderr).to_string();
    assert!(
        err.contains("gray with alpha") && err.trim_end().lines().count() == 1,
        "{err}"
    );
    assert!(!d("la.tif").exists());
    gblur()
        .args([d("la.png").as_os_str(), d("la.tif").as_os_str()])
        .args(["--sigma", "3", "--device", "rust", "--max-memory", "1"])
        .assert()
        .success();
    // EXIF and XMP go to TIFF through the whole-image path, which writes them.
    png_with_metadata(&d("meta.png"));
    let forced = gblur()
        .args([d("meta.png").as_os_str(), d("meta.tif").as_os_str()])
        .args(["--sigma", "3", "--device", "rust", "--engine", "strips"])
        .assert()
        .failure()
        .code(2);
    let err = String::from_utf8_lossy(&forced.get_output().stderr).to_string();
    assert!(err.contains("EXIF or XMP"), "{err}");
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
