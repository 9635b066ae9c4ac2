//! Fixture generators shared by several test modules.

pub mod phone;
pub mod strips;
