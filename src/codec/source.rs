//! What the decoders read: a file or bytes in memory behind one type (`&mut dyn Seekable`),
//! so that each of the `image` crate's decoders and the `tiff` crate's is compiled once, not
//! once for every kind of reader (they were a fifth of the library's build).

use std::io::{BufRead, Seek};

/// A reader the decoders take: buffered and seekable.
pub trait Seekable: BufRead + Seek {}

impl<T: BufRead + Seek> Seekable for T {}
