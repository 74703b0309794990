//! Which client (coordinator) issues a request.

use super::{fraction, WorkloadError};
use rand::Rng;
use serde::{Deserialize, Serialize};

/// Uneven demand across clients: `clients_fraction` of the clients issue `demand_fraction` of the
/// requests (C3's experiments: 20 % of clients issue 80 %, or 50 % issue 80 %).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DemandSkew {
    /// Share of the clients that are heavy, in `(0, 1)`.
    pub clients_fraction: f64,
    /// Share of the requests the heavy clients issue, in `[0, 1]`.
    pub demand_fraction: f64,
}

/// Draws the client that issues each request.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClientSampler {
    clients: u32,
    /// Clients `0..heavy` are heavy and share `demand` of the requests; `heavy == clients`
    /// means no skew.
    heavy: u32,
    demand: f64,
}

impl ClientSampler {
    /// A sampler over clients `0..clients`, uniform without `skew`.
    ///
    /// With `skew`, the heavy clients are the first `round(clients_fraction * clients)` ids
    /// (at least 1); each group draws uniformly among its members. When rounding leaves every
    /// client heavy (e.g. a single client), the skew cannot apply and the draw is uniform.
    pub fn new(clients: u32, skew: Option<DemandSkew>) -> Result<ClientSampler, WorkloadError> {
        if clients == 0 {
            return Err(WorkloadError::invalid("clients", 0, "needs at least one client"));
        }
        let Some(skew) = skew else {
            return Ok(ClientSampler { clients, heavy: clients, demand: 1.0 });
        };
        if !(skew.clients_fraction > 0.0 && skew.clients_fraction < 1.0) {
            return Err(WorkloadError::invalid_f64(
                "demand_skew.clients_fraction",
                skew.clients_fraction,
                "must be strictly between 0 and 1",
            ));
        }
        let demand = fraction("demand_skew.demand_fraction", skew.demand_fraction)?;
        let heavy = ((skew.clients_fraction * f64::from(clients)).round() as u32).clamp(1, clients);
        debug_assert!((1..=clients).contains(&heavy) && (0.0..=1.0).contains(&demand), "{heavy} heavy of {clients}");
        Ok(ClientSampler { clients, heavy, demand })
    }

    /// Number of clients.
    pub fn clients(&self) -> u32 {
        self.clients
    }

    /// A client id in `0..clients`.
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u32 {
        debug_assert!(
            self.heavy >= 1 && self.heavy <= self.clients,
            "{} heavy of {} clients",
            self.heavy,
            self.clients
        );
        if self.heavy == self.clients {
            return rng.random_range(0..self.clients);
        }
        let client = if rng.random::<f64>() < self.demand {
            rng.random_range(0..self.heavy)
        } else {
            rng.random_range(self.heavy..self.clients)
        };
        debug_assert!(client < self.clients, "client {client} of {}", self.clients);
        client
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::SeedableRng;

    fn counts(sampler: &ClientSampler, n: usize) -> Vec<u64> {
        let mut rng = SmallRng::seed_from_u64(2);
        let mut c = vec![0u64; sampler.clients() as usize];
        for _ in 0..n {
            c[sampler.sample(&mut rng) as usize] += 1;
        }
        c
    }

    #[test]
    fn top_twenty_percent_issue_eighty_percent() {
        let skew = DemandSkew { clients_fraction: 0.2, demand_fraction: 0.8 };
        let s = ClientSampler::new(150, Some(skew)).unwrap();
        let n = 300_000;
        let mut c = counts(&s, n);
        c.sort_unstable_by(|a, b| b.cmp(a));
        let top: u64 = c[..30].iter().sum();
        let share = top as f64 / n as f64;
        assert!((share - 0.8).abs() < 0.01, "top 20 % share {share}");
        // Heavy clients each get 0.8 / 30 of the requests, light ones 0.2 / 120.
        assert!(c[..30].iter().all(|&x| (7_200..8_800).contains(&x)));
        assert!(c[30..].iter().all(|&x| (350..650).contains(&x)));
    }

    #[test]
    fn half_the_clients_with_eighty_percent() {
        let skew = DemandSkew { clients_fraction: 0.5, demand_fraction: 0.8 };
        let s = ClientSampler::new(50, Some(skew)).unwrap();
        let c = counts(&s, 100_000);
        let heavy: u64 = c[..25].iter().sum();
        assert!((heavy as f64 / 100_000.0 - 0.8).abs() < 0.01);
    }

    #[test]
    fn no_skew_is_uniform_and_one_client_always_wins() {
        let c = counts(&ClientSampler::new(10, None).unwrap(), 100_000);
        assert!(c.iter().all(|&x| (9_500..10_500).contains(&x)));
        let skew = DemandSkew { clients_fraction: 0.2, demand_fraction: 0.8 };
        let c = counts(&ClientSampler::new(1, Some(skew)).unwrap(), 1_000);
        assert_eq!(c, vec![1_000]);
    }

    #[test]
    fn invalid_configs_name_the_field() {
        assert!(ClientSampler::new(0, None).unwrap_err().to_string().contains("clients = 0"));
        let bad = |cf, df| ClientSampler::new(10, Some(DemandSkew { clients_fraction: cf, demand_fraction: df }));
        assert!(bad(0.0, 0.8).unwrap_err().to_string().contains("demand_skew.clients_fraction = 0"));
        assert!(bad(1.0, 0.8).unwrap_err().to_string().contains("demand_skew.clients_fraction = 1"));
        assert!(bad(f64::NAN, 0.8).unwrap_err().to_string().contains("demand_skew.clients_fraction = NaN"));
        assert!(bad(0.2, 1.2).unwrap_err().to_string().contains("demand_skew.demand_fraction = 1.2"));
        assert!(bad(0.2, -0.2).unwrap_err().to_string().contains("demand_skew.demand_fraction = -0.2"));
    }

    #[test]
    fn skew_serde_rejects_unknown_fields() {
        let s: DemandSkew = serde_json::from_str(r#"{"clients_fraction":0.2,"demand_fraction":0.8}"#).unwrap();
        assert_eq!(s, DemandSkew { clients_fraction: 0.2, demand_fraction: 0.8 });
        assert!(serde_json::from_str::<DemandSkew>(r#"{"clients_fraction":0.2,"demand_fraction":0.8,"x":1}"#).is_err());
    }
}
