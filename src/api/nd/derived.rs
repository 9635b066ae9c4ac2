//! Maps made of the Gaussian's derivatives over an N-D array, as scipy.ndimage defines them:
//! the gradient magnitude (along each axis its first derivative, smoothed along the others;
//! the root of their squares' sum) and the Laplacian of the Gaussian (the sum of each axis's
//! second derivative, smoothed along the others). Each term is one pass of the filter with
//! that axis's order, so each costs what a blur costs, whatever sigma is.

use super::{Element, Filter};
use crate::Error;
use rayon::prelude::*;

impl Filter {
    /// The gradient magnitude of `input` into `output` (scipy's
    /// `gaussian_gradient_magnitude`): the root of the sum over the axes of the squared first
    /// derivative along that axis, smoothed along the others. Axes whose sigma is 0 are
    /// neither smoothed nor differentiated. The orders set with [`Filter::order`] are not used.
    ///
    /// ```
    /// use gblur::nd::Filter;
    ///
    /// // A ramp rising 2 per sample along x and 1 along y: a gradient of length √5.
    /// let shape = [32, 32];
    /// let ramp: Vec<f32> = (0..32 * 32).map(|i| (i / 32) as f32 + 2.0 * (i % 32) as f32).collect();
    /// let mut magnitude = vec![0f32; 32 * 32];
    /// Filter::new(&[3.0, 3.0])?.gradient_magnitude(&ramp, &mut magnitude, &shape)?;
    /// assert!((magnitude[16 * 32 + 16] - 5f32.sqrt()).abs() < 1e-3);
    /// # Ok::<(), gblur::Error>(())
    /// ```
    pub fn gradient_magnitude<S: Element>(
        &self,
        input: &[S],
        output: &mut [f32],
        shape: &[usize],
    ) -> Result<(), Error> {
        self.sum_over_axes(input, output, shape, 1)?;
        output.par_iter_mut().for_each(|v| *v = v.sqrt());
        Ok(())
    }

    /// The Laplacian of the Gaussian of `input` into `output` (scipy's `gaussian_laplace`): the
    /// sum over the axes of the second derivative along that axis, smoothed along the others.
    /// Axes whose sigma is 0 are neither smoothed nor differentiated. The orders set with
    /// [`Filter::order`] are not used.
    ///
    /// ```
    /// use gblur::nd::Filter;
    ///
    /// // A paraboloid x² + y² has a Laplacian of 4 everywhere.
    /// let shape = [40, 40];
    /// let bowl: Vec<f32> = (0..40 * 40)
    ///     .map(|i| ((i / 40) as f32 - 20.0).powi(2) + ((i % 40) as f32 - 20.0).powi(2))
    ///     .collect();
    /// let mut laplacian = vec![0f32; 40 * 40];
    /// Filter::new(&[2.0, 2.0])?.laplace(&bowl, &mut laplacian, &shape)?;
    /// assert!((laplacian[20 * 40 + 20] - 4.0).abs() < 1e-2);
    /// # Ok::<(), gblur::Error>(())
    /// ```
    pub fn laplace<S: Element>(
        &self,
        input: &[S],
        output: &mut [f32],
        shape: &[usize],
    ) -> Result<(), Error> {
        self.sum_over_axes(input, output, shape, 2)
    }

    /// Over every axis with a sigma: that axis's derivative of `order`, smoothed along the
    /// others, squared for the first derivative, summed into `output`.
    fn sum_over_axes<S: Element>(
        &self,
        input: &[S],
        output: &mut [f32],
        shape: &[usize],
        order: u8,
    ) -> Result<(), Error> {
        self.checked::<f32>(input.len(), output.len(), shape)?;
        output.fill(0.0);
        let mut term = vec![0f32; input.len()];
        for axis in (0..self.sigma.len()).filter(|&a| self.sigma[a] > 0.0) {
            let mut orders = vec![0u8; self.sigma.len()];
            orders[axis] = order;
            self.clone()
                .order(&orders)
                .apply_into(input, &mut term, shape)?;
            let add = |(o, &t): (&mut f32, &f32)| *o += if order == 1 { t * t } else { t };
            output.par_iter_mut().zip(&term).for_each(add);
        }
        Ok(())
    }
}
