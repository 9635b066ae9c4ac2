//! The host blur's scratch kept between calls (`memory::keep_scratch`): which buffer a call
//! gets back, and that a kept buffer still holding an earlier call's values changes no result.

use crate::cpu::banded::{self, Axis, Pixels};
use crate::cpu::lanes::{LANES, V};
use crate::filter::{Blur2d, Method};
use crate::memory::{self, Kept};

#[test]
fn a_kept_buffer_goes_to_the_next_call_that_fits_it() {
    let kept = Kept::new();
    // Nothing is kept until a limit is set.
    kept.give_back(vec![7u32; 100]);
    assert_eq!(kept.take(10, 0u32), vec![0; 10]);

    kept.keep_up_to(1000);
    let buffer = vec![7u32; 100];
    let at = buffer.as_ptr();
    kept.give_back(buffer);
    let again = kept.take(50, 0u32);
    assert_eq!(
        (again.as_ptr(), again.len()),
        (at, 100),
        "the kept buffer, whole"
    );
    kept.give_back(again);
    assert_eq!(kept.take(101, 0u32), vec![0; 101], "too small: a new one");
    assert_eq!(kept.take(10, 0u8), vec![0; 10], "another type: a new one");
    let same = kept.take(100, 0u32);
    assert_eq!(same.as_ptr(), at, "still kept after the misses");
    kept.give_back(same);

    // A smaller buffer does not replace a larger one; one over the limit is not kept.
    kept.give_back(vec![1u32; 20]);
    kept.give_back(vec![1u32; 251]);
    let largest = kept.take(1, 0u32);
    assert_eq!(largest.as_ptr(), at);
    kept.give_back(largest);

    kept.keep_up_to(0);
    kept.give_back(vec![7u32; 100]);
    assert_eq!(kept.take(1, 0u32), vec![0], "0 keeps none");
}

/// `width`×`height` RGB8 noise with a gradient: neither flat nor periodic.
fn rgb(width: usize, height: usize) -> Vec<u8> {
    let mut s = 0x2545_f491_4f6c_dd1du64;
    (0..width * height * 3)
        .map(|i| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((i / 3 % width) as u64 * 200 / width as u64 + (s >> 58)) as u8
        })
        .collect()
}

/// A buffer of NaN put into `kept`, which it keeps; its address.
fn poison(kept: &Kept) -> *const V {
    // The buffer kept before, if any, goes first.
    kept.keep_up_to(0);
    kept.keep_up_to(1 << 30);
    let buffer = vec![V([f32::NAN; LANES]); 1 << 20];
    let at = buffer.as_ptr();
    kept.give_back(buffer);
    at
}

/// Every sample the rows pass reads, the columns pass wrote in the same call: a kept scratch
/// full of NaN gives the same bytes as fresh scratch, in place (the bands in turn) and into
/// another buffer (several bands at once, two scratches), on an image whose last band, tile
/// and chunk are partial. The scratch is this test's own (no other test's blur takes it), and
/// each call is checked to have taken it.
#[test]
fn a_kept_scratch_full_of_nan_changes_no_result() {
    static POISONED: Kept = Kept::new();
    let (w, h) = (1001, 300);
    let src = rgb(w, h);
    let blur = Blur2d::new(Method::Auto, 3.0, 4.0);
    let axes = (Axis::of(&blur.x), Axis::of(&blur.y));
    let px = Pixels {
        channels: 3,
        ..Pixels::ONE_CHANNEL
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(8)
        .build()
        .unwrap();
    let in_place = || {
        let mut out = src.clone();
        banded::blur_axes_in_place(&mut out, (w, h), &px, axes);
        out
    };
    let into = || {
        let mut out = vec![0u8; src.len()];
        banded::blur_axes_into(&src, &mut out, (w, h), &px, axes);
        out
    };
    let fresh = (pool.install(in_place), pool.install(into));
    assert_ne!(fresh.0, src, "blurred");
    assert_eq!(fresh.0, fresh.1, "in place as into another");

    for (name, blur, want) in [
        (
            "in place",
            &in_place as &(dyn Fn() -> Vec<u8> + Sync),
            &fresh.0,
        ),
        ("into another", &into, &fresh.1),
    ] {
        let at = poison(&POISONED);
        let kept = pool.install(|| memory::keeping_in(&POISONED, blur));
        let taken = POISONED.take(1, V::ZERO);
        assert_eq!(
            taken.as_ptr(),
            at,
            "{name}: the call took the NaN scratch and gave it back"
        );
        assert!(kept == *want, "{name}, with a kept scratch full of NaN");
    }
    POISONED.keep_up_to(0);
}
