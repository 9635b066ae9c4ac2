//! The blur on the host's cores: the planar reference every kernel is tested against, and the
//! fast banded blur that runs in place on the decoded image.

pub mod banded;
pub mod lanes;
pub mod reference;
