use gblur::{
    cpu,
    filter::{LineFilter, Method},
    gaussian,
};

fn impulse_error(method: Method, sigma: f64) -> f64 {
    let f = LineFilter::new(method, sigma);
    let r = ((10.0 * sigma).ceil() as usize + 16).min(2_000_000);
    let n = 2 * r + 1;
    let mut src = vec![0f32; n];
    src[r] = 1.0;
    let mut dst = vec![0f32; n];
    cpu::filter_line(&src, &mut dst, &f);
    let g = gaussian::sampled_gaussian(sigma, r);
    dst.iter().zip(&g).map(|(a, b)| (*a as f64 - b).abs()).sum()
}

#[test]
fn print_errors() {
    for s in [
        0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 400.0, 1000.0, 3000.0,
    ] {
        println!(
            "{s:7} design {:.2e}  rec {:.2e}  fir {:.2e}",
            gaussian::design_error(s),
            impulse_error(Method::Recursive, s),
            impulse_error(Method::Fir, s)
        );
    }
}
