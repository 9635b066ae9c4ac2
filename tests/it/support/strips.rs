//! What the strip engine's tests share: a photo-like test image of any sample layout, a run
//! of the command with strips forced tiny (`GBLUR_STRIP_ROWS`), and the largest difference
//! between two images in steps.
#![allow(dead_code)]

use crate::common::{self, gblur};
use image::DynamicImage;
use std::path::Path;

/// Smooth structure plus noise, `channels` of 8 or 16 bits, alpha kept in [1/4, 1] so that
/// un-premultiplying does not magnify what the window's start leaves out.
pub fn image(w: u32, h: u32, channels: usize, sixteen: bool, seed: u64) -> DynamicImage {
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
pub const LAYOUTS: [(usize, bool); 7] = [
    (1, false),
    (2, false),
    (3, false),
    (4, false),
    (1, true),
    (3, true),
    (4, true),
];

/// Runs gblur on `input` into `output` with `engine`, strips of `rows` rows.
pub fn run(input: &Path, output: &Path, engine: &str, sigma: f64, rows: usize, extra: &[&str]) {
    run_env(input, output, engine, (sigma, rows), extra, &[]);
}

/// `run` by the exact two-pass method (`GBLUR_TWO_PASS`), its states in a temporary file
/// where `spill`.
pub fn run_two_pass(
    input: &Path,
    output: &Path,
    (sigma, rows): (f64, usize),
    spill: bool,
    extra: &[&str],
) {
    let env = [("GBLUR_TWO_PASS", if spill { "2" } else { "1" })];
    let err = run_env(input, output, "strips", (sigma, rows), extra, &env);
    assert!(err.contains("exact two-pass method"), "{err}");
}

/// `run`'s command with `env` set, which must succeed; returns its stderr.
fn run_env(
    input: &Path,
    output: &Path,
    engine: &str,
    (sigma, rows): (f64, usize),
    extra: &[&str],
    env: &[(&str, &str)],
) -> String {
    let sigma = sigma.to_string();
    let assert = gblur()
        .envs(env.iter().copied())
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
    String::from_utf8_lossy(&assert.get_output().stderr).into_owned()
}

/// The largest difference between the samples of the image files `a` and `b`, in steps.
pub fn files_apart(a: &Path, b: &Path) -> u32 {
    max_steps(&image::open(a).unwrap(), &image::open(b).unwrap())
}

/// The largest difference between two images' samples, in steps.
pub fn max_steps(a: &DynamicImage, b: &DynamicImage) -> u32 {
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

/// A PNG with an ICC profile, EXIF and XMP, written by the `png` crate.
pub fn png_with_metadata(path: &Path) {
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

/// Runs `cmd` to its end; returns its exit status, its stderr and its peak resident set in
/// bytes, measured for this child alone (`wait4`), whatever other tests run at once.
// The child is reaped by `wait4`, which gives its own resource use; `Child::wait` would not.
#[allow(clippy::zombie_processes)]
pub fn run_measured(cmd: &mut std::process::Command) -> (i32, String, u64) {
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

/// Writes a `w`×`h` gray PNG of smooth noise row by row, never holding the image.
pub fn large_png(path: &Path, w: u32, h: u32) {
    noise_png(path, (w, h), 1);
}

/// Writes a `w`×`h` PNG of smooth noise in `channels` (1: gray, 3: RGB) row by row, never
/// holding the image.
pub fn noise_png(path: &Path, (w, h): (u32, u32), channels: usize) {
    let file = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut e = png::Encoder::new(file, w, h);
    e.set_color(match channels {
        1 => png::ColorType::Grayscale,
        _ => png::ColorType::Rgb,
    });
    e.set_compression(png::Compression::Fast);
    let mut writer = e.write_header().unwrap();
    let mut stream = writer.stream_writer().unwrap();
    let mut s = 0x2545F4914F6CDD1Du64;
    let mut row = vec![0u8; w as usize * channels];
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

/// ICC profile, EXIF and XMP, as a decoder reads them.
pub type Meta = (Option<Vec<u8>>, Option<Vec<u8>>, Option<Vec<u8>>);

/// The metadata `decoder` reads from the file at `path`.
pub fn metadata_of<D: image::ImageDecoder>(
    path: &Path,
    decoder: impl FnOnce(std::io::BufReader<std::fs::File>) -> image::ImageResult<D>,
) -> Meta {
    let file = std::io::BufReader::new(std::fs::File::open(path).unwrap());
    let mut d = decoder(file).unwrap();
    (
        d.icc_profile().unwrap(),
        d.exif_metadata().unwrap(),
        d.xmp_metadata().unwrap(),
    )
}

/// Runs a PNG with metadata (`png_with_metadata`, written into `dir`) through both engines
/// into `ext` files and checks that the strip engine wrote what the whole-image path wrote,
/// as `read` reads them: the ICC profile, EXIF and XMP.
pub fn check_metadata_like_the_whole_image(dir: &Path, ext: &str, read: impl Fn(&Path) -> Meta) {
    let input = dir.join("meta.png");
    let (whole, strips) = (
        dir.join(format!("whole.{ext}")),
        dir.join(format!("strips.{ext}")),
    );
    png_with_metadata(&input);
    run(&input, &whole, "whole", 4.0, 16, &[]);
    run(&input, &strips, "strips", 4.0, 16, &[]);
    let (a, b) = (read(&whole), read(&strips));
    assert_eq!(a.0.as_deref(), Some(&[7u8; 300][..]));
    assert!(
        a.1.is_some() && a.2.is_some(),
        "the whole path kept EXIF and XMP"
    );
    assert_eq!(a, b);
}

/// Runs `--engine strips` on `input` into `output` with `extra` arguments and checks the
/// refusal: exit 2, one line that names the option and says `says`, no output written.
pub fn assert_refused(input: &Path, output: &Path, extra: &[&str], says: &str) {
    let assert = gblur()
        .args([input.as_os_str(), output.as_os_str()])
        .args(["--sigma", "3", "--engine", "strips"])
        .args(extra)
        .assert()
        .failure()
        .code(2);
    let err = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
    assert!(
        err.contains("--engine strips") && err.contains(says),
        "{extra:?}: {err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(!output.exists());
}
