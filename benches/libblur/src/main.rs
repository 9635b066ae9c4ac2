//! libblur (crates.io) measured the way `gblur bench cpu` measures gblur: in memory, on 2
//! threads, clamped edges, median of RUNS timed runs after two warm-ups (the copy of the input
//! into the buffer an in-place blur works on is outside the timing, as in gblur's bench). Also
//! measures how far each variant, and any peer outputs dropped in a folder, is from the exact
//! Gaussian, so that "exact" and "about 1e-2 off" are figures, not quotes.
//!
//! usage:
//!   libblur-bench tests DIR [--accuracy-image PATH] [--acc-size N]
//!       writes the accuracy test images (a centred N×N crop of the image, N×N noise) into DIR,
//!       for peers to blur: {photo,noise}_rgb8.png, {photo,noise}_f32.f32 (raw little-endian
//!       f32, one channel) and {photo,noise}_f32.tiff (the same plane as RGB f32, R = G = B).
//!   libblur-bench [--image PATH] [--size WxH] [--runs N] [--sigmas 5,20] [--threads N]
//!                 [--accuracy-image PATH] [--acc-size N] [--peers DIR] [--json FILE]
//!       times libblur as RGB 8-bit and as one f32 channel on the image, by default the very
//!       pixels `gblur bench cpu` times (its xorshift noise, same seed: RGB bytes, and an f32
//!       plane) at --size (4896x3264); with --image, that image and its green channel / 255.
//!       Then measures accuracy on the test images (crop of --accuracy-image, default the timed
//!       image), with any peer outputs found in DIR as TOOL_TEST_sSIGMA.{png,f32,tiff} (e.g.
//!       gblur_photo_rgb8_s5.png). Prints Markdown tables; --json writes JSON lines.
//!       With --paired N, also N rounds in which gblur's banded blur (linked from this
//!       repository), libblur's exact Gaussian and its stack blur each blur the same pixels
//!       once, in an order that rotates: on a shared machine whose speed drifts by 2× within
//!       seconds, the ratio within a round is what stays comparable.

use libblur::{
    fast_gaussian, fast_gaussian_f32, fast_gaussian_next, fast_gaussian_next_f32,
    fast_gaussian_next_u16, fast_gaussian_u16, gaussian_blur, gaussian_blur_f32, gaussian_blur_u16,
    gaussian_box_blur, gaussian_box_blur_f32, gaussian_box_blur_u16, stack_blur, stack_blur_f32,
    stack_blur_u16, AnisotropicRadius, BlurImage, BlurImageMut, CLTParameters, ConvolutionMode,
    EdgeMode, EdgeMode2D, FastBlurChannels, GaussianBlurParams, IeeeBinaryConvolutionMode,
    ThreadingPolicy,
};
use std::fmt::Write as _;
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::time::Instant;

const WARM_UPS: usize = 2;
const CLAMP: EdgeMode2D = EdgeMode2D::new(EdgeMode::Clamp);

/// The libblur version this binary was built against, read from its own lock file.
fn libblur_version() -> &'static str {
    let lock = include_str!("../Cargo.lock");
    let mut lines = lock.lines();
    while let Some(line) = lines.next() {
        if line == "name = \"libblur\"" {
            if let Some(v) = lines.next().and_then(|l| l.strip_prefix("version = \"")) {
                return v.trim_end_matches('"');
            }
        }
    }
    "?"
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Layout {
    Rgb8,
    F32,
}

impl Layout {
    fn name(self) -> &'static str {
        match self {
            Layout::Rgb8 => "RGB 8-bit",
            Layout::F32 => "1 channel f32",
        }
    }
    fn tag(self) -> &'static str {
        match self {
            Layout::Rgb8 => "rgb8",
            Layout::F32 => "f32",
        }
    }
    fn channels(self) -> usize {
        match self {
            Layout::Rgb8 => 3,
            Layout::F32 => 1,
        }
    }
    fn blur_channels(self) -> FastBlurChannels {
        match self {
            Layout::Rgb8 => FastBlurChannels::Channels3,
            Layout::F32 => FastBlurChannels::Plane,
        }
    }
}

/// One libblur call. The Gaussian ones take a kernel cut at ±`reach` σ (None: libblur's own
/// size for the sigma, `GaussianBlurParams::new_from_sigma`). The approximations take a radius
/// (the box blur a sigma of its own), picked per sigma so that their response has the asked
/// standard deviation, so that what they are measured for is their shape, not their scale.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Variant {
    /// `gaussian_blur`, `ConvolutionMode::FixedPoint` on 8-bit; `gaussian_blur_f32`
    /// (`IeeeBinaryConvolutionMode::Normal`) on f32.
    Gaussian {
        reach: Option<f64>,
    },
    /// `gaussian_blur`, `ConvolutionMode::Exact` (f32 accumulators), 8-bit only.
    GaussianExactMode,
    Stack,
    FastGaussian,
    FastGaussianNext,
    /// `gaussian_box_blur`: three box passes.
    BoxGaussian,
}

impl Variant {
    fn name(self, layout: Layout) -> String {
        match (self, layout) {
            (Variant::Gaussian { .. }, Layout::Rgb8) => "gaussian_blur, FixedPoint".into(),
            (Variant::Gaussian { .. }, Layout::F32) => "gaussian_blur_f32, Normal".into(),
            (Variant::GaussianExactMode, _) => "gaussian_blur, Exact".into(),
            (Variant::Stack, _) => "stack_blur".into(),
            (Variant::FastGaussian, _) => "fast_gaussian".into(),
            (Variant::FastGaussianNext, _) => "fast_gaussian_next".into(),
            (Variant::BoxGaussian, _) => "gaussian_box_blur (3 boxes)".into(),
        }
    }

    fn takes_radius(self) -> bool {
        matches!(
            self,
            Variant::Stack | Variant::FastGaussian | Variant::FastGaussianNext
        )
    }

    fn gaussian_params(self, sigma: f64) -> GaussianBlurParams {
        let reach = match self {
            Variant::Gaussian { reach } => reach,
            _ => None,
        };
        match reach {
            None => GaussianBlurParams::new_from_sigma(sigma),
            Some(k) => GaussianBlurParams::new(2 * (k * sigma).ceil() as u32 + 1, sigma),
        }
    }

    /// What the variant was given for this sigma, for the tables.
    fn setting(self, sigma: f64, given: f64) -> String {
        match self {
            Variant::Gaussian { .. } | Variant::GaussianExactMode => {
                let taps = self.gaussian_params(sigma).x_kernel;
                format!("{taps} taps (±{:.2}σ)", (taps / 2) as f64 / sigma)
            }
            Variant::BoxGaussian => format!("given sigma {given:.2}"),
            _ => format!("radius {given}"),
        }
    }
}

fn variants(layout: Layout) -> Vec<Variant> {
    let mut v = vec![
        Variant::Gaussian { reach: None },
        Variant::Gaussian { reach: Some(4.0) },
    ];
    if layout == Layout::Rgb8 {
        v.push(Variant::GaussianExactMode);
    }
    v.extend([
        Variant::Stack,
        Variant::FastGaussian,
        Variant::FastGaussianNext,
        Variant::BoxGaussian,
    ]);
    v
}

/// One libblur call with everything it is given but the pixels.
#[derive(Clone, Copy)]
struct Job {
    variant: Variant,
    size: (usize, usize),
    layout: Layout,
    sigma: f64,
    /// The approximations' radius, or the box blur's own sigma (see `Calibration`).
    given: f64,
    policy: ThreadingPolicy,
}

/// Samples libblur blurs: `blur` blurs `src` into `dst` (same size); the in-place variants
/// blur `dst`, which must hold `src` already (see `apply`).
trait Sample: Copy + Default + std::fmt::Debug + Send + Sync {
    fn blur(job: Job, src: &[Self], dst: &mut [Self]);
    fn value(self) -> f64;
}

fn in_place(v: Variant) -> bool {
    v.takes_radius()
}

impl Sample for u8 {
    fn blur(job: Job, src: &[u8], dst: &mut [u8]) {
        let Job {
            variant: v,
            sigma,
            policy,
            ..
        } = job;
        let ch = job.layout.blur_channels();
        let (w, h) = (job.size.0 as u32, job.size.1 as u32);
        let r = AnisotropicRadius::new(job.given as u32);
        let done = match v {
            Variant::Gaussian { .. } | Variant::GaussianExactMode => {
                let mode = if v == Variant::GaussianExactMode {
                    ConvolutionMode::Exact
                } else {
                    ConvolutionMode::FixedPoint
                };
                gaussian_blur(
                    &BlurImage::borrow(src, w, h, ch),
                    &mut BlurImageMut::borrow(dst, w, h, ch),
                    v.gaussian_params(sigma),
                    CLAMP,
                    policy,
                    mode,
                )
            }
            Variant::BoxGaussian => gaussian_box_blur(
                &BlurImage::borrow(src, w, h, ch),
                &mut BlurImageMut::borrow(dst, w, h, ch),
                CLTParameters::new(job.given as f32),
                policy,
            ),
            Variant::Stack => stack_blur(&mut BlurImageMut::borrow(dst, w, h, ch), r, policy),
            Variant::FastGaussian => {
                fast_gaussian(&mut BlurImageMut::borrow(dst, w, h, ch), r, policy, CLAMP)
            }
            Variant::FastGaussianNext => {
                fast_gaussian_next(&mut BlurImageMut::borrow(dst, w, h, ch), r, policy, CLAMP)
            }
        };
        done.unwrap_or_else(|e| panic!("libblur {v:?}: {e:?}"));
    }
    fn value(self) -> f64 {
        self as f64 / 255.0
    }
}

impl Sample for f32 {
    fn blur(job: Job, src: &[f32], dst: &mut [f32]) {
        let Job {
            variant: v,
            sigma,
            policy,
            ..
        } = job;
        let ch = job.layout.blur_channels();
        let (w, h) = (job.size.0 as u32, job.size.1 as u32);
        let r = AnisotropicRadius::new(job.given as u32);
        let done = match v {
            Variant::Gaussian { .. } => gaussian_blur_f32(
                &BlurImage::borrow(src, w, h, ch),
                &mut BlurImageMut::borrow(dst, w, h, ch),
                v.gaussian_params(sigma),
                CLAMP,
                policy,
                IeeeBinaryConvolutionMode::Normal,
            ),
            Variant::GaussianExactMode => unreachable!("8-bit only"),
            Variant::BoxGaussian => gaussian_box_blur_f32(
                &BlurImage::borrow(src, w, h, ch),
                &mut BlurImageMut::borrow(dst, w, h, ch),
                CLTParameters::new(job.given as f32),
                policy,
            ),
            Variant::Stack => stack_blur_f32(&mut BlurImageMut::borrow(dst, w, h, ch), r, policy),
            Variant::FastGaussian => {
                fast_gaussian_f32(&mut BlurImageMut::borrow(dst, w, h, ch), r, policy, CLAMP)
            }
            Variant::FastGaussianNext => {
                fast_gaussian_next_f32(&mut BlurImageMut::borrow(dst, w, h, ch), r, policy, CLAMP)
            }
        };
        done.unwrap_or_else(|e| panic!("libblur {v:?}: {e:?}"));
    }
    fn value(self) -> f64 {
        self as f64
    }
}

/// Runs the job once: `dst` gets `src` first when the variant works in place.
fn apply<T: Sample>(job: Job, src: &[T], dst: &mut [T]) {
    if in_place(job.variant) {
        dst.copy_from_slice(src);
    }
    T::blur(job, src, dst);
}

struct Stats {
    median_ms: f64,
    min_ms: f64,
    max_ms: f64,
}

fn time<T: Sample>(runs: usize, job: Job, src: &[T], dst: &mut [T]) -> Stats {
    let mut times = Vec::new();
    for i in 0..WARM_UPS + runs.max(1) {
        if in_place(job.variant) {
            dst.copy_from_slice(src); // outside the timing, as gblur's bench does
        }
        let t = Instant::now();
        T::blur(job, src, dst);
        if i >= WARM_UPS {
            times.push(t.elapsed().as_secs_f64() * 1e3);
        }
    }
    Stats {
        median_ms: median(&mut times),
        min_ms: times[0],
        max_ms: times[times.len() - 1],
    }
}

/// The median of `v`, which is left sorted.
fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        0.5 * (v[n / 2 - 1] + v[n / 2])
    }
}

/// The variant's horizontal response to a vertical line of 60000 on a 16-bit image (libblur's
/// 16-bit functions run the 8-bit ones' algorithms with wider sums; an 8-bit line would drown
/// the kernel's tails in rounding): the response's sum (1 for a blur) and standard deviation.
fn line_response_u16(v: Variant, sigma: f64, given: f64) -> (f64, f64) {
    let half = (12.0 * sigma.max(given)).ceil() as usize + 16;
    let (w, h) = (2 * half + 1, 16);
    let mut img = vec![0u16; w * h];
    for y in 0..h {
        img[y * w + half] = 60000;
    }
    let src = img.clone();
    let ch = FastBlurChannels::Plane;
    let (wu, hu) = (w as u32, h as u32);
    let r = AnisotropicRadius::new(given as u32);
    let one = ThreadingPolicy::Single;
    let done = match v {
        Variant::Gaussian { .. } | Variant::GaussianExactMode => gaussian_blur_u16(
            &BlurImage::borrow(&src, wu, hu, ch),
            &mut BlurImageMut::borrow(&mut img, wu, hu, ch),
            v.gaussian_params(sigma),
            CLAMP,
            one,
            if v == Variant::GaussianExactMode {
                ConvolutionMode::Exact
            } else {
                ConvolutionMode::FixedPoint
            },
        ),
        Variant::BoxGaussian => gaussian_box_blur_u16(
            &BlurImage::borrow(&src, wu, hu, ch),
            &mut BlurImageMut::borrow(&mut img, wu, hu, ch),
            CLTParameters::new(given as f32),
            one,
        ),
        Variant::Stack => stack_blur_u16(&mut BlurImageMut::borrow(&mut img, wu, hu, ch), r, one),
        Variant::FastGaussian => fast_gaussian_u16(
            &mut BlurImageMut::borrow(&mut img, wu, hu, ch),
            r,
            one,
            CLAMP,
        ),
        Variant::FastGaussianNext => fast_gaussian_next_u16(
            &mut BlurImageMut::borrow(&mut img, wu, hu, ch),
            r,
            one,
            CLAMP,
        ),
    };
    done.unwrap_or_else(|e| panic!("libblur {v:?} (16-bit): {e:?}"));
    moments(&img[(h / 2) * w..(h / 2 + 1) * w], w, half, 60000.0)
}

/// The variant's response to a unit impulse on one f32 plane large enough that the response
/// never reaches an edge: its sum and its standard deviation along x.
fn impulse_response_f32(v: Variant, sigma: f64, given: f64) -> (f64, f64) {
    let half = (12.0 * sigma.max(given)).ceil() as usize + 16;
    let n = 2 * half + 1;
    let mut src = vec![0f32; n * n];
    src[half * n + half] = 1.0;
    let mut dst = vec![0f32; n * n];
    let v = match v {
        Variant::GaussianExactMode => Variant::Gaussian { reach: None },
        v => v,
    };
    let job = Job {
        variant: v,
        size: (n, n),
        layout: Layout::F32,
        sigma,
        given,
        policy: ThreadingPolicy::Single,
    };
    apply(job, &src, &mut dst);
    moments(&dst, n, half, 1.0)
}

/// Sum (over `scale`) and standard deviation about column `centre` along x of `data`, rows of
/// `w` samples.
fn moments<T: Copy + Into<f64>>(data: &[T], w: usize, centre: usize, scale: f64) -> (f64, f64) {
    let (mut sum, mut m2) = (0.0, 0.0);
    for (i, &v) in data.iter().enumerate() {
        let v: f64 = v.into();
        let d = (i % w) as f64 - centre as f64;
        sum += v;
        m2 += v * d * d;
    }
    (sum / scale, (m2 / sum).sqrt())
}

/// What to give the variant (a radius, or the box blur's own sigma) for its line response to
/// be closest to `sigma`: the first of the candidates, which must make it grow, that reaches
/// `sigma`, or the one before it if that one is closer.
fn given_for(v: Variant, sigma: f64) -> f64 {
    let candidates: Vec<f64> = match v {
        Variant::BoxGaussian => (0..=60).map(|k| sigma * (0.6 + 0.01 * k as f64)).collect(),
        _ => (1..=(8.0 * sigma).ceil() as u32 + 8)
            .map(f64::from)
            .collect(),
    };
    let mut prev: Option<(f64, f64)> = None;
    let mut best = candidates.last().copied().unwrap_or(sigma);
    for &c in &candidates {
        let (_, s) = line_response_u16(v, sigma, c);
        if s >= sigma {
            best = match prev {
                Some((p, ps)) if sigma - ps < s - sigma => p,
                _ => c,
            };
            break;
        }
        prev = Some((c, s));
    }
    // The box blur rounds its sigma to box sizes: keep the asked sigma when it is as good.
    if v == Variant::BoxGaussian
        && line_response_u16(v, sigma, sigma).1 == line_response_u16(v, sigma, best).1
    {
        return sigma;
    }
    best
}

/// What one variant gets at one sigma, and what its responses measure.
struct Calibration {
    variant: Variant,
    sigma: f64,
    /// What the variant is given: its radius, the box blur's sigma; the sigma otherwise.
    given: f64,
    /// Standard deviation of the 8-bit family's response (16-bit line).
    sigma_u8: f64,
    /// Sum and standard deviation of the f32 function's impulse response.
    f32_sum: f64,
    sigma_f32: f64,
}

impl Calibration {
    fn new(v: Variant, sigma: f64) -> Calibration {
        let given = if v.takes_radius() || v == Variant::BoxGaussian {
            given_for(v, sigma)
        } else {
            sigma
        };
        let (_, sigma_u8) = line_response_u16(v, sigma, given);
        let (f32_sum, sigma_f32) = impulse_response_f32(v, sigma, given);
        Calibration {
            variant: v,
            sigma,
            given,
            sigma_u8,
            f32_sum,
            sigma_f32,
        }
    }

    /// Whether the f32 function is a blur at all: its impulse response must sum to 1.
    fn f32_broken(&self) -> bool {
        (self.f32_sum - 1.0).abs() > 1e-3
    }

    fn measured(&self, layout: Layout) -> String {
        match layout {
            Layout::Rgb8 => format!("{:.2}", self.sigma_u8),
            Layout::F32 if self.f32_broken() => {
                format!("broken (impulse sums to {:.3})", self.f32_sum)
            }
            Layout::F32 => format!("{:.2}", self.sigma_f32),
        }
    }
}

/// The exact Gaussian to compare with: a direct f64 convolution, clamped edges, the sampled
/// kernel exp(-x²/2σ²) normalised over ±ceil(6σ).
fn reference(src: &[f64], (w, h): (usize, usize), c: usize, sigma: f64) -> Vec<f64> {
    let r = (6.0 * sigma).ceil() as isize;
    let mut k: Vec<f64> = (-r..=r)
        .map(|i| (-((i * i) as f64) / (2.0 * sigma * sigma)).exp())
        .collect();
    let total: f64 = k.iter().sum();
    k.iter_mut().for_each(|x| *x /= total);
    let clamp = |i: isize, n: usize| i.clamp(0, n as isize - 1) as usize;
    let mut rows = vec![0.0; src.len()];
    for y in 0..h {
        for x in 0..w {
            for ch in 0..c {
                let mut acc = 0.0;
                for (j, kv) in k.iter().enumerate() {
                    let xx = clamp(x as isize + j as isize - r, w);
                    acc += kv * src[(y * w + xx) * c + ch];
                }
                rows[(y * w + x) * c + ch] = acc;
            }
        }
    }
    let mut out = vec![0.0; src.len()];
    for y in 0..h {
        for x in 0..w {
            for ch in 0..c {
                let mut acc = 0.0;
                for (j, kv) in k.iter().enumerate() {
                    let yy = clamp(y as isize + j as isize - r, h);
                    acc += kv * rows[(yy * w + x) * c + ch];
                }
                out[(y * w + x) * c + ch] = acc;
            }
        }
    }
    out
}

/// How far a blurred test image is from the reference, in units of the full range (1.0 = 255
/// levels): the largest difference anywhere, the largest at least `border` pixels from every
/// edge, and the mean.
#[derive(Clone, Copy)]
struct Errors {
    max: f64,
    max_inside: f64,
    mean: f64,
}

fn errors(got: &[f64], want: &[f64], n: usize, c: usize, border: usize) -> Errors {
    assert_eq!(got.len(), want.len(), "output size");
    let mut e = Errors {
        max: 0.0,
        max_inside: 0.0,
        mean: 0.0,
    };
    let inside = |i: usize| (border..n.saturating_sub(border)).contains(&i);
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let d = (g - w).abs();
        e.max = e.max.max(d);
        e.mean += d;
        let p = i / c;
        if inside(p % n) && inside(p / n) {
            e.max_inside = e.max_inside.max(d);
        }
    }
    e.mean /= got.len() as f64;
    e
}

const NO_ERRORS: Errors = Errors {
    max: f64::NAN,
    max_inside: f64::NAN,
    mean: f64::NAN,
};

/// The xorshift noise of gblur's bench (`bench::device::noise_seeded` in gblur), in [0, 1).
fn noise(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 40) as f32 / (1u64 << 24) as f32
        })
        .collect()
}

struct Image {
    size: (usize, usize),
    rgb: Vec<u8>,
    /// The one-channel f32 image timed beside it.
    plane: Vec<f32>,
    what: String,
}

fn load(path: Option<&Path>, size: (usize, usize)) -> Image {
    match path {
        Some(p) => {
            let img = image::open(p)
                .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
                .to_rgb8();
            let plane = img.pixels().map(|p| p[1] as f32 / 255.0).collect();
            Image {
                size: (img.width() as usize, img.height() as usize),
                rgb: img.into_raw(),
                plane,
                what: format!("{}; f32: its green channel", p.display()),
            }
        }
        // What `gblur bench cpu` times: `rgb8(w, h)` and `noise(w * h)` there.
        None => Image {
            size,
            rgb: noise(size.0 * size.1 * 3, 7)
                .iter()
                .map(|&x| (x * 255.0) as u8)
                .collect(),
            plane: noise(size.0 * size.1, 7),
            what: "uniform noise, the pixels gblur bench cpu times".into(),
        },
    }
}

/// One test image for accuracy: RGB 8-bit and one f32 plane of the same N×N.
struct Test {
    name: &'static str,
    rgb8: Vec<u8>,
    plane: Vec<f32>,
}

fn tests(img: &Image, n: usize) -> Vec<Test> {
    let (w, h) = img.size;
    let n = n.min(w).min(h);
    let (x0, y0) = ((w - n) / 2, (h - n) / 2);
    let mut crop = Vec::with_capacity(n * n * 3);
    for y in y0..y0 + n {
        crop.extend_from_slice(&img.rgb[(y * w + x0) * 3..(y * w + x0 + n) * 3]);
    }
    let green = crop.chunks_exact(3).map(|p| p[1] as f32 / 255.0).collect();
    vec![
        Test {
            name: "photo",
            rgb8: crop,
            plane: green,
        },
        Test {
            name: "noise",
            rgb8: noise(n * n * 3, 11)
                .iter()
                .map(|&x| (x * 255.0) as u8)
                .collect(),
            plane: noise(n * n, 13),
        },
    ]
}

fn write_tests(dir: &Path, tests: &[Test], n: usize) {
    std::fs::create_dir_all(dir).unwrap();
    for t in tests {
        let rgb = image::RgbImage::from_raw(n as u32, n as u32, t.rgb8.clone()).unwrap();
        rgb.save(dir.join(format!("{}_rgb8.png", t.name))).unwrap();
        let raw: Vec<u8> = t.plane.iter().flat_map(|v| v.to_le_bytes()).collect();
        std::fs::write(dir.join(format!("{}_f32.f32", t.name)), raw).unwrap();
        let grey: Vec<f32> = t.plane.iter().flat_map(|&v| [v, v, v]).collect();
        let tiff = image::Rgb32FImage::from_raw(n as u32, n as u32, grey).unwrap();
        image::DynamicImage::ImageRgb32F(tiff)
            .save(dir.join(format!("{}_f32.tiff", t.name)))
            .unwrap();
    }
}

/// A peer's output for a test, as values in [0, 1] laid out like the test (RGB or one plane).
fn read_peer(path: &Path, layout: Layout, n: usize) -> Option<Vec<f64>> {
    let ext = path.extension()?.to_str()?;
    let v: Vec<f64> = match ext {
        "f32" => std::fs::read(path)
            .ok()?
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64)
            .collect(),
        _ => {
            let img = image::open(path).ok()?;
            match layout {
                Layout::Rgb8 => img.to_rgb8().iter().map(|&b| b as f64 / 255.0).collect(),
                // A float image: its first channel.
                Layout::F32 => img
                    .to_rgb32f()
                    .chunks_exact(3)
                    .map(|p| p[0] as f64)
                    .collect(),
            }
        }
    };
    (v.len() == n * n * layout.channels()).then_some(v)
}

struct Args {
    /// Rounds of the paired comparison with gblur (0: none).
    paired: usize,
    image: Option<PathBuf>,
    accuracy_image: Option<PathBuf>,
    size: (usize, usize),
    runs: usize,
    sigmas: Vec<f64>,
    threads: usize,
    acc_size: usize,
    peers: Option<PathBuf>,
    json: Option<PathBuf>,
    tests_dir: Option<PathBuf>,
}

fn parse_args() -> Args {
    let mut a = Args {
        image: None,
        accuracy_image: None,
        size: (4896, 3264),
        runs: 5,
        sigmas: vec![5.0, 20.0],
        threads: 2,
        acc_size: 512,
        peers: None,
        json: None,
        tests_dir: None,
        paired: 0,
    };
    let mut it = std::env::args().skip(1);
    let usage = "usage: libblur-bench [tests DIR] [--image PATH] [--accuracy-image PATH] \
                 [--size WxH] [--runs N] [--sigmas 5,20] [--threads N] [--acc-size N] \
                 [--peers DIR] [--json FILE] [--paired N]";
    while let Some(arg) = it.next() {
        let mut val = || {
            it.next()
                .unwrap_or_else(|| panic!("{arg} needs a value\n{usage}"))
        };
        match arg.as_str() {
            "tests" => a.tests_dir = Some(val().into()),
            "--image" => a.image = Some(val().into()),
            "--accuracy-image" => a.accuracy_image = Some(val().into()),
            "--size" => {
                let v = val();
                let (w, h) = v.split_once('x').expect("--size WxH");
                a.size = (w.parse().unwrap(), h.parse().unwrap());
            }
            "--runs" => a.runs = val().parse().unwrap(),
            "--sigmas" => a.sigmas = val().split(',').map(|s| s.parse().unwrap()).collect(),
            "--threads" => a.threads = val().parse().unwrap(),
            "--acc-size" => a.acc_size = val().parse().unwrap(),
            "--peers" => a.peers = Some(val().into()),
            "--json" => a.json = Some(val().into()),
            "--paired" => a.paired = val().parse().unwrap(),
            "-h" | "--help" => {
                println!("{usage}");
                std::process::exit(0);
            }
            _ => panic!("unknown argument {arg}\n{usage}"),
        }
    }
    a
}

fn main() {
    let a = parse_args();
    let img = load(a.image.as_deref(), a.size);
    let tests = match &a.accuracy_image {
        Some(p) => tests(&load(Some(p), a.size), a.acc_size),
        None => tests(&img, a.acc_size),
    };
    let n = (tests[0].plane.len() as f64).sqrt() as usize;
    if let Some(dir) = &a.tests_dir {
        write_tests(dir, &tests, n);
        return;
    }
    let policy = ThreadingPolicy::Fixed(NonZeroUsize::new(a.threads.max(1)).unwrap());
    let tool = format!("libblur {}", libblur_version());
    let mut json = String::new();

    let calibrations: Vec<Calibration> = a
        .sigmas
        .iter()
        .flat_map(|&sigma| {
            variants(Layout::Rgb8)
                .into_iter()
                .map(move |v| Calibration::new(v, sigma))
        })
        .collect();
    let calibration = |v: Variant, sigma: f64| {
        calibrations
            .iter()
            .find(|c| c.variant == v && c.sigma == sigma)
            .unwrap()
    };

    let (w, h) = img.size;
    let mp = (w * h) as f64 / 1e6;
    println!(
        "## {tool} in memory: {w}x{h} ({}), {} threads, clamped edges, median of {} runs\n",
        img.what, a.threads, a.runs
    );
    println!(
        "| layout | sigma | libblur call | setting | measured σ | median ms | min–max ms | MP/s |"
    );
    println!("|---|---:|---|---|---:|---:|---:|---:|");
    let plane = &img.plane;
    let mut dst8 = vec![0u8; img.rgb.len()];
    let mut dstf = vec![0f32; plane.len()];
    for &sigma in &a.sigmas {
        for layout in [Layout::Rgb8, Layout::F32] {
            for v in variants(layout) {
                let c = calibration(v, sigma);
                let r = c.given;
                let job = Job {
                    variant: v,
                    size: img.size,
                    layout,
                    sigma,
                    given: r,
                    policy,
                };
                let s = match layout {
                    Layout::Rgb8 => time(a.runs, job, &img.rgb, &mut dst8),
                    Layout::F32 => time(a.runs, job, plane, &mut dstf),
                };
                let mpps = mp / s.median_ms * 1e3;
                let setting = v.setting(sigma, r);
                let measured = c.measured(layout);
                println!(
                    "| {} | {sigma} | {} | {setting} | {measured} | {:.1} | {:.1}–{:.1} | {mpps:.0} |",
                    layout.name(),
                    v.name(layout),
                    s.median_ms,
                    s.min_ms,
                    s.max_ms
                );
                writeln!(
                    json,
                    r#"{{"kind":"time","tool":"{tool}","variant":"{}","layout":"{}","sigma":{sigma},"setting":"{setting}","measured_sigma":"{measured}","threads":{},"median_ms":{:.3},"min_ms":{:.3},"max_ms":{:.3},"mpps":{mpps:.2}}}"#,
                    v.name(layout),
                    layout.name(),
                    a.threads,
                    s.median_ms,
                    s.min_ms,
                    s.max_ms
                )
                .unwrap();
            }
        }
    }

    if a.paired > 0 {
        paired(&a, &img, policy, &calibrations, &mut json);
    }

    println!(
        "\n## Distance from the exact Gaussian, in units of the full range\n\n{n}x{n} test \
         images (photo: the image's centre; noise: uniform), against a direct f64 convolution \
         with clamped edges and the sampled kernel normalised over ±ceil(6σ). \"inside\": at \
         least ceil(4σ) pixels from every edge.\n"
    );
    println!(
        "| layout | sigma | blur | measured σ | photo max | photo max inside | photo mean | \
         noise max | noise max inside | noise mean |"
    );
    println!("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|");
    for &sigma in &a.sigmas {
        let border = (4.0 * sigma).ceil() as usize;
        for layout in [Layout::Rgb8, Layout::F32] {
            let c = layout.channels();
            let refs: Vec<Vec<f64>> = tests
                .iter()
                .map(|t| {
                    let src: Vec<f64> = match layout {
                        Layout::Rgb8 => t.rgb8.iter().map(|&b| b.value()).collect(),
                        Layout::F32 => t.plane.iter().map(|&x| x.value()).collect(),
                    };
                    reference(&src, (n, n), c, sigma)
                })
                .collect();
            // (tool, libblur call, setting, measured sigma, errors per test)
            let mut rows: Vec<(String, String, String, String, Vec<Errors>)> = Vec::new();
            for v in variants(layout) {
                let cal = calibration(v, sigma);
                let r = cal.given;
                let job = Job {
                    variant: v,
                    size: (n, n),
                    layout,
                    sigma,
                    given: r,
                    policy,
                };
                let errs = tests
                    .iter()
                    .zip(&refs)
                    .map(|(t, want)| {
                        let got: Vec<f64> = match layout {
                            Layout::Rgb8 => {
                                let mut out = vec![0u8; t.rgb8.len()];
                                apply(job, &t.rgb8, &mut out);
                                out.iter().map(|x| x.value()).collect()
                            }
                            Layout::F32 => {
                                let mut out = vec![0f32; t.plane.len()];
                                apply(job, &t.plane, &mut out);
                                out.iter().map(|x| x.value()).collect()
                            }
                        };
                        errors(&got, want, n, c, border)
                    })
                    .collect();
                rows.push((
                    tool.clone(),
                    v.name(layout),
                    v.setting(sigma, r),
                    cal.measured(layout),
                    errs,
                ));
            }
            // Peers' outputs of the same tests, when given.
            if let Some(dir) = &a.peers {
                let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
                    .map(|d| d.flatten().map(|e| e.path()).collect())
                    .unwrap_or_default();
                entries.sort();
                let suffix = format!("_{}_{}_s{sigma}", tests[0].name, layout.tag());
                for p in entries {
                    let Some(peer) = p
                        .file_stem()
                        .and_then(|s| s.to_str())
                        .and_then(|s| s.strip_suffix(&suffix))
                    else {
                        continue;
                    };
                    let ext = p.extension().and_then(|e| e.to_str()).unwrap_or("");
                    let errs = tests
                        .iter()
                        .zip(&refs)
                        .map(|(t, want)| {
                            let q = p.with_file_name(format!(
                                "{peer}_{}_{}_s{sigma}.{ext}",
                                t.name,
                                layout.tag()
                            ));
                            match read_peer(&q, layout, n) {
                                Some(got) => errors(&got, want, n, c, border),
                                None => {
                                    eprintln!("{}: missing or not {n}x{n}", q.display());
                                    NO_ERRORS
                                }
                            }
                        })
                        .collect();
                    rows.push((
                        peer.to_string(),
                        String::new(),
                        String::new(),
                        String::new(),
                        errs,
                    ));
                }
            }
            for (who, call, setting, measured, errs) in rows {
                let name = if call.is_empty() {
                    who.clone()
                } else {
                    format!("{who} {call} ({setting})")
                };
                let mut cells = String::new();
                let mut fields = String::new();
                for (t, e) in tests.iter().zip(&errs) {
                    write!(
                        cells,
                        " {:.1e} | {:.1e} | {:.1e} |",
                        e.max, e.max_inside, e.mean
                    )
                    .unwrap();
                    write!(
                        fields,
                        r#","{0}_max":{1},"{0}_max_inside":{2},"{0}_mean":{3}"#,
                        t.name,
                        json_num(e.max),
                        json_num(e.max_inside),
                        json_num(e.mean)
                    )
                    .unwrap();
                }
                println!(
                    "| {} | {sigma} | {name} | {measured} |{cells}",
                    layout.name()
                );
                writeln!(
                    json,
                    r#"{{"kind":"accuracy","tool":"{who}","variant":"{call}","setting":"{setting}","layout":"{}","sigma":{sigma},"measured_sigma":"{measured}"{fields}}}"#,
                    layout.name()
                )
                .unwrap();
            }
        }
    }
    println!(
        "\n8-bit outputs are rounded to 1/255: rounding alone costs up to 2.0e-3 (max) and \
         about 1.0e-3 (mean) there."
    );
    if let Some(p) = &a.json {
        std::fs::write(p, json).unwrap();
    }
}

fn json_num(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.3e}")
    } else {
        "null".into()
    }
}

/// gblur's blur in place on `data` (RGB 8-bit or one f32 channel) through its library API: the
/// banded blur, as `gblur bench cpu` and the main command run it without a GPU.
fn gblur_blur<T: gblur::Sample>(
    data: &mut [T],
    (w, h): (usize, usize),
    c: usize,
    g: &gblur::Gaussian,
) {
    g.blur_interleaved(data, gblur::Layout::new(w, h, c))
        .expect("a valid layout");
}

/// Rounds in which gblur, libblur's Gaussian and its stack blur each blur the same pixels once,
/// first one, then another, in turn; prints per layout and sigma the median (and range) over
/// the rounds of gblur's speed ÷ each libblur call's, measured in the same round.
fn paired(
    a: &Args,
    img: &Image,
    policy: ThreadingPolicy,
    calibrations: &[Calibration],
    json: &mut String,
) {
    println!(
        "\n## Paired with gblur: {} rounds, each tool once per round in rotating order\n",
        a.paired
    );
    println!("| layout | sigma | against | gblur ÷ it, median | range | gblur median MP/s | its median MP/s |");
    println!("|---|---:|---|---:|---|---:|---:|");
    let mp = (img.size.0 * img.size.1) as f64 / 1e6;
    for &sigma in &a.sigmas {
        let k = gblur::Gaussian::builder()
            .sigma(sigma)
            .method(gblur::Method::Recursive)
            .build()
            .expect("a valid sigma");
        for layout in [Layout::Rgb8, Layout::F32] {
            let peers = [Variant::Gaussian { reach: None }, Variant::Stack];
            let jobs: Vec<Job> = peers
                .iter()
                .map(|&v| Job {
                    variant: v,
                    size: img.size,
                    layout,
                    sigma,
                    given: calibrations
                        .iter()
                        .find(|c| c.variant == v && c.sigma == sigma)
                        .unwrap()
                        .given,
                    policy,
                })
                .collect();
            // Per tool (gblur first), MP/s of every round.
            let mut speed = vec![Vec::new(); 1 + jobs.len()];
            let (mut dst8, mut dstf) = (img.rgb.clone(), img.plane.clone());
            for round in 0..WARM_UPS + a.paired {
                for turn in 0..speed.len() {
                    let tool = (round + turn) % speed.len();
                    // gblur and libblur's in-place calls blur what they are given: the input
                    // again, copied outside the timing.
                    if tool == 0 || in_place(jobs[tool - 1].variant) {
                        match layout {
                            Layout::Rgb8 => dst8.copy_from_slice(&img.rgb),
                            Layout::F32 => dstf.copy_from_slice(&img.plane),
                        }
                    }
                    let t = Instant::now();
                    match (tool, layout) {
                        (0, Layout::Rgb8) => gblur_blur(&mut dst8, img.size, 3, &k),
                        (0, Layout::F32) => gblur_blur(&mut dstf, img.size, 1, &k),
                        (_, Layout::Rgb8) => u8::blur(jobs[tool - 1], &img.rgb, &mut dst8),
                        (_, Layout::F32) => f32::blur(jobs[tool - 1], &img.plane, &mut dstf),
                    }
                    let ms = t.elapsed().as_secs_f64() * 1e3;
                    if round >= WARM_UPS {
                        speed[tool].push(mp / ms * 1e3);
                    }
                }
            }
            let ours = speed[0].clone();
            for (j, job) in jobs.iter().enumerate() {
                let mut ratios: Vec<f64> =
                    ours.iter().zip(&speed[1 + j]).map(|(g, l)| g / l).collect();
                let r = median(&mut ratios);
                let (lo, hi) = (ratios[0], ratios[ratios.len() - 1]);
                let (g, l) = (median(&mut ours.clone()), median(&mut speed[1 + j].clone()));
                let name = job.variant.name(layout);
                println!(
                    "| {} | {sigma} | {name} | {r:.2}× | {lo:.2}–{hi:.2}× | {g:.0} | {l:.0} |",
                    layout.name()
                );
                writeln!(
                    json,
                    r#"{{"kind":"paired","variant":"{name}","layout":"{}","sigma":{sigma},"rounds":{},"ratio_median":{r:.3},"ratio_min":{lo:.3},"ratio_max":{hi:.3},"gblur_mpps":{g:.2},"mpps":{l:.2}}}"#,
                    layout.name(),
                    a.paired
                )
                .unwrap();
            }
        }
    }
}
