//! Which shard of a batch this process runs: given as K/N, or read once from the scheduler that
//! started it (`--shard auto`): a Slurm job array or a Kubernetes Indexed Job. The environment
//! comes in as a lookup function, so every case is testable without touching the process's.

/// What `--shard` asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShardRequest {
    /// Shard K of N (1-based), as typed.
    Fixed(usize, usize),
    /// From the scheduler's environment; `count` is `--shard-count`: the number of
    /// completions of a Kubernetes Indexed Job, or the number of shards of a Slurm array
    /// whose tasks may be submitted again one by one.
    Auto { count: Option<usize> },
}

/// The variables `--shard auto` reads, in the order it looks at them.
pub const SLURM_VARS: [&str; 3] = [
    "SLURM_ARRAY_TASK_ID",
    "SLURM_ARRAY_TASK_COUNT",
    "SLURM_ARRAY_TASK_MIN",
];
pub const KUBERNETES_INDEX: &str = "JOB_COMPLETION_INDEX";
/// The shard count when `--shard-count` is not given.
pub const COUNT_VAR: &str = "GBLUR_SHARD_COUNT";

/// Resolves `request` to `(k, n)`, 1-based, reading variables through `env`. The error is a
/// usage error, written for the person who set up the job.
///
/// Slurm, with a shard count N (`--shard-count` or `GBLUR_SHARD_COUNT`): task id i runs shard
/// i+1 of N, whatever else the array holds, so `sbatch --array=2` runs shard 3 of N again
/// alone; ids must be below N. Without one: task ids are assumed to be MIN, MIN+1, ...,
/// MIN+COUNT-1 (an `--array=A-B` range with step 1); task id MIN+i runs shard i+1 of COUNT.
/// Where Slurm also says MAX and STEP, they are checked against that; an array with gaps or a
/// step (`--array=0,3,7`, `--array=0-9:2`) is refused, as its ids cannot be mapped onto
/// 1..=COUNT without leaving shards unrun.
///
/// Kubernetes: `JOB_COMPLETION_INDEX` is 0-based; index i runs shard i+1 of the completions
/// count, which `--shard-count` or `GBLUR_SHARD_COUNT` supplies.
pub fn resolve(
    request: ShardRequest,
    env: impl Fn(&str) -> Option<String>,
) -> Result<(usize, usize), String> {
    let count = match request {
        ShardRequest::Fixed(k, n) => return Ok((k, n)),
        ShardRequest::Auto { count } => count,
    };
    let number = |name: &str| -> Result<Option<usize>, String> {
        match env(name) {
            None => Ok(None),
            Some(v) => v
                .trim()
                .parse()
                .map(Some)
                .map_err(|_| format!("--shard auto: {name}={v:?} is not a whole number >= 0")),
        }
    };
    let count = match count {
        Some(n) => Some(n),
        None => number(COUNT_VAR)?,
    };
    if let Some(id) = number(SLURM_VARS[0])? {
        return match count {
            Some(n) if id < n => Ok((id + 1, n)),
            Some(n) => Err(format!(
                "--shard auto: SLURM_ARRAY_TASK_ID={id} is not below the shard count {n}; with \
                 --shard-count N (or {COUNT_VAR}=N) task ids run 0..N-1"
            )),
            None => slurm(id, &number),
        };
    }
    if let Some(index) = number(KUBERNETES_INDEX)? {
        let n = count.ok_or_else(|| {
            format!(
                "--shard auto: {KUBERNETES_INDEX}={index} is set but not the number of \
                 completions; pass --shard-count N or set {COUNT_VAR}=N (the Job's \
                 spec.completions)"
            )
        })?;
        if n == 0 || index >= n {
            return Err(format!(
                "--shard auto: {KUBERNETES_INDEX}={index} is not below the completions count \
                 {n}; indices run 0..{n}-1"
            ));
        }
        return Ok((index + 1, n));
    }
    Err(format!(
        "--shard auto: not inside a Slurm job array or a Kubernetes Indexed Job (none of {}, {} \
         is set); pass --shard K/N to pick a shard by hand",
        SLURM_VARS.join(", "),
        KUBERNETES_INDEX
    ))
}

fn slurm(
    id: usize,
    number: &dyn Fn(&str) -> Result<Option<usize>, String>,
) -> Result<(usize, usize), String> {
    let advice = "submit the array as --array=0-(N-1) (contiguous, step 1), or pass --shard K/N";
    let count = number("SLURM_ARRAY_TASK_COUNT")?.ok_or_else(|| {
        format!("--shard auto: SLURM_ARRAY_TASK_ID is set but not SLURM_ARRAY_TASK_COUNT; {advice}")
    })?;
    let min = number("SLURM_ARRAY_TASK_MIN")?.ok_or_else(|| {
        format!("--shard auto: SLURM_ARRAY_TASK_ID is set but not SLURM_ARRAY_TASK_MIN; {advice}")
    })?;
    if let Some(max) = number("SLURM_ARRAY_TASK_MAX")? {
        if max < min || max - min + 1 != count {
            return Err(format!(
                "--shard auto: the array's ids {min}..={max} are not {count} contiguous ids \
                 (SLURM_ARRAY_TASK_COUNT); {advice}"
            ));
        }
    }
    if let Some(step) = number("SLURM_ARRAY_TASK_STEP")? {
        if step != 1 && count > 1 {
            return Err(format!(
                "--shard auto: the array steps by {step} (SLURM_ARRAY_TASK_STEP); {advice}"
            ));
        }
    }
    if count == 0 || id < min || id - min >= count {
        return Err(format!(
            "--shard auto: SLURM_ARRAY_TASK_ID={id} is outside {min}..={} (MIN..MIN+COUNT-1); \
             {advice}",
            min + count.saturating_sub(1)
        ));
    }
    Ok((id - min + 1, count))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    }

    const AUTO: ShardRequest = ShardRequest::Auto { count: None };

    #[test]
    fn fixed_is_taken_as_typed() {
        assert_eq!(resolve(ShardRequest::Fixed(2, 5), env(&[])), Ok((2, 5)));
    }

    #[test]
    fn slurm_contiguous_from_zero() {
        for (id, k) in [("0", 1), ("1", 2), ("3", 4)] {
            let vars = [
                ("SLURM_ARRAY_TASK_ID", id),
                ("SLURM_ARRAY_TASK_COUNT", "4"),
                ("SLURM_ARRAY_TASK_MIN", "0"),
                ("SLURM_ARRAY_TASK_MAX", "3"),
                ("SLURM_ARRAY_TASK_STEP", "1"),
            ];
            assert_eq!(resolve(AUTO, env(&vars)), Ok((k, 4)));
        }
    }

    #[test]
    fn slurm_with_min_not_zero() {
        let vars = [
            ("SLURM_ARRAY_TASK_ID", "12"),
            ("SLURM_ARRAY_TASK_COUNT", "3"),
            ("SLURM_ARRAY_TASK_MIN", "10"),
            ("SLURM_ARRAY_TASK_MAX", "12"),
        ];
        assert_eq!(resolve(AUTO, env(&vars)), Ok((3, 3)));
        // MAX and STEP are optional: without them the range is assumed contiguous.
        let vars = [
            ("SLURM_ARRAY_TASK_ID", "10"),
            ("SLURM_ARRAY_TASK_COUNT", "3"),
            ("SLURM_ARRAY_TASK_MIN", "10"),
        ];
        assert_eq!(resolve(AUTO, env(&vars)), Ok((1, 3)));
    }

    #[test]
    fn slurm_with_a_shard_count_keeps_a_resubmitted_task_on_its_shard() {
        // `sbatch --array=2` alone: the array says one task, MIN 2.
        let alone = [
            ("SLURM_ARRAY_TASK_ID", "2"),
            ("SLURM_ARRAY_TASK_COUNT", "1"),
            ("SLURM_ARRAY_TASK_MIN", "2"),
            ("SLURM_ARRAY_TASK_MAX", "2"),
        ];
        assert_eq!(resolve(AUTO, env(&alone)), Ok((1, 1)));
        let four = ShardRequest::Auto { count: Some(4) };
        assert_eq!(resolve(four, env(&alone)), Ok((3, 4)));
        let with_var: Vec<_> = alone.iter().copied().chain([(COUNT_VAR, "4")]).collect();
        assert_eq!(resolve(AUTO, env(&with_var)), Ok((3, 4)));
        let two = ShardRequest::Auto { count: Some(2) };
        let e = resolve(two, env(&alone)).unwrap_err();
        assert!(e.contains("not below the shard count 2"), "{e}");
    }

    #[test]
    fn slurm_non_contiguous_is_refused() {
        // --array=0,3,7: three tasks spanning 0..=7.
        let gaps = [
            ("SLURM_ARRAY_TASK_ID", "3"),
            ("SLURM_ARRAY_TASK_COUNT", "3"),
            ("SLURM_ARRAY_TASK_MIN", "0"),
            ("SLURM_ARRAY_TASK_MAX", "7"),
        ];
        let e = resolve(AUTO, env(&gaps)).unwrap_err();
        assert!(
            e.contains("not 3 contiguous") && e.contains("--array=0-(N-1)"),
            "{e}"
        );
        // --array=0-9:2
        let step = [
            ("SLURM_ARRAY_TASK_ID", "2"),
            ("SLURM_ARRAY_TASK_COUNT", "5"),
            ("SLURM_ARRAY_TASK_MIN", "0"),
            ("SLURM_ARRAY_TASK_MAX", "4"),
            ("SLURM_ARRAY_TASK_STEP", "2"),
        ];
        let e = resolve(AUTO, env(&step)).unwrap_err();
        assert!(e.contains("steps by 2"), "{e}");
        let outside = [
            ("SLURM_ARRAY_TASK_ID", "9"),
            ("SLURM_ARRAY_TASK_COUNT", "3"),
            ("SLURM_ARRAY_TASK_MIN", "0"),
        ];
        assert!(resolve(AUTO, env(&outside)).is_err());
        let no_count = [("SLURM_ARRAY_TASK_ID", "0")];
        let e = resolve(AUTO, env(&no_count)).unwrap_err();
        assert!(e.contains("SLURM_ARRAY_TASK_COUNT"), "{e}");
    }

    #[test]
    fn kubernetes_with_shard_count_or_env() {
        let vars = [(KUBERNETES_INDEX, "0")];
        let with_flag = ShardRequest::Auto { count: Some(5) };
        assert_eq!(resolve(with_flag, env(&vars)), Ok((1, 5)));
        let vars = [(KUBERNETES_INDEX, "4"), (COUNT_VAR, "5")];
        assert_eq!(resolve(AUTO, env(&vars)), Ok((5, 5)));
        // The flag wins over the variable.
        assert_eq!(
            resolve(with_flag, env(&[(KUBERNETES_INDEX, "2"), (COUNT_VAR, "9")])),
            Ok((3, 5))
        );
        let e = resolve(AUTO, env(&[(KUBERNETES_INDEX, "1")])).unwrap_err();
        assert!(e.contains("--shard-count") && e.contains(COUNT_VAR), "{e}");
        let e = resolve(with_flag, env(&[(KUBERNETES_INDEX, "5")])).unwrap_err();
        assert!(e.contains("not below"), "{e}");
        let e = resolve(AUTO, env(&[(KUBERNETES_INDEX, "x")])).unwrap_err();
        assert!(e.contains("not a whole number"), "{e}");
    }

    #[test]
    fn neither_scheduler_is_an_error_naming_the_variables() {
        let e = resolve(AUTO, env(&[])).unwrap_err();
        for name in SLURM_VARS.iter().chain([&KUBERNETES_INDEX]) {
            assert!(e.contains(name), "{e} does not name {name}");
        }
        assert!(e.contains("--shard K/N"), "{e}");
    }
}
