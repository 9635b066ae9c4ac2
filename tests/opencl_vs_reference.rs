//! Every kernel against the Rust reference on the OpenCL device (PoCL in CI).

mod common;

use gblur::filter::{Blur2d, Method};
use gblur::pipeline::{self, Pipeline, TransposeKind};
use gblur::{cpu, planar::Planar};
use proptest::prelude::*;

fn check(ctx: &gblur::opencl::ClContext, img: &Planar, blur: &Blur2d, pipe: Pipeline) {
    let (want, _) = cpu::blur(img, blur);
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
    assert!(passes.iter().all(|p| p.ms >= 0.0));
}

#[test]
fn every_pipeline_matches_the_reference() {
    let Some(ctx) = common::context() else { return };
    let img = common::noise(67, 45, 3, 1);
    let blur = Blur2d::new(Method::Recursive, 3.5, 2.25);
    check(&ctx, &img, &blur, Pipeline::Direct);
    for chunk in [32, 64, 128] {
        check(&ctx, &img, &blur, Pipeline::Blocked { chunk });
    }
    for t in TransposeKind::ALL {
        check(&ctx, &img, &blur, Pipeline::Transpose(t));
    }
    let tall = common::noise(45, 301, 2, 9);
    check(
        &ctx,
        &tall,
        &Blur2d::new(Method::Recursive, 40.0, 3.0),
        Pipeline::BLOCKED,
    );
    check(
        &ctx,
        &tall,
        &Blur2d::new(Method::Auto, 1.0, 7.0),
        Pipeline::BLOCKED,
    );
    let fir = Blur2d::new(Method::Fir, 1.2, 0.7);
    check(&ctx, &img, &fir, Pipeline::Direct);
    check(
        &ctx,
        &img,
        &fir,
        Pipeline::Transpose(TransposeKind::Tile32Skewed),
    );
}

#[test]
fn degenerate_sizes() {
    let Some(ctx) = common::context() else { return };
    for (w, h) in [(1, 1), (1, 17), (17, 1), (2, 3), (31, 33), (97, 13)] {
        let img = common::noise(w, h, 2, (w * 100 + h) as u64);
        for m in [Method::Recursive, Method::Fir] {
            let blur = Blur2d::new(m, 1.5, 4.0);
            check(&ctx, &img, &blur, Pipeline::Direct);
            check(&ctx, &img, &blur, Pipeline::BLOCKED);
            for t in TransposeKind::ALL {
                check(&ctx, &img, &blur, Pipeline::Transpose(t));
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
    #[test]
    fn random_sizes_sigmas_channels_strategies(
        w in 1usize..150, h in 1usize..150, c in 1usize..=4,
        sx in 0.5f64..60.0, sy in 0.5f64..60.0,
        t in 0usize..9, method in 0usize..3, seed in any::<u64>(),
    ) {
        let Some(ctx) = common::context() else { return Ok(()) };
        let img = common::noise(w, h, c, seed);
        let m = [Method::Auto, Method::Recursive, Method::Fir][method];
        let pipe = match t {
            7 => Pipeline::Direct,
            8 => Pipeline::BLOCKED,
            _ => Pipeline::Transpose(TransposeKind::ALL[t]),
        };
        check(&ctx, &img, &Blur2d::new(m, sx, sy), pipe);
    }
}

#[test]
fn a_kernel_build_failure_names_device_source_options_and_log() {
    let Some(ctx) = common::context() else { return };
    let broken = gblur::opencl::KernelSource {
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
