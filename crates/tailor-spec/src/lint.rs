//! Guard rails: a spec that runs but would not measure what its author meant. Each finding
//! names the field; `tailor sim --strict` turns them into errors.

use crate::{ArrivalKind, Spec};
use tailor_core::workload::arrivals::rate_for_load;
use tailor_core::workload::sizes::SizeModel;

/// One finding about a spec.
#[derive(Clone, Debug, PartialEq)]
pub struct Warning {
    /// The dotted field at fault.
    pub field: String,
    /// What is wrong and what to do instead.
    pub message: String,
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

/// Findings about `spec`, built with the `--set` overrides `sets`.
pub fn lint(spec: &Spec, sets: &[String]) -> Vec<Warning> {
    let mut found = shadowed_sets(spec, sets);
    let points: Vec<Spec> = match crate::expand(spec) {
        Ok(plans) => plans.into_iter().filter(|p| p.first_seed).map(|p| p.spec).collect(),
        Err(_) => return found, // the run itself reports the bad sweep, naming it
    };
    // a sweep that crosses saturation is deliberate (a saturation-throughput study); one whose
    // every point is overloaded is not
    let overloaded: Vec<Warning> = points.iter().filter_map(overload).collect();
    if overloaded.len() == points.len() {
        found.extend(overloaded.into_iter().take(1));
    }
    found.extend(points.iter().filter_map(warmup_eats_run).take(1));
    found
}

/// A `--set` of a field the spec also sweeps is overwritten at every sweep point.
fn shadowed_sets(spec: &Spec, sets: &[String]) -> Vec<Warning> {
    sets.iter()
        .filter_map(|s| s.split_once('=').map(|(path, _)| path.trim()))
        .filter(|path| spec.sweep.contains_key(*path))
        .map(|path| Warning {
            field: path.to_string(),
            message: format!(
                "--set {path}=... has no effect: the spec sweeps it over {}; use --set 'sweep.{path}=[...]'",
                spec.sweep[path].iter().map(|v| v.to_string()).collect::<Vec<_>>().join(", ")
            ),
        })
        .collect()
}

/// Work per request relative to one read at the mean service time: shadow reads of read
/// repair and writes executed on every replica add to it.
fn work_per_request(spec: &Spec) -> f64 {
    let w = &spec.workload;
    let k = spec.cluster.replication as f64;
    w.reads * (1.0 + spec.cluster.read_repair * (k - 1.0)) + (1.0 - w.reads) * k
}

/// Mean service rate of a server relative to the base, over the fluctuation's two states.
fn mean_speed(spec: &Spec) -> f64 {
    let f = &spec.cluster.fluctuation;
    if f.interval_ms <= 0.0 {
        return 1.0;
    }
    (1.0 - f.probability) + f.probability / f.other_slowdown()
}

/// The mean nominal service time in ns and the offered request rate of an open-loop spec.
fn offered(spec: &Spec) -> Option<(f64, f64)> {
    let w = &spec.workload;
    if w.arrival != ArrivalKind::Poisson {
        return None;
    }
    // a multi-get's every key is a read: a request's nominal time is theirs together
    let keys = w.multiget.keys_per_request(w.reads);
    let mean_ns = spec.cluster.mean_service_ns(SizeModel::new(&w.sizes).ok()?.mean()) * keys;
    let (servers, workers) = (spec.cluster.servers, spec.cluster.capacity());
    let rate = if w.rate > 0.0 { w.rate } else { rate_for_load(w.load, servers, workers, mean_ns) };
    Some((mean_ns, rate))
}

/// Offered utilisation of an open-loop spec (1 = the cluster's mean capacity), if computable.
pub fn utilisation(spec: &Spec) -> Option<f64> {
    let (mean_ns, rate) = offered(spec)?;
    let capacity_rps = rate_for_load(1.0, spec.cluster.servers, spec.cluster.capacity(), mean_ns);
    Some(rate * work_per_request(spec) / (capacity_rps * mean_speed(spec)))
}

fn overload(spec: &Spec) -> Option<Warning> {
    let u = utilisation(spec)?;
    (u >= 1.0).then(|| Warning {
        field: if spec.workload.rate > 0.0 { "workload.rate" } else { "workload.load" }.into(),
        message: format!(
            "offered work is {:.0} % of the cluster's mean capacity (read repair, writes on every replica and \
             fluctuation included): queues grow for the whole run and latencies measure the run's length",
            u * 100.0
        ),
    })
}

/// An open-loop run whose warm-up covers (nearly) all of its expected duration.
fn warmup_eats_run(spec: &Spec) -> Option<Warning> {
    let w = &spec.workload;
    let (_, rate) = offered(spec)?;
    if w.warmup_ms <= 0.0 {
        return None;
    }
    let run_ms = w.requests as f64 / rate * 1e3;
    (w.warmup_ms >= 0.9 * run_ms).then(|| Warning {
        field: "workload.warmup_ms".into(),
        message: format!(
            "the warm-up ({:.0} ms) discards {} of the run's ~{run_ms:.0} ms: raise workload.requests",
            w.warmup_ms,
            if w.warmup_ms >= run_ms { "all".to_string() } else { format!("{:.0} %", w.warmup_ms / run_ms * 100.0) }
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::presets::preset;

    #[test]
    fn every_preset_is_clean_as_shipped() {
        for (name, _) in crate::presets::PRESETS {
            let spec = preset(name).unwrap();
            assert_eq!(lint(&spec, &[]), vec![], "{name}");
        }
    }

    #[test]
    fn a_set_shadowed_by_a_sweep_is_named() {
        let spec = preset("c3-text").unwrap();
        let sets = vec!["workload.load=1.5".to_string(), "workload.requests=1000".to_string()];
        let found = lint(&spec.with_overrides(&sets).unwrap(), &sets);
        assert!(
            found.iter().any(|w| w.field == "workload.load" && w.message.contains("sweep.workload.load")),
            "{found:?}"
        );
    }

    #[test]
    fn a_warmup_longer_than_the_run_and_an_overload_are_named() {
        let sets = ["workload.requests=20000", "sweep.cluster.fluctuation.interval_ms=[500]"];
        let spec = preset("c3").unwrap().with_overrides(&sets).unwrap();
        let found = lint(&spec, &[]);
        assert!(found.iter().any(|w| w.field == "workload.warmup_ms" && w.message.contains("all")), "{found:?}");
        let over = preset("europar").unwrap().with_overrides(&["sweep={}", "workload.load=1.2"]).unwrap();
        let found = lint(&over, &[]);
        assert!(found.iter().any(|w| w.field == "workload.load" && w.message.contains("120 %")), "{found:?}");
        // c3-text's load 1.4 is 70 % of the servers' mean rate: not an overload
        let text = preset("c3-text").unwrap().with_overrides(&["sweep={}", "workload.load=1.4"]).unwrap();
        assert!((utilisation(&text).unwrap() - 1.4 * work_per_request(&text) / 2.0).abs() < 1e-9);
    }
}
