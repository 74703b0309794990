//! Local queue policies registered at run time ([`super`]).
//!
//! A plugin policy orders jobs by what a replica knows of them ([`JobMeta`]) and nothing else:
//! the engine's payloads (an event handle, a reply channel) stay in Rust, in [`Keyed`], which
//! hands the policy a ticket per job and runs the job whose ticket it gets back.

use super::{check_name, PluginError, Table};
use crate::local::{LocalQueue, LOCALS};
use crate::model::JobMeta;
use crate::time::Nanos;
use std::collections::BTreeMap;
use std::sync::Arc;

/// A local policy without payloads: it keeps tickets and says which runs next.
pub trait Order: Send {
    /// Job `ticket` arrived at `now`.
    fn push(&mut self, now: Nanos, ticket: u64, meta: &JobMeta);
    /// A worker freed at `now`: the ticket of the job to run next (one it holds).
    fn pop(&mut self, now: Nanos) -> Option<u64>;
    /// The policy broke its contract (`reason`); the queue ran its oldest job instead. A front
    /// end reports this to its user after the run.
    fn fault(&mut self, _reason: &str) {}
}

/// Builds a plugin policy for one replica from its seed.
pub type Factory = Arc<dyn Fn(u64) -> Box<dyn Order> + Send + Sync>;

static PLUGINS: Table<Factory> = Table::new();

/// Register local policy `name` (replacing a plugin of that name).
pub fn register(name: &str, factory: Factory) -> Result<(), PluginError> {
    check_name(name)?;
    if LOCALS.contains(&name) {
        return Err(PluginError::BuiltIn(name.to_string(), "local policy"));
    }
    PLUGINS.insert(name, factory);
    Ok(())
}

/// Forget plugin policy `name`; whether there was one.
pub fn unregister(name: &str) -> bool {
    PLUGINS.remove(name)
}

/// Whether a plugin policy called `name` is registered.
pub fn is_registered(name: &str) -> bool {
    PLUGINS.get(name).is_some()
}

/// Every plugin policy's name, in the order they were registered.
pub fn names() -> Vec<String> {
    PLUGINS.names()
}

/// The plugin policy called `name`, as a queue of payloads `T`.
pub fn build<T: Send + 'static>(name: &str, seed: u64) -> Option<Box<dyn LocalQueue<T>>> {
    let factory = PLUGINS.get(name)?;
    Some(Box::new(Keyed { order: factory(seed), waiting: BTreeMap::new(), next_ticket: 0 }))
}

/// A [`LocalQueue`] over an [`Order`]: payloads wait here under their tickets.
struct Keyed<T> {
    order: Box<dyn Order>,
    /// Waiting jobs by ticket; tickets rise with arrival, so the first is the oldest.
    waiting: BTreeMap<u64, (JobMeta, T)>,
    next_ticket: u64,
}

impl<T: Send> LocalQueue<T> for Keyed<T> {
    fn push(&mut self, now: Nanos, meta: JobMeta, payload: T) {
        let ticket = self.next_ticket;
        self.next_ticket += 1;
        self.order.push(now, ticket, &meta);
        self.waiting.insert(ticket, (meta, payload));
    }

    fn pop(&mut self, now: Nanos) -> Option<(JobMeta, T)> {
        if self.waiting.is_empty() {
            return None;
        }
        let chosen = self.order.pop(now);
        if let Some(job) = chosen.and_then(|t| self.waiting.remove(&t)) {
            return Some(job);
        }
        self.order.fault(&match chosen {
            Some(t) => format!("pop returned ticket {t}, which is not waiting"),
            None => format!("pop returned nothing while {} jobs wait", self.waiting.len()),
        });
        self.waiting.pop_first().map(|(_, job)| job)
    }

    fn len(&self) -> usize {
        self.waiting.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::local::testkit::job;

    /// Last in, first out; pops a bogus ticket on request.
    #[derive(Default)]
    struct Lifo {
        stack: Vec<u64>,
        faults: Arc<std::sync::Mutex<Vec<String>>>,
        bogus: bool,
    }
    impl Order for Lifo {
        fn push(&mut self, _: Nanos, ticket: u64, _: &JobMeta) {
            self.stack.push(ticket);
        }
        fn pop(&mut self, _: Nanos) -> Option<u64> {
            if self.bogus {
                return Some(99);
            }
            self.stack.pop()
        }
        fn fault(&mut self, reason: &str) {
            self.faults.lock().unwrap().push(reason.to_string());
        }
    }

    #[test]
    fn payloads_follow_the_policys_order() {
        register("test-lifo", Arc::new(|_| Box::new(Lifo::default()))).unwrap();
        assert_eq!(
            register("fcfs", Arc::new(|_| Box::new(Lifo::default()))).err().unwrap().to_string(),
            "`fcfs` is a built-in local policy; give the new one another name"
        );
        let mut q = crate::local::build::<&str>("test-lifo", &Default::default(), 1).unwrap();
        q.push(0, job(1, 0, 5), "a");
        q.push(1, job(2, 1, 5), "b");
        assert_eq!(q.len(), 2);
        assert_eq!(q.pop(2).map(|(m, p)| (m.id, p)), Some((2, "b")));
        assert_eq!(q.pop(3).map(|(m, p)| (m.id, p)), Some((1, "a")));
        assert!(q.pop(4).is_none());
        assert!(unregister("test-lifo"));
    }

    #[test]
    fn a_broken_policy_is_reported_and_the_oldest_job_runs() {
        let faults = Arc::new(std::sync::Mutex::new(Vec::new()));
        let order = Lifo { faults: faults.clone(), bogus: true, ..Default::default() };
        let mut q = Keyed { order: Box::new(order), waiting: BTreeMap::new(), next_ticket: 0 };
        q.push(0, job(7, 0, 5), ());
        q.push(0, job(8, 0, 5), ());
        assert_eq!(q.pop(1).map(|(m, _)| m.id), Some(7));
        assert_eq!(faults.lock().unwrap().as_slice(), ["pop returned ticket 99, which is not waiting"]);
    }
}
