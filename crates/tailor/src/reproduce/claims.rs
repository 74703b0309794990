//! The claims file (`crates/tailor/claims.toml`, built into the binary): each source's headline
//! statements as data, the setup that reproduces them, and the verdict the project claims.

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The claims shipped with Tailor.
pub const BUILT_IN: &str = include_str!("../../claims.toml");

/// Every setup and claim of a claims file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimsFile {
    /// Setups by name.
    pub setup: BTreeMap<String, Setup>,
    /// Claims in the order they are reported.
    pub claim: Vec<Claim>,
    /// Published statements Tailor cannot check, and why (listed on the page).
    #[serde(default)]
    pub not_reproduced: Vec<NotReproduced>,
}

/// A published statement the simulator cannot express, with the model it lacks.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct NotReproduced {
    /// The source (C3, TAP, Héron, Euro-Par, Hector...).
    pub paper: String,
    /// Section, figure or table.
    pub source: String,
    /// The statement in words.
    pub text: String,
    /// What Tailor lacks to check it.
    pub reason: String,
}

/// A built-in preset plus overrides.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Setup {
    /// The preset it starts from.
    pub preset: String,
    /// `--set` overrides for the full run.
    pub set: Vec<String>,
    /// Overrides added for `--quick`.
    #[serde(default)]
    pub quick: Vec<String>,
}

/// How a claim compares its two sides.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// `a / b < 1`.
    Lower,
    /// `a / b > 1`.
    Higher,
    /// `|a / b - 1| <= tolerance`.
    Similar,
    /// The share of `a`'s runs with the metric at most `threshold` reaches `published`
    /// (exceeds it when `strict`).
    Share,
    /// `a`'s metric (median over seeds) is at most `published`, within `tolerance` of it.
    #[serde(rename = "at_most")]
    AtMost,
    /// `a`'s metric varies less between seeds (the paper's scenarios) than `b`'s: the
    /// interquartile range of `a`'s values over that of `b`'s is below 1 ("the most stable").
    Steadier,
}

/// A figure read off one run.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Read latency percentiles and moments, in ms.
    P50,
    P95,
    P99,
    P999,
    Max,
    Mean,
    /// Completed requests per second.
    Throughput,
    /// Offered requests per second (with `aggregate = "max_stable"`: the largest rate served
    /// stably).
    Offered,
    /// 99th percentile of the read stretch.
    StretchP99,
    /// Max weighted flow over the LP lower bound.
    BoundRatio,
    /// Hedged copies sent per read (speculative retry's extra load).
    HedgeRatio,
    /// Mean latency of small reads over that of large ones (`workload.large_threshold`).
    SmallOverLarge,
    /// The multi-gets' p99 and p99.9 (from release to the last key's answer), in ms.
    MgetP99,
    MgetP999,
}

/// How the runs of one seed that a side matches become one value.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Aggregate {
    /// Exactly one run must match.
    #[default]
    One,
    /// The largest value over the matching runs (e.g. a saturation throughput over a sweep).
    Max,
    /// The largest value over the matching runs served stably: throughput at least
    /// [`STABLE_SHARE`] of the offered rate (a saturation point that does not count work
    /// completed by starving part of the requests).
    #[serde(rename = "max_stable")]
    MaxStable,
}

/// The share of the offered rate a run must complete to count as stable.
pub const STABLE_SHARE: f64 = 0.99;

/// One side of a comparison: a strategy pair.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Side {
    /// Replica selector.
    pub selector: String,
    /// Local policy (any when absent).
    #[serde(default)]
    pub local: Option<String>,
    /// The setup whose runs this side reads, when not the claim's (a spec option such as
    /// hedging compared with and without): both setups must run the same seeds.
    #[serde(default)]
    pub setup: Option<String>,
}

/// A verdict on a claim.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verdict {
    /// Contradicted: the effect goes the other way (or is absent).
    #[serde(rename = "fails")]
    Fails,
    /// The direction holds but with less than half the published effect.
    #[serde(rename = "sign only")]
    SignOnly,
    /// Reproduced.
    #[serde(rename = "holds")]
    Holds,
}

impl std::fmt::Display for Metric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // the name the claims file uses
        let name = serde_json::to_value(self).ok().and_then(|v| v.as_str().map(str::to_string));
        f.write_str(name.as_deref().unwrap_or("?"))
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Verdict::Fails => "fails",
            Verdict::SignOnly => "sign only",
            Verdict::Holds => "holds",
        })
    }
}

/// A published statement and how to check it.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Claim {
    /// Stable identifier.
    pub id: String,
    /// The source (C3, TAP, Héron, Euro-Par, Hector...).
    pub paper: String,
    /// Section, figure or table.
    pub source: String,
    /// The statement in words.
    pub text: String,
    /// The setup whose runs it reads.
    pub setup: String,
    /// How `a` and `b` compare.
    pub kind: Kind,
    /// What is compared.
    pub metric: Metric,
    /// Swept parameters the runs must have (dotted path → value).
    #[serde(default)]
    pub at: BTreeMap<String, String>,
    /// How one seed's matching runs become one value.
    #[serde(default)]
    pub aggregate: Aggregate,
    /// The side the claim is about.
    pub a: Side,
    /// The side it is compared with (absent for `share`).
    #[serde(default)]
    pub b: Option<Side>,
    /// The published value: `a / b` for lower/higher, the share for `share`.
    #[serde(default)]
    pub published: Option<f64>,
    /// `similar`: the largest relative difference that still counts as similar.
    #[serde(default)]
    pub tolerance: Option<f64>,
    /// `share`: the metric's bound.
    #[serde(default)]
    pub threshold: Option<f64>,
    /// `share`: the share must exceed `published` ("more than"), not just reach it.
    #[serde(default)]
    pub strict: bool,
    /// Whether the published setup could be expressed exactly: `exact`, or
    /// `approximate: <why>`.
    pub setup_fidelity: String,
    /// Spec fields (dotted paths) whose values in the setup the page shows beside the claim,
    /// e.g. the score a selector ranked with.
    #[serde(default)]
    pub shows: Vec<String>,
    /// The verdict the project claims today: a worse one is a regression.
    pub expected: Verdict,
    /// Evidence for a claim that does not hold.
    #[serde(default)]
    pub note: Option<String>,
}

impl ClaimsFile {
    /// Parse and check a claims file: every claim names a known setup, has the fields its
    /// kind needs, and ids are unique.
    pub fn parse(text: &str) -> Result<ClaimsFile> {
        let file: ClaimsFile = toml::from_str(text).context("reading the claims file")?;
        let mut seen = std::collections::BTreeSet::new();
        for c in &file.claim {
            if !seen.insert(&c.id) {
                bail!("claim `{}` appears twice", c.id);
            }
            for setup in c.setups() {
                if !file.setup.contains_key(setup) {
                    bail!("claim `{}` names setup `{setup}`, which the file does not define", c.id);
                }
            }
            c.check().with_context(|| format!("claim `{}`", c.id))?;
        }
        Ok(file)
    }

    /// The claims of `paper` (case-insensitive, accents and dashes ignored), or all of them.
    pub fn select(&self, paper: &str) -> Result<Vec<&Claim>> {
        if paper.eq_ignore_ascii_case("all") {
            return Ok(self.claim.iter().collect());
        }
        let picked: Vec<&Claim> = self.claim.iter().filter(|c| fold(&c.paper) == fold(paper)).collect();
        if picked.is_empty() {
            let mut papers: Vec<&str> = self.claim.iter().map(|c| c.paper.as_str()).collect();
            papers.dedup();
            bail!("no claims from `{paper}`; known sources: {} (or `all`)", papers.join(", "));
        }
        Ok(picked)
    }
}

/// A source name folded for matching: lowercase ASCII letters and digits only (`Héron` → `hron`
/// matches `heron` after folding `é` to `e`).
fn fold(name: &str) -> String {
    name.chars()
        .map(|c| match c {
            'é' | 'è' | 'É' => 'e',
            c => c.to_ascii_lowercase(),
        })
        .filter(char::is_ascii_alphanumeric)
        .collect()
}

impl Claim {
    /// The setup whose runs `side` reads.
    pub fn setup_of<'a>(&'a self, side: &'a Side) -> &'a str {
        side.setup.as_deref().unwrap_or(&self.setup)
    }

    /// Every setup the claim reads, its own first.
    pub fn setups(&self) -> Vec<&str> {
        let mut all = vec![self.setup.as_str()];
        for side in std::iter::once(&self.a).chain(self.b.as_ref()) {
            let s = self.setup_of(side);
            if !all.contains(&s) {
                all.push(s);
            }
        }
        all
    }

    fn check(&self) -> Result<()> {
        let need = |what: &str, v: Option<f64>| match v {
            Some(x) if x.is_finite() && x > 0.0 => Ok(()),
            Some(x) => bail!("`{what}` must be a positive number, not {x}"),
            None => bail!("a `{:?}` claim needs `{what}`", self.kind),
        };
        if self.strict && self.kind != Kind::Share {
            bail!("`strict` applies to `share` claims only");
        }
        match self.kind {
            Kind::Lower | Kind::Higher | Kind::Similar | Kind::Steadier if self.b.is_none() => {
                bail!("needs a side `b`")
            }
            Kind::Lower if self.published.is_some_and(|p| p >= 1.0) => {
                bail!("`published` of a `lower` claim is below 1")
            }
            Kind::Higher if self.published.is_some_and(|p| p <= 1.0) => {
                bail!("`published` of a `higher` claim is above 1")
            }
            Kind::Similar => need("tolerance", self.tolerance),
            Kind::Share => need("threshold", self.threshold).and(need("published", self.published)),
            Kind::AtMost => need("published", self.published).and(need("tolerance", self.tolerance)),
            _ => Ok(()),
        }?;
        self.fidelity().map(|_| ())
    }

    /// `None` when the published setup is expressed exactly, else why it is approximate.
    pub fn fidelity(&self) -> Result<Option<&str>> {
        match self.setup_fidelity.strip_prefix("approximate:").map(str::trim) {
            _ if self.setup_fidelity == "exact" => Ok(None),
            Some(why) if !why.is_empty() => Ok(Some(why)),
            _ => bail!("`setup_fidelity` is \"exact\" or \"approximate: <why>\", not {:?}", self.setup_fidelity),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_claims_parse_and_name_known_presets() {
        let file = ClaimsFile::parse(BUILT_IN).unwrap();
        assert!(file.claim.len() >= 10);
        for s in file.setup.values() {
            tailor_spec::presets::preset(&s.preset).unwrap();
        }
        for paper in ["C3", "tap", "heron", "Euro-Par", "hector"] {
            assert!(!file.select(paper).unwrap().is_empty(), "{paper}");
        }
    }

    #[test]
    fn a_claim_missing_what_its_kind_needs_is_refused_by_name() {
        let text = r#"
            [setup.s]
            preset = "c3"
            set = []
            [[claim]]
            id = "x"
            paper = "C3"
            source = "here"
            text = "t"
            setup = "s"
            kind = "similar"
            metric = "p99"
            a = { selector = "c3" }
            b = { selector = "lor" }
            expected = "holds"
            setup_fidelity = "exact"
        "#;
        let err = format!("{:#}", ClaimsFile::parse(text).unwrap_err());
        assert!(err.contains("claim `x`") && err.contains("tolerance"), "{err}");
        let unknown = text.replace("setup = \"s\"", "setup = \"t\"");
        assert!(ClaimsFile::parse(&unknown).unwrap_err().to_string().contains("setup `t`"));
        assert!(ClaimsFile::parse(BUILT_IN).unwrap().select("nope").unwrap_err().to_string().contains("known sources"));
        let vague = text.replace("kind = \"similar\"", "kind = \"lower\"").replace("\"exact\"", "\"roughly\"");
        assert!(format!("{:#}", ClaimsFile::parse(&vague).unwrap_err()).contains("setup_fidelity"));
    }
}
