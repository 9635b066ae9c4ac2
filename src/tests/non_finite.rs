//! NaN and infinity in `nd::Filter`'s arrays spoil only the outputs whose kernel holds them
//! (scipy's radius along each axis), as scipy's do, on the recursive filter and the FIR.

use crate::nd::Filter;
use crate::EdgeMode;

fn smooth(h: usize, w: usize) -> Vec<f32> {
    (0..h * w)
        .map(|i| ((i % w) as f32 * 0.1).sin() + ((i / w) as f32 * 0.07).cos())
        .collect()
}

#[test]
fn one_nan_spoils_its_footprint_alone() {
    let (h, w) = (300, 400);
    for (sigma, mode) in [
        (3.0, EdgeMode::Reflect),
        (3.0, EdgeMode::Clamp),
        (1.5, EdgeMode::Wrap),
    ] {
        let clean = smooth(h, w);
        let mut data = clean.clone();
        data[150 * w + 200] = f32::NAN;
        let filter = Filter::new(&[sigma, sigma]).unwrap().mode(mode);
        filter.apply(&mut data, &[h, w]).unwrap();
        // scipy's radius: int(4 sigma + 0.5) each way, so a square of its side.
        let r = (4.0 * sigma + 0.5) as usize;
        let nans: Vec<usize> = (0..h * w).filter(|&i| data[i].is_nan()).collect();
        assert_eq!(
            nans.len(),
            (2 * r + 1) * (2 * r + 1),
            "sigma {sigma} {mode:?}"
        );
        assert!(nans
            .iter()
            .all(|&i| (i / w).abs_diff(150) <= r && (i % w).abs_diff(200) <= r));
        // Far from it the result is the clean array's.
        let mut reference = clean;
        filter.apply(&mut reference, &[h, w]).unwrap();
        assert_eq!(data[10 * w + 10], reference[10 * w + 10]);
    }
}

#[test]
fn infinities_keep_their_sign_in_a_blur_and_spoil_a_derivative() {
    let n = 200;
    let mut line = vec![1.0f32; n];
    line[50] = f32::INFINITY;
    line[150] = f32::NEG_INFINITY;
    let mut blurred = line.clone();
    Filter::new(&[4.0])
        .unwrap()
        .apply(&mut blurred, &[n])
        .unwrap();
    let r = 16;
    assert!(blurred[50 - r..=50 + r].iter().all(|&v| v == f32::INFINITY));
    assert!(blurred[150 - r..=150 + r]
        .iter()
        .all(|&v| v == f32::NEG_INFINITY));
    assert!(blurred[100].is_finite() && blurred[50 - r - 1].is_finite());
    let mut slope = line.clone();
    Filter::new(&[4.0])
        .unwrap()
        .order(&[1])
        .apply(&mut slope, &[n])
        .unwrap();
    assert!(slope[50 - r..=50 + r].iter().all(|v| v.is_nan()));
    assert!(slope[100].abs() < 1e-6);
    // Both signs within one footprint: NaN, as scipy's sum inf - inf is.
    let mut both = vec![0.0f32; 40];
    both[18] = f32::INFINITY;
    both[22] = f32::NEG_INFINITY;
    Filter::new(&[2.0])
        .unwrap()
        .apply(&mut both, &[40])
        .unwrap();
    assert!(both[20].is_nan() && both[12] == f32::INFINITY && both[28] == f32::NEG_INFINITY);
}
