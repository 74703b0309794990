//! Operation mix: whether a request reads or writes.

use super::{fraction, WorkloadError};
use crate::model::Op;
use rand::Rng;

/// The named mixes [`OpMix::named`] knows, with their read fractions.
///
/// `read-heavy` and `update-heavy` are Héron's 95/5 and 50/50 mixes; `ycsb-a/b/c` are YCSB's core
/// workloads A (update heavy), B (read mostly) and C (read only), where an update is a write.
pub const NAMED_MIXES: &[(&str, f64)] = &[
    ("read-only", 1.0),
    ("read-heavy", 0.95),
    ("update-heavy", 0.5),
    ("ycsb-a", 0.5),
    ("ycsb-b", 0.95),
    ("ycsb-c", 1.0),
];

/// Draws reads and writes in a fixed proportion.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OpMix {
    read_fraction: f64,
}

impl OpMix {
    /// A mix where a request is a read with probability `read_fraction` (in `[0, 1]`).
    pub fn new(read_fraction: f64) -> Result<OpMix, WorkloadError> {
        Ok(OpMix { read_fraction: fraction("read_fraction", read_fraction)? })
    }

    /// One of the [`NAMED_MIXES`] (exact, lower-case name).
    pub fn named(name: &str) -> Result<OpMix, WorkloadError> {
        NAMED_MIXES.iter().find(|(n, _)| *n == name).map(|&(_, read_fraction)| OpMix { read_fraction }).ok_or_else(
            || WorkloadError::UnknownMix {
                name: name.to_string(),
                known: NAMED_MIXES.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", "),
            },
        )
    }

    /// Probability that a request is a read.
    pub fn read_fraction(&self) -> f64 {
        self.read_fraction
    }

    /// The next request's operation.
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> Op {
        debug_assert!(
            (0.0..=1.0).contains(&self.read_fraction),
            "a read fraction {} is a probability",
            self.read_fraction
        );
        // Strict `<` with a draw in [0, 1): a fraction of 1 always reads and 0 always writes.
        if rng.random::<f64>() < self.read_fraction {
            Op::Read
        } else {
            Op::Write
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::SeedableRng;

    fn reads(mix: OpMix, n: usize) -> usize {
        let mut rng = SmallRng::seed_from_u64(1);
        (0..n).filter(|_| mix.sample(&mut rng) == Op::Read).count()
    }

    #[test]
    fn named_mixes_have_published_fractions() {
        assert_eq!(OpMix::named("read-only").unwrap().read_fraction(), 1.0);
        assert_eq!(OpMix::named("read-heavy").unwrap().read_fraction(), 0.95);
        assert_eq!(OpMix::named("update-heavy").unwrap().read_fraction(), 0.5);
        assert_eq!(OpMix::named("ycsb-a").unwrap().read_fraction(), 0.5);
        assert_eq!(OpMix::named("ycsb-b").unwrap().read_fraction(), 0.95);
        assert_eq!(OpMix::named("ycsb-c").unwrap().read_fraction(), 1.0);
    }

    #[test]
    fn sampling_follows_the_fraction() {
        assert_eq!(reads(OpMix::named("read-only").unwrap(), 10_000), 10_000);
        assert_eq!(reads(OpMix::new(0.0).unwrap(), 10_000), 0);
        let r = reads(OpMix::named("read-heavy").unwrap(), 100_000);
        assert!((94_500..95_500).contains(&r), "{r} reads");
        let r = reads(OpMix::new(0.5).unwrap(), 100_000);
        assert!((49_300..50_700).contains(&r), "{r} reads");
    }

    #[test]
    fn invalid_mixes_are_errors_naming_the_field() {
        for bad in [-0.1, 1.01, f64::NAN, f64::INFINITY] {
            let e = OpMix::new(bad).unwrap_err().to_string();
            assert!(e.starts_with(&format!("invalid read_fraction = {bad}")), "{e}");
        }
        let e = OpMix::named("ycsb-z").unwrap_err().to_string();
        assert!(e.contains("`ycsb-z`") && e.contains("read-heavy"), "{e}");
    }
}
