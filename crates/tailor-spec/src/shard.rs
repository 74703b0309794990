//! Spreading a sweep over independent jobs: shard `i` of `n` runs the plans at positions
//! `p % n == i` of the expansion, writes its runs with their positions, and a merge puts every
//! shard's runs back in expansion order. A run is a pure function of its plan, so the merged
//! results equal an unsharded run's.

use crate::RunPlan;
use serde::{Deserialize, Serialize};
use std::fmt;
use tailor_core::results::{Results, RunResult};

/// Shard `index` of `count`, 0-based: Slurm array task ids and Kubernetes completion indices
/// start at 0, so a job passes its own id unchanged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    /// Which shard, `0..count`.
    pub index: usize,
    /// How many shards the sweep is split into.
    pub count: usize,
}

/// A shard that cannot be parsed, or shards that do not merge (the message names the shard).
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ShardError {
    /// A shard that is not `I/N` with `0 <= I < N` (the CLI's parser names `--shard` and the value).
    #[error("{0}")]
    Parse(String),
    /// Shard files that do not make up one sweep.
    #[error("{0}")]
    Merge(String),
}

impl std::str::FromStr for Shard {
    type Err = ShardError;

    fn from_str(text: &str) -> Result<Shard, ShardError> {
        let error = |reason: &str| ShardError::Parse(reason.into());
        let (index, count) = text.split_once('/').ok_or_else(|| error("expected I/N, e.g. 0/4"))?;
        let number = |s: &str| s.trim().parse::<usize>().map_err(|_| error("I and N must be whole numbers, e.g. 0/4"));
        let shard = Shard { index: number(index)?, count: number(count)? };
        if shard.count == 0 {
            return Err(error("N must be at least 1"));
        }
        if shard.index >= shard.count {
            return Err(error(&format!(
                "I is 0-based and must be below N (0/{n} to {}/{n})",
                shard.count - 1,
                n = shard.count
            )));
        }
        Ok(shard)
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl Shard {
    /// Whether the plan at `position` is this shard's: round robin, so the long and the short
    /// runs of a sweep (its points come in order) spread evenly over the shards.
    pub fn owns(&self, position: usize) -> bool {
        position % self.count == self.index
    }

    /// This shard's plans, in expansion order.
    pub fn select(&self, plans: &[RunPlan]) -> Vec<RunPlan> {
        plans.iter().enumerate().filter(|(p, _)| self.owns(*p)).map(|(_, plan)| plan.clone()).collect()
    }

    /// The positions this shard owns in an expansion of `total` runs.
    pub fn positions(&self, total: usize) -> Vec<usize> {
        (self.index..total).step_by(self.count).collect()
    }

    /// The file a shard writes into its output directory (distinct per shard, so every job
    /// can write into one shared directory).
    pub fn file_name(&self) -> String {
        format!("results.shard-{}-of-{}.json", self.index, self.count)
    }
}

/// What a shard writes: its runs and where they stand in the whole sweep. A wrapper rather
/// than fields of [`Results`], so a normal results file keeps its format.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShardResults {
    /// Which shard this is.
    pub shard: Shard,
    /// Runs in the whole sweep, so a merge knows every shard's share.
    pub total_runs: usize,
    /// Each of `results.runs`' position in the expansion.
    pub positions: Vec<usize>,
    /// The shard's runs, with the whole spec echoed as in a normal results file.
    pub results: Results,
}

impl ShardResults {
    /// `shard`'s results out of a sweep of `total_runs`; `results` holds its runs in order.
    pub fn new(shard: Shard, total_runs: usize, results: Results) -> ShardResults {
        ShardResults { shard, total_runs, positions: shard.positions(total_runs), results }
    }
}

/// Merge shard results (each with the name it was read from, for the errors) into the
/// results of the whole sweep, runs in expansion order: refused unless they come from one
/// spec and one split, each shard exactly once.
pub fn merge(shards: Vec<(String, ShardResults)>) -> Result<Results, ShardError> {
    let fail = |message: String| Err(ShardError::Merge(message));
    let Some((first_name, first)) = shards.first() else {
        return fail("no shard files to merge".into());
    };
    let count = first.shard.count;
    let mut owner: Vec<Option<&str>> = vec![None; count];
    for (name, s) in &shards {
        if let Some(field) = differs(first, s) {
            return fail(format!("{name} and {first_name} come from different sweeps ({field} differs)"));
        }
        if s.shard.index >= s.shard.count
            || s.positions != s.shard.positions(s.total_runs)
            || s.positions.len() != s.results.runs.len()
        {
            return fail(format!("{name}: its runs do not match shard {}'s positions (a damaged file?)", s.shard));
        }
        if let Some(other) = owner[s.shard.index].replace(name) {
            return fail(format!("shard {} given twice: {other} and {name}", s.shard));
        }
    }
    let missing: Vec<Shard> = (0..count).filter(|&i| owner[i].is_none()).map(|index| Shard { index, count }).collect();
    if !missing.is_empty() {
        let indices: Vec<String> = missing.iter().map(|s| s.index.to_string()).collect();
        let files: Vec<String> = missing.iter().map(Shard::file_name).collect();
        return fail(format!("missing shard(s) {} of {count} (0-based): {}", indices.join(", "), files.join(", ")));
    }
    Ok(reassemble(shards))
}

/// The first field in which `s` shows it is not from the same sweep and split as `first`.
fn differs(first: &ShardResults, s: &ShardResults) -> Option<&'static str> {
    let (a, b) = (&first.results, &s.results);
    [
        ("the shard count N", first.shard.count != s.shard.count),
        ("`spec`", a.spec != b.spec),
        ("`total_runs`", first.total_runs != s.total_runs),
        ("`experiment`", a.experiment != b.experiment),
        ("`engine`", a.engine != b.engine),
        ("`tailor_version`", a.tailor_version != b.tailor_version),
        ("`format`", a.format != b.format),
    ]
    .into_iter()
    .find_map(|(field, differ)| differ.then_some(field))
}

/// Every shard's runs at their positions; the shards are checked to cover each position once.
fn reassemble(shards: Vec<(String, ShardResults)>) -> Results {
    let mut placed: Vec<(usize, RunResult)> = Vec::new();
    let mut header = Results::default();
    for (_, s) in shards {
        placed.extend(s.positions.into_iter().zip(s.results.runs));
        header = Results { runs: Vec::new(), ..s.results };
    }
    placed.sort_by_key(|(position, _)| *position);
    Results { runs: placed.into_iter().map(|(_, run)| run).collect(), ..header }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(seed: u64) -> RunResult {
        RunResult { seed, ..RunResult::default() }
    }

    /// The shards of a sweep of `total` runs whose run at position p has seed p.
    fn split(total: usize, count: usize) -> Vec<(String, ShardResults)> {
        (0..count)
            .map(|index| {
                let shard = Shard { index, count };
                let runs = shard.positions(total).into_iter().map(|p| run(p as u64)).collect();
                let results = Results { spec: "s".into(), runs, ..Results::default() };
                (shard.file_name(), ShardResults::new(shard, total, results))
            })
            .collect()
    }

    #[test]
    fn shard_parses_0_based_and_says_why_not() {
        assert_eq!("2/3".parse::<Shard>().unwrap(), Shard { index: 2, count: 3 });
        let error = |text: &str| text.parse::<Shard>().unwrap_err().to_string();
        assert_eq!(error("3/3"), "I is 0-based and must be below N (0/3 to 2/3)");
        assert_eq!(error("0/0"), "N must be at least 1");
        for bad in ["1", "a/3", "-1/3"] {
            assert!(error(bad).contains("e.g. 0/4"), "{bad}");
        }
    }

    #[test]
    fn shard_positions_are_round_robin() {
        assert_eq!(Shard { index: 1, count: 3 }.positions(8), [1, 4, 7]);
        assert_eq!(Shard { index: 0, count: 1 }.positions(3), [0, 1, 2]);
        assert!(Shard { index: 4, count: 5 }.positions(3).is_empty());
    }

    #[test]
    fn shard_merge_restores_expansion_order_in_any_file_order() {
        let mut shards = split(8, 3);
        shards.reverse();
        let merged = merge(shards).unwrap();
        assert_eq!(merged.runs.iter().map(|r| r.seed).collect::<Vec<_>>(), (0..8).collect::<Vec<_>>());
        assert_eq!(merged.spec, "s");
    }

    #[test]
    fn shard_merge_names_missing_duplicate_and_foreign_shards() {
        let mut shards = split(8, 4);
        shards.remove(2);
        shards.remove(0);
        assert_eq!(
            merge(shards).unwrap_err().to_string(),
            "missing shard(s) 0, 2 of 4 (0-based): results.shard-0-of-4.json, results.shard-2-of-4.json"
        );
        let mut shards = split(8, 3);
        shards.push(("copy".into(), shards[1].1.clone()));
        assert!(merge(shards).unwrap_err().to_string().contains("shard 1/3 given twice"));
        let mut shards = split(8, 3);
        shards[2].1.results.spec = "t".into();
        assert!(merge(shards).unwrap_err().to_string().contains("(`spec` differs)"));
        let mut shards = split(8, 3);
        shards.push(split(8, 2).remove(0));
        assert!(merge(shards).unwrap_err().to_string().contains("shard count N differs"));
    }
}
