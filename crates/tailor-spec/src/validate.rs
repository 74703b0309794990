//! Range and consistency checks that the schema's types cannot express.

use crate::{ArrivalKind, Spec, SpecError};
use tailor_core::workload::KeyCountLaw;
use tailor_core::{local, selector};

fn invalid(field: &str, reason: impl Into<String>) -> SpecError {
    SpecError::Invalid { field: field.to_string(), reason: reason.into() }
}

fn positive(field: &str, v: f64) -> Result<(), SpecError> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(invalid(field, format!("must be a positive number, got {v}")))
    }
}

fn non_negative(field: &str, v: f64) -> Result<(), SpecError> {
    if v.is_finite() && v >= 0.0 {
        Ok(())
    } else {
        Err(invalid(field, format!("must be ≥ 0, got {v}")))
    }
}

fn fraction(field: &str, v: f64) -> Result<(), SpecError> {
    if (0.0..=1.0).contains(&v) {
        Ok(())
    } else {
        Err(invalid(field, format!("must be in [0, 1], got {v}")))
    }
}

impl Spec {
    /// Check every field's range and the consistency between fields.
    pub fn validate(&self) -> Result<(), SpecError> {
        let c = &self.cluster;
        if c.servers == 0 {
            return Err(invalid("cluster.servers", "must be at least 1"));
        }
        if c.replication == 0 || c.replication > c.servers || c.replication > tailor_core::ring::MAX_REPLICAS {
            return Err(invalid(
                "cluster.replication",
                format!(
                    "must be between 1 and min(servers, {}), got {}",
                    tailor_core::ring::MAX_REPLICAS,
                    c.replication
                ),
            ));
        }
        if c.vnodes == 0 {
            return Err(invalid("cluster.vnodes", "must be at least 1"));
        }
        if c.workers == 0 {
            return Err(invalid("cluster.workers", "must be at least 1"));
        }
        self.validate_shared_capacity()?;
        non_negative("cluster.network_delay_ms", c.network_delay_ms)?;
        fraction("cluster.read_repair", c.read_repair)?;
        fraction("cluster.speculative_budget", c.speculative_budget)?;
        let hedging = c.speculation().map_err(|reason| invalid("cluster.speculative_retry", reason))?.is_some();
        if c.hedge_cancel && !hedging {
            return Err(invalid("cluster.hedge_cancel", "cancels hedges: set cluster.speculative_retry too"));
        }
        self.selector.validate().map_err(|e| invalid(&e.field, e.reason))?;
        self.local.validate().map_err(|e| invalid(&e.field, e.reason))?;
        positive("cluster.service.mean_ms", c.service.mean_ms)?;
        positive("cluster.service.bandwidth_mbps", c.service.bandwidth_mbps)?;
        non_negative("cluster.service.overhead_ms", c.service.overhead_ms)?;
        non_negative("cluster.fluctuation.interval_ms", c.fluctuation.interval_ms)?;
        positive("cluster.fluctuation.factor", c.fluctuation.factor)?;
        fraction("cluster.fluctuation.probability", c.fluctuation.probability)?;
        positive("cluster.cache.hit_ms", c.cache.hit_ms)?;
        positive("cluster.cache.miss_ms", c.cache.miss_ms)?;
        self.validate_slow_servers()?;
        self.validate_faults()?;
        self.validate_topology()?;

        let w = &self.workload;
        if w.requests == 0 {
            return Err(invalid("workload.requests", "must be at least 1"));
        }
        if w.keys == 0 {
            return Err(invalid("workload.keys", "must be at least 1"));
        }
        non_negative("workload.warmup_ms", w.warmup_ms)?;
        fraction("workload.reads", w.reads)?;
        non_negative("workload.rate", w.rate)?;
        non_negative("workload.think_ms", w.think_ms)?;
        match w.arrival {
            ArrivalKind::Poisson if w.rate == 0.0 => positive("workload.load", w.load)?,
            ArrivalKind::ClosedLoop if w.outstanding == 0 => {
                return Err(invalid(
                    "workload.outstanding",
                    "a closed loop needs at least 1 outstanding request per client",
                ))
            }
            ArrivalKind::Trace if w.trace.is_empty() => {
                return Err(invalid("workload.trace", "arrival = \"trace\" needs a trace file path"))
            }
            _ => {}
        }
        tailor_core::workload::popularity::KeySampler::new(&w.popularity, w.keys)
            .map_err(|e| invalid("workload.popularity", e.to_string()))?;
        tailor_core::workload::sizes::SizeModel::new(&w.sizes).map_err(|e| invalid("workload.sizes", e.to_string()))?;
        self.validate_multiget()?;
        if let Some(skew) = w.skew {
            tailor_core::workload::clients::ClientSampler::new(c.coordinators() as u32, Some(skew))
                .map_err(|e| invalid("workload.skew", e.to_string()))?;
        }

        if self.seeds.is_empty() {
            return Err(invalid("seeds", "at least one seed is needed"));
        }
        if self.compare.selectors.is_empty() {
            return Err(invalid("compare.selectors", "name at least one selector"));
        }
        if self.compare.locals.is_empty() {
            return Err(invalid("compare.locals", "name at least one local policy"));
        }
        for name in &self.compare.selectors {
            if !selector::is_known(name) {
                return Err(invalid(
                    "compare.selectors",
                    format!("unknown selector `{name}` (known: {})", selector::known_names()),
                ));
            }
        }
        for name in &self.compare.locals {
            if !local::is_known(name) {
                return Err(invalid(
                    "compare.locals",
                    format!("unknown local policy `{name}` (known: {})", local::known_names()),
                ));
            }
        }
        if self.bound.enabled {
            if self.bound.requests == 0 {
                return Err(invalid("bound.requests", "must be at least 1"));
            }
            positive("bound.tolerance", self.bound.tolerance)?;
        }
        positive("report.window_ms", self.report.window_ms)?;
        if self.report.cdf_points < 2 {
            return Err(invalid("report.cdf_points", "must be at least 2"));
        }
        Ok(())
    }
}

impl Spec {
    /// A shared capacity is at most the workers that use it, and not combined with the stops
    /// of slowed servers (the shared model has no stopped time).
    fn validate_shared_capacity(&self) -> Result<(), SpecError> {
        let c = &self.cluster;
        if c.shared_capacity > c.workers {
            return Err(invalid(
                "cluster.shared_capacity",
                format!("must be at most cluster.workers ({}), got {}", c.workers, c.shared_capacity),
            ));
        }
        if c.shared_capacity > 0 && !c.slow_servers.is_empty() {
            return Err(invalid("cluster.shared_capacity", "cannot be combined with cluster.slow_servers"));
        }
        Ok(())
    }

    /// A multi-get reads at most `MAX_KEYS` distinct keys out of the data set, a share of reads
    /// in (0, 1]; a varying count needs a range; a trace fixes each request's key, so it cannot
    /// also hold multi-gets.
    fn validate_multiget(&self) -> Result<(), SpecError> {
        let (w, m) = (&self.workload, &self.workload.multiget);
        if !m.enabled() {
            if m.keys_max > 0 {
                return Err(invalid("workload.multiget.keys_max", "needs workload.multiget.keys (the fewest keys)"));
            }
            return Ok(());
        }
        let most = u64::from(crate::MultigetSpec::MAX_KEYS).min(w.keys);
        for (field, n) in [("keys", m.keys), ("keys_max", m.keys_max)] {
            if u64::from(n) > most {
                return Err(invalid(
                    &format!("workload.multiget.{field}"),
                    format!("must be at most min({}, workload.keys) = {most}, got {n}", crate::MultigetSpec::MAX_KEYS),
                ));
            }
        }
        if m.keys_max > 0 && m.keys_max < m.keys {
            let why = format!("must be 0 (always `keys`) or at least keys = {}, got {}", m.keys, m.keys_max);
            return Err(invalid("workload.multiget.keys_max", why));
        }
        if m.keys_law != KeyCountLaw::default() && m.keys_max <= m.keys {
            return Err(invalid(
                "workload.multiget.keys_law",
                "draws a count between keys and keys_max: set keys_max above keys",
            ));
        }
        if !(m.fraction > 0.0 && m.fraction <= 1.0) {
            return Err(invalid("workload.multiget.fraction", format!("must be in (0, 1], got {}", m.fraction)));
        }
        if w.arrival == ArrivalKind::Trace {
            return Err(invalid("workload.multiget.keys", "multi-gets cannot be combined with arrival = \"trace\""));
        }
        Ok(())
    }

    /// Each slowed server exists once, with a duty in (0, 1) and a period of at least 1 µs.
    fn validate_slow_servers(&self) -> Result<(), SpecError> {
        let c = &self.cluster;
        for (i, s) in c.slow_servers.iter().enumerate() {
            let field = |name: &str| format!("cluster.slow_servers[{i}].{name}");
            if s.server >= c.servers {
                return Err(invalid(
                    &field("server"),
                    format!("must be below cluster.servers ({}), got {}", c.servers, s.server),
                ));
            }
            if c.slow_servers[..i].iter().any(|o| o.server == s.server) {
                return Err(invalid(&field("server"), format!("server {} is slowed twice", s.server)));
            }
            if !(s.duty > 0.0 && s.duty < 1.0) {
                return Err(invalid(&field("duty"), format!("must be in (0, 1), got {}", s.duty)));
            }
            if !(s.period_ms.is_finite() && s.period_ms >= 1e-3) {
                return Err(invalid(&field("period_ms"), format!("must be at least 0.001, got {}", s.period_ms)));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::Spec;

    #[test]
    fn default_is_valid() {
        Spec::default().validate().unwrap();
    }

    #[test]
    fn errors_name_the_field() {
        for (set, field) in [
            ("cluster.replication=20", "cluster.replication"),
            ("cluster.workers=0", "cluster.workers"),
            ("cluster.shared_capacity=5", "cluster.shared_capacity"),
            ("cluster.read_repair=1.5", "cluster.read_repair"),
            ("workload.reads=-0.1", "workload.reads"),
            ("compare.selectors=c3,warp", "compare.selectors"),
            ("compare.locals=lifo", "compare.locals"),
            ("seeds=[]", "seeds"),
            ("workload.arrival=trace", "workload.trace"),
            ("cluster.speculative_retry=soon", "cluster.speculative_retry"),
            ("cluster.speculative_budget=2", "cluster.speculative_budget"),
            ("cluster.hedge_cancel=true", "cluster.hedge_cancel"),
            ("workload.multiget.keys=10001", "workload.multiget.keys"),
            ("workload.multiget={keys=10,fraction=0}", "workload.multiget.fraction"),
            ("workload.multiget={keys=10,keys_max=5}", "workload.multiget.keys_max"),
            ("workload.multiget={keys=10,keys_max=10001}", "workload.multiget.keys_max"),
            ("workload.multiget.keys_max=5", "workload.multiget.keys_max"),
            ("workload.multiget={keys=10,keys_law=\"log-uniform\"}", "workload.multiget.keys_law"),
            ("cluster.slow_servers=[{server=12,duty=0.5,period_ms=100}]", "cluster.slow_servers[0].server"),
            ("cluster.slow_servers=[{server=1,duty=1,period_ms=100}]", "cluster.slow_servers[0].duty"),
            ("cluster.slow_servers=[{server=1,duty=0.5,period_ms=0}]", "cluster.slow_servers[0].period_ms"),
            (
                "cluster.slow_servers=[{server=1,duty=0.5,period_ms=100},{server=1,duty=0.2,period_ms=10}]",
                "cluster.slow_servers[1].server",
            ),
        ] {
            let err = Spec::default().with_overrides(&[set]).unwrap_err().to_string();
            assert!(err.contains(field), "{set}: {err}");
        }
    }

    #[test]
    fn hedge_cancel_is_absent_by_default_and_round_trips() {
        assert!(!Spec::default().to_toml().contains("hedge_cancel"));
        let spec =
            Spec::default().with_overrides(&["cluster.speculative_retry=95p", "cluster.hedge_cancel=true"]).unwrap();
        spec.validate().unwrap();
        assert!(Spec::from_toml(&spec.to_toml()).unwrap().cluster.hedge_cancel);
    }

    #[test]
    fn shared_capacity_is_absent_by_default_and_round_trips() {
        assert!(!Spec::default().to_toml().contains("shared_capacity"));
        let spec = Spec::default().with_overrides(&["cluster.workers=32", "cluster.shared_capacity=2"]).unwrap();
        spec.validate().unwrap();
        assert_eq!(Spec::from_toml(&spec.to_toml()).unwrap().cluster.shared_capacity, 2);
        assert_eq!(spec.cluster.capacity(), 2);
        let stops = ["cluster.shared_capacity=1", "cluster.slow_servers=[{server=1,duty=0.5,period_ms=100}]"];
        let err = Spec::default().with_overrides(&stops).unwrap_err().to_string();
        assert!(err.contains("cluster.shared_capacity"), "{err}");
    }

    #[test]
    fn multiget_is_absent_by_default_and_round_trips() {
        assert!(!Spec::default().to_toml().contains("multiget"));
        let spec = Spec::default().with_overrides(&["workload.multiget={keys=10,fraction=0.5}"]).unwrap();
        let back = Spec::from_toml(&spec.to_toml()).unwrap();
        assert_eq!(back.workload.multiget, spec.workload.multiget);
        assert_eq!((back.workload.multiget.keys, back.workload.multiget.fraction), (10, 0.5));
        let varying =
            Spec::default().with_overrides(&["workload.multiget={keys=2,keys_max=40,keys_law=\"log-uniform\"}"]);
        let varying = varying.unwrap();
        assert_eq!(Spec::from_toml(&varying.to_toml()).unwrap().workload.multiget, varying.workload.multiget);
        let m = &varying.workload.multiget;
        assert!(m.mean_keys() > 2.0 && m.mean_keys() < 21.0, "log-uniform sits below the middle: {}", m.mean_keys());
        assert_eq!(m.keys_per_request(1.0), m.mean_keys());
        let keys_only = Spec::from_toml("[workload.multiget]\nkeys = 4\n").unwrap();
        assert_eq!(keys_only.workload.multiget.fraction, 1.0);
        let err = Spec::default().with_overrides(&["workload.keys=5", "workload.multiget.keys=6"]).unwrap_err();
        assert!(err.to_string().contains("workload.multiget.keys"), "{err}");
    }

    #[test]
    fn slow_servers_round_trip_through_the_spec_text_and_are_absent_by_default() {
        assert!(!Spec::default().to_toml().contains("slow_servers"));
        let spec =
            Spec::default().with_overrides(&["cluster.slow_servers=[{server=2,duty=0.5,period_ms=100}]"]).unwrap();
        let back = Spec::from_toml(&spec.to_toml()).unwrap();
        assert_eq!(back.cluster.slow_servers, spec.cluster.slow_servers);
        assert_eq!(back.cluster.slow_servers[0].server, 2);
    }

    #[test]
    fn unknown_toml_field_is_an_error_with_line() {
        let err = Spec::from_toml("[cluster]\nservers = 5\nsrevers = 3\n").unwrap_err().to_string();
        assert!(err.contains("srevers") && err.contains("line 3"), "{err}");
        let err = Spec::from_toml("[workload]\nrequests = \"many\"\n").unwrap_err().to_string();
        assert!(err.contains("line 2"), "{err}");
    }
}
