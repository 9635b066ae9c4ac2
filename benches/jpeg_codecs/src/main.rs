//! JPEG codec candidates on the same files, the same cores and the same quality: decode to
//! interleaved RGB, decode to YCbCr planes at their own (subsampled) size, encode from RGB and
//! encode from planes, at quality 90 with the input's own chroma subsampling.
//!
//! Every round runs every candidate once, in an order that rotates from round to round, so a
//! shared machine's drift falls on all of them alike; each figure is the median over rounds.
//! "2 threads" encodes two horizontal stripes at once (the layout a restart-marker join
//! needs) and concatenates their bytes; a baseline file without restart markers has no
//! parallel decode, so decode is timed on one thread only.
//!
//! usage: jpeg-codecs-bench [--runs N] FILE.jpg...
//! Build with `--features turbojpeg` for libjpeg-turbo (TurboJPEG) or `--features mozjpeg`
//! for mozjpeg, one at a time (the two C libraries export the same symbols); they need cmake
//! and nasm.
use libjpeg_turbo_rs as ljt;
use std::time::Instant;

const QUALITY: u8 = 90;

/// A file's pixels in both layouts, to feed the encoders.
struct Decoded {
    width: usize,
    height: usize,
    subsampling: ljt::Subsampling,
    rgb: Vec<u8>,
    planes: ljt::RawImage,
}

type Job<'a> = (String, Box<dyn Fn() -> usize + 'a>);

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut runs = 7;
    if args.first().map(String::as_str) == Some("--runs") {
        runs = args[1].parse().expect("--runs N");
        args.drain(..2);
    }
    assert!(
        !args.is_empty(),
        "usage: jpeg-codecs-bench [--runs N] FILE.jpg..."
    );
    for path in &args {
        let bytes = std::fs::read(path).expect("read the file");
        let d = reference_decode(&bytes);
        println!(
            "\n{path}: {}x{} {:?}, {:.1} MB; q{QUALITY}, median of {runs} rounds (ms)",
            d.width,
            d.height,
            d.subsampling,
            bytes.len() as f64 / 1e6
        );
        let jobs = jobs(&bytes, &d);
        let mut times = vec![Vec::new(); jobs.len()];
        for r in 0..runs {
            for k in 0..jobs.len() {
                let i = (k + r) % jobs.len();
                let t = Instant::now();
                std::hint::black_box((jobs[i].1)());
                times[i].push(t.elapsed().as_secs_f64() * 1e3);
            }
        }
        for ((name, job), t) in jobs.iter().zip(&mut times) {
            t.sort_by(f64::total_cmp);
            let out = job();
            println!(
                "  {name:<58} {:8.1}   (out {:.2} MB)",
                t[t.len() / 2],
                out as f64 / 1e6
            );
        }
    }
}

/// The file decoded by libjpeg-turbo-rs in both layouts (checked against zune-jpeg's RGB).
fn reference_decode(bytes: &[u8]) -> Decoded {
    let img = ljt::decompress_to(bytes, ljt::PixelFormat::Rgb).expect("libjpeg-turbo-rs decodes");
    let planes = ljt::decompress_raw(bytes).expect("libjpeg-turbo-rs raw decode");
    let decoder = ljt::Decoder::new(bytes).expect("header");
    let subsampling = decoder.jpeg_subsampling();
    let zune = zune_jpeg::JpegDecoder::new(zune_core::bytestream::ZCursor::new(bytes))
        .decode()
        .expect("zune decodes");
    let worst = zune
        .iter()
        .zip(&img.data)
        .map(|(a, b)| a.abs_diff(*b))
        .max();
    println!("  (zune-jpeg and libjpeg-turbo-rs RGB differ by at most {worst:?})");
    Decoded {
        width: img.width,
        height: img.height,
        subsampling,
        rgb: img.data,
        planes,
    }
}

fn jobs<'a>(bytes: &'a [u8], d: &'a Decoded) -> Vec<Job<'a>> {
    let mut jobs: Vec<Job<'a>> = vec![
        (
            "decode RGB     zune-jpeg 0.5 (image crate's)".into(),
            Box::new(move || {
                zune_jpeg::JpegDecoder::new(zune_core::bytestream::ZCursor::new(bytes))
                    .decode()
                    .unwrap()
                    .len()
            }),
        ),
        (
            "decode RGB     libjpeg-turbo-rs 0.9".into(),
            Box::new(move || {
                ljt::decompress_to(bytes, ljt::PixelFormat::Rgb)
                    .unwrap()
                    .data
                    .len()
            }),
        ),
        (
            "decode planes  libjpeg-turbo-rs 0.9".into(),
            Box::new(move || {
                let raw = ljt::decompress_raw(bytes).unwrap();
                raw.planes.iter().map(Vec::len).sum()
            }),
        ),
    ];
    let sub420 = d.subsampling == ljt::Subsampling::S420;
    for threads in [1, 2] {
        jobs.push((
            format!("encode RGB     jpeg-encoder 0.6, {threads} thread(s)"),
            Box::new(move || {
                striped(d, threads, |rows, h| {
                    jpeg_encoder_rgb(rows, d.width, h, sub420)
                })
            }),
        ));
        jobs.push((
            format!("encode RGB     libjpeg-turbo-rs 0.9, {threads} thread(s)"),
            Box::new(move || {
                striped(d, threads, |rows, h| {
                    ljt::compress(
                        rows,
                        d.width,
                        h,
                        ljt::PixelFormat::Rgb,
                        QUALITY,
                        d.subsampling,
                    )
                    .unwrap()
                })
            }),
        ));
    }
    jobs.push((
        "encode planes  libjpeg-turbo-rs 0.9, 1 thread".into(),
        Box::new(move || {
            let p = &d.planes;
            let planes: Vec<&[u8]> = p.planes.iter().map(Vec::as_slice).collect();
            ljt::compress_raw(
                &planes,
                &p.plane_widths,
                &p.plane_heights,
                d.width,
                d.height,
                QUALITY,
                d.subsampling,
            )
            .unwrap()
            .len()
        }),
    ));
    #[cfg(any(feature = "turbojpeg", feature = "mozjpeg"))]
    c_codecs::add(&mut jobs, bytes, d);
    jobs
}

/// Encodes `d.rgb` in `threads` horizontal stripes at once (MCU-aligned) and concatenates
/// the results; returns the byte count.
fn striped(d: &Decoded, threads: usize, enc: impl Fn(&[u8], usize) -> Vec<u8> + Sync) -> usize {
    let row = d.width * 3;
    let rows_per = d.height.div_ceil(threads).div_ceil(16) * 16;
    let parts: Vec<Vec<u8>> = std::thread::scope(|s| {
        let handles: Vec<_> = d
            .rgb
            .chunks(rows_per * row)
            .map(|chunk| {
                let enc = &enc;
                s.spawn(move || enc(chunk, chunk.len() / row))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    parts.concat().len()
}

fn jpeg_encoder_rgb(rgb: &[u8], w: usize, h: usize, sub420: bool) -> Vec<u8> {
    let mut out = Vec::new();
    let mut enc = jpeg_encoder::Encoder::new(&mut out, QUALITY);
    if sub420 {
        enc.set_sampling_factor(jpeg_encoder::SamplingFactor::R_4_2_0);
    } else {
        enc.set_sampling_factor(jpeg_encoder::SamplingFactor::R_4_4_4);
    }
    enc.encode(rgb, w as u16, h as u16, jpeg_encoder::ColorType::Rgb)
        .unwrap();
    out
}

#[cfg(any(feature = "turbojpeg", feature = "mozjpeg"))]
mod c_codecs {
    use super::*;

    pub fn add<'a>(jobs: &mut Vec<Job<'a>>, bytes: &'a [u8], d: &'a Decoded) {
        #[cfg(feature = "turbojpeg")]
        add_turbo(jobs, bytes, d);
        #[cfg(feature = "mozjpeg")]
        add_moz(jobs, bytes, d);
    }

    #[cfg(feature = "turbojpeg")]
    fn add_turbo<'a>(jobs: &mut Vec<Job<'a>>, bytes: &'a [u8], d: &'a Decoded) {
        let tj_sub = match d.subsampling {
            ljt::Subsampling::S420 => turbojpeg::Subsamp::Sub2x2,
            ljt::Subsampling::S422 => turbojpeg::Subsamp::Sub2x1,
            _ => turbojpeg::Subsamp::None,
        };
        jobs.push((
            "decode RGB     libjpeg-turbo 3.1 (turbojpeg 1.5, C+SIMD)".into(),
            Box::new(move || {
                turbojpeg::decompress(bytes, turbojpeg::PixelFormat::RGB)
                    .unwrap()
                    .pixels
                    .len()
            }),
        ));
        jobs.push((
            "decode planes  libjpeg-turbo 3.1 (turbojpeg 1.5, C+SIMD)".into(),
            Box::new(move || turbojpeg::decompress_to_yuv(bytes).unwrap().pixels.len()),
        ));
        for threads in [1, 2] {
            jobs.push((
                format!("encode RGB     libjpeg-turbo 3.1 (turbojpeg), {threads} thread(s)"),
                Box::new(move || {
                    striped(d, threads, |rows, h| {
                        let img = turbojpeg::Image {
                            pixels: rows,
                            width: d.width,
                            pitch: d.width * 3,
                            height: h,
                            format: turbojpeg::PixelFormat::RGB,
                        };
                        turbojpeg::compress(img, QUALITY as i32, tj_sub)
                            .unwrap()
                            .to_vec()
                    })
                }),
            ));
        }
        let yuv = turbojpeg::decompress_to_yuv(bytes).unwrap();
        jobs.push((
            "encode planes  libjpeg-turbo 3.1 (turbojpeg), 1 thread".into(),
            Box::new(move || {
                let mut c = turbojpeg::Compressor::new().unwrap();
                c.set_quality(QUALITY as i32).unwrap();
                c.set_subsamp(yuv.subsamp).unwrap();
                c.compress_yuv_to_vec(yuv.as_deref()).unwrap().len()
            }),
        ));
    }

    #[cfg(feature = "mozjpeg")]
    fn add_moz<'a>(jobs: &mut Vec<Job<'a>>, bytes: &'a [u8], d: &'a Decoded) {
        let full = d.subsampling == ljt::Subsampling::S444;
        jobs.push((
            "decode RGB     mozjpeg 0.10 (C+SIMD)".into(),
            Box::new(move || {
                let mut dec = mozjpeg::Decompress::new_mem(bytes).unwrap().rgb().unwrap();
                let px: Vec<[u8; 3]> = dec.read_scanlines().unwrap();
                dec.finish().unwrap();
                px.len() * 3
            }),
        ));
        jobs.push((
            "decode planes  mozjpeg 0.10 (C+SIMD)".into(),
            Box::new(move || mozjpeg_planes(bytes).iter().map(Vec::len).sum()),
        ));
        for threads in [1, 2] {
            jobs.push((
                format!("encode RGB     mozjpeg 0.10 fastest defaults, {threads} thread(s)"),
                Box::new(move || {
                    striped(d, threads, |rows, h| mozjpeg_rgb(rows, d.width, h, full))
                }),
            ));
        }
        let planes = mozjpeg_planes(bytes);
        jobs.push((
            "encode planes  mozjpeg 0.10 fastest defaults, 1 thread".into(),
            Box::new(move || {
                let mut c = mozjpeg::Compress::new(mozjpeg::ColorSpace::JCS_YCbCr);
                c.set_size(d.width, d.height);
                c.set_fastest_defaults();
                c.set_quality(QUALITY as f32);
                c.set_raw_data_in(true);
                if full {
                    c.set_chroma_sampling_pixel_sizes((1, 1), (1, 1));
                }
                let mut c = c.start_compress(Vec::new()).unwrap();
                let refs: Vec<&[u8]> = planes.iter().map(Vec::as_slice).collect();
                c.write_raw_data(&refs);
                c.finish().unwrap().len()
            }),
        ));
    }

    /// mozjpeg's raw planes: each component's rows padded to whole blocks.
    #[cfg(feature = "mozjpeg")]
    fn mozjpeg_planes(bytes: &[u8]) -> Vec<Vec<u8>> {
        let mut dec = mozjpeg::Decompress::new_mem(bytes).unwrap().raw().unwrap();
        let mut planes = vec![Vec::new(), Vec::new(), Vec::new()];
        {
            let mut refs: Vec<&mut Vec<u8>> = planes.iter_mut().collect();
            dec.read_raw_data(&mut refs);
        }
        dec.finish().unwrap();
        planes
    }

    #[cfg(feature = "mozjpeg")]
    fn mozjpeg_rgb(rgb: &[u8], w: usize, h: usize, full_chroma: bool) -> Vec<u8> {
        let mut c = mozjpeg::Compress::new(mozjpeg::ColorSpace::JCS_RGB);
        c.set_size(w, h);
        c.set_fastest_defaults();
        c.set_quality(QUALITY as f32);
        if full_chroma {
            c.set_chroma_sampling_pixel_sizes((1, 1), (1, 1));
        }
        let mut c = c.start_compress(Vec::new()).unwrap();
        c.write_scanlines(rgb).unwrap();
        c.finish().unwrap()
    }
}
