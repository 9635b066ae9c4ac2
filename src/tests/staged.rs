//! Arrays through the pinned staging slots (`opencl::staged`, `gpu::host_array`): the host's
//! side extends, converts, crops and rounds exactly as the whole-array extension and crop do,
//! whatever the chunk's size and wherever its seams fall; on the device (PoCL in CI) a chunked
//! array gives the samples of one that goes up whole.

use super::common;
use crate::api::nd;
use crate::cpu::axis::AxisFilter;
use crate::filter::{EdgeMode, LineFilter, Method};
use crate::gpu::host_array::{Extended, Pad, Same};
use crate::gpu::opencl::staged::HostSide;
use crate::gpu::plan::Pipeline;
use crate::gpu::volume;

const MODES: [EdgeMode; 5] = [
    EdgeMode::Clamp,
    EdgeMode::Reflect,
    EdgeMode::Reflect101,
    EdgeMode::Wrap,
    EdgeMode::Constant(0.25),
];

fn samples(n: usize, seed: u32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(2654435761).max(1);
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            (s % 10_000) as f32 / 10_000.0
        })
        .collect()
}

/// An axis filter whose pad is `pad` samples on that mode (0 for clamp, 1 for a constant).
/// Each axis's constant differs, so that a corner shows which axis's it took.
fn axes_of(shape: &[usize], mode: EdgeMode, filtered: &[bool]) -> Vec<Option<AxisFilter>> {
    shape
        .iter()
        .zip(filtered)
        .enumerate()
        .map(|(k, (_, &on))| {
            on.then(|| AxisFilter {
                filter: LineFilter::new(Method::Recursive, 1.5),
                edge: mode,
                cvals: vec![0.25 + 0.125 * k as f32],
                footprint: None,
            })
        })
        .collect()
}

fn extended<'a, S: crate::cpu::axis::Element, D: crate::cpu::axis::Element>(
    input: &'a [S],
    output: &'a mut [D],
    shape: &[usize],
    axes: &[Option<AxisFilter>],
) -> Extended<'a, S, D> {
    let pads = axes.iter().map(|a| Pad::of(a.as_ref())).collect();
    Extended::new(input, output, shape, pads)
}

/// Fills the device's array in pieces of `piece` samples, as the slots' filling does.
fn fill_all(host: &dyn HostSide, len: usize, piece: usize) -> Vec<f32> {
    let mut out = vec![f32::NAN; len];
    for (i, p) in out.chunks_mut(piece).enumerate() {
        host.fill(i * piece, p);
    }
    out
}

#[test]
fn filling_and_draining_in_any_pieces_extend_and_crop_as_the_whole_array_does() {
    let cases: [(&[usize], &[bool]); 5] = [
        (&[9, 20, 17], &[true, true, true]),
        (&[9, 20, 17], &[false, true, false]),
        (&[1, 50], &[false, true]),
        (&[3, 4, 5, 6], &[true, false, true, true]),
        (&[40], &[true]),
    ];
    for (shape, filtered) in cases {
        let n: usize = shape.iter().product();
        // 16-bit samples (converted as they go), and f32 ones (copied as memory).
        let input: Vec<u16> = samples(n, 7).iter().map(|v| (v * 60000.0) as u16).collect();
        fill_and_drain(&input, shape, filtered);
        fill_and_drain(&samples(n, 8), shape, filtered);
    }
}

/// `Extended` over `input` in every mode, filled and drained in pieces of several sizes,
/// against the whole array extended and cropped at once.
fn fill_and_drain<T>(input: &[T], shape: &[usize], filtered: &[bool])
where
    T: nd::Element + PartialEq + std::fmt::Debug,
{
    for mode in MODES {
        let axes = axes_of(shape, mode, filtered);
        let pads: Vec<usize> = axes
            .iter()
            .map(|a| a.as_ref().map_or(0, AxisFilter::pad))
            .collect();
        let (want, padded) = nd::extend(input, shape, &axes, &pads);
        // Something to crop that is not the input itself: the extension scaled.
        let back: Vec<f32> = want.iter().map(|v| v * 0.5 + 3.7).collect();
        let mut want_out = vec![T::store(0.0); input.len()];
        nd::crop_into(&back, &padded, &pads, &mut want_out);
        for piece in [1, 7, 64, 1000, want.len()] {
            let mut out = vec![T::store(0.0); input.len()];
            let mut host = extended(input, &mut out, shape, &axes);
            assert_eq!(host.padded_shape(), &padded[..]);
            let got = fill_all(&host, want.len(), piece);
            assert!(
                got.iter()
                    .zip(&want)
                    .all(|(a, b)| a.to_bits() == b.to_bits()),
                "{shape:?} {mode:?} pieces of {piece}: filled"
            );
            for (i, p) in back.chunks(piece).enumerate() {
                host.drain(i * piece, p);
            }
            assert_eq!(
                out, want_out,
                "{shape:?} {mode:?} pieces of {piece}: drained"
            );
        }
    }
}

#[test]
fn an_array_in_many_chunks_gives_the_samples_of_one_chunk() {
    let info = common::require_opencl();
    let ctx = common::context();
    let pipeline = Pipeline::fastest_for(&info);
    let shape = [5, 23, 31];
    let n: usize = shape.iter().product();
    let input = samples(n, 3);
    for mode in [EdgeMode::Clamp, EdgeMode::Reflect, EdgeMode::Constant(0.25)] {
        let axes = axes_of(&shape, mode, &[true, true, true]);
        let lines: Vec<Option<LineFilter>> = axes
            .iter()
            .map(|a| a.as_ref().map(|a| a.filter.clone()))
            .collect();
        let run = |chunk: usize| {
            let mut out = vec![0f32; n];
            let mut host = extended(&input, &mut out, &shape, &axes);
            let padded = host.padded_shape().to_vec();
            let passes = volume::blur_staged(&ctx, &mut host, &padded, &lines, pipeline, chunk)
                .expect("device blur");
            let transfer = |name: &str| passes.iter().find(|p| p.name == name).map(|p| p.bytes);
            let bytes = padded.iter().product::<usize>() as u64 * 4;
            assert_eq!(
                transfer("upload"),
                Some(bytes),
                "{mode:?} chunks of {chunk}"
            );
            assert_eq!(
                transfer("download"),
                Some(bytes),
                "{mode:?} chunks of {chunk}"
            );
            out
        };
        let whole = run(usize::MAX);
        // More chunks than slots, seams inside rows and planes.
        for chunk in [97, 1000] {
            assert!(run(chunk) == whole, "{mode:?} chunks of {chunk}");
        }
        // And what goes up whole agrees with the host's engine.
        let mut host = input.clone();
        for (k, a) in axes.iter().enumerate() {
            crate::cpu::axis::filter_axis_in_place(&mut host, &shape, k, a.as_ref().unwrap());
        }
        let worst = whole
            .iter()
            .zip(&host)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f32::max);
        assert!(worst < 1e-4, "{mode:?}: {worst}");
    }
    // An f32 array that is the device's own.
    let mut data = input.clone();
    let lines = vec![Some(LineFilter::new(Method::Recursive, 2.0)); 3];
    volume::blur_staged(&ctx, &mut Same(&mut data), &shape, &lines, pipeline, 100).unwrap();
    let mut whole = input.clone();
    volume::blur(&ctx, &mut whole, &shape, &lines, pipeline).unwrap();
    assert!(data == whole);
}

/// A device that may allocate 1 MiB a buffer takes a 2.4 MB volume, a long row and a tall
/// plane in slabs along their first axis, margins and all (up, not down), from an input into
/// an output and in place: the result agrees with the host's engine as the whole array's
/// does (the seams weigh under `SEAM_WEIGHT`).
#[test]
fn arrays_larger_than_the_device_go_through_in_slabs() {
    let mut info = common::require_opencl();
    let pipeline = Pipeline::fastest_for(&info);
    info.max_alloc_mib = 1;
    let small = crate::gpu::opencl::ClContext::new(info).expect("context");
    let cases: [(&[usize], &[f64]); 4] = [
        (&[300, 40, 50], &[2.0, 1.5, 3.0]),
        (&[300, 40, 50], &[0.0, 2.5, 0.0]),
        (&[1, 400_000], &[0.0, 6.0]),
        (&[3000, 120], &[4.0, 0.0]),
    ];
    for (shape, sigmas) in cases {
        let n: usize = shape.iter().product();
        assert!(n * 4 > 1 << 20, "{shape:?} fits the device whole");
        let input = samples(n, 5);
        for mode in [EdgeMode::Clamp, EdgeMode::Reflect] {
            let axes: Vec<Option<AxisFilter>> = sigmas
                .iter()
                .map(|&s| {
                    (s > 0.0).then(|| AxisFilter {
                        filter: LineFilter::new(Method::Recursive, s),
                        edge: mode,
                        cvals: vec![0.0],
                        footprint: None,
                    })
                })
                .collect();
            let lines: Vec<Option<LineFilter>> = axes
                .iter()
                .map(|a| a.as_ref().map(|a| a.filter.clone()))
                .collect();
            let mut out = vec![0f32; n];
            let mut host = extended(&input, &mut out, shape, &axes);
            let padded = host.padded_shape().to_vec();
            let passes = volume::blur_staged(&small, &mut host, &padded, &lines, pipeline, 5000)
                .expect("device blur in slabs");
            let up = passes
                .iter()
                .find(|p| p.name == "upload")
                .expect("an upload")
                .bytes;
            // Margins go up twice, where the first axis (past those of one sample) is filtered.
            let whole = padded.iter().product::<usize>() as u64 * 4;
            let first = shape.iter().position(|&n| n > 1).unwrap();
            match sigmas[first] > 0.0 {
                true => assert!(up > whole, "{shape:?}: {up} bytes up, no margins"),
                false => assert_eq!(up, whole, "{shape:?}"),
            }
            // Only each slab's own samples come down: every sample once.
            let down = passes
                .iter()
                .find(|p| p.name == "download")
                .expect("a download")
                .bytes;
            assert_eq!(down, whole, "{shape:?}: {down} bytes down");
            let mut want = input.clone();
            for (k, a) in axes.iter().enumerate() {
                if let Some(a) = a {
                    crate::cpu::axis::filter_axis_in_place(&mut want, shape, k, a);
                }
            }
            let worst = out
                .iter()
                .zip(&want)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f32::max);
            assert!(worst < 1e-5, "{shape:?} {sigmas:?} {mode:?}: {worst}");
            if mode == EdgeMode::Clamp {
                // In place: each slab writes back over the margin the next one reads.
                let mut data = input.clone();
                volume::blur(&small, &mut data, shape, &lines, pipeline).expect("in place");
                let worst = data
                    .iter()
                    .zip(&want)
                    .map(|(a, b)| (a - b).abs())
                    .fold(0.0, f32::max);
                assert!(worst < 1e-5, "in place {shape:?} {sigmas:?}: {worst}");
            }
        }
    }
}

/// An empty array (an axis of no samples, filtered with a mode that extends) goes nowhere
/// and fails nowhere on a device, as on the host.
#[test]
fn an_empty_array_on_a_device_is_left_empty() {
    common::require_opencl();
    let device = crate::Device::open("cpu").expect("PoCL");
    let filter = crate::nd::Filter::new(&[2.0, 2.0]).unwrap();
    for shape in [[0usize, 16], [16, 0]] {
        let (input, mut output) = (Vec::<u16>::new(), Vec::<f32>::new());
        device
            .blur_nd_into(&filter, &input, &mut output, &shape)
            .unwrap();
        let mut data = Vec::<u8>::new();
        device.blur_nd(&filter, &mut data, &shape).unwrap();
    }
}

/// The largest difference between two arrays of samples.
fn worst(a: &[f32], b: &[f32]) -> f32 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

/// An array in the context's page-locked memory goes up and comes down by the copy engines
/// alone (`volume::blur_direct`), in overlapped slabs where asked, seams anywhere: it gives
/// what the staged route gives, into another array and in place, derivatives included; a
/// NaN anywhere leaves every sample as it was and says so.
#[test]
fn page_locked_arrays_give_what_the_staged_route_gives() {
    let info = common::require_opencl();
    let pipeline = Pipeline::fastest_for(&info);
    let ctx = common::context();
    let recursive = |s: f64| (s > 0.0).then(|| LineFilter::new(Method::Recursive, s));
    let cases: [(&[usize], Vec<Option<LineFilter>>); 5] = [
        (
            &[300, 40, 50],
            vec![recursive(2.0), recursive(1.5), recursive(3.0)],
        ),
        (&[1, 2000, 90], vec![None, recursive(4.0), recursive(2.5)]),
        (&[3000, 120], vec![recursive(4.0), None]),
        (&[400, 30, 20], vec![None, recursive(2.0), None]),
        (
            &[600, 40, 25],
            vec![
                Some(LineFilter::recursive(3.0, 1)),
                Some(LineFilter::recursive(2.0, 2)),
                recursive(1.5),
            ],
        ),
    ];
    for (shape, lines) in cases {
        let n: usize = shape.iter().product();
        let input = samples(n, 9);
        let mut want = input.clone();
        volume::blur(&ctx, &mut want, shape, &lines, pipeline).expect("staged");
        let range = want.iter().fold(0f32, |m, v| m.max(v.abs()));
        for (overlap_from, slabs) in [(0, true), (usize::MAX, false)] {
            ctx.overlap_from(overlap_from);
            let mut src = ctx.page_locked(n).expect("page-locked memory");
            src.as_mut_slice().copy_from_slice(&input);
            let mut dst = ctx.page_locked(n).expect("page-locked memory");
            let into = volume::Direct::Into(src.as_slice(), dst.as_mut_slice());
            let passes = volume::blur_direct(&ctx, into, shape, &lines, pipeline)
                .expect("direct")
                .expect("finite");
            let copied = passes.iter().any(|p| p.name == "slab copy");
            assert_eq!(copied, slabs, "{shape:?} {lines:?}: slabs");
            let err = worst(dst.as_slice(), &want);
            assert!(
                err < 1e-5 * range,
                "{shape:?} {lines:?} slabs {slabs}: {err}"
            );
            assert!(src.as_slice() == input, "{shape:?}: the input was written");
            let in_place = volume::Direct::InPlace(src.as_mut_slice());
            volume::blur_direct(&ctx, in_place, shape, &lines, pipeline)
                .expect("direct")
                .expect("finite");
            let err = worst(src.as_slice(), &want);
            assert!(
                err < 1e-5 * range,
                "in place {shape:?} slabs {slabs}: {err}"
            );
        }
    }
    non_finite_inputs_are_reported_and_left_as_they_were(&ctx, pipeline);
}

/// A NaN or an infinity anywhere in a page-locked input, in slabs or whole: the call says so,
/// for its caller to blur the array again the way that treats them as the host does, and in
/// place the array is left as it was, bit for bit.
fn non_finite_inputs_are_reported_and_left_as_they_were(
    ctx: &crate::gpu::opencl::ClContext,
    pipeline: Pipeline,
) {
    let recursive = |s: f64| Some(LineFilter::new(Method::Recursive, s));
    let (shape, lines) = ([300, 40, 50], vec![recursive(2.0); 3]);
    let n = 300 * 40 * 50;
    let input = samples(n, 3);
    let spots = [
        (0, f32::NAN),
        (n / 2 + 7, f32::INFINITY),
        (n - 77, f32::NEG_INFINITY),
    ];
    for (overlap_from, (spot, value)) in [0, usize::MAX]
        .into_iter()
        .flat_map(|o| spots.map(|s| (o, s)))
    {
        ctx.overlap_from(overlap_from);
        let mut src = ctx.page_locked(n).expect("page-locked memory");
        src.as_mut_slice().copy_from_slice(&input);
        // Both ways of leaving the array as it was: several slabs (the input restored from the
        // device) and one (its result held back).
        let in_place = volume::Direct::InPlace(src.as_mut_slice());
        let passes = volume::blur_direct(ctx, in_place, &shape, &lines, pipeline)
            .expect("direct")
            .expect("finite");
        let slabs = passes.iter().any(|p| p.name == "slab copy");
        assert_eq!(slabs, overlap_from == 0, "slabs from {overlap_from}");
        src.as_mut_slice().copy_from_slice(&input);
        src.as_mut_slice()[spot] = value;
        let before: Vec<u32> = src.as_slice().iter().map(|v| v.to_bits()).collect();
        let mut dst = ctx.page_locked(n).expect("page-locked memory");
        let into = volume::Direct::Into(src.as_slice(), dst.as_mut_slice());
        let done = volume::blur_direct(ctx, into, &shape, &lines, pipeline).expect("direct");
        let case = format!("{value} at {spot}, slabs from {overlap_from}");
        assert!(done.is_none(), "{case}: not seen into another array");
        let in_place = volume::Direct::InPlace(src.as_mut_slice());
        let done = volume::blur_direct(ctx, in_place, &shape, &lines, pipeline).expect("direct");
        assert!(done.is_none(), "{case}: not seen in place");
        let after: Vec<u32> = src.as_slice().iter().map(|v| v.to_bits()).collect();
        assert!(after == before, "{case}: the array was not left as it was");
    }
}

/// `Device::page_locked` arrays blur as any other array, in every route: clamped ones by
/// the copy engines alone (one side alone where the other is ordinary memory), other modes
/// and non-finite samples by the staged route; a `Device` on the host's cores has none to
/// give.
#[test]
fn a_device_blurs_its_page_locked_arrays_as_it_blurs_any_other() {
    common::require_opencl();
    let device = crate::Device::open("cpu").expect("PoCL");
    let shape = [60, 70];
    let n = 60 * 70;
    let mut input = samples(n, 2);
    for mode in [EdgeMode::Clamp, EdgeMode::Reflect] {
        for nan in [false, true] {
            if nan {
                input[1234] = f32::NAN;
            }
            let filter = nd::Filter::new(&[2.0, 3.0]).unwrap().mode(mode);
            let mut want = vec![0f32; n];
            device
                .blur_nd_into(&filter, &input, &mut want, &shape)
                .expect("ordinary memory");
            let mut a = device.page_locked(n).expect("page-locked memory");
            a.copy_from_slice(&input);
            let mut b = device.page_locked(n).expect("page-locked memory");
            device
                .blur_nd_into(&filter, &a, &mut b, &shape)
                .expect("page-locked memory");
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&b), bits(&want), "{mode:?} nan {nan}: into");
            let mut ordinary = vec![0f32; n];
            device
                .blur_nd_into(&filter, &a, &mut ordinary, &shape)
                .expect("from page-locked memory");
            assert_eq!(bits(&ordinary), bits(&want), "{mode:?} nan {nan}: from");
            b.fill(0.0);
            device
                .blur_nd_into(&filter, &input, &mut b, &shape)
                .expect("into page-locked memory");
            assert_eq!(bits(&b), bits(&want), "{mode:?} nan {nan}: into only");
            device.blur_nd(&filter, &mut a, &shape).expect("in place");
            assert_eq!(bits(&a), bits(&want), "{mode:?} nan {nan}: in place");
        }
    }
    let host = crate::Device::open("rust").expect("the host");
    assert!(host.page_locked(16).is_err());
}

/// Page-locked arrays larger than the device may allocate go through in slabs, as ordinary
/// ones do: into another page-locked array, in place, and with one side in ordinary memory,
/// within 1e-5 of the range of the whole array's result on a device that holds it.
#[test]
fn page_locked_arrays_larger_than_the_device_go_through_in_slabs() {
    common::require_opencl();
    let whole = crate::Device::open("cpu").expect("PoCL");
    let small = crate::Device::open("cpu")
        .expect("PoCL")
        .allocating_at_most(1);
    let shape = [600, 24, 24];
    let n = 600 * 24 * 24;
    assert!(n * 4 > 1 << 20, "it fits the device whole");
    let input = samples(n, 6);
    let filter = nd::Filter::new(&[3.0, 1.5, 2.0])
        .unwrap()
        .mode(EdgeMode::Clamp);
    let mut want = vec![0f32; n];
    whole
        .blur_nd_into(&filter, &input, &mut want, &shape)
        .unwrap();
    let range =
        want.iter().fold(f32::MIN, |a, &b| a.max(b)) - want.iter().fold(f32::MAX, |a, &b| a.min(b));
    let close = |got: &[f32], case: &str| {
        let worst = got
            .iter()
            .zip(&want)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f32::max);
        assert!(worst < 1e-5 * range, "{case}: {worst}");
    };
    let mut a = small.page_locked(n).expect("page-locked memory");
    a.copy_from_slice(&input);
    let mut b = small.page_locked(n).expect("page-locked memory");
    small
        .blur_nd_into(&filter, &a, &mut b, &shape)
        .expect("into another");
    close(&b, "into another");
    let mut ordinary = vec![0f32; n];
    small
        .blur_nd_into(&filter, &a, &mut ordinary, &shape)
        .expect("from page-locked memory");
    close(&ordinary, "from page-locked memory");
    b.fill(0.0);
    small
        .blur_nd_into(&filter, &input, &mut b, &shape)
        .expect("into page-locked memory");
    close(&b, "into page-locked memory");
    small.blur_nd(&filter, &mut a, &shape).expect("in place");
    close(&a, "in place");
}

/// A host side whose input and output lie in the context's page-locked memory: the staged
/// transfers must hand them to the copy engine whole, never filling or draining a slot.
struct LockedSides<'a> {
    input: &'a [f32],
    output: &'a mut [f32],
    found: std::sync::atomic::AtomicBool,
}

impl HostSide for LockedSides<'_> {
    fn fill(&self, _: usize, _: &mut [f32]) {
        panic!("a page-locked input was filled into a slot");
    }
    fn drain(&mut self, _: usize, _: &[f32]) {
        panic!("a page-locked output was drained from a slot");
    }
    fn locked_source(&self) -> Option<&[f32]> {
        Some(self.input)
    }
    fn locked_target(&mut self) -> Option<&mut [f32]> {
        Some(self.output)
    }
    fn found_non_finite(&self) {
        self.found.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// The staged route takes a side in page-locked memory up or down in one command (an input
/// in small chunks otherwise), with the same samples as the slots give, and the device tells
/// the host side of a NaN or an infinity in an input it never filled.
#[test]
fn page_locked_sides_of_a_staged_array_skip_the_slots() {
    let info = common::require_opencl();
    let ctx = common::context();
    let pipeline = Pipeline::fastest_for(&info);
    let (shape, n) = ([70, 90], 70 * 90);
    let lines = vec![Some(LineFilter::new(Method::Recursive, 2.0)); 2];
    let input = samples(n, 5);
    let mut want = input.clone();
    volume::blur_staged(&ctx, &mut Same(&mut want), &shape, &lines, pipeline, 1000)
        .expect("staged");
    for (spot, value) in [
        (None, 0.0),
        (Some(n - 1), f32::NAN),
        (Some(0), f32::INFINITY),
    ] {
        let mut src = ctx.page_locked(n).expect("page-locked memory");
        src.as_mut_slice().copy_from_slice(&input);
        if let Some(i) = spot {
            src.as_mut_slice()[i] = value;
        }
        let mut dst = ctx.page_locked(n).expect("page-locked memory");
        let mut host = LockedSides {
            input: src.as_slice(),
            output: dst.as_mut_slice(),
            found: false.into(),
        };
        volume::blur_staged(&ctx, &mut host, &shape, &lines, pipeline, 1000).expect("staged");
        assert_eq!(
            host.found.into_inner(),
            spot.is_some(),
            "{value} at {spot:?}"
        );
        if spot.is_none() {
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(dst.as_slice()), bits(&want));
        }
    }
}

/// `Extended::locked_in` offers the copy engine exactly the sides that are f32 in the
/// context's page-locked memory with nothing extended, and no other.
#[test]
fn only_whole_f32_sides_in_page_locked_memory_skip_the_slots() {
    common::require_opencl();
    let ctx = common::context();
    let (shape, n) = ([8, 9], 72);
    let mut locked = (ctx.page_locked(n).unwrap(), ctx.page_locked(n).unwrap());
    let (plain, mut plain_out) = (vec![0f32; n], vec![0f32; n]);
    let bytes = vec![0u8; n];
    let none = vec![Pad::NONE; 2];
    let (src, dst) = (locked.0.as_slice(), locked.1.as_mut_slice());
    let mut host = Extended::new(src, dst, &shape, none.clone()).locked_in(&ctx);
    assert!(host.locked_source().is_some() && host.locked_target().is_some());
    let mut host = Extended::new(src, &mut plain_out, &shape, none.clone()).locked_in(&ctx);
    assert!(host.locked_source().is_some() && host.locked_target().is_none());
    let dst = locked.1.as_mut_slice();
    let mut host = Extended::new(&plain, dst, &shape, none.clone()).locked_in(&ctx);
    assert!(host.locked_source().is_none() && host.locked_target().is_some());
    let dst = locked.1.as_mut_slice();
    let mut host = Extended::new(&bytes, dst, &shape, none).locked_in(&ctx);
    assert!(host.locked_source().is_none() && host.locked_target().is_some());
    let pads = vec![
        Pad::NONE,
        Pad::of(axes_of(&shape, EdgeMode::Reflect, &[true, true])[1].as_ref()),
    ];
    let dst = locked.1.as_mut_slice();
    let mut host = Extended::new(src, dst, &shape, pads).locked_in(&ctx);
    assert!(host.locked_source().is_none() && host.locked_target().is_none());
}

/// A `Device` that weighs each array (as `auto` opens one) sends an array in its own
/// page-locked memory to the device, even where its figures send every other to the cores.
#[test]
fn a_weighing_device_sends_its_page_locked_arrays_to_the_device() {
    common::require_opencl();
    let device = crate::Device::open("cpu").expect("PoCL");
    let weighing = crate::Device::open("cpu")
        .expect("PoCL")
        .weighing_for_the_host();
    let shape = [24, 40];
    let n = 24 * 40;
    let input = samples(n, 4);
    let filter = nd::Filter::new(&[2.5, 1.5]).unwrap().mode(EdgeMode::Clamp);
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    let mut on_device = vec![0f32; n];
    device
        .blur_nd_into(&filter, &input, &mut on_device, &shape)
        .unwrap();
    let mut on_host = vec![0f32; n];
    crate::Device::host()
        .blur_nd_into(&filter, &input, &mut on_host, &shape)
        .unwrap();
    assert_ne!(
        bits(&on_host),
        bits(&on_device),
        "the two routes are told apart"
    );
    let mut ordinary = vec![0f32; n];
    weighing
        .blur_nd_into(&filter, &input, &mut ordinary, &shape)
        .unwrap();
    assert_eq!(
        bits(&ordinary),
        bits(&on_host),
        "ordinary memory: the cores"
    );
    let mut a = weighing.page_locked(n).expect("page-locked memory");
    a.copy_from_slice(&input);
    let mut b = weighing.page_locked(n).expect("page-locked memory");
    weighing.blur_nd_into(&filter, &a, &mut b, &shape).unwrap();
    assert_eq!(bits(&b), bits(&on_device), "into another array");
    weighing.blur_nd(&filter, &mut a, &shape).unwrap();
    assert_eq!(bits(&a), bits(&on_device), "in place");
}
