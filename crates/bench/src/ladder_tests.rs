//! Every kernel of the matmul and reduce ladders against the host reference on the OpenCL
//! device (PoCL in CI), at small and odd sizes, f32 and i32.

use gblur::gpu::opencl::{device, ClContext};

use crate::matmul::{
    ladder, DeviceOperands, Elem, Operands, Prepared, Reference, Rung, Shape, PRESETS,
};
use crate::reduce::{self, Vectors};

/// A context on the test device (`device::for_tests`).
fn context() -> ClContext {
    ClContext::new(device::for_tests()).expect("creating the OpenCL context")
}

/// Shapes that are not tile multiples in any dimension, and the degenerate one.
const SHAPES: [Shape; 4] = [
    Shape { m: 1, n: 1, k: 1 },
    Shape { m: 17, n: 33, k: 9 },
    Shape {
        m: 65,
        n: 31,
        k: 130,
    },
    Shape {
        m: 64,
        n: 128,
        k: 16,
    },
];

fn check_ladder(elem: Elem, rungs: &[Rung], shapes: &[Shape]) {
    let ctx = context();
    for &s in shapes {
        let data = Operands::host(s, elem);
        let reference = Reference::new(&data);
        let mut dev = DeviceOperands::upload(&ctx, &data).unwrap();
        for &rung in rungs {
            // A NaN everywhere first, so unwritten elements fail.
            ctx.write_blocking(&mut dev.c, &vec![f32::NAN; s.m * s.n], "poison")
                .unwrap();
            let p = Prepared::new(&ctx, rung, &dev, elem).unwrap();
            p.enqueue(&ctx, &dev).unwrap();
            ctx.finish().unwrap();
            let mut got = vec![0f32; s.m * s.n];
            ctx.read(&dev.c, &mut got, "C").unwrap();
            if let Err(why) = reference.check(&got, 0..s.m) {
                panic!("{} at {s:?} ({elem:?}): {why}", rung.name());
            }
        }
    }
}

#[test]
fn every_matmul_rung_matches_the_reference_f32() {
    check_ladder(Elem::F32, &ladder(&[PRESETS[8]]), &SHAPES);
}

#[test]
fn every_matmul_rung_matches_the_reference_i32() {
    check_ladder(Elem::I32, &ladder(&[PRESETS[8]]), &SHAPES);
}

#[test]
fn every_bundled_preset_matches_the_reference() {
    let rungs: Vec<Rung> = PRESETS.iter().map(|&p| Rung::Blocked(p)).collect();
    check_ladder(Elem::F32, &rungs, &SHAPES[2..3]);
    check_ladder(Elem::I32, &rungs[..2], &SHAPES[1..2]);
}

#[test]
fn reference_catches_a_dropped_term() {
    // The tolerance is tight enough that leaving out one product of K = 130 fails.
    let s = Shape { m: 3, n: 4, k: 130 };
    let data = Operands::host(s, Elem::F32);
    let reference = Reference::new(&data);
    let mut c = vec![0f32; 12];
    for i in 0..3 {
        for j in 0..4 {
            c[i * 4 + j] = (1..130)
                .map(|k| data.a[i * 130 + k] * data.b[k * 4 + j])
                .sum();
        }
    }
    assert!(reference.check(&c, 0..3).is_err());
}

#[test]
fn every_reduce_rung_matches_the_f64_sum() {
    let ctx = context();
    for n in [1, 3, 5, 1001, 4099, 70_001] {
        let x = reduce::signed_noise(n, 5 + n as u64);
        let y = reduce::signed_noise(n, 9 + n as u64);
        let (want, abs) = reduce::reference(&x, &y);
        let dev = Vectors::upload(&ctx, &x, &y).unwrap();
        for rung in [
            reduce::Rung::HostSum,
            reduce::Rung::GroupSums,
            reduce::Rung::OnDevice,
        ] {
            let got = dev.once(&ctx, rung).unwrap();
            let l = reduce::chain_length(rung, n, reduce::stage1_groups(&ctx, n)) + 2;
            let tol = l as f64 * f32::EPSILON as f64 / 2.0 * abs;
            assert!(
                (got - want).abs() <= tol,
                "{} at n = {n}: got {got}, want {want} (tolerance {tol})",
                rung.name()
            );
            // A dropped element would be seen: a typical |x·y| (1/4) is far above the tolerance.
            assert!(tol < 0.1, "{tol}");
        }
    }
}
