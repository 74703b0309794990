//! Expanding a spec into runs: swept point × selector × local policy × seed.

use crate::overrides::apply_override;
use crate::{Spec, SpecError};
use std::collections::BTreeMap;

/// One run to execute: the effective spec for one point, one strategy pair, one seed.
#[derive(Clone, Debug, PartialEq)]
pub struct RunPlan {
    /// Position in the expansion (results keep this order).
    pub index: usize,
    /// Replica selector.
    pub selector: String,
    /// Local policy.
    pub local: String,
    /// Seed.
    pub seed: u64,
    /// Whether this is the first seed of its combination (per-server series are kept for it).
    pub first_seed: bool,
    /// Swept parameters of this point, dotted path → value as text.
    pub params: BTreeMap<String, String>,
    /// The spec with this point's swept values applied.
    pub spec: Spec,
}

/// Every run of `spec`, in a stable order: sweep points (in path order, last path fastest),
/// then selectors, then locals, then seeds.
pub fn expand(spec: &Spec) -> Result<Vec<RunPlan>, SpecError> {
    let mut points: Vec<BTreeMap<String, toml::Value>> = vec![BTreeMap::new()];
    for (path, values) in &spec.sweep {
        if values.is_empty() {
            return Err(SpecError::Invalid { field: format!("sweep.{path}"), reason: "no values".into() });
        }
        points = points
            .into_iter()
            .flat_map(|p| {
                values.iter().map(move |v| {
                    let mut q = p.clone();
                    q.insert(path.clone(), v.clone());
                    q
                })
            })
            .collect();
    }
    let mut runs = Vec::new();
    for point in points {
        let mut table = toml::Table::try_from(spec).expect("a spec always serialises");
        table.remove("sweep");
        let mut params = BTreeMap::new();
        for (path, value) in &point {
            let text = match value {
                toml::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            apply_override(&mut table, path, &text)?;
            params.insert(path.clone(), text);
        }
        let point_spec: Spec = table
            .try_into()
            .map_err(|e: toml::de::Error| SpecError::Parse(format!("sweep point {params:?}: {}", e.message())))?;
        point_spec.validate()?;
        for selector in &spec.compare.selectors {
            for local in &spec.compare.locals {
                for (i, &seed) in spec.seeds.iter().enumerate() {
                    runs.push(RunPlan {
                        index: runs.len(),
                        selector: selector.clone(),
                        local: local.clone(),
                        seed,
                        first_seed: i == 0,
                        params: params.clone(),
                        spec: point_spec.clone(),
                    });
                }
            }
        }
    }
    Ok(runs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expands_sweeps_strategies_and_seeds() {
        let spec = Spec::default()
            .with_overrides(&[
                "sweep.workload.load=0.5,0.9",
                "sweep.cluster.workers=1,2",
                "compare.selectors=lor,c3",
                "seeds=[1,2,3]",
            ])
            .unwrap();
        let runs = expand(&spec).unwrap();
        assert_eq!(runs.len(), 4 * 2 * 3);
        assert_eq!(runs[0].params["cluster.workers"], "1");
        assert_eq!(runs[0].params["workload.load"], "0.5");
        assert_eq!(runs[0].spec.cluster.workers, 1);
        assert_eq!(runs[6].spec.workload.load, 0.9);
        assert!(runs[0].first_seed && !runs[1].first_seed);
        assert_eq!(runs.iter().map(|r| r.index).collect::<Vec<_>>(), (0..24).collect::<Vec<_>>());
    }

    #[test]
    fn bad_sweep_value_is_named() {
        let spec = Spec::default().with_overrides(&["sweep.cluster.workers=two"]).unwrap();
        let err = expand(&spec).unwrap_err();
        assert!(err.to_string().contains("workers") || err.to_string().contains("integer"), "{err}");
        let spec = Spec::default().with_overrides(&["sweep.cluster.nope=1"]).unwrap();
        assert!(expand(&spec).unwrap_err().to_string().contains("nope"));
    }
}
