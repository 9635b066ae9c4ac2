//! The working image every blur path shares: f32 samples, one plane per channel, rows of
//! `width` samples. Planar so that each channel is a plain 2D array for the line passes.

/// A planar f32 image: `data[(c * height + y) * width + x]`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Planar {
    pub width: usize,
    pub height: usize,
    pub channels: usize,
    pub data: Vec<f32>,
}

impl Planar {
    pub fn new(width: usize, height: usize, channels: usize) -> Self {
        Self {
            width,
            height,
            channels,
            data: vec![0.0; width * height * channels],
        }
    }

    #[cfg(test)]
    pub fn from_fn(
        width: usize,
        height: usize,
        channels: usize,
        f: impl Fn(usize, usize, usize) -> f32,
    ) -> Self {
        let mut p = Self::new(width, height, channels);
        for c in 0..channels {
            for y in 0..height {
                for x in 0..width {
                    p.data[(c * height + y) * width + x] = f(x, y, c);
                }
            }
        }
        p
    }

    pub fn plane_len(&self) -> usize {
        self.width * self.height
    }

    pub fn at(&self, x: usize, y: usize, c: usize) -> f32 {
        self.data[(c * self.height + y) * self.width + x]
    }

    /// Largest absolute difference between two images of the same shape.
    #[cfg(test)]
    pub fn max_abs_diff(&self, other: &Planar) -> f32 {
        assert_eq!(
            (self.width, self.height, self.channels),
            (other.width, other.height, other.channels)
        );
        self.data
            .iter()
            .zip(&other.data)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f32::max)
    }
}
