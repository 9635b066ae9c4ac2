//! The blur on the host's cores: the planar reference every kernel is tested against, the
//! fast banded blur that runs in place on the decoded image, and the N-D engine that filters
//! any axis of a contiguous array.

pub(crate) mod axis;
pub mod banded;
pub(crate) mod interleaved;
pub mod lanes;
pub mod reference;

/// A decoded image blurred in place on the host, mixed into itself by `select` (one value per
/// pixel) where there is one: by the banded blur where each axis is recursive or left alone
/// (sigma 0), else along one axis through the N-D engine where the other is left alone. None where neither takes it (an FIR axis beside
/// a blurred one, a colour type neither knows): the planar reference's work.
pub fn blur_in_place(
    img: &mut image::DynamicImage,
    blur: &crate::filter::Blur2d,
    linear: bool,
    select: Option<&[f32]>,
) -> Option<Vec<reference::CpuPass>> {
    // The banded blur takes an axis left alone beside a recursive one; the N-D engine the
    // rest of the one-axis blurs (an FIR axis).
    let banded = banded::blur_image_mixed(img, blur, linear, select);
    if banded.is_none() && (blur.x.is_identity() || blur.y.is_identity()) {
        return interleaved::blur_one_axis(img, blur, linear, select);
    }
    banded
}
