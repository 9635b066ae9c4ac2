//! Step 2 of the carries: the walk over a column of chunks' summaries that gives the states
//! entering every chunk, with the array's ends extended by the edge mode exactly.

use super::INCOMING;
use crate::filter::gaussian::mat_pow;
use crate::filter::EdgeMode;

/// A 2×2 matrix per section, row-major, in f64.
pub(super) type Pair = [[f64; 4]; 2];

/// The walk of step 2 for one column of chunks: the transitions it needs, computed once.
pub(super) struct Walk {
    /// One step.
    step: Pair,
    /// Per chunk: across it (`len − 1` steps), from its start to the array's start (its
    /// offset), and from the array's end back to its last sample.
    across: Vec<Pair>,
    from_start: Vec<Pair>,
    from_end: Vec<Pair>,
    lengths: Vec<usize>,
    edge: Edge,
}

/// How the states entering the array's two ends follow from the whole column: `solve ·
/// (own · own total + other · other total + e · difference)`, where a direction's own total
/// is the state its zero-start walk leaves at the array's far end.
enum Edge {
    /// Clamp: nothing enters.
    Zero,
    /// A constant: the step from the constant to the end sample.
    Constant,
    /// Wrap, reflect and mirror: the state of the endlessly repeated array.
    Periodic {
        solve: Pair,
        own: Pair,
        other: Pair,
        /// Whether the step from one end sample to the other enters (wrap).
        wraps: bool,
    },
}

impl Walk {
    pub(super) fn new(step: Pair, lengths: &[usize], mode: EdgeMode) -> Walk {
        let pow = |n: usize| step.map(|m| mat_pow(m, n));
        let total: usize = lengths.iter().sum();
        let mut offset = 0;
        let (mut across, mut from_start, mut from_end) = (vec![], vec![], vec![]);
        for &len in lengths {
            across.push(pow(len.saturating_sub(1)));
            from_start.push(pow(offset));
            offset += len;
            from_end.push(pow(total - offset));
        }
        let periodic = |period: usize, own: Pair, other: Pair, wraps: bool| Edge::Periodic {
            solve: pow(period).map(|m| inverse([1.0 - m[0], -m[1], -m[2], 1.0 - m[3]])),
            own,
            other,
            wraps,
        };
        let negated = |p: Pair| p.map(|m| m.map(|v| -v));
        let identity = [[1.0, 0.0, 0.0, 1.0]; 2];
        let edge = match mode {
            _ if total == 0 => Edge::Zero,
            EdgeMode::Clamp => Edge::Zero,
            EdgeMode::Constant(_) => Edge::Constant,
            EdgeMode::Wrap => periodic(total, step, [[0.0; 4]; 2], true),
            EdgeMode::Reflect => periodic(2 * total, pow(total + 1), negated(step), false),
            EdgeMode::Reflect101 if total == 1 => Edge::Zero,
            EdgeMode::Reflect101 => {
                periodic(2 * total - 2, pow(total - 1), negated(identity), false)
            }
        };
        Walk {
            step,
            across,
            from_start,
            from_end,
            lengths: lengths.to_vec(),
            edge,
        }
    }

    /// The incoming states of every chunk of one line, from `read(chunk, value)` of its
    /// summaries.
    pub(super) fn line(
        &self,
        read: impl Fn(usize, usize) -> f32,
        cval: f64,
    ) -> Vec<[f64; INCOMING]> {
        let chunks: Vec<usize> = (0..self.lengths.len())
            .filter(|&c| self.lengths[c] > 0)
            .collect();
        let mut states = vec![[0f64; INCOMING]; self.lengths.len()];
        let (Some(&first), Some(&last)) = (chunks.first(), chunks.last()) else {
            return states;
        };
        let value = |c: usize, v: usize| read(c, v) as f64;
        let state = |c: usize, at: usize| -> [f64; 4] { std::array::from_fn(|v| value(c, at + v)) };
        // Causal: forwards from a zero state at the array's first sample.
        let mut entering = [0f64; 4];
        let mut causal_total = [0f64; 4];
        for (i, &c) in chunks.iter().enumerate() {
            states[c][..4].copy_from_slice(&entering);
            let leaving = add(state(c, 0), apply(&self.across[c], entering));
            causal_total = leaving;
            if let Some(&next) = chunks.get(i + 1) {
                entering = add_step(apply(&self.step, leaving), value(next, 8) - value(c, 9));
            }
        }
        // Anticausal: backwards from a zero state at the array's last sample.
        let mut entering = [0f64; 4];
        let mut anticausal_total = [0f64; 4];
        for (i, &c) in chunks.iter().enumerate().rev() {
            states[c][4..].copy_from_slice(&entering);
            let leaving = add(state(c, 4), apply(&self.across[c], entering));
            anticausal_total = leaving;
            if i > 0 {
                let before = chunks[i - 1];
                entering = add_step(apply(&self.step, leaving), value(c, 8) - value(before, 9));
            }
        }
        let (x0, xn) = (value(first, 8), value(last, 9));
        let (start, end) = match &self.edge {
            Edge::Zero => return states,
            Edge::Constant => (add_step([0.0; 4], x0 - cval), add_step([0.0; 4], cval - xn)),
            Edge::Periodic {
                solve,
                own,
                other,
                wraps,
            } => {
                let entering = |own_total: [f64; 4], other_total: [f64; 4]| {
                    let sum = add(apply(own, own_total), apply(other, other_total));
                    let sum = if *wraps { add_step(sum, x0 - xn) } else { sum };
                    apply(solve, sum)
                };
                (
                    entering(causal_total, anticausal_total),
                    entering(anticausal_total, causal_total),
                )
            }
        };
        for &c in &chunks {
            let (causal, anticausal) = (
                apply(&self.from_start[c], start),
                apply(&self.from_end[c], end),
            );
            for v in 0..4 {
                states[c][v] += causal[v];
                states[c][4 + v] += anticausal[v];
            }
        }
        states
    }
}

/// Each section's matrix on its `(w, d)`.
fn apply(m: &Pair, s: [f64; 4]) -> [f64; 4] {
    let [a, b] = m;
    [
        a[0] * s[0] + a[1] * s[1],
        a[2] * s[0] + a[3] * s[1],
        b[0] * s[2] + b[1] * s[3],
        b[2] * s[2] + b[3] * s[3],
    ]
}

fn add(a: [f64; 4], b: [f64; 4]) -> [f64; 4] {
    std::array::from_fn(|v| a[v] + b[v])
}

/// `s` plus the state one input `u` adds (it enters both `w` and `d` of both sections).
fn add_step(s: [f64; 4], u: f64) -> [f64; 4] {
    s.map(|v| v + u)
}

/// The inverse of a 2×2 matrix, which for `I − T^p` exists: `T`'s poles lie inside the unit
/// circle, so `T^p`'s eigenvalues are under 1.
fn inverse(m: [f64; 4]) -> [f64; 4] {
    let det = m[0] * m[3] - m[1] * m[2];
    [m[3] / det, -m[1] / det, -m[2] / det, m[0] / det]
}
