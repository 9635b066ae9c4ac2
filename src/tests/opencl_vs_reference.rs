//! Every kernel against the Rust reference on the OpenCL device (PoCL in CI).

use super::common;

use crate::cpu::reference;
use crate::filter::{Blur2d, LineFilter, Method};
use crate::gpu::format::PixelFormat;
use crate::gpu::pipeline;
use crate::gpu::plan::{ChunkStart, Pipeline};
use crate::gpu::transpose::TransposeKind;
use crate::gpu::upload;
use crate::pixels::planar::Planar;
use crate::report::PassKind;
use proptest::prelude::*;

fn check(ctx: &crate::gpu::opencl::ClContext, img: &Planar, blur: &Blur2d, pipe: Pipeline) {
    let (want, _) = reference::blur(img, blur);
    let (got, passes) = pipeline::blur(ctx, img.clone(), blur, pipe).expect("device blur");
    let err = got.max_abs_diff(&want);
    assert!(
        err <= 1e-5,
        "{}x{}x{} {:?} {}: max diff {err}",
        img.width,
        img.height,
        img.channels,
        blur,
        pipe.describe()
    );
    let got: Vec<_> = passes
        .iter()
        .map(|p| (p.name.as_str(), p.kind, p.bytes))
        .collect();
    let want = expected_passes(img, blur, pipe);
    let want: Vec<_> = want.iter().map(|(n, k, b)| (n.as_str(), *k, *b)).collect();
    assert_eq!(got, want, "{} {blur:?}", pipe.describe());
    for p in &passes {
        assert!(
            // A pass over a few pixels can start and end on the same tick of the device's
            // clock: never before it, never unmeasured.
            p.ms.is_finite() && p.ms >= 0.0,
            "{}: {} took {} ms by its profiling events",
            pipe.describe(),
            p.name,
            p.ms
        );
    }
}

/// The passes `pipeline::blur` must report for `img`, `blur` and `pipe`: name, kind and the
/// bytes of global memory each moves. `n` samples of f32 are uploaded and downloaded once;
/// a recursive pass reads its input twice and its output once and writes the output twice
/// (5 accesses a sample), a FIR pass reads and writes once (its other taps hit cache), a
/// transpose reads and writes once. Blocked passes: the summaries read the image and write 8
/// floats (2 sections, 2 states, 2 directions) per chunk of every column; the carries read
/// and rewrite those; the final pass reads the image twice, writes it once and reads the
/// summaries; an overlapped pass reads and writes the image once. After an odd number of
/// blocked axes the result sits in the scratch buffer and is copied back (read and write).
fn expected_passes(img: &Planar, blur: &Blur2d, pipe: Pipeline) -> Vec<(String, PassKind, u64)> {
    use PassKind::{Filter, Transfer, Transpose};
    let n = (img.width * img.height * img.channels) as u64;
    let f32s = 4 * n;
    let accesses = |f: &LineFilter| if f.is_recursive() { 5 } else { 2 };
    let pass = |name: &str, kind, bytes| (name.to_string(), kind, bytes);
    let mut want = vec![pass("upload", Transfer, f32s)];
    match pipe {
        Pipeline::Direct => {
            want.push(pass("row pass (x)", Filter, f32s * accesses(&blur.x)));
            want.push(pass("column pass (y)", Filter, f32s * accesses(&blur.y)));
        }
        Pipeline::Transpose(_) => {
            want.push(pass("column pass 1 (y)", Filter, f32s * accesses(&blur.y)));
            want.push(pass("transpose 1", Transpose, 2 * f32s));
            want.push(pass("column pass 2 (x)", Filter, f32s * accesses(&blur.x)));
            want.push(pass("transpose 2", Transpose, 2 * f32s));
        }
        Pipeline::Blocked { chunk, start } => {
            let mut blocked_axes = 0;
            for (f, len, axis) in [(&blur.y, img.height, "y"), (&blur.x, img.width, "x")] {
                if !f.is_recursive() {
                    want.push(pass(&format!("fir pass ({axis})"), Filter, 2 * f32s));
                    want.push(pass(&format!("transpose ({axis})"), Transpose, 2 * f32s));
                    continue;
                }
                blocked_axes += 1;
                let plan = crate::gpu::plan::blocked_plan(
                    f,
                    crate::gpu::plan::Blocking { chunk, start },
                    len,
                    PixelFormat::F32,
                );
                if plan.reach.is_some() {
                    let name = format!("block overlap + transpose ({axis})");
                    want.push(pass(&name, Filter, 2 * f32s));
                    continue;
                }
                let summaries = n * 32 / plan.chunk as u64;
                let name = format!("block summaries ({axis})");
                want.push(pass(&name, Filter, f32s + summaries));
                let name = format!("block carries ({axis})");
                want.push(pass(&name, Filter, 2 * summaries));
                let name = format!("block final + transpose ({axis})");
                want.push(pass(&name, Filter, 3 * f32s + summaries));
            }
            if blocked_axes % 2 == 1 {
                want.push(pass("copy back", Transfer, 2 * f32s));
            }
        }
    }
    want.push(pass("download", Transfer, f32s));
    want
}

#[test]
fn every_pipeline_matches_the_reference() {
    let ctx = common::context();
    let img = common::noise(67, 45, 3, 1);
    let blur = Blur2d::new(Method::Recursive, 3.5, 2.25);
    check(&ctx, &img, &blur, Pipeline::Direct);
    for chunk in [32, 64, 128] {
        for start in [ChunkStart::Carried, ChunkStart::Overlap] {
            check(&ctx, &img, &blur, Pipeline::Blocked { chunk, start });
        }
    }
    for t in TransposeKind::ALL {
        check(&ctx, &img, &blur, Pipeline::Transpose(t));
    }
    let tall = common::noise(45, 301, 2, 9);
    for start in [ChunkStart::Auto, ChunkStart::Overlap] {
        check(
            &ctx,
            &tall,
            &Blur2d::new(Method::Recursive, 40.0, 3.0),
            Pipeline::Blocked { chunk: 0, start },
        );
    }
    check(
        &ctx,
        &tall,
        &Blur2d::new(Method::Auto, 1.0, 7.0),
        Pipeline::BLOCKED,
    );
    // Large sigmas: poles near 1, where the summaries' anticausal shares (gains T^j (1, 1)
    // summed down a chunk) carry the most rounding.
    // Overlapped, they reach past both ends of every column (settle_rows finds no reach
    // shorter than the column) and start on the clamped edges themselves, four chunks to a
    // work-group (c64) or one (c256).
    let big = common::noise(300, 700, 1, 5);
    for (chunk, start) in [
        (32, ChunkStart::Carried),
        (128, ChunkStart::Carried),
        (64, ChunkStart::Overlap),
        (256, ChunkStart::Overlap),
    ] {
        check(
            &ctx,
            &big,
            &Blur2d::new(Method::Recursive, 250.0, 120.0),
            Pipeline::Blocked { chunk, start },
        );
    }
    let fir = Blur2d::new(Method::Fir, 1.2, 0.7);
    check(&ctx, &img, &fir, Pipeline::Direct);
    check(
        &ctx,
        &img,
        &fir,
        Pipeline::Transpose(TransposeKind::Tile32Skewed),
    );
}

/// The summaries take 4, 2 or 1 neighbouring columns per work-item as the width allows
/// (`pipeline::summary_vectors`), SPLIT work-items per chunk, and one table of weights for the
/// full chunks and the shorter last one: widths 64, 66, 67 down y and 100, 70, 129 down x.
#[test]
fn summaries_of_every_width_and_last_chunk() {
    let ctx = common::context();
    for (w, h) in [(64, 100), (66, 70), (67, 129)] {
        let img = common::noise(w, h, 2, (w * 1000 + h) as u64);
        for chunk in [32, 64] {
            let blur = Blur2d::new(Method::Recursive, 6.0, 30.0);
            let start = ChunkStart::Carried;
            check(&ctx, &img, &blur, Pipeline::Blocked { chunk, start });
        }
    }
}

#[test]
fn degenerate_sizes() {
    let ctx = common::context();
    for (w, h) in [(1, 1), (1, 17), (17, 1), (2, 3), (31, 33), (97, 13)] {
        let img = common::noise(w, h, 2, (w * 100 + h) as u64);
        for m in [Method::Recursive, Method::Fir] {
            let blur = Blur2d::new(m, 1.5, 4.0);
            check(&ctx, &img, &blur, Pipeline::Direct);
            check(&ctx, &img, &blur, Pipeline::BLOCKED);
            let overlap = Pipeline::Blocked {
                chunk: 0,
                start: ChunkStart::Overlap,
            };
            check(&ctx, &img, &blur, overlap);
            for t in TransposeKind::ALL {
                check(&ctx, &img, &blur, Pipeline::Transpose(t));
            }
        }
    }
}

/// An 8-bit image of `channels` samples per pixel (1 gray, 2 gray+alpha, 3 RGB, 4 RGBA) with
/// noise in every sample, alpha included.
fn noise_u8(w: usize, h: usize, channels: usize, seed: u64) -> image::DynamicImage {
    let p = common::noise(w, h, channels, seed);
    let plane = w * h;
    let raw: Vec<u8> = (0..plane * channels)
        .map(|i| (p.data[(i % channels) * plane + i / channels] * 255.0).round() as u8)
        .collect();
    let (w, h) = (w as u32, h as u32);
    match channels {
        1 => image::GrayImage::from_raw(w, h, raw).unwrap().into(),
        2 => image::GrayAlphaImage::from_raw(w, h, raw).unwrap().into(),
        3 => image::RgbImage::from_raw(w, h, raw).unwrap().into(),
        _ => image::RgbaImage::from_raw(w, h, raw).unwrap().into(),
    }
}

/// The blocked kernels reading and writing 8-bit samples (premultiplying, sRGB-decoding and
/// rounding on the device) against the Rust reference on the same image: at most one step
/// apart, and in almost every sample exactly equal.
fn check_u8(
    ctx: &crate::gpu::opencl::ClContext,
    img: &image::DynamicImage,
    blur: &Blur2d,
    linear: bool,
    crate::gpu::plan::Blocking { chunk, start }: crate::gpu::plan::Blocking,
) {
    let want = reference::blur_image(img, blur, linear);
    let mut got = img.clone();
    let pipe = Pipeline::Blocked { chunk, start };
    let passes = upload::blur_u8(ctx, &mut got, blur, linear, pipe).expect("device blur");
    assert!(passes.iter().any(|p| p.name == "upload (8-bit)"));
    let (g, w) = (got.as_bytes(), want.as_bytes());
    let off: Vec<u8> = g.iter().zip(w).map(|(a, b)| a.abs_diff(*b)).collect();
    let worst = off.iter().copied().max().unwrap_or(0);
    let differing = off.iter().filter(|&&d| d > 0).count();
    let what = format!(
        "{}x{} {:?} linear {linear} c{chunk} {start:?} {blur:?}",
        img.width(),
        img.height(),
        img.color()
    );
    assert!(worst <= 1, "{what}: {worst} steps off");
    assert!(
        differing * 1000 <= off.len().max(1000),
        "{what}: {differing} of {} samples differ",
        off.len()
    );
}

#[test]
fn eight_bit_samples_blur_on_the_device_like_the_reference() {
    let ctx = common::context();
    // Every channel count with both chunk starts, and every chunk length and colour handling
    // beside every start (a covering set: each of the 48 combinations builds programs of its
    // own, seconds apiece on a CPU device, for no pair of settings these leave out).
    let starts = [ChunkStart::Carried, ChunkStart::Overlap];
    for channels in 1..=4 {
        // Odd sizes: partial last chunks and partial work-groups on both axes.
        let img = noise_u8(67, 131, channels, channels as u64);
        for (k, start) in starts.into_iter().enumerate() {
            let linear = (channels + k) % 2 == 1;
            let chunk = [32, 64, 128][(2 * channels + k) % 3];
            let blur = Blur2d::new(Method::Recursive, 3.5, 12.0);
            check_u8(
                &ctx,
                &img,
                &blur,
                linear,
                crate::gpu::plan::Blocking { chunk, start },
            );
        }
    }
    // One context throughout: smaller images reuse the device memory kept from larger ones
    // (`ClContext::u8_scratch`), and the last, the largest, makes it allocate afresh.
    for (w, h) in [(1, 1), (1, 9), (9, 1), (2, 3), (33, 31), (97, 211)] {
        let img = noise_u8(w, h, 4, (w * 10 + h) as u64);
        check_u8(
            &ctx,
            &img,
            &Blur2d::new(Method::Recursive, 2.0, 2.0),
            false,
            crate::gpu::plan::Blocking {
                chunk: 32,
                start: ChunkStart::Auto,
            },
        );
    }
}

#[test]
fn eight_bit_images_go_to_the_blocked_pipeline_as_bytes() {
    use crate::gpu::plan::Upload;
    use image::ColorType;
    let blur = Blur2d::new(Method::Recursive, 5.0, 5.0);
    let blocked = Pipeline::BLOCKED;
    assert_eq!(
        Upload::for_image(ColorType::Rgba8, true, blocked, &blur),
        Upload::U8 {
            channels: 4,
            linear: true
        }
    );
    for other in [ColorType::Rgb16, ColorType::Rgba32F, ColorType::L16] {
        assert_eq!(
            Upload::for_image(other, false, blocked, &blur),
            Upload::PlanarF32
        );
    }
    assert_eq!(
        Upload::for_image(ColorType::L8, false, Pipeline::Direct, &blur),
        Upload::PlanarF32
    );
    let fir = Blur2d::new(Method::Fir, 5.0, 5.0);
    assert_eq!(
        Upload::for_image(ColorType::Rgb8, false, blocked, &fir),
        Upload::PlanarF32
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
    #[test]
    fn random_sizes_sigmas_channels_strategies(
        w in 1usize..150, h in 1usize..150, c in 1usize..=4,
        sx in 0.5f64..60.0, sy in 0.5f64..60.0,
        t in 0usize..10, method in 0usize..3, seed in any::<u64>(),
    ) {
        let ctx = common::context();
        let img = common::noise(w, h, c, seed);
        let m = [Method::Auto, Method::Recursive, Method::Fir][method];
        let pipe = match t {
            7 => Pipeline::Direct,
            8 => Pipeline::BLOCKED,
            9 => Pipeline::Blocked { chunk: 0, start: ChunkStart::Overlap },
            _ => Pipeline::Transpose(TransposeKind::ALL[t]),
        };
        check(&ctx, &img, &Blur2d::new(m, sx, sy), pipe);
    }
}

#[test]
fn a_kernel_build_failure_names_device_source_options_and_log() {
    let ctx = common::context();
    let broken = crate::gpu::opencl::program::KernelSource {
        file: "broken.cl",
        text: "__kernel void broken(__global float *x) { x[0] = undeclared_name; }",
    };
    let Err(err) = ctx.kernel(broken, "broken", "-DWIDTH=7") else {
        panic!("a broken kernel must not build");
    };
    let msg = err.to_string();
    assert!(
        msg.contains("broken.cl") && msg.contains("-DWIDTH=7"),
        "{msg}"
    );
    assert!(msg.contains(&ctx.device_name()), "{msg}");
    assert!(
        msg.contains("undeclared_name"),
        "the compiler log is missing: {msg}"
    );
}

#[test]
fn a_context_keeps_its_tables_and_scratch_for_the_next_image() {
    use opencl3::memory::ClMem;
    let ctx = common::context();
    let a = ctx.constant(&[1.0, 2.0]).expect("table");
    let again = ctx.constant(&[1.0, 2.0]).expect("table");
    assert!(
        std::sync::Arc::ptr_eq(&a, &again),
        "same contents, same buffer"
    );
    let other = ctx.constant(&[1.0, 3.0]).expect("table");
    assert!(!std::sync::Arc::ptr_eq(&a, &other));
    let mut back = [0f32; 2];
    ctx.read(&other, &mut back, "read back").expect("download");
    assert_eq!(back, [1.0, 3.0]);
    let (len, scratch) = ctx.scratch_f32(100).expect("scratch");
    let handle = scratch.get();
    ctx.spare_f32((len, scratch));
    let (len, reused) = ctx.scratch_f32(50).expect("scratch");
    assert_eq!(
        (len, reused.get()),
        (100, handle),
        "the spare one, not a new one"
    );
    let (bigger, _) = ctx.scratch_f32(101).expect("scratch");
    assert_eq!(bigger, 101);
}

/// `flag_non_finite` (kernels/finite.cl) says what the host's `is_finite` says of any stretch
/// of a buffer: NaN and both infinities found wherever they lie, the largest finite values
/// and the samples just outside the stretch not taken for them.
#[test]
fn the_device_finds_nan_and_infinity_where_the_host_does() {
    let ctx = common::context();
    let len = 70_000;
    let mut data: Vec<f32> = (0..len).map(|i| (i % 97) as f32 - 48.0).collect();
    data[10] = f32::MAX;
    data[11] = f32::MIN;
    data[12] = f32::MIN_POSITIVE / 2.0;
    let (at, n) = (1000, 50_000);
    let cases = [
        (None, f32::NAN),
        (Some(at), f32::NAN),
        (Some(at + n - 1), f32::INFINITY),
        (Some(at + 31_337), f32::NEG_INFINITY),
        (Some(at - 1), f32::NAN),
        (Some(at + n), f32::INFINITY),
    ];
    for (spot, value) in cases {
        let mut samples = data.clone();
        if let Some(i) = spot {
            samples[i] = value;
        }
        let mut buf = ctx.buffer::<f32>(len, false).expect("buffer");
        ctx.write_blocking(&mut buf, &samples, "samples")
            .expect("upload");
        for (from, count) in [(at, n), (0, len), (at + 5, 1)] {
            let flag = ctx.clear_flag().expect("flag");
            ctx.flag_non_finite((&buf, from), count, &flag)
                .expect("enqueue");
            ctx.finish().expect("finish");
            let want = samples[from..from + count].iter().any(|v| !v.is_finite());
            let found = ctx.flag_raised(&flag, None).expect("read");
            assert_eq!(found, want, "{value} at {spot:?}, looked at {from}+{count}");
        }
    }
}
