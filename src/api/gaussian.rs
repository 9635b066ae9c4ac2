//! `Gaussian`: a checked 2-D blur (sigma per axis, filter method, edge modes, truncate,
//! linear light), built once and applied to any number of images.

use super::Error;
use crate::filter::{self, Blur2d, EdgeMode, Method};
use crate::work::edges::Edges;

/// A 2-D Gaussian blur, checked when built, so that every value of this type can run.
///
/// The filter is Deriche's 4th-order recursive Gaussian (two parallel 2nd-order sections in
/// f32), whose cost per pixel does not grow with sigma; below sigma 2 [`Method::Auto`] runs
/// the exactly sampled Gaussian (an FIR) instead. Either is within 1e-3 of the sampled
/// Gaussian's result relative to the value range (5.7e-4 for the recursive filter from sigma 2
/// to 3000).
///
/// ```
/// use gblur::{EdgeMode, Gaussian};
///
/// let same_both_ways = Gaussian::new(5.0)?;
/// let custom = Gaussian::builder()
///     .sigma_x(8.0)
///     .sigma_y(2.0)
///     .edges(EdgeMode::Reflect)
///     .build()?;
/// assert_eq!(custom.sigma(), (8.0, 2.0));
/// # let _ = same_both_ways;
/// # Ok::<(), gblur::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Gaussian {
    pub(crate) blur: Blur2d,
    pub(crate) edges: Edges,
    pub(crate) linear: bool,
    sigma: (f64, f64),
}

impl Gaussian {
    /// The same sigma (in pixels) along both axes, with the defaults: [`Method::Auto`], clamped
    /// edges ([`EdgeMode::Clamp`]), no linear-light conversion.
    ///
    /// ```
    /// let g = gblur::Gaussian::new(2.0)?;
    /// assert_eq!(g.sigma(), (2.0, 2.0));
    /// assert!(gblur::Gaussian::new(-1.0).is_err());
    /// # Ok::<(), gblur::Error>(())
    /// ```
    pub fn new(sigma: f64) -> Result<Gaussian, Error> {
        Gaussian::builder().sigma(sigma).build()
    }

    /// A builder for every setting.
    ///
    /// ```
    /// use gblur::{EdgeMode, Gaussian};
    ///
    /// let g = Gaussian::builder().sigma_x(3.0).sigma_y(0.0).edges(EdgeMode::Reflect).build()?;
    /// assert_eq!(g.sigma(), (3.0, 0.0));
    /// # Ok::<(), gblur::Error>(())
    /// ```
    pub fn builder() -> GaussianBuilder {
        GaussianBuilder::default()
    }

    /// Sigma along x and along y, in pixels (0: no blur along that axis).
    ///
    /// ```
    /// let g = gblur::Gaussian::builder().sigma_x(4.0).sigma_y(1.5).build()?;
    /// assert_eq!(g.sigma(), (4.0, 1.5));
    /// # Ok::<(), gblur::Error>(())
    /// ```
    pub fn sigma(&self) -> (f64, f64) {
        self.sigma
    }

    /// What lies beyond the left and right edges, and beyond the top and bottom.
    ///
    /// ```
    /// use gblur::{EdgeMode, Gaussian};
    ///
    /// let g = Gaussian::builder().edge_x(EdgeMode::Wrap).build()?;
    /// assert_eq!(g.edges(), (EdgeMode::Wrap, EdgeMode::Clamp));
    /// # Ok::<(), gblur::Error>(())
    /// ```
    pub fn edges(&self) -> (EdgeMode, EdgeMode) {
        (self.edges.x, self.edges.y)
    }

    /// Which filter runs along x and y: `recursive`, `fir`, or one per axis.
    ///
    /// ```
    /// use gblur::{Gaussian, Method};
    ///
    /// assert_eq!(Gaussian::new(5.0)?.method_name(), "recursive");
    /// let fir = Gaussian::builder().sigma(3.0).method(Method::Fir).build()?;
    /// assert_eq!(fir.method_name(), "fir");
    /// # Ok::<(), gblur::Error>(())
    /// ```
    pub fn method_name(&self) -> String {
        self.blur.method_name()
    }

    /// Whether 8- and 16-bit colour is blurred in linear light (decoded from sRGB first).
    ///
    /// ```
    /// let g = gblur::Gaussian::builder().sigma(3.0).linear(true).build()?;
    /// assert!(g.linear());
    /// # Ok::<(), gblur::Error>(())
    /// ```
    pub fn linear(&self) -> bool {
        self.linear
    }
}

/// The settings of a [`Gaussian`], checked by [`GaussianBuilder::build`].
///
/// ```
/// use gblur::{EdgeMode, Gaussian, Method};
///
/// let g = Gaussian::builder()
///     .sigma_x(6.0)
///     .sigma_y(2.0)
///     .method(Method::Auto)
///     .edge_x(EdgeMode::Reflect101)
///     .edge_y(EdgeMode::Reflect)
///     .linear(true)
///     .build()?;
/// assert_eq!(g.edges(), (EdgeMode::Reflect101, EdgeMode::Reflect));
/// # Ok::<(), gblur::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct GaussianBuilder {
    sigma_x: f64,
    sigma_y: f64,
    method: Method,
    edge_x: EdgeMode,
    edge_y: EdgeMode,
    truncate: Option<f64>,
    linear: bool,
}

impl Default for GaussianBuilder {
    /// Sigma 1 on both axes, [`Method::Auto`], clamped edges, no linear light.
    fn default() -> Self {
        GaussianBuilder {
            sigma_x: 1.0,
            sigma_y: 1.0,
            method: Method::Auto,
            edge_x: EdgeMode::Clamp,
            edge_y: EdgeMode::Clamp,
            truncate: None,
            linear: false,
        }
    }
}

impl GaussianBuilder {
    /// The same sigma along both axes, in pixels.
    ///
    /// ```
    /// let g = gblur::Gaussian::builder().sigma(2.5).build()?;
    /// assert_eq!(g.sigma(), (2.5, 2.5));
    /// # Ok::<(), gblur::Error>(())
    /// ```
    pub fn sigma(self, sigma: f64) -> Self {
        self.sigma_x(sigma).sigma_y(sigma)
    }

    /// Sigma along x (across a row), in pixels; 0 leaves rows unblurred.
    ///
    /// ```
    /// // A horizontal motion-like blur: rows only.
    /// let g = gblur::Gaussian::builder().sigma_x(8.0).sigma_y(0.0).build()?;
    /// assert_eq!(g.sigma(), (8.0, 0.0));
    /// # Ok::<(), gblur::Error>(())
    /// ```
    pub fn sigma_x(mut self, sigma: f64) -> Self {
        self.sigma_x = sigma;
        self
    }

    /// Sigma along y (down a column), in pixels; 0 leaves columns unblurred.
    ///
    /// ```
    /// let g = gblur::Gaussian::builder().sigma_x(0.0).sigma_y(8.0).build()?;
    /// assert_eq!(g.sigma(), (0.0, 8.0));
    /// # Ok::<(), gblur::Error>(())
    /// ```
    pub fn sigma_y(mut self, sigma: f64) -> Self {
        self.sigma_y = sigma;
        self
    }

    /// The filter family (default [`Method::Auto`]).
    ///
    /// ```
    /// use gblur::{Gaussian, Method};
    ///
    /// let g = Gaussian::builder().sigma(1.0).method(Method::Recursive).build()?;
    /// assert_eq!(g.method_name(), "recursive");
    /// # Ok::<(), gblur::Error>(())
    /// ```
    pub fn method(mut self, method: Method) -> Self {
        self.method = method;
        self
    }

    /// What lies beyond every edge (default [`EdgeMode::Clamp`]).
    ///
    /// ```
    /// use gblur::{EdgeMode, Gaussian};
    ///
    /// let g = Gaussian::builder().edges(EdgeMode::Reflect).build()?;
    /// assert_eq!(g.edges(), (EdgeMode::Reflect, EdgeMode::Reflect));
    /// # Ok::<(), gblur::Error>(())
    /// ```
    pub fn edges(self, mode: EdgeMode) -> Self {
        self.edge_x(mode).edge_y(mode)
    }

    /// What lies beyond the left and right edges.
    ///
    /// ```
    /// use gblur::{EdgeMode, Gaussian};
    ///
    /// // A panorama that wraps around left to right.
    /// let g = Gaussian::builder().edge_x(EdgeMode::Wrap).build()?;
    /// assert_eq!(g.edges().0, EdgeMode::Wrap);
    /// # Ok::<(), gblur::Error>(())
    /// ```
    pub fn edge_x(mut self, mode: EdgeMode) -> Self {
        self.edge_x = mode;
        self
    }

    /// What lies beyond the top and bottom edges.
    ///
    /// ```
    /// use gblur::{EdgeMode, Gaussian};
    ///
    /// let g = Gaussian::builder().edge_y(EdgeMode::Reflect101).build()?;
    /// assert_eq!(g.edges().1, EdgeMode::Reflect101);
    /// # Ok::<(), gblur::Error>(())
    /// ```
    pub fn edge_y(mut self, mode: EdgeMode) -> Self {
        self.edge_y = mode;
        self
    }

    /// The FIR's radius in sigmas, rounded as scipy.ndimage rounds its `truncate`
    /// (`floor(truncate·σ + 0.5)`), from above 0 to 20; the default is ⌈5σ⌉. The recursive
    /// filter has no radius and ignores it.
    ///
    /// ```
    /// use gblur::{Gaussian, Method};
    ///
    /// let g = Gaussian::builder().sigma(1.5).method(Method::Fir).truncate(4.0).build()?;
    /// assert_eq!(g.method_name(), "fir");
    /// assert!(Gaussian::builder().truncate(0.0).build().is_err());
    /// # Ok::<(), gblur::Error>(())
    /// ```
    pub fn truncate(mut self, truncate: f64) -> Self {
        self.truncate = Some(truncate);
        self
    }

    /// Blur 8- and 16-bit colour in linear light: decoded from sRGB first and encoded back
    /// after, as photographers expect of highlights. Float images are linear already.
    ///
    /// ```
    /// let g = gblur::Gaussian::builder().sigma(4.0).linear(true).build()?;
    /// assert!(g.linear());
    /// # Ok::<(), gblur::Error>(())
    /// ```
    pub fn linear(mut self, linear: bool) -> Self {
        self.linear = linear;
        self
    }

    /// Checks every setting and makes the blur.
    ///
    /// ```
    /// use gblur::{Error, Gaussian, Method};
    ///
    /// assert!(Gaussian::builder().sigma(3.0).build().is_ok());
    /// let too_wide = Gaussian::builder().sigma(5000.0).method(Method::Fir).build();
    /// assert!(matches!(too_wide, Err(Error::FirTooWide { .. })));
    /// ```
    pub fn build(self) -> Result<Gaussian, Error> {
        let sx = check_sigma(self.sigma_x, "x")?;
        let sy = check_sigma(self.sigma_y, "y")?;
        if self.method == Method::Fir && sx.max(sy) > filter::FIR_MAX_SIGMA {
            return Err(Error::FirTooWide {
                sigma: sx.max(sy),
                max: filter::FIR_MAX_SIGMA,
            });
        }
        if let Some(t) = self.truncate {
            filter::check_truncate(t).map_err(Error::Truncate)?;
        }
        for mode in [self.edge_x, self.edge_y] {
            if let EdgeMode::Constant(v) = mode {
                if !(0.0..=1.0).contains(&v) {
                    return Err(Error::Constant(v as f64));
                }
            }
        }
        Ok(Gaussian {
            blur: blur_2d(self.method, (sx, sy), self.truncate),
            edges: Edges {
                x: self.edge_x,
                y: self.edge_y,
            },
            linear: self.linear,
            sigma: (sx, sy),
        })
    }
}

/// 0, or a sigma the filters take.
pub(crate) fn check_sigma(v: f64, axis: &str) -> Result<f64, Error> {
    if v == 0.0 || filter::check_sigma(v).is_ok() {
        Ok(v)
    } else {
        Err(Error::Sigma {
            axis: axis.into(),
            value: v,
        })
    }
}

/// The filters for `sigma` per axis (an axis of sigma 0 keeps every sample as it is).
fn blur_2d(method: Method, (sx, sy): (f64, f64), truncate: Option<f64>) -> Blur2d {
    Blur2d::new(method, sx, sy).with_truncate(truncate)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_bad_setting_is_refused_with_its_reason() {
        let bad = [
            Gaussian::builder().sigma(f64::NAN).build(),
            Gaussian::builder().sigma_x(-1.0).build(),
            Gaussian::builder().sigma_y(2e6).build(),
            Gaussian::builder().truncate(0.0).build(),
            Gaussian::builder()
                .method(Method::Fir)
                .sigma(2000.0)
                .build(),
            Gaussian::builder().edges(EdgeMode::Constant(1.5)).build(),
        ];
        for result in bad {
            let e = result.expect_err("refused");
            assert!(!e.to_string().is_empty());
        }
    }

    use crate::filter::LineFilter;

    #[test]
    fn sigma_zero_keeps_that_axis() {
        let g = Gaussian::builder()
            .sigma_x(0.0)
            .sigma_y(3.0)
            .build()
            .unwrap();
        assert_eq!(g.blur.x, LineFilter::identity());
        assert!(g.blur.y.is_recursive());
        assert_eq!(g.sigma(), (0.0, 3.0));
    }
}
