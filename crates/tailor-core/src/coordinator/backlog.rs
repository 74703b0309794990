//! Reads a selector told to wait, parked per replica group in FIFO order.
//!
//! A group is keyed by its primary replica. Entries of a group are in park order, so the oldest
//! (the first to expire) is always at the front.

use super::pending::Ticket;
use crate::model::NodeId;
use crate::time::Nanos;
use std::collections::VecDeque;

/// A parked read and when it was parked.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Parked {
    /// The request.
    pub ticket: Ticket,
    /// When it was parked.
    pub since: Nanos,
}

/// Per-group FIFO queues of parked reads, with the earliest `retry_at` any selector asked for.
#[derive(Debug, Default)]
pub struct Backlog {
    groups: Vec<(NodeId, VecDeque<Parked>)>,
    parked: usize,
    /// When the selector asked to be offered the parked heads again.
    retry_at: Option<Nanos>,
}

impl Backlog {
    /// Reads parked in all groups.
    pub fn len(&self) -> usize {
        self.parked
    }

    /// True when nothing is parked.
    pub fn is_empty(&self) -> bool {
        self.parked == 0
    }

    /// Reads parked in `group`.
    pub fn group_len(&self, group: NodeId) -> usize {
        self.groups.iter().find(|(g, _)| *g == group).map_or(0, |(_, q)| q.len())
    }

    /// Park a read at the back of `group`.
    pub fn push(&mut self, group: NodeId, parked: Parked) {
        self.parked += 1;
        match self.groups.iter_mut().find(|(g, _)| *g == group) {
            Some((_, q)) => {
                // the front is the first to expire only if entries arrive in park order
                debug_assert!(q.back().is_none_or(|b| b.since <= parked.since), "parked out of order in group {group}");
                q.push_back(parked)
            }
            None => self.groups.push((group, VecDeque::from([parked]))),
        }
        self.check_invariants();
    }

    /// Number of groups with parked reads (their index range for [`Backlog::head`]).
    pub fn groups(&self) -> usize {
        self.groups.len()
    }

    /// The oldest parked read of the group at `index`.
    pub fn head(&self, index: usize) -> Option<Parked> {
        self.groups.get(index).and_then(|(_, q)| q.front().copied())
    }

    /// The reads parked in the group at `index`, oldest first.
    pub fn parked_in(&self, index: usize) -> impl Iterator<Item = &Parked> {
        self.groups[index].1.iter()
    }

    /// Remove the head of the group at `index` (after it was sent, expired or failed).
    pub fn pop(&mut self, index: usize) {
        let popped = self.groups[index].1.pop_front();
        assert!(popped.is_some(), "pop only a group that has a head");
        // the head left: what follows was parked no earlier
        debug_assert!(
            popped.zip(self.groups[index].1.front()).is_none_or(|(p, next)| p.since <= next.since),
            "the head was not the oldest"
        );
        self.parked -= 1;
        self.check_invariants();
    }

    /// Forget groups left empty.
    pub fn compact(&mut self) {
        let groups = self.groups.len();
        self.groups.retain(|(_, q)| !q.is_empty());
        debug_assert!(self.groups.len() <= groups && self.groups.len() <= self.parked, "no group is left empty");
        self.check_invariants();
    }

    /// The count is the queues', a group appears once, and each group's reads are in park
    /// order, the oldest at the front (debug builds).
    #[inline]
    pub fn check_invariants(&self) {
        debug_assert_eq!(
            self.parked,
            self.groups.iter().map(|(_, q)| q.len()).sum::<usize>(),
            "the count is the queues'"
        );
        debug_assert!(
            self.groups.iter().enumerate().all(|(i, (g, _))| self.groups[..i].iter().all(|(h, _)| h != g)),
            "a group appears once"
        );
        debug_assert!(
            self.groups.iter().all(|(_, q)| q.iter().zip(q.iter().skip(1)).all(|(a, b)| a.since <= b.since)),
            "parked reads stay in arrival order"
        );
    }

    /// The oldest park time over all groups.
    pub fn oldest(&self) -> Option<Nanos> {
        self.groups.iter().filter_map(|(_, q)| q.front().map(|p| p.since)).min()
    }

    /// Ask to be woken at `t` (keeps the earliest request).
    pub fn retry_at(&mut self, t: Nanos) {
        self.retry_at = Some(self.retry_at.map_or(t, |r| r.min(t)));
        debug_assert!(self.retry_at.is_some_and(|r| r <= t), "the earliest retry is kept");
    }

    /// The pending retry time, if any.
    pub fn next_retry(&self) -> Option<Nanos> {
        self.retry_at
    }

    /// Clear a retry time that is due at `now`.
    pub fn retry_due(&mut self, now: Nanos) {
        if self.retry_at.is_some_and(|t| t <= now) {
            self.retry_at = None;
        }
        debug_assert!(self.retry_at.is_none_or(|t| t > now), "a due retry is cleared");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(id: u64) -> Ticket {
        Ticket::of(id)
    }

    #[test]
    fn fifo_per_group_and_counts() {
        let mut b = Backlog::default();
        b.push(3, Parked { ticket: t(1), since: 10 });
        b.push(5, Parked { ticket: t(2), since: 11 });
        b.push(3, Parked { ticket: t(3), since: 12 });
        assert_eq!((b.len(), b.group_len(3), b.group_len(5), b.groups()), (3, 2, 1, 2));
        assert_eq!(b.head(0).map(|p| p.ticket.id), Some(1));
        b.pop(0);
        assert_eq!(b.head(0).map(|p| p.ticket.id), Some(3));
        b.pop(1);
        b.compact();
        assert_eq!((b.len(), b.groups(), b.oldest()), (1, 1, Some(12)));
        b.retry_at(50);
        b.retry_at(40);
        b.retry_due(39);
        assert_eq!(b.next_retry(), Some(40));
        b.retry_due(40);
        assert_eq!(b.next_retry(), None);
    }
}
