//! The selector's probes (Prequal): the core's `Send`s of kind `Probe` go out through the
//! transport apart from any request (a probe's ticket names the read that triggered it, which
//! may be answered long before the probe), and each answer goes back to the core's `probed`.
//! A probe that gets no answer in time is counted lost and forgotten: the core keeps nothing
//! per probe, so a lost one leaks no state and holds back no read.

use super::{Coordinator, Inner};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tailor_core::facts::ProbeReply;
use tailor_core::model::NodeId;
use tailor_core::selector::Blind;

impl Coordinator {
    /// Send a probe to `replica`, started once the lock is released as copies are.
    pub(super) fn probe(self: &Arc<Self>, inner: &mut Inner, replica: NodeId) {
        self.metrics.probes_sent.fetch_add(1, Ordering::Relaxed);
        let me = self.clone();
        let here = self.transport.runs_here(replica);
        inner.outbox.push((
            here,
            Box::pin(async move {
                let reply = me.transport.probe(replica).await;
                me.probed(replica, reply);
            }),
        ));
    }

    /// A probe to `replica` ended: its answer to the core, or counted lost.
    fn probed(self: &Arc<Self>, replica: NodeId, reply: Option<ProbeReply>) {
        let Some(reply) = reply else {
            self.metrics.probes_lost.fetch_add(1, Ordering::Relaxed);
            return;
        };
        self.metrics.probes_replied.fetch_add(1, Ordering::Relaxed);
        let mut inner = self.lock();
        let mut out = self.prepare(&mut inner);
        inner.core.probed(self.now(), replica, reply, &Blind, &mut out);
        self.carry_out(&mut inner, out);
        self.unlock_and_send(inner);
    }
}
