//! The Gaussian's derivatives and non-finite inputs on an OpenCL device (PoCL in CI): the
//! kernels' derivative forms (a recursive block's input weight of 0, a second block added
//! after the first, a FIR's taps summing to less than 1) against the Rust reference, and
//! `Device::blur_nd_into` against the host's `nd::Filter` in every edge mode, NaN and
//! infinity included.

use super::common;
use crate::cpu::reference;
use crate::filter::{EdgeMode, LineFilter};
use crate::gpu::plan::Pipeline;
use crate::gpu::volume;
use crate::nd::Filter;
use crate::Device;

/// PoCL's device, opened by name (so every array goes to it).
fn pocl() -> Device {
    common::require_opencl();
    Device::open("cpu").expect("PoCL")
}

/// `input` of `shape` filtered by `filter` on the host and on `device`: (host, device).
fn host_and_device(
    device: &Device,
    filter: &Filter,
    input: &[f32],
    shape: &[usize],
) -> (Vec<f32>, Vec<f32>) {
    let mut want = vec![0f32; input.len()];
    filter.apply_into(input, &mut want, shape).unwrap();
    let mut got = vec![0f32; input.len()];
    device
        .blur_nd_into(filter, input, &mut got, shape)
        .expect("device");
    (want, got)
}

/// `data` of `shape` filtered by the reference along every axis with a filter.
fn reference_along_axes(data: &[f32], shape: &[usize], filters: &[Option<LineFilter>]) -> Vec<f32> {
    let mut data = data.to_vec();
    for (k, f) in filters.iter().enumerate() {
        let Some(f) = f else { continue };
        let (n, inner) = (shape[k], shape[k + 1..].iter().product::<usize>());
        let (mut line, mut out) = (vec![0f32; n], vec![0f32; n]);
        for block in data.chunks_mut(n * inner) {
            for c in 0..inner {
                (0..n).for_each(|i| line[i] = block[i * inner + c]);
                reference::filter_line(&line, &mut out, f);
                (0..n).for_each(|i| block[i * inner + c] = out[i]);
            }
        }
    }
    data
}

/// The largest difference between `got` and `want`, as a fraction of `want`'s range.
fn relative_error(got: &[f32], want: &[f32]) -> f32 {
    let (lo, hi) = want
        .iter()
        .fold((f32::MAX, f32::MIN), |(l, h), &v| (l.min(v), h.max(v)));
    let worst = got
        .iter()
        .zip(want)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f32::max);
    worst / (hi - lo)
}

fn volume_noise(shape: &[usize], seed: u64) -> Vec<f32> {
    let n = shape.iter().product();
    let noise = common::noise(n, 1, 1, seed).data;
    // A step across the middle of the last axis: edges for a derivative to find.
    let w = *shape.last().unwrap();
    (0..n)
        .map(|i| noise[i] + if i % w > w / 2 { 2.0 } else { 0.0 })
        .collect()
}

#[test]
fn derivative_kernels_match_the_reference() {
    let ctx = common::context();
    let shape = [7, 45, 67];
    let input = volume_noise(&shape, 3);
    let cases: [[Option<LineFilter>; 3]; 4] = [
        // Recursive first and second derivatives (two blocks each) beside a Gaussian.
        [
            None,
            Some(LineFilter::recursive(3.5, 1)),
            Some(LineFilter::recursive(2.5, 2)),
        ],
        // The FIR's (sigma below 2): taps summing to 0 and to a little under 0.
        [
            Some(LineFilter::fir(1.2, 5, 2)),
            Some(LineFilter::fir(0.8, 3, 1)),
            None,
        ],
        // One axis alone, on each of the kernels' directions.
        [None, None, Some(LineFilter::recursive(6.0, 2))],
        [None, Some(LineFilter::recursive(4.0, 1)), None],
    ];
    for filters in cases {
        let want = reference_along_axes(&input, &shape, &filters);
        let mut got = input.clone();
        volume::blur(&ctx, &mut got, &shape, &filters, Pipeline::Direct).expect("device");
        let err = relative_error(&got, &want);
        assert!(err < 1e-5, "{filters:?}: {err}");
    }
}

#[test]
fn derivatives_on_a_device_match_the_host_in_every_mode() {
    let device = pocl();
    let shape = [5, 40, 53];
    let input = volume_noise(&shape, 11);
    let modes = [
        EdgeMode::Clamp,
        EdgeMode::Reflect,
        EdgeMode::Reflect101,
        EdgeMode::Wrap,
        EdgeMode::Constant(0.0),
    ];
    let cases: [(&[f64], &[u8]); 4] = [
        (&[0.0, 3.0, 3.0], &[0, 1, 0]),
        (&[1.5, 2.5, 4.0], &[2, 0, 1]),
        (&[0.0, 1.2, 2.0], &[0, 2, 2]),
        (&[2.0, 0.0, 5.0], &[1, 0, 1]),
    ];
    for mode in modes {
        for (sigma, order) in cases {
            let filter = Filter::new(sigma)
                .unwrap()
                .order(order)
                .mode(mode)
                .cval(0.5);
            let (want, got) = host_and_device(&device, &filter, &input, &shape);
            let err = relative_error(&got, &want);
            assert!(err < 1e-5, "{mode:?} {sigma:?} {order:?}: {err}");
            // In place, as the same.
            let mut data = input.clone();
            device.blur_nd(&filter, &mut data, &shape).expect("device");
            assert!(relative_error(&data, &want) < 1e-5, "in place {mode:?}");
        }
    }
}

#[test]
fn non_finite_inputs_spoil_the_same_outputs_on_a_device_as_on_the_host() {
    let device = pocl();
    let shape = [60, 80];
    let mut input = volume_noise(&shape, 5);
    input[30 * 80 + 40] = f32::NAN;
    input[5 * 80 + 3] = f32::INFINITY;
    input[50 * 80 + 70] = f32::NEG_INFINITY;
    input[52 * 80 + 74] = f32::INFINITY;
    let cases: [(&[f64], &[u8], EdgeMode); 4] = [
        (&[3.0, 3.0], &[0, 0], EdgeMode::Reflect),
        (&[2.5, 1.5], &[0, 0], EdgeMode::Wrap),
        (&[3.0, 4.0], &[1, 0], EdgeMode::Clamp),
        (&[1.2, 2.0], &[0, 2], EdgeMode::Reflect101),
    ];
    for (sigma, order, mode) in cases {
        let filter = Filter::new(sigma).unwrap().order(order).mode(mode);
        let (want, got) = host_and_device(&device, &filter, &input, &shape);
        let kinds = |v: &[f32]| -> Vec<u8> {
            v.iter()
                .map(|x| match x {
                    x if x.is_nan() => 1,
                    x if x.is_infinite() && *x > 0.0 => 2,
                    x if x.is_infinite() => 3,
                    _ => 0,
                })
                .collect()
        };
        let spoiled = kinds(&want).iter().filter(|&&k| k != 0).count();
        assert!(spoiled > 100, "{sigma:?} {order:?}: {spoiled} spoiled");
        let (kg, kw) = (kinds(&got), kinds(&want));
        assert_eq!(kg, kw, "{sigma:?} {order:?} {mode:?}");
        // The finite outputs: the same filter, up to what stands in for the spoilt samples
        // beyond scipy's radius, where the recursive filter's tails still reach them (the
        // host takes a spoilt intermediate as 0, the device the pass's output with the
        // spoilers as 0): within the 1e-3 of the range that both keep to scipy.
        let finite: Vec<(f32, f32)> = got
            .iter()
            .zip(&want)
            .filter(|(_, w)| w.is_finite())
            .map(|(&g, &w)| (g, w))
            .collect();
        let (g, w): (Vec<f32>, Vec<f32>) = finite.into_iter().unzip();
        assert!(
            relative_error(&g, &w) < 1e-3,
            "{sigma:?} {order:?} {mode:?}"
        );
    }
}

/// The samples are looked at as the staging slots are filled: a NaN that reaches the device
/// in the second slot of a transfer, after the first slot's samples were sent, still spoils
/// the outputs it spoils on the host, and only those.
#[test]
fn a_nan_in_a_later_staging_slot_spoils_its_footprint() {
    let device = pocl();
    // 4.4 M samples: more than one 16 MiB slot of f32.
    let shape = [1100, 4000];
    let mut input = volume_noise(&shape, 6);
    input[1090 * 4000 + 2000] = f32::NAN;
    let filter = Filter::new(&[0.0, 2.0]).unwrap().mode(EdgeMode::Clamp);
    let (want, got) = host_and_device(&device, &filter, &input, &shape);
    let nans = |v: &[f32]| -> Vec<usize> { (0..v.len()).filter(|&i| v[i].is_nan()).collect() };
    let spoiled = nans(&want);
    assert!(
        !spoiled.is_empty() && spoiled.len() < 40,
        "{}",
        spoiled.len()
    );
    assert_eq!(nans(&got), spoiled);
}
