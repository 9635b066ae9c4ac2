//! What lies beyond an axis's edges: the modes scipy.ndimage and OpenCV name (clamp is
//! scipy's `nearest` and OpenCV's `BORDER_REPLICATE`), each a map from an index past the edge
//! to the sample it stands for.

/// How the samples beyond one edge of an axis are made.
///
/// ```
/// use gblur::{EdgeMode, Gaussian};
///
/// // A seamless texture: what leaves one edge comes back at the other.
/// let mut tile = image::DynamicImage::ImageRgb8(image::RgbImage::new(64, 64));
/// Gaussian::builder().sigma(3.0).edges(EdgeMode::Wrap).build()?.blur_image(&mut tile)?;
/// # Ok::<(), gblur::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum EdgeMode {
    /// The edge sample repeated (`aaa|abcd|ddd`).
    Clamp,
    /// Mirrored about the edge, the edge sample included (`dcba|abcd|dcba`).
    Reflect,
    /// Mirrored about the edge sample, which is not repeated (`dcb|abcd|cba`).
    Reflect101,
    /// The image repeated (`bcd|abcd|abc`).
    Wrap,
    /// A constant colour, as a fraction of full scale (0..=1): 0.5 is 128 in an 8-bit image
    /// and 32768 in a 16-bit one, and 0.5 itself in a float image. Alpha is opaque.
    Constant(f32),
}

impl EdgeMode {
    /// `clamp|reflect|reflect101|wrap|constant[=V]`, with scipy's and OpenCV's names as
    /// aliases (`nearest`, `mirror`, `replicate`, `reflect_101`).
    ///
    /// ```
    /// use gblur::EdgeMode;
    ///
    /// assert_eq!(EdgeMode::parse("nearest"), Ok(EdgeMode::Clamp));
    /// assert_eq!(EdgeMode::parse("mirror"), Ok(EdgeMode::Reflect101));
    /// assert_eq!(EdgeMode::parse("constant=0.5"), Ok(EdgeMode::Constant(0.5)));
    /// assert!(EdgeMode::parse("sideways").is_err());
    /// ```
    pub fn parse(s: &str) -> Result<EdgeMode, String> {
        let (name, value) = match s.split_once('=') {
            Some((name, value)) => (name, Some(value)),
            None => (s, None),
        };
        let mode = match name.to_ascii_lowercase().as_str() {
            "clamp" | "nearest" | "replicate" => EdgeMode::Clamp,
            "reflect" | "symmetric" => EdgeMode::Reflect,
            "reflect101" | "reflect_101" | "mirror" => EdgeMode::Reflect101,
            "wrap" | "periodic" => EdgeMode::Wrap,
            "constant" => EdgeMode::Constant(0.0),
            _ => {
                return Err(format!(
                    "'{name}' is not an edge mode: clamp, reflect, reflect101, wrap or constant[=V]"
                ))
            }
        };
        match (mode, value) {
            (EdgeMode::Constant(_), None) => Ok(mode),
            (EdgeMode::Constant(_), Some(v)) => parse_constant(v).map(EdgeMode::Constant),
            (_, Some(_)) => Err(format!(
                "only constant takes a value (constant=V), got '{s}'"
            )),
            (_, None) => Ok(mode),
        }
    }

    /// The name `parse` takes back, e.g. `constant=0.5`.
    pub fn name(&self) -> String {
        match self {
            EdgeMode::Clamp => "clamp".into(),
            EdgeMode::Reflect => "reflect".into(),
            EdgeMode::Reflect101 => "reflect101".into(),
            EdgeMode::Wrap => "wrap".into(),
            EdgeMode::Constant(v) => format!("constant={v}"),
        }
    }

    /// The source index of extended index `i` on an axis of `n` samples (n > 0), or None
    /// where the constant goes. Periodic modes map any distance, so an extension wider than
    /// the image repeats the pattern as often as it needs.
    pub fn source(self, i: i64, n: i64) -> Option<usize> {
        let m = match self {
            EdgeMode::Clamp => i.clamp(0, n - 1),
            EdgeMode::Wrap => i.rem_euclid(n),
            EdgeMode::Reflect => {
                let m = i.rem_euclid(2 * n);
                if m < n {
                    m
                } else {
                    2 * n - 1 - m
                }
            }
            EdgeMode::Reflect101 if n == 1 => 0,
            EdgeMode::Reflect101 => {
                let m = i.rem_euclid(2 * n - 2);
                if m < n {
                    m
                } else {
                    2 * n - 2 - m
                }
            }
            EdgeMode::Constant(_) if (0..n).contains(&i) => i,
            EdgeMode::Constant(_) => return None,
        };
        Some(m as usize)
    }
}

fn parse_constant(v: &str) -> Result<f32, String> {
    match v.trim().parse::<f32>() {
        Ok(x) if (0.0..=1.0).contains(&x) => Ok(x),
        _ => Err(format!(
            "constant={v}: the value is a fraction of full scale, a number from 0 to 1 (0.5 is 128 in an 8-bit image)"
        )),
    }
}
