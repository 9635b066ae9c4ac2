//! The N-D engine's trips through an array: the last two axes plane by plane
//! (`cpu::axis::planes`) give what `nd::Filter` gives one axis after another.

use crate::cpu::axis::planes::by_planes;
use crate::nd::Filter;

/// `nd::Filter` gives the same samples whether its last two axes go plane by plane (one
/// thread: 40 planes are enough) or one after the other (64 threads: too few planes each),
/// in place and into another type, integers rounded once.
#[test]
fn a_filter_gives_the_same_samples_by_planes_or_by_axes() {
    let shape = [40, 21, 35];
    let len: usize = shape.iter().product();
    assert!(by_planes(&shape, 4, 1) && !by_planes(&shape, 4, 64));
    // Scrambled levels in [0, 1): every sample unlike its neighbours.
    let data: Vec<f32> = (0..len)
        .map(|i| (i * 7919 % 1000) as f32 / 1000.0)
        .collect();
    let bytes: Vec<u8> = data.iter().map(|v| (v * 255.0) as u8).collect();
    let pool = |n| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .unwrap()
    };
    for sigma in [[2.0, 2.0, 2.0], [0.0, 3.0, 1.5]] {
        let filter = Filter::new(&sigma).unwrap();
        let run = |threads: usize| {
            pool(threads).install(|| {
                let mut floats = data.clone();
                filter.apply(&mut floats, &shape).unwrap();
                let mut ints = bytes.clone();
                filter.apply(&mut ints, &shape).unwrap();
                let mut rounded = vec![0u8; len];
                filter.apply_into(&data, &mut rounded, &shape).unwrap();
                let mut widened = vec![0f32; len];
                filter.apply_into(&bytes, &mut widened, &shape).unwrap();
                (floats, ints, rounded, widened)
            })
        };
        assert!(run(1) == run(64), "σ {sigma:?}");
    }
}

/// A plane's rows are filtered before its columns (the first step writes another array, and
/// rows write it in order), except where an axis extends by a constant: a derivative's pass
/// does not keep the constant, so there scipy's order decides the samples.
#[test]
fn a_plane_takes_its_rows_first_unless_an_edge_is_a_constant() {
    use crate::cpu::axis::steps::Step;
    use crate::filter::EdgeMode;
    let shape = [64, 48];
    let steps = |mode| {
        let filter = Filter::new(&[2.0, 3.0]).unwrap().mode(mode);
        let axes = filter.checked_axes::<f32>(64 * 48, &shape).unwrap();
        crate::nd::steps::<f32>(&axes, &shape)
    };
    assert_eq!(steps(EdgeMode::Reflect), [Step::Axis(1), Step::Axis(0)]);
    assert_eq!(steps(EdgeMode::Clamp), [Step::Axis(1), Step::Axis(0)]);
    assert_eq!(
        steps(EdgeMode::Constant(0.5)),
        [Step::Axis(0), Step::Axis(1)]
    );
}
