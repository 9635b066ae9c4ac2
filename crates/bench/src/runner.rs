//! The shared measurement loop (listing 14-1 of the "Tuning Performance on the GPU" chapter,
//! hyperfine's habits): 2 untimed warm-ups, then N timed runs, each timed from its first
//! command's start to its last command's end on the device's own clock.

use gblur::gpu::opencl::{ClContext, ClError, Timed};

#[derive(Clone, Copy, Debug)]
pub struct Stats {
    pub runs: usize,
    pub median_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
}

pub const WARM_UPS: usize = 2;

/// Times `enqueue`, which must enqueue one complete run and return its commands in order.
pub fn measure(
    ctx: &ClContext,
    runs: usize,
    enqueue: impl FnMut() -> Result<Vec<Timed>, ClError>,
) -> Result<Stats, ClError> {
    measure_inner(ctx, runs, enqueue, || 0.0)
}

/// `measure` for runs that finish on the host (the reduce ladder's host sums): after the
/// device part of each run, `host` runs, and its wall time is added to the device span.
pub fn measure_with_host(
    ctx: &ClContext,
    runs: usize,
    enqueue: impl FnMut() -> Result<Vec<Timed>, ClError>,
    mut host: impl FnMut(),
) -> Result<Stats, ClError> {
    measure_inner(ctx, runs, enqueue, || {
        let t = std::time::Instant::now();
        host();
        t.elapsed().as_secs_f64() * 1e3
    })
}

/// The loop behind both: `host_ms` runs after each device part and returns its own time.
fn measure_inner(
    ctx: &ClContext,
    runs: usize,
    mut enqueue: impl FnMut() -> Result<Vec<Timed>, ClError>,
    mut host_ms: impl FnMut() -> f64,
) -> Result<Stats, ClError> {
    let mut times = Vec::with_capacity(runs);
    for i in 0..WARM_UPS + runs.max(1) {
        let cmds = enqueue()?;
        ctx.finish()?;
        let host_ms = host_ms();
        if i < WARM_UPS {
            continue;
        }
        let (first, last) = (
            cmds.first().expect("a run enqueues something"),
            cmds.last().unwrap(),
        );
        let start = first
            .event
            .profiling_command_start()
            .map_err(|e| profiling(ctx, e))?;
        let end = last
            .event
            .profiling_command_end()
            .map_err(|e| profiling(ctx, e))?;
        times.push(end.saturating_sub(start) as f64 * 1e-6 + host_ms);
    }
    Ok(summarize(&mut times))
}

fn profiling(ctx: &ClContext, e: opencl3::error_codes::ClError) -> ClError {
    ClError::Api {
        device: ctx.device_name(),
        what: "reading profiling counters".into(),
        code: e.to_string(),
    }
}

/// Times `run` on the host clock the same way: 2 untimed warm-ups, then `runs` timed runs,
/// each on `state` after an untimed `setup` (e.g. restoring the input of an in-place blur).
pub fn measure_host<S>(
    runs: usize,
    state: &mut S,
    setup: impl Fn(&mut S),
    mut run: impl FnMut(&mut S),
) -> Stats {
    let mut times = Vec::with_capacity(runs);
    for i in 0..WARM_UPS + runs.max(1) {
        setup(state);
        let t = std::time::Instant::now();
        run(state);
        if i >= WARM_UPS {
            times.push(t.elapsed().as_secs_f64() * 1e3);
        }
    }
    summarize(&mut times)
}

pub fn summarize(times: &mut [f64]) -> Stats {
    times.sort_by(f64::total_cmp);
    let n = times.len();
    let median = if n % 2 == 1 {
        times[n / 2]
    } else {
        0.5 * (times[n / 2 - 1] + times[n / 2])
    };
    Stats {
        runs: n,
        median_ms: median,
        min_ms: times[0],
        max_ms: times[n - 1],
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn median_of_even_and_odd() {
        assert_eq!(super::summarize(&mut [3.0, 1.0, 2.0]).median_ms, 2.0);
        let s = super::summarize(&mut [4.0, 1.0, 3.0, 2.0]);
        assert_eq!((s.median_ms, s.min_ms, s.max_ms), (2.5, 1.0, 4.0));
    }
}
