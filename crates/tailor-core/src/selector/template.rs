//! `template`: the selector `tailor new selector NAME` copies (renamed) to start a new one. It
//! sends each read to the replica with the shortest queue its last response reported, ties
//! broken at random. Compiled and tested with the crate (not registered), so the copy starts
//! out compiling and passing its test.
//!
//! The API in brief (`selector/mod.rs`, docs/write-a-strategy.md): the engine calls `select`
//! for every read and acts on the [`Decision`]; `on_sent` when a copy left; `on_response` with
//! the replica's facts ([`crate::facts::Feedback`]) when it answered. `now` is passed in: a
//! selector keeps no clock, so the same events give the same decisions in every engine.

use super::registry::{Fact, Needs, Registration};
use super::{argmin_random_ties, Decision, ReplicaSelector, Rng, SelectorEnv, World};
use crate::facts::Response;
use crate::model::{NodeId, RequestView};
use crate::time::Nanos;

/// What one coordinator's `template` selector keeps.
pub struct Template {
    /// The queue length each replica last reported (index = node id; 0 before any response).
    queue: Vec<u32>,
    /// Its private random stream, seeded by the engine (runs are a function of their seed).
    rng: Rng,
}

impl Template {
    /// A selector for one coordinator of the cluster `env` describes.
    pub fn new(env: &SelectorEnv) -> Self {
        Template { queue: vec![0; env.servers], rng: Rng::new(env.seed, 0x7e3a_17e5) }
    }
}

impl ReplicaSelector for Template {
    fn select(&mut self, _now: Nanos, _req: &RequestView, replicas: &[NodeId], _world: &dyn World) -> Decision {
        let queue = &self.queue;
        let best = argmin_random_ties(replicas, &mut self.rng, |&r| queue[r as usize] as f64);
        Decision::to(replicas[best.expect("the engine offers at least one replica")])
    }

    fn on_response(&mut self, _now: Nanos, resp: &Response) {
        // stale feedback (older than what this coordinator applied) still counts a response,
        // but its facts must not overwrite fresher ones
        if resp.fresh {
            self.queue[resp.replica as usize] = resp.feedback.queue_len;
        }
    }
}

/// `template`: what it is, where it comes from, what it needs from an engine.
pub const REGISTRATION: Registration = Registration {
    name: "template",
    source: "shortest reported queue (a template)",
    // the facts it reads: an engine that cannot report them refuses to run it, naming them
    needs: Needs { facts: &[Fact::QueueLen], ..Needs::NOTHING },
    build: |_cfg, env| Box::new(Template::new(env)),
    validate: super::registry::no_tunables,
};

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::super::Blind;
    use super::*;
    use crate::facts::Feedback;
    use crate::model::SizeHint;

    #[test]
    fn reads_go_to_the_shortest_reported_queue() {
        let mut s = Template::new(&env(5));
        let replicas = [0, 1, 2];
        s.on_response(0, &response(1, 0, 0, false, Feedback { queue_len: 4, ..Feedback::default() }));
        s.on_response(0, &response(2, 1, 0, false, Feedback { queue_len: 1, ..Feedback::default() }));
        s.on_response(0, &response(3, 2, 0, false, Feedback { queue_len: 9, ..Feedback::default() }));
        let d = s.select(0, &read(4, 0, SizeHint::default()), &replicas, &Blind);
        assert_eq!(replica_of(d), 1);
    }

    #[test]
    fn its_registration_builds_it_and_says_what_it_needs() {
        let mut built = (REGISTRATION.build)(&crate::selector::SelectorConfig::default(), &env(5));
        assert!(matches!(built.select(0, &read(1, 0, SizeHint::default()), &[0, 1], &Blind), Decision::Send { .. }));
        assert!((REGISTRATION.validate)(&Default::default()).is_ok());
        assert!(REGISTRATION.needs.reads(Fact::QueueLen));
        // where an engine cannot feed it, it is refused with the fact named
        let cassandra = crate::selector::Engine::Cassandra { facts_polled: false };
        assert!(cassandra.refusal(&REGISTRATION.needs).unwrap().contains("queue length"));
        assert_eq!(crate::selector::Engine::Store.refusal(&REGISTRATION.needs), None);
    }
}
