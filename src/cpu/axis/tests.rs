//! The N-D engine against the reference line filter, every mode, shape and block kind.

use super::*;
use crate::cpu::reference;
use crate::filter::Method;

fn filter(sigma: f64, method: Method, edge: EdgeMode) -> AxisFilter {
    AxisFilter {
        filter: LineFilter::new(method, sigma),
        edge,
        cvals: vec![0.25],
        footprint: None,
    }
}

/// The line extended by `edge` far beyond any reach, filtered by the reference with its
/// clamp, and cut back: what every mode means.
fn expected(line: &[f32], f: &AxisFilter) -> Vec<f32> {
    let n = line.len() as i64;
    let ext = 4000i64;
    let wide: Vec<f32> = (-ext..n + ext)
        .map(|k| match f.edge.source(k, n) {
            Some(s) => line[s],
            None => f.cvals[0],
        })
        .collect();
    let mut out = vec![0.0; wide.len()];
    reference::filter_line(&wide, &mut out, &f.filter);
    out[ext as usize..(ext + n) as usize].to_vec()
}

fn noise(len: usize, seed: u32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(2654435761).wrapping_add(1);
    (0..len)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            (s % 1000) as f32 / 1000.0
        })
        .collect()
}

/// Every edge mode (the constant's value is `filter`'s `cvals`).
const EVERY_MODE: [EdgeMode; 5] = [
    EdgeMode::Clamp,
    EdgeMode::Reflect,
    EdgeMode::Reflect101,
    EdgeMode::Wrap,
    EdgeMode::Constant(0.0),
];

#[test]
fn every_axis_of_every_shape_matches_the_extended_reference() {
    let modes = EVERY_MODE;
    // Shapes that give every kind of block: rows, columns (whole and partial), any.
    for shape in [
        vec![37usize],
        vec![19, 23],
        vec![5, 3, 40],
        vec![4, 33, 3],
        vec![2, 17, 18],
        // Items of `WIDEST` column blocks, the last one short; of `WIDE` (columns too long
        // for `WIDEST`'s scratch).
        vec![3, 9, 130],
        vec![600, 1100],
    ] {
        let len: usize = shape.iter().product();
        let data = noise(len, len as u32);
        for axis in 0..shape.len() {
            for (sigma, method) in [(1.3, Method::Auto), (4.0, Method::Auto), (0.9, Method::Fir)] {
                for mode in modes {
                    let f = filter(sigma, method, mode);
                    let mut got = vec![0f32; len];
                    filter_axis(&data, &mut got, &shape, axis, &f);
                    let lines = Lines::along(&shape, axis);
                    for l in 0..lines.outer * lines.inner {
                        let s = lines.start(l);
                        let line: Vec<f32> =
                            (0..lines.n).map(|k| data[s + k * lines.inner]).collect();
                        let want = expected(&line, &f);
                        for k in 0..lines.n {
                            let g = got[s + k * lines.inner];
                            assert!(
                                (g - want[k]).abs() < 2e-4,
                                "{shape:?} axis {axis} σ {sigma} {mode:?}: line {l} [{k}] {g} vs {}",
                                want[k]
                            );
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn in_place_equals_into_another_buffer_and_keeps_constants() {
    let shape = [9, 40, 21];
    let data = noise(9 * 40 * 21, 7);
    let f = filter(6.0, Method::Auto, EdgeMode::Reflect);
    for axis in 0..3 {
        let mut a = vec![0f32; data.len()];
        filter_axis(&data, &mut a, &shape, axis, &f);
        let mut b = data.clone();
        filter_axis_in_place(&mut b, &shape, axis, &f);
        assert_eq!(a, b);
    }
    let mut flat = vec![0.3f32; data.len()];
    filter_axis_in_place(&mut flat, &shape, 1, &f);
    assert!(flat.iter().all(|&v| v == 0.3));
}

#[test]
fn integers_are_rounded_and_clamped_once() {
    let data: Vec<u8> = (0..64).map(|i| if i < 32 { 0 } else { 255 }).collect();
    let mut out = vec![0u8; 64];
    let f = filter(3.0, Method::Auto, EdgeMode::Clamp);
    filter_axis(&data, &mut out, &[64], 0, &f);
    let as_f32: Vec<f32> = data.iter().map(|&v| v as f32).collect();
    let mut want = vec![0f32; 64];
    filter_axis(&as_f32, &mut want, &[64], 0, &f);
    for (g, w) in out.iter().zip(&want) {
        assert_eq!(*g, w.round().clamp(0.0, 255.0) as u8);
    }
    assert_eq!(i16::store(-40000.0), i16::MIN);
    assert_eq!(u16::store(f32::NAN), 0);
    assert_eq!(u8::store(2.5), 3);
}

/// Down columns (lanes of neighbouring samples) every mode gives bit for bit what the same
/// lines give as rows (lanes through 16×16 transposes), in place too, for partial blocks and
/// items, short lines and lines shorter than the reach.
#[test]
fn columns_give_the_samples_of_the_same_lines_as_rows() {
    // 2500 rows: columns long enough to be filtered as they are gathered and scattered as
    // they are finished (`filter_item_impl`), the last item and its last block short.
    for (n, w) in [(1, 16), (5, 37), (40, 70), (300, 130), (7, 16), (2500, 70)] {
        let data = noise(n * w, (n * w) as u32);
        let transposed: Vec<f32> = (0..w * n).map(|i| data[(i % n) * w + i / n]).collect();
        for edge in EVERY_MODE {
            for sigma in [3.0, 9.0, 40.0] {
                let f = filter(sigma, Method::Recursive, edge);
                let mut down = vec![0f32; n * w];
                filter_axis(&data, &mut down, &[n, w], 0, &f);
                let mut across = vec![0f32; n * w];
                filter_axis(&transposed, &mut across, &[w, n], 1, &f);
                let back: Vec<f32> = (0..n * w).map(|i| across[(i % w) * n + i / w]).collect();
                assert!(down == back, "{n}×{w} {edge:?} σ {sigma}");
                let mut in_place = data.clone();
                filter_axis_in_place(&mut in_place, &[n, w], 0, &f);
                assert!(in_place == down, "{n}×{w} {edge:?} σ {sigma} in place");
                let bytes: Vec<u8> = data.iter().map(|v| (v * 255.0) as u8).collect();
                let mut into = vec![0u8; n * w];
                filter_axis(&bytes, &mut into, &[n, w], 0, &f);
                let mut again = bytes.clone();
                filter_axis_in_place(&mut again, &[n, w], 0, &f);
                assert!(into == again, "{n}×{w} {edge:?} σ {sigma} u8");
            }
        }
    }
}

/// A NaN in long columns, which are filtered as they are gathered, takes the path that spoils
/// its footprint alone, as the same lines along rows do.
#[test]
fn a_nan_in_long_columns_spoils_its_footprint_as_along_rows() {
    let (n, w) = (2500, 20);
    let mut data = noise(n * w, 7);
    data[1234 * w + 17] = f32::NAN;
    let transposed: Vec<f32> = (0..w * n).map(|i| data[(i % n) * w + i / n]).collect();
    let f = AxisFilter {
        footprint: Some(12),
        ..filter(3.0, Method::Recursive, EdgeMode::Clamp)
    };
    let mut down = vec![0f32; n * w];
    filter_axis(&data, &mut down, &[n, w], 0, &f);
    let mut across = vec![0f32; n * w];
    filter_axis(&transposed, &mut across, &[w, n], 1, &f);
    let back: Vec<f32> = (0..n * w).map(|i| across[(i % w) * n + i / w]).collect();
    let same = |a: f32, b: f32| a == b || (a.is_nan() && b.is_nan());
    assert!(down.iter().zip(&back).all(|(&a, &b)| same(a, b)));
    assert!(down[1234 * w + 17].is_nan() && !down[1200 * w + 17].is_nan());
    assert!(
        down.iter().filter(|v| v.is_nan()).count() == 25,
        "the footprint alone"
    );
}

/// The last two axes plane by plane give bit for bit what the same axes give one after the
/// other through the whole array: in place, from a source, and through an f32 array into
/// integers; every mode, the recursive filter, the FIR and the second derivative's two pairs
/// of sections, a NaN and an infinity with their footprints; planes of few rows or columns
/// (blocks of rows where the whole array has columns) and of columns a page apart (wide items).
#[test]
fn planes_give_the_samples_of_one_axis_after_the_other() {
    use super::planes::{filter_planes, filter_planes_through};
    let same = |a: &[f32], b: &[f32]| a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits());
    for shape in [
        vec![9, 37, 23],
        vec![2, 3, 16, 70],
        vec![4, 5, 130],
        vec![20, 37, 5],
        vec![3, 3, 1100],
    ] {
        let len: usize = shape.iter().product();
        let d = shape.len();
        let mut data = noise(len, 3 * len as u32);
        data[len / 3] = f32::NAN;
        data[len / 2] = f32::INFINITY;
        for edge in EVERY_MODE {
            let second = AxisFilter {
                filter: LineFilter::recursive(4.0, 2),
                ..filter(4.0, Method::Auto, edge)
            };
            let spoiled = |f: AxisFilter| AxisFilter {
                footprint: Some(9),
                ..f
            };
            let pairs = [
                (
                    filter(3.0, Method::Auto, edge),
                    filter(5.0, Method::Auto, edge),
                ),
                (
                    filter(1.2, Method::Auto, edge),
                    filter(3.2, Method::Auto, edge),
                ),
                (filter(3.0, Method::Auto, edge), second),
                (
                    spoiled(filter(3.0, Method::Auto, edge)),
                    spoiled(filter(1.2, Method::Auto, edge)),
                ),
            ];
            for (fa, fb) in pairs {
                let case = format!(
                    "{shape:?} {edge:?} {:?} {:?}",
                    fa.filter.describe(),
                    fb.filter.describe()
                );
                let mut want = vec![0f32; len];
                filter_axis(&data, &mut want, &shape, d - 2, &fa);
                filter_axis_in_place(&mut want, &shape, d - 1, &fb);
                let mut in_place = data.clone();
                filter_planes::<f32, f32>(None, &mut in_place, &shape, &fa, &fb);
                assert!(same(&in_place, &want), "{case} in place");
                let mut into = vec![0f32; len];
                filter_planes(Some(&data), &mut into, &shape, &fa, &fb);
                assert!(same(&into, &want), "{case} from a source");

                let bytes: Vec<u8> = data.iter().map(|v| (v * 255.0) as u8).collect();
                let mut work = vec![0f32; len];
                filter_axis(&bytes, &mut work, &shape, d - 2, &fa);
                let mut want = vec![0u8; len];
                filter_axis(&work, &mut want, &shape, d - 1, &fb);
                let mut work = vec![0f32; len];
                let mut got = vec![0u8; len];
                filter_planes_through(Some(&bytes), &mut work, &mut got, &shape, (&fa, &fb));
                assert!(got == want, "{case} through f32 from u8");
                let mut work: Vec<f32> = bytes.iter().map(|&v| v as f32).collect();
                let mut got = vec![0u8; len];
                filter_planes_through::<f32, u8>(None, &mut work, &mut got, &shape, (&fa, &fb));
                assert!(got == want, "{case} through f32 in place");
            }
        }
    }
}

/// Plane by plane where the planes fit the cache and every thread has several; never for a
/// single plane (an image), large planes or too few of them.
#[test]
fn planes_are_taken_where_they_fit_and_feed_every_thread() {
    use super::planes::by_planes;
    use super::steps::{steps, Step};
    assert!(by_planes(&[256, 512, 512], 4, 16));
    assert!(by_planes(&[512, 512, 512], 4, 16));
    assert!(by_planes(&[8, 8, 512, 512], 4, 8));
    assert!(!by_planes(&[8192, 8192], 4, 1), "one plane");
    assert!(!by_planes(&[64, 2048, 2048], 4, 2), "planes past the cache");
    assert!(!by_planes(&[32, 512, 512], 4, 16), "two planes a thread");
    assert!(
        !by_planes(&[256, 1024, 1024], 8, 16),
        "f64 planes past the cache"
    );
    assert!(
        !by_planes(&[1080, 1920, 3], 4, 16),
        "an image's pixels by their channels"
    );
    assert!(
        !by_planes(&[512, 8, 512], 4, 16),
        "planes of fewer rows than a block's lanes"
    );
    let shape = [256, 512, 512];
    assert_eq!(
        steps(&[0, 1, 2], &shape, 4, 16),
        [Step::Axis(0), Step::Planes(1, 2)]
    );
    assert_eq!(steps(&[1, 2], &shape, 4, 16), [Step::Planes(1, 2)]);
    assert_eq!(
        steps(&[0, 2], &shape, 4, 16),
        [Step::Axis(0), Step::Axis(2)]
    );
    assert_eq!(
        steps(&[0, 1], &shape, 4, 16),
        [Step::Axis(0), Step::Axis(1)]
    );
    assert_eq!(
        steps(&[0, 1, 2], &shape, 4, 64),
        [Step::Axis(0), Step::Axis(1), Step::Axis(2)]
    );
}

/// A walk down columns asks for 2–16 rows ahead: 8 KiB a thread on few threads, 2 KiB on 16.
#[test]
fn rows_ahead_shrink_as_the_threads_share_the_memory() {
    use super::pass::ahead_rows;
    assert_eq!(ahead_rows(512, 16), 4, "128 f32 columns, 16 threads: 2 KiB");
    assert_eq!(ahead_rows(512, 2), 16, "2 threads: 8 KiB");
    assert_eq!(ahead_rows(1024, 8), 4, "8 threads: 4 KiB");
    assert_eq!(ahead_rows(64, 16), 16, "at most 16 rows");
    assert_eq!(ahead_rows(4096, 16), 2, "at least 2 rows");
    assert_eq!(ahead_rows(256, 0), 16, "no threads counted as one");
}
