//! Float images (OpenEXR, 32-bit float TIFF) through every blur path: values above 1 and
//! below 0 come out unclipped, constant regions stay constant bit for bit at every sigma, float TIFF and OpenEXR round
//! trip through files and pipes, and `--dither` breaks the bands of a float gradient written
//! as 8 bits. The OpenCL paths run on the test device (PoCL in CI).

use crate::common;
use common::gblur;
use image::{DynamicImage, Rgb32FImage, Rgba32FImage};
use std::path::Path;

/// The OpenCL paths run too, on the test device, which must exist (`common::require_opencl`).
fn opencl() -> bool {
    common::require_opencl();
    true
}

/// Runs gblur on `input` → `output` with `args`, expecting success; returns stderr.
fn run(input: &Path, output: &Path, args: &[&str]) -> String {
    let out = gblur().arg(input).arg(output).args(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "gblur {args:?}: {err}");
    err
}

fn read_rgba(path: &Path) -> Rgba32FImage {
    image::open(path).unwrap().to_rgba32f()
}

/// The blur paths a float image can take: the banded Rust blur in place, and each OpenCL
/// pipeline (planar f32).
fn recursive_paths() -> Vec<Vec<&'static str>> {
    let mut paths = vec![vec!["--device", "rust"]];
    if opencl() {
        for p in ["direct", "transpose", "carried", "overlap"] {
            paths.push(vec!["--device", "cpu", "--pipeline", p]);
        }
    }
    paths
}

/// Distance in units in the last place between two finite f32 of the same sign.
fn ulps(a: f32, b: f32) -> u32 {
    (a.to_bits() as i64 - b.to_bits() as i64).unsigned_abs() as u32
}

const SIGMA: f64 = 3.0;
/// Regions of the constant-region image: 1e4 on [10, 130)², -3 on [130, 250)², 0.25 around.
/// They share no row and no column, so each line crosses at most one of them.
const BIG: f32 = 1e4;
const NEG: f32 = -3.0;

fn constant_regions() -> Rgb32FImage {
    Rgb32FImage::from_fn(260, 260, |x, y| {
        let inside = |a: u32| (a..a + 120).contains(&x) && (a..a + 120).contains(&y);
        let v = if inside(10) {
            BIG
        } else if inside(130) {
            NEG
        } else {
            0.25
        };
        image::Rgb([v, v, v])
    })
}

/// The worst distance in ulps from its region's value over each region's interior (12 sigma
/// from its edges), and the image's smallest and largest samples.
fn interior_error(img: &Rgba32FImage) -> (u32, u32, f32, f32) {
    let m = (12.0 * SIGMA) as u32;
    let (mut big, mut neg) = (0, 0);
    let (mut lo, mut hi) = (f32::MAX, f32::MIN);
    for (x, y, p) in img.enumerate_pixels() {
        let inner = |a: u32| (a + m..a + 120 - m).contains(&x) && (a + m..a + 120 - m).contains(&y);
        for &v in &p.0[..3] {
            lo = lo.min(v);
            hi = hi.max(v);
            if inner(10) {
                big = big.max(ulps(v, BIG));
            }
            if inner(130) {
                neg = neg.max(ulps(v, NEG));
            }
        }
    }
    (big, neg, lo, hi)
}

/// `img`'s three channels as planes through `Gaussian::blur_planar` with the recursive
/// filter, back as an opaque RGBA image.
fn blur_planes(img: &Rgb32FImage, sigma: f64) -> Rgba32FImage {
    let (w, h) = img.dimensions();
    let plane = (w * h) as usize;
    let mut planes = vec![0f32; 3 * plane];
    for (i, p) in img.pixels().enumerate() {
        for c in 0..3 {
            planes[c * plane + i] = p[c];
        }
    }
    let g = gblur::Gaussian::builder()
        .sigma(sigma)
        .method(gblur::Method::Recursive)
        .build()
        .unwrap();
    g.blur_planar(&mut planes, w as usize, h as usize).unwrap();
    Rgba32FImage::from_fn(w, h, |x, y| {
        let at = (y * w + x) as usize;
        image::Rgba([planes[at], planes[plane + at], planes[2 * plane + at], 1.0])
    })
}

#[test]
fn exr_constant_regions_of_1e4_and_minus_3_survive_the_blur() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.exr");
    DynamicImage::ImageRgb32F(constant_regions())
        .save(&input)
        .unwrap();
    let sigma = SIGMA.to_string();
    // The FIR (each output its input plus weighted differences) keeps them bit for bit.
    let mut fir = vec![vec!["--device", "rust"]];
    if opencl() {
        fir.push(vec!["--device", "cpu"]);
    }
    for args in fir {
        let out = dir.path().join("fir.exr");
        let mut a = args.clone();
        a.extend(["--sigma", &sigma, "--method", "fir"]);
        run(&input, &out, &a);
        let (big, neg, lo, hi) = interior_error(&read_rgba(&out));
        assert_eq!((big, neg), (0, 0), "fir {args:?}");
        assert_eq!((lo, hi), (NEG, BIG), "fir {args:?}: clipped or overshot");
    }
    // So does the recursive filter, in its difference form (ALGORITHMS.md).
    for args in recursive_paths() {
        let out = dir.path().join("iir.exr");
        let mut a = args.clone();
        a.extend(["--sigma", &sigma, "--method", "recursive"]);
        run(&input, &out, &a);
        let (big, neg, lo, hi) = interior_error(&read_rgba(&out));
        assert_eq!((big, neg), (0, 0), "{args:?}: ulps off 1e4 and -3");
        // Deriche's filter overshoots a step by 1.6e-4 of it: nothing was clipped.
        assert!(hi > BIG && hi < BIG * 1.0002, "{args:?}: max {hi}");
        assert!(lo < NEG && lo > NEG - 1e4 * 2e-4, "{args:?}: min {lo}");
    }
    // The library's planes (the engine under `Gaussian::blur_planar` and the Python
    // package), in process.
    let img = image::open(&input).unwrap().to_rgb32f();
    let got = blur_planes(&img, SIGMA);
    let (big, neg, _, hi) = interior_error(&got);
    assert_eq!((big, neg), (0, 0), "planes: ulps off 1e4 and -3");
    assert!(hi > BIG, "planes: max {hi}");
}

/// Stretches of 1e4 and -3 along one axis, each `12 sigma` longer than its interior at either
/// end, between stretches of 0.25: `len` samples along the axis, 4 across.
fn constant_stretches(sigma: f64, along_x: bool) -> (Rgb32FImage, [std::ops::Range<u32>; 2]) {
    let margin = (12.0 * sigma).ceil() as u32;
    let span = 2 * margin + 16;
    let big = 8..8 + span;
    let neg = big.end + span..big.end + 2 * span;
    let len = neg.end + 8;
    let value = |i: u32| {
        if big.contains(&i) {
            BIG
        } else if neg.contains(&i) {
            NEG
        } else {
            0.25
        }
    };
    let (w, h) = if along_x { (len, 4) } else { (4, len) };
    let img = Rgb32FImage::from_fn(w, h, |x, y| {
        let v = value(if along_x { x } else { y });
        image::Rgb([v, v, v])
    });
    let inner = |r: &std::ops::Range<u32>| r.start + margin..r.end - margin;
    (img, [inner(&big), inner(&neg)])
}

/// Worst ulps off 1e4 and off -3 over the stretches' interiors, along x or y.
fn stretch_error(img: &Rgba32FImage, inner: &[std::ops::Range<u32>; 2], along_x: bool) -> [u32; 2] {
    let mut worst = [0, 0];
    for (x, y, p) in img.enumerate_pixels() {
        let i = if along_x { x } else { y };
        for (k, want) in [BIG, NEG].into_iter().enumerate() {
            if inner[k].contains(&i) {
                for &v in &p.0[..3] {
                    worst[k] = worst[k].max(ulps(v, want));
                }
            }
        }
    }
    worst
}

#[test]
fn constant_stretches_stay_exact_at_every_sigma_on_every_path() {
    let dir = tempfile::tempdir().unwrap();
    let mut paths: Vec<Vec<&str>> = recursive_paths()
        .into_iter()
        .map(|mut p| {
            p.extend(["--method", "recursive"]);
            p
        })
        .collect();
    paths.push(vec!["--device", "rust", "--method", "fir"]);
    if opencl() {
        paths.push(vec!["--device", "cpu", "--method", "fir"]);
    }
    for sigma in [0.5, 3.0, 10.0, 50.0, 200.0] {
        for (along_x, ext) in [(true, "exr"), (false, "tif")] {
            let (img, inner) = constant_stretches(sigma, along_x);
            let input = dir.path().join(format!("stretch.{ext}"));
            DynamicImage::ImageRgb32F(img.clone()).save(&input).unwrap();
            let s = sigma.to_string();
            for args in &paths {
                if args.contains(&"fir") && sigma > 50.0 {
                    continue; // 2001 taps: exact as well, only slow
                }
                let out = dir.path().join(format!("out.{ext}"));
                let mut a = args.clone();
                a.extend(["--sigma", &s]);
                run(&input, &out, &a);
                let worst = stretch_error(&read_rgba(&out), &inner, along_x);
                assert_eq!(worst, [0, 0], "sigma {sigma} along x {along_x} {args:?}");
            }
            // The library's planes, in process.
            let worst = stretch_error(&blur_planes(&img, sigma), &inner, along_x);
            assert_eq!(worst, [0, 0], "sigma {sigma} along x {along_x}: planes");
        }
    }
}

/// The exact blur of `img` in f64: the sampled Gaussian (radius 8 sigma, normalised) along x
/// then y, clamping reads to the image, as gblur does.
fn exact_blur(img: &Rgb32FImage, sigma: f64) -> Vec<[f64; 3]> {
    let r = (8.0 * sigma).ceil() as i64;
    let taps: Vec<f64> = (-r..=r)
        .map(|k| (-(k * k) as f64 / (2.0 * sigma * sigma)).exp())
        .collect();
    let sum: f64 = taps.iter().sum();
    let (w, h) = (img.width() as i64, img.height() as i64);
    let at = |x: i64, y: i64| img.get_pixel(x as u32, y as u32).0.map(|v| v as f64);
    let pass = |src: &dyn Fn(i64, i64) -> [f64; 3], along_x: bool| -> Vec<[f64; 3]> {
        let mut out = vec![[0.0; 3]; (w * h) as usize];
        for y in 0..h {
            for x in 0..w {
                let mut acc = [0.0; 3];
                for (k, t) in (-r..=r).zip(&taps) {
                    let v = if along_x {
                        src((x + k).clamp(0, w - 1), y)
                    } else {
                        src(x, (y + k).clamp(0, h - 1))
                    };
                    for c in 0..3 {
                        acc[c] += t / sum * v[c];
                    }
                }
                out[(y * w + x) as usize] = acc;
            }
        }
        out
    };
    let rows = pass(&at, true);
    pass(&|x, y| rows[(y * w + x) as usize], false)
}

#[test]
fn values_above_one_near_an_edge_are_blurred_not_clipped() {
    let dir = tempfile::tempdir().unwrap();
    // Steps from 8 to 0.5 (x), from -2 to 3 (y), and a ramp from 0.25 to 1.2.
    let img = Rgb32FImage::from_fn(96, 64, |x, y| {
        image::Rgb([
            if x < 48 { 8.0 } else { 0.5 },
            if y < 32 { -2.0 } else { 3.0 },
            0.25 + x as f32 * 0.01,
        ])
    });
    let input = dir.path().join("edge.tif");
    DynamicImage::ImageRgb32F(img.clone()).save(&input).unwrap();
    let range = 10.0;
    // Recursive: each axis within 5.7e-4 relative L1 of the Gaussian (README, Accuracy), so
    // the 2-D blur within 2 × 5.7e-4 of the range; the FIR within its truncated mass.
    let cases = [(3.0, 2.0 * 5.7e-4 * range + 1e-5), (1.5, 1e-5 * range)];
    for (sigma, bound) in cases {
        let exact = exact_blur(&img, sigma);
        let mut paths = recursive_paths();
        paths.truncate(if opencl() { 2 } else { 1 });
        for args in paths {
            let out = dir.path().join("out.tif");
            let s = sigma.to_string();
            let mut a = args.clone();
            a.extend(["--sigma", &s]);
            run(&input, &out, &a);
            let got = read_rgba(&out);
            let mut worst = 0f64;
            for (p, want) in got.pixels().zip(&exact) {
                for (&v, &w) in p.0.iter().zip(want) {
                    worst = worst.max((v as f64 - w).abs());
                }
            }
            assert!(worst <= bound, "sigma {sigma} {args:?}: {worst} > {bound}");
            // Right at the 8 → 0.5 step the blur is about 4.25: far above 1.
            let mid = got.get_pixel(48, 10).0[0] as f64;
            assert!(
                (mid - exact[10 * 96 + 48][0]).abs() <= bound && mid > 3.0,
                "{mid}"
            );
        }
    }
}

/// Float samples a round trip must keep: tiny, large, negative, above 1.
fn awkward(x: u32, y: u32, c: u32) -> f32 {
    let k = (x * 7 + y * 13 + c * 5) % 6;
    [1e-3, 5.5, -7.25, 1e20, 0.333_333_34, -1e-20][k as usize] * (1.0 + x as f32 * 1e-3)
}

#[test]
fn float_tiff_and_exr_round_trip_at_a_tiny_sigma() {
    let dir = tempfile::tempdir().unwrap();
    let rgb = Rgb32FImage::from_fn(21, 13, |x, y| {
        image::Rgb([0, 1, 2].map(|c| awkward(x, y, c)))
    });
    let rgba = Rgba32FImage::from_fn(21, 13, |x, y| {
        let a = [1.0, 0.5, 0.2, 0.75][((x + y) % 4) as usize];
        image::Rgba([awkward(x, y, 0), awkward(x, y, 1), awkward(x, y, 2), a])
    });
    let mut devices = vec!["rust"];
    if opencl() {
        devices.push("cpu");
    }
    for ext in ["tif", "exr"] {
        for (name, img) in [
            ("rgb", DynamicImage::ImageRgb32F(rgb.clone())),
            ("rgba", DynamicImage::ImageRgba32F(rgba.clone())),
        ] {
            let input = dir.path().join(format!("{name}.{ext}"));
            img.save(&input).unwrap();
            for device in &devices {
                let out = dir.path().join(format!("out.{ext}"));
                run(&input, &out, &["--sigma", "0.001", "--device", device]);
                let back = image::open(&out).unwrap();
                assert_eq!(back.color(), img.color(), "{name}.{ext} {device}");
                same_floats(&img, &back, &format!("{name}.{ext} {device}"));
                // The same through a pipe, recognised by content.
                let piped = gblur()
                    .args(["-", "-", "--sigma", "0.001", "--device", device])
                    .args(["--format", ext])
                    .pipe_stdin(&input)
                    .unwrap()
                    .output()
                    .unwrap();
                assert!(piped.status.success(), "{name}.{ext} piped");
                assert_eq!(piped.stdout, std::fs::read(&out).unwrap(), "{name}.{ext}");
            }
        }
    }
}

/// Samples equal bit for bit; premultiplied colour (alpha below 1) within 1 ulp, since
/// v × a / a may round once each way.
fn same_floats(a: &DynamicImage, b: &DynamicImage, what: &str) {
    let (a, b) = (a.to_rgba32f(), b.to_rgba32f());
    for (p, q) in a.pixels().zip(b.pixels()) {
        let tolerance = if p.0[3] < 1.0 { 1 } else { 0 };
        for c in 0..4 {
            let d = ulps(p.0[c], q.0[c]);
            assert!(d <= tolerance, "{what}: {:?} became {:?}", p.0, q.0);
        }
    }
}

/// A float gradient through 5 levels of 8 bits over 1024 pixels: undithered, bands of
/// about 200 pixels.
fn gradient() -> Rgb32FImage {
    Rgb32FImage::from_fn(1024, 32, |x, _| {
        let v = 0.2 + 0.02 * x as f32 / 1023.0;
        image::Rgb([v, v, v])
    })
}

/// The mean and the longest run of equal 8-bit samples along the rows of channel 0, over
/// columns `from..to`.
fn runs(img: &image::RgbImage, from: u32, to: u32) -> (f64, u32) {
    let (mut count, mut longest) = (0, 0);
    for y in 0..img.height() {
        let mut run = 1;
        for x in from + 1..to {
            if img.get_pixel(x, y).0[0] == img.get_pixel(x - 1, y).0[0] {
                run += 1;
            } else {
                (count, run) = (count + 1, 1);
            }
            longest = longest.max(run);
        }
        count += 1;
    }
    ((img.height() * (to - from)) as f64 / count as f64, longest)
}

#[test]
fn dither_breaks_the_bands_of_a_float_gradient_written_as_8_bits() {
    let dir = tempfile::tempdir().unwrap();
    let ramp = gradient();
    let exr = dir.path().join("ramp.exr");
    DynamicImage::ImageRgb32F(ramp.clone()).save(&exr).unwrap();
    let png16 = dir.path().join("ramp16.png");
    DynamicImage::ImageRgb32F(ramp.clone())
        .to_rgb16()
        .save(&png16)
        .unwrap();
    // Float and 16-bit into 8-bit BMP (lossless, 8 bits only; PNG would keep 16 bits).
    // sigma 0.001 (identity, planar FIR) and sigma 4 (banded in place on the Rust path; planar
    // on the device). Columns within 40 of the ends, where the clamped edges flatten the
    // blurred ramp, are left out.
    let mut cases = vec![
        (&exr, "0.001", "rust"),
        (&exr, "4", "rust"),
        (&png16, "4", "rust"),
    ];
    if opencl() {
        cases.extend([(&exr, "4", "cpu"), (&png16, "0.001", "cpu")]);
    }
    for (input, sigma, device) in cases {
        let plain = dir.path().join("plain.bmp");
        let dithered = dir.path().join("dithered.bmp");
        let args = ["--sigma", sigma, "--device", device];
        run(input, &plain, &args);
        let notes = run(input, &dithered, &[&args[..], &["--dither"]].concat());
        assert!(notes.contains("dithered to 8 bits"), "{notes}");
        let plain = image::open(&plain).unwrap().to_rgb8();
        let dith = image::open(&dithered).unwrap().to_rgb8();
        assert_eq!(plain.dimensions(), (1024, 32));
        let what = format!("{} sigma {sigma} {device}", input.display());
        // Undithered: 5 bands of about 200 columns. Dithered: a fine grain (at a level's
        // centre, 3 samples in 4 keep it, so short runs remain).
        let (mean, _) = runs(&plain, 40, 984);
        assert!(mean >= 100.0, "{what}: no bands to break (mean run {mean})");
        let (mean, longest) = runs(&dith, 40, 984);
        assert!(
            mean <= 4.0 && longest < 64,
            "{what}: runs of {mean} on average, {longest} at most"
        );
        // The mean error over each 16-column block stays within half a step.
        for x0 in (48..976).step_by(16) {
            let (mut err, mut n) = (0.0, 0.0);
            for y in 0..32 {
                for x in x0..x0 + 16 {
                    let want = ramp.get_pixel(x, y).0[0] as f64 * 255.0;
                    err += dith.get_pixel(x, y).0[0] as f64 - want;
                    n += 1.0;
                }
            }
            assert!(
                (err / n).abs() <= 0.5,
                "{what}: block {x0} off by {}",
                err / n
            );
        }
        // Seeded: the same run gives the same bytes.
        let again = dir.path().join("again.bmp");
        run(input, &again, &[&args[..], &["--dither"]].concat());
        assert_eq!(
            std::fs::read(&again).unwrap(),
            std::fs::read(&dithered).unwrap()
        );
    }
}

/// A 4 × 2 gray 32-bit float TIFF where white is zero, uncompressed, written by hand: a layout
/// neither the `image` crate nor gblur reads (gray float is read where black is zero).
fn white_is_zero_float_tiff() -> Vec<u8> {
    let pixels: Vec<u8> = (0..8)
        .flat_map(|i| (i as f32 * 0.5).to_le_bytes())
        .collect();
    let entries: [(u16, u16, u32); 9] = [
        (256, 3, 4),  // ImageWidth
        (257, 3, 2),  // ImageLength
        (258, 3, 32), // BitsPerSample
        (259, 3, 1),  // Compression: none
        (262, 3, 0),  // Photometric: white is zero
        (273, 4, 8),  // StripOffsets: right after the header
        (277, 3, 1),  // SamplesPerPixel
        (279, 4, 32), // StripByteCounts
        (339, 3, 3),  // SampleFormat: IEEE float
    ];
    let mut t = b"II*\0".to_vec();
    t.extend(((8 + pixels.len()) as u32).to_le_bytes());
    t.extend(&pixels);
    t.extend((entries.len() as u16).to_le_bytes());
    for (tag, kind, value) in entries {
        t.extend(tag.to_le_bytes());
        t.extend(kind.to_le_bytes());
        t.extend(1u32.to_le_bytes());
        t.extend(value.to_le_bytes());
    }
    t.extend(0u32.to_le_bytes());
    t
}

#[test]
fn float_images_into_formats_that_cannot_hold_them_say_what_happens() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.exr");
    DynamicImage::ImageRgb32F(constant_regions())
        .save(&input)
        .unwrap();
    // 120² pixels of 1e4 and 120² of -3, three channels each: clipped whatever the blur.
    let outside = |notes: &str| -> usize {
        let at = notes.find(" float samples outside [0, 1]").expect(notes);
        notes[..at].rsplit(' ').next().unwrap().parse().unwrap()
    };
    for (ext, wrote) in [("png", "Rgb16"), ("jpg", "Rgb8"), ("webp", "Rgb8")] {
        let out = dir.path().join(format!("out.{ext}"));
        let notes = run(&input, &out, &["--sigma", "2", "--device", "rust"]);
        assert!(
            notes.contains(&format!("wrote {wrote} (float samples clamped to [0, 1]")),
            "{notes}"
        );
        assert!(outside(&notes) >= 2 * 3 * 120 * 120, "{notes}");
        let back = image::open(&out).unwrap().to_rgb8();
        assert_eq!(back.get_pixel(70, 70).0[0], 255, "{ext}");
        assert_eq!(back.get_pixel(190, 190).0[0], 0, "{ext}");
    }
    // Radiance HDR has no sign.
    let out = dir.path().join("out.hdr");
    let notes = run(&input, &out, &["--sigma", "2", "--device", "rust"]);
    assert!(notes.contains("holds no negative values"), "{notes}");
    let back = image::open(&out).unwrap().to_rgb32f();
    assert_eq!(back.get_pixel(190, 190).0[0], 0.0);
    let big = back.get_pixel(70, 70).0[0];
    assert!((big - 1e4).abs() <= 1e4 / 128.0, "{big}");
    // White-is-zero float: refused with the reason, nothing written.
    let gray = dir.path().join("gray.tif");
    std::fs::write(&gray, white_is_zero_float_tiff()).unwrap();
    let out = dir.path().join("gray-out.tif");
    let r = gblur()
        .arg(&gray)
        .arg(&out)
        .args(["--sigma", "2"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(1), "{err}");
    assert!(
        err.contains("gray.tif") && err.contains("where black is zero"),
        "{err}"
    );
    assert!(!out.exists());
}
