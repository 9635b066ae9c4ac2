//! The blur on the host's cores: the planar reference every kernel is tested against, the
//! fast banded blur that runs in place on the decoded image, and the N-D engine that filters
//! any axis of a contiguous array.

pub(crate) mod axis;
pub mod banded;
pub mod lanes;
pub mod reference;
