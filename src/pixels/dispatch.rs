//! One dispatch over the colour types gblur blurs: 8- and 16-bit gray, gray and alpha, RGB
//! and RGBA, and float RGB and RGBA (`image::DynamicImage`'s variants the decoders yield).
//! Code generic over the sample type is written once and these macros call it with each
//! variant's buffer; adding a colour type is one line here.

/// `$body` with `$b` bound to the buffer of `$image` (a `DynamicImage` or a reference to
/// one), for each colour type gblur blurs; `$other` (a pattern over the image) takes the rest.
macro_rules! each_buffer {
    ($image:expr, $b:ident => $body:expr, $other:pat => $fallback:expr $(,)?) => {
        match $image {
            image::DynamicImage::ImageLuma8($b) => $body,
            image::DynamicImage::ImageLumaA8($b) => $body,
            image::DynamicImage::ImageRgb8($b) => $body,
            image::DynamicImage::ImageRgba8($b) => $body,
            image::DynamicImage::ImageLuma16($b) => $body,
            image::DynamicImage::ImageLumaA16($b) => $body,
            image::DynamicImage::ImageRgb16($b) => $body,
            image::DynamicImage::ImageRgba16($b) => $body,
            image::DynamicImage::ImageRgb32F($b) => $body,
            image::DynamicImage::ImageRgba32F($b) => $body,
            $other => $fallback,
        }
    };
}

/// `each_buffer` over two images of one colour type, `$a` and `$b` bound to their buffers;
/// `$other` (a pattern over the pair) takes pairs of different or other types.
macro_rules! each_buffer_pair {
    (($x:expr, $y:expr), ($a:ident, $b:ident) => $body:expr, $other:pat => $fallback:expr $(,)?) => {
        match ($x, $y) {
            (image::DynamicImage::ImageLuma8($a), image::DynamicImage::ImageLuma8($b)) => $body,
            (image::DynamicImage::ImageLumaA8($a), image::DynamicImage::ImageLumaA8($b)) => $body,
            (image::DynamicImage::ImageRgb8($a), image::DynamicImage::ImageRgb8($b)) => $body,
            (image::DynamicImage::ImageRgba8($a), image::DynamicImage::ImageRgba8($b)) => $body,
            (image::DynamicImage::ImageLuma16($a), image::DynamicImage::ImageLuma16($b)) => $body,
            (image::DynamicImage::ImageLumaA16($a), image::DynamicImage::ImageLumaA16($b)) => $body,
            (image::DynamicImage::ImageRgb16($a), image::DynamicImage::ImageRgb16($b)) => $body,
            (image::DynamicImage::ImageRgba16($a), image::DynamicImage::ImageRgba16($b)) => $body,
            (image::DynamicImage::ImageRgb32F($a), image::DynamicImage::ImageRgb32F($b)) => $body,
            (image::DynamicImage::ImageRgba32F($a), image::DynamicImage::ImageRgba32F($b)) => $body,
            $other => $fallback,
        }
    };
}

pub(crate) use {each_buffer, each_buffer_pair};
