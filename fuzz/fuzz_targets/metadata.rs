//! Arbitrary bytes → every metadata parser gblur has (EXIF blobs, XMP packets, TIFF, PNG and
//! BMP containers, metadata embedded into encoded files). Must never panic, hang or allocate
//! without bound.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    gblur::codec::metadata::parse_all(data);
});
