//! The sample types the N-D engine reads and writes.

/// A sample type of an N-D array: read as f32 for the filter, written back rounded and
/// clamped to the type's range where it is an integer.
pub trait Element: Copy + Send + Sync + 'static {
    /// A float type: an intermediate result stored in it loses nothing the filter keeps.
    const FLOAT: bool;
    /// 16-bit integers: their 65,536 levels show the recursive filter's error (up to ~1e-4 of
    /// the range), so where they are the output `nd::Filter` runs scipy's sampled kernel.
    const SIXTEEN_BIT: bool = false;
    fn load(self) -> f32;
    fn store(v: f32) -> Self;
    /// The samples as f32, where they are f32 already (a device takes them without a copy).
    fn as_f32_mut(_data: &mut [Self]) -> Option<&mut [f32]> {
        None
    }
    /// `as_f32_mut` of samples read only.
    fn as_f32(_data: &[Self]) -> Option<&[f32]> {
        None
    }
}

/// An integer sample from a filtered value: rounded half away from zero, clamped to the
/// type's range, NaN to 0.
#[inline(always)]
fn round_to(v: f32, lo: f32, hi: f32) -> f32 {
    if v.is_nan() {
        0.0
    } else {
        v.round().clamp(lo, hi)
    }
}

/// `Element` for an integer type: loaded exactly, stored by `round_to` within its range.
macro_rules! integer_element {
    ($($t:ty),*) => {$(
        impl Element for $t {
            const FLOAT: bool = false;
            const SIXTEEN_BIT: bool = std::mem::size_of::<$t>() == 2;
            #[inline(always)]
            fn load(self) -> f32 {
                self as f32
            }
            #[inline(always)]
            fn store(v: f32) -> Self {
                round_to(v, <$t>::MIN as f32, <$t>::MAX as f32) as $t
            }
        }
    )*};
}

integer_element!(u8, u16, i16);

impl Element for f32 {
    const FLOAT: bool = true;
    fn as_f32_mut(data: &mut [f32]) -> Option<&mut [f32]> {
        Some(data)
    }
    fn as_f32(data: &[f32]) -> Option<&[f32]> {
        Some(data)
    }
    #[inline(always)]
    fn load(self) -> f32 {
        self
    }
    #[inline(always)]
    fn store(v: f32) -> Self {
        v
    }
}

impl Element for f64 {
    const FLOAT: bool = true;
    #[inline(always)]
    fn load(self) -> f32 {
        self as f32
    }
    #[inline(always)]
    fn store(v: f32) -> Self {
        v as f64
    }
}
