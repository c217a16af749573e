//! Shards: a stable share of an experiment's items for one machine (`--shard I/N`).
//!
//! Items are numbered in the experiment's order (task by task as the task set lists them,
//! then variant by variant as the file lists them, then repeat by repeat); shard `I` of `N`
//! takes the items whose number modulo `N` is `I`. The split depends only on the experiment
//! file and its task set, never on the machine, the time or what already ran, and the shards'
//! sizes differ by at most one item.
//!
//! The index may come from a scheduler: `--shard auto/N` takes it from `JOB_COMPLETION_INDEX`
//! (a Kubernetes Indexed Job) or `SLURM_ARRAY_TASK_ID` minus `SLURM_ARRAY_TASK_MIN` (a Slurm
//! job array); `--shard auto` also takes `N` from `SLURM_ARRAY_TASK_COUNT`.

use std::fmt;

/// Shard `index` of `count` (0-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// This shard, `0..count`.
    pub index: u32,
    /// How many shards share the experiment.
    pub count: u32,
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// A `--shard` value that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--shard {given}: {problem}")]
pub struct ShardError {
    /// The value as given.
    pub given: String,
    /// What is wrong with it, and what to give instead.
    pub problem: String,
}

/// The scheduler variables `auto` reads.
pub const SHARD_VARIABLES: [&str; 4] = [
    "JOB_COMPLETION_INDEX",
    "SLURM_ARRAY_TASK_ID",
    "SLURM_ARRAY_TASK_MIN",
    "SLURM_ARRAY_TASK_COUNT",
];

impl Shard {
    /// The whole experiment (one shard).
    pub const WHOLE: Shard = Shard { index: 0, count: 1 };

    /// Parses `I/N`, `auto/N` or `auto`, reading the scheduler's variables through `var`.
    pub fn parse(given: &str, var: impl Fn(&str) -> Option<String>) -> Result<Shard, ShardError> {
        let err = |problem: String| ShardError {
            given: given.to_string(),
            problem,
        };
        let number = |what: &str, s: &str| -> Result<u32, ShardError> {
            s.trim().parse::<u32>().map_err(|_| {
                err(format!(
                    "{what} `{s}` is not a whole number ≥ 0 (e.g. --shard 0/4)"
                ))
            })
        };
        let (index, count) = match given.trim().split_once('/') {
            Some((i, n)) => (i.trim(), Some(n.trim())),
            None => (given.trim(), None),
        };
        let count = match count {
            Some(n) => number("the shard count", n)?,
            None if index == "auto" => match var("SLURM_ARRAY_TASK_COUNT") {
                Some(n) => number("SLURM_ARRAY_TASK_COUNT", &n)?,
                None => {
                    return Err(err(
                        "`auto` without a count needs SLURM_ARRAY_TASK_COUNT (a Slurm job \
                         array); elsewhere give the count: --shard auto/N"
                            .into(),
                    ));
                }
            },
            None => {
                return Err(err(
                    "give the shard as I/N (0-based, e.g. --shard 2/8), or auto/N".into(),
                ));
            }
        };
        if count == 0 {
            return Err(err("the shard count must be at least 1".into()));
        }
        let index = if index == "auto" {
            if let Some(i) = var("JOB_COMPLETION_INDEX") {
                number("JOB_COMPLETION_INDEX", &i)?
            } else if let Some(i) = var("SLURM_ARRAY_TASK_ID") {
                let id = number("SLURM_ARRAY_TASK_ID", &i)?;
                let min = match var("SLURM_ARRAY_TASK_MIN") {
                    Some(m) => number("SLURM_ARRAY_TASK_MIN", &m)?,
                    None => 0,
                };
                id.checked_sub(min).ok_or_else(|| {
                    err(format!(
                        "SLURM_ARRAY_TASK_ID {id} is below SLURM_ARRAY_TASK_MIN {min}"
                    ))
                })?
            } else {
                return Err(err(
                    "`auto` reads the shard index from JOB_COMPLETION_INDEX (Kubernetes \
                     Indexed Job) or SLURM_ARRAY_TASK_ID (Slurm job array), and neither is \
                     set; give it: --shard I/N"
                        .into(),
                ));
            }
        } else {
            number("the shard index", index)?
        };
        if index >= count {
            return Err(err(format!(
                "shard index {index} is not below the count {count} (indexes are 0-based: \
                 0..={})",
                count - 1
            )));
        }
        Ok(Shard { index, count })
    }

    /// Whether item number `n` (in the experiment's order) is this shard's.
    pub fn takes(&self, n: u64) -> bool {
        n % u64::from(self.count) == u64::from(self.index)
    }

    /// The database file of this shard in `dir`: `{experiment}-{I}-of-{N}.db`.
    pub fn db_file_name(&self, experiment: &str) -> String {
        format!("{experiment}-{}-of-{}.db", self.index, self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_vars(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn explicit_shards_parse_and_bad_ones_say_why() {
        assert_eq!(
            Shard::parse("2/8", no_vars),
            Ok(Shard { index: 2, count: 8 })
        );
        assert_eq!(
            Shard::parse(" 0 / 1 ", no_vars),
            Ok(Shard { index: 0, count: 1 })
        );
        for (bad, says) in [
            ("8/8", "not below the count"),
            ("1/0", "at least 1"),
            ("x/2", "not a whole number"),
            ("-1/2", "not a whole number"),
            ("3", "I/N"),
            ("auto", "SLURM_ARRAY_TASK_COUNT"),
            ("auto/4", "neither is set"),
        ] {
            let e = Shard::parse(bad, no_vars).expect_err(bad);
            assert!(e.to_string().contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn auto_reads_kubernetes_and_slurm_variables() {
        let k8s = |k: &str| (k == "JOB_COMPLETION_INDEX").then(|| "3".to_string());
        assert_eq!(
            Shard::parse("auto/4", k8s),
            Ok(Shard { index: 3, count: 4 })
        );
        let slurm = |k: &str| match k {
            "SLURM_ARRAY_TASK_ID" => Some("12".to_string()),
            "SLURM_ARRAY_TASK_MIN" => Some("10".to_string()),
            "SLURM_ARRAY_TASK_COUNT" => Some("5".to_string()),
            _ => None,
        };
        assert_eq!(
            Shard::parse("auto", slurm),
            Ok(Shard { index: 2, count: 5 })
        );
        let k8s_out_of_range = |k: &str| (k == "JOB_COMPLETION_INDEX").then(|| "4".to_string());
        assert!(Shard::parse("auto/4", k8s_out_of_range).is_err());
    }

    #[test]
    fn shards_split_the_items_evenly_and_cover_each_once() {
        for count in 1..=7u32 {
            let mut seen = vec![0u32; 100];
            let mut sizes = Vec::new();
            for index in 0..count {
                let s = Shard { index, count };
                let mine: Vec<u64> = (0..100u64).filter(|n| s.takes(*n)).collect();
                sizes.push(mine.len());
                for n in mine {
                    seen[n as usize] += 1;
                }
            }
            assert!(seen.iter().all(|c| *c == 1), "count {count}");
            let (min, max) = (sizes.iter().min(), sizes.iter().max());
            assert!(max.zip(min).is_some_and(|(a, b)| a - b <= 1), "{sizes:?}");
        }
    }
}
