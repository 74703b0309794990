//! The simulator's coordinator driver: how the event loop talks to one [`CoordinatorCore`].
//! It holds only what an engine must: the one wake-up armed for the core. The engine turns the
//! actions into events; [`crate::script`] drives the same driver with scripted replicas for
//! the differential test against the store's driver.

use tailor_core::coordinator::{Action, Answer, ClientRequest, CoordinatorCore, Ticket};
use tailor_core::facts::Feedback;
use tailor_core::selector::World;
use tailor_core::time::Nanos;
use tailor_core::{NodeId, Op};

/// One simulated coordinator, on cache lines of its own, laid out so that what a request
/// touches comes first: its wake-up fields, then its core's hot bytes
/// ([`SimCoordinator::HOT_BYTES`], four lines of six). At scale a request finds its coordinator
/// out of the cache on arrival and on answer, and the engine asks for those four lines only.
#[repr(C, align(64))]
pub struct SimCoordinator {
    /// The wake-up time an event is scheduled for (`Nanos::MAX`: none).
    wake_at: Nanos,
    /// Resolution of the wake-up timer: 1 ns in the simulator; a test sets 1 ms to match the
    /// store's tokio timer.
    tick: Nanos,
    /// Its core.
    pub core: CoordinatorCore,
}

const _: () = assert!(SimCoordinator::HOT_BYTES <= 4 * 64, "what a request touches of a coordinator fits four lines");

impl SimCoordinator {
    /// Bytes from its start that a request touches: its wake-up fields and its core's hot bytes.
    pub const HOT_BYTES: usize = std::mem::offset_of!(SimCoordinator, core) + CoordinatorCore::HOT_BYTES;

    /// A coordinator around `core`, with no wake-up armed.
    pub fn new(core: CoordinatorCore) -> Self {
        SimCoordinator { core, wake_at: Nanos::MAX, tick: 1 }
    }

    /// The same, with a wake-up timer that fires only on multiples of `tick`.
    pub fn with_timer_tick(core: CoordinatorCore, tick: Nanos) -> Self {
        assert!(tick > 0, "a timer tick is at least 1 ns");
        SimCoordinator { tick, ..SimCoordinator::new(core) }
    }

    /// A client request arrives; the simulator tells the core the true value size.
    #[inline]
    pub fn request(&mut self, now: Nanos, op: Op, req: ClientRequest, world: &dyn World, out: &mut Vec<Action>) {
        match op {
            Op::Read => self.core.read(now, req, world, out),
            Op::Write => self.core.write(now, req, out),
        }
    }

    /// A replica's answer (read, shadow or write ack) arrives with its facts, lent to the core
    /// (see [`CoordinatorCore::answered`]). The simulator's answers carry no value size: the
    /// core was told the true size with the request.
    #[inline]
    pub fn answered(
        &mut self,
        now: Nanos,
        ticket: Ticket,
        answer: &mut Answer,
        world: &dyn World,
        out: &mut Vec<Action>,
    ) {
        debug_assert!(answer.value_size.is_none(), "the simulator tells sizes with requests");
        self.core.answered(now, ticket, answer, world, out);
    }

    /// Facts that answer no request (a heartbeat) arrive.
    pub fn facts(&mut self, now: Nanos, from: NodeId, feedback: Feedback, world: &dyn World, out: &mut Vec<Action>) {
        self.core.facts(now, from, feedback, world, out);
    }

    /// A scheduled wake-up fired at `now`. Only the armed one acts: one superseded by an
    /// earlier wake-up is stale. Returns whether the core was woken.
    #[inline]
    pub fn wake(&mut self, now: Nanos, world: &dyn World, out: &mut Vec<Action>) -> bool {
        if self.wake_at != now {
            return false;
        }
        self.wake_at = Nanos::MAX;
        self.core.wake(now, world, out);
        true
    }

    /// After an event's actions are carried out: the wake-up the engine must schedule, if the
    /// core now needs one earlier than the one armed (never in the past: at least `now + 1`,
    /// on the timer's next tick).
    #[inline]
    pub fn arm(&mut self, now: Nanos) -> Option<Nanos> {
        let t = self.core.next_wake()?.max(now + 1);
        // the simulator's 1 ns tick needs no rounding (a division, on every event of a timed selector)
        let t = if self.tick == 1 { t } else { t.div_ceil(self.tick) * self.tick };
        (t < self.wake_at).then(|| {
            self.wake_at = t;
            t
        })
    }
}
