//! Per-server state a coordinator keeps, only for the servers it has dealt with.
//!
//! A coordinator of a 5,000-server cluster talks to a few of them; a dense vector per
//! coordinator made memory grow with clients × servers (15.7 GB at 5,000 servers and 15,000
//! clients). [`NodeMap`] holds an entry per server touched. Written by hand rather than with
//! `std::collections::HashMap`: node ids are small integers that hash well with one multiply,
//! the simulator looks servers up several times per request, and entries must iterate in
//! insertion order (a pure function of the run, never of a hasher's state). Ids below
//! 64 (`NEAR`; every server of the published setups) are indexed directly, without hashing: at
//! most 256 bytes per map, and the common case costs one load more than a dense vector.

use crate::model::NodeId;
use crate::selector::Reach;
#[cfg(doc)]
use crate::selector::ReplicaSelector;

/// Cache line size the footprints' addresses are counted in (this map's, the coordinator's slab).
pub(crate) const LINE: usize = 64;

/// Entry index of an empty table slot.
const EMPTY: u32 = u32::MAX;

/// Ids below this are indexed directly; the others are hashed.
const NEAR: usize = 64;

/// The first slot to probe for `node` in a table of `len` slots (Fibonacci hashing).
#[inline]
fn home(node: NodeId, len: usize) -> usize {
    debug_assert!(len.is_power_of_two());
    ((node as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - len.trailing_zeros())) as usize
}

/// A table slot: the node and its entry's index, side by side so a probe reads one place.
#[derive(Clone, Copy, Debug)]
struct Slot {
    node: NodeId,
    entry: u32,
}

const FREE: Slot = Slot { node: 0, entry: EMPTY };

/// A map from server to `T`, open addressing with linear probing, entries in insertion order.
#[derive(Clone, Debug)]
pub struct NodeMap<T> {
    /// Entry index per id below [`NEAR`] ([`EMPTY`]: none), as long as the largest such id seen.
    near: Vec<u32>,
    /// The other ids: a power of two long (or empty), at most half full.
    table: Vec<Slot>,
    /// Entries in `table`.
    far: usize,
    nodes: Vec<NodeId>,
    values: Vec<T>,
}

impl<T> Default for NodeMap<T> {
    fn default() -> Self {
        NodeMap { near: Vec::new(), table: Vec::new(), far: 0, nodes: Vec::new(), values: Vec::new() }
    }
}

impl<T> NodeMap<T> {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// Servers with an entry.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether no server has an entry.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The slot holding `node`, or the free slot where it would go (the table is not empty).
    #[inline]
    fn slot(&self, node: NodeId) -> usize {
        let mask = self.table.len() - 1;
        let mut i = home(node, self.table.len());
        loop {
            let s = self.table[i];
            if s.entry == EMPTY || s.node == node {
                return i;
            }
            i = (i + 1) & mask;
        }
    }

    /// The entry index of `node`, if it has one.
    #[inline]
    fn find(&self, node: NodeId) -> Option<usize> {
        let e = match self.near.get(node as usize) {
            Some(&e) => e,
            None if (node as usize) < NEAR || self.table.is_empty() => return None,
            None => self.table[self.slot(node)].entry,
        };
        (e != EMPTY).then_some(e as usize)
    }

    /// Where looking up each of `nodes` reads, as addresses of cache lines never read through
    /// (see [`ReplicaSelector::footprint`]): at [`Reach::Index`] the slot a lookup reads first,
    /// reading only the map itself; at [`Reach::Entry`] every line of the entry that slot leads
    /// to, reading the slot (nothing for a node without an entry).
    pub fn footprint(&self, nodes: &[NodeId], reach: Reach, out: &mut dyn FnMut(*const u8)) {
        for &node in nodes {
            match reach {
                Reach::Index => {
                    let slot = match self.near.get(node as usize) {
                        Some(e) => (e as *const u32).cast(),
                        None if (node as usize) < NEAR || self.table.is_empty() => continue,
                        None => (&self.table[home(node, self.table.len())] as *const Slot).cast(),
                    };
                    out(slot);
                }
                Reach::Entry => {
                    let Some(e) = self.find(node) else { continue };
                    let start = &self.values[e] as *const T as usize;
                    let last = start + size_of::<T>().max(1) - 1;
                    for line in start / LINE..=last / LINE {
                        out((line * LINE) as *const u8);
                    }
                }
            }
        }
    }

    /// Where `node`'s entry is in insertion order (the first server added is 0), if it has one:
    /// for a user that keeps per-server state in its own vectors, in the same order.
    #[inline]
    pub fn position(&self, node: NodeId) -> Option<usize> {
        self.find(node)
    }

    /// The entry of `node`, if it has one.
    #[inline]
    pub fn get(&self, node: NodeId) -> Option<&T> {
        self.find(node).map(|e| &self.values[e])
    }

    /// The entry of `node`, mutable, if it has one.
    #[inline]
    pub fn get_mut(&mut self, node: NodeId) -> Option<&mut T> {
        self.find(node).map(|e| &mut self.values[e])
    }

    /// The entry of `node`, made with `make` if it has none.
    #[inline]
    pub fn get_or_insert_with(&mut self, node: NodeId, make: impl FnOnce() -> T) -> &mut T {
        let e = match self.find(node) {
            Some(e) => e,
            None => self.insert(node, make()),
        };
        &mut self.values[e]
    }

    /// Add `node`'s entry (it has none); its index.
    #[inline(never)]
    fn insert(&mut self, node: NodeId, value: T) -> usize {
        assert!(self.nodes.len() < EMPTY as usize, "fewer than 2^32 servers");
        let e = self.nodes.len();
        if (node as usize) < NEAR {
            if self.near.len() <= node as usize {
                self.near.resize(node as usize + 1, EMPTY);
            }
            self.near[node as usize] = e as u32;
        } else {
            if 2 * (self.far + 1) > self.table.len() {
                self.grow();
            }
            let slot = self.slot(node);
            self.table[slot] = Slot { node, entry: e as u32 };
            self.far += 1;
        }
        self.nodes.push(node);
        self.values.push(value);
        e
    }

    /// Double the table (at least 8 slots) and re-place its entries.
    fn grow(&mut self) {
        self.table = vec![FREE; (2 * self.table.len()).max(8)];
        for (e, &node) in self.nodes.iter().enumerate().filter(|&(_, &n)| n as usize >= NEAR) {
            let slot = self.slot(node);
            self.table[slot] = Slot { node, entry: e as u32 };
        }
    }

    /// Entries in the order they were made.
    pub fn iter(&self) -> impl Iterator<Item = (NodeId, &T)> {
        self.nodes.iter().copied().zip(self.values.iter())
    }

    /// Entries in the order they were made, mutable.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (NodeId, &mut T)> {
        self.nodes.iter().copied().zip(self.values.iter_mut())
    }

    /// Values in the order they were made.
    pub fn values(&self) -> impl Iterator<Item = &T> {
        self.values.iter()
    }
}

/// A map from server to a small value, absent servers reading as `T::default()`, for state that
/// is looked up on every answer and never iterated (the freshness gate, in-flight counts).
/// Unlike [`NodeMap`], each value sits in its table slot beside its node: one cache line per
/// lookup instead of two, which is what such a lookup costs when thousands of coordinators'
/// tables are far out of the caches. No order to keep: nothing iterates it.
#[derive(Clone, Debug, Default)]
pub struct NodeTable<T> {
    /// A power of two long (or empty), at most three quarters full.
    slots: Vec<Cell<T>>,
    len: usize,
}

/// A slot of a [`NodeTable`]; `node == VACANT` when empty.
#[derive(Clone, Copy, Debug)]
struct Cell<T> {
    node: NodeId,
    value: T,
}

/// The node id of an empty [`NodeTable`] slot (no server has it).
const VACANT: NodeId = NodeId::MAX;

impl<T: Copy + Default> NodeTable<T> {
    /// The value of `node` (`T::default()` if it has none).
    #[inline]
    pub fn get(&self, node: NodeId) -> T {
        if self.slots.is_empty() {
            return T::default();
        }
        let c = self.slots[self.slot(node)];
        if c.node == node {
            c.value
        } else {
            T::default()
        }
    }

    /// The value of `node`, if it has one, mutable.
    #[inline]
    pub fn get_mut(&mut self, node: NodeId) -> Option<&mut T> {
        if self.slots.is_empty() {
            return None;
        }
        let i = self.slot(node);
        let c = &mut self.slots[i];
        (c.node == node).then_some(&mut c.value)
    }

    /// The value of `node`, made `T::default()` if it has none.
    #[inline]
    pub fn entry(&mut self, node: NodeId) -> &mut T {
        assert!(node != VACANT, "server id {node} is reserved");
        if 4 * (self.len + 1) > 3 * self.slots.len() {
            self.grow();
        }
        let i = self.slot(node);
        if self.slots[i].node == VACANT {
            self.slots[i] = Cell { node, value: T::default() };
            self.len += 1;
        }
        &mut self.slots[i].value
    }

    /// Drop `node`'s value, if it has one; it reads as `T::default()` again.
    ///
    /// Backward-shift deletion: the entries after it in its probe run move back into the hole
    /// when that is no further from their home slot, so lookups need no tombstones and a table
    /// whose entries come and go stays as short as what it holds at once.
    #[inline]
    pub fn remove(&mut self, node: NodeId) {
        if self.slots.is_empty() {
            return;
        }
        let mut hole = self.slot(node);
        if self.slots[hole].node != node {
            return;
        }
        let mask = self.slots.len() - 1;
        let mut i = hole;
        loop {
            i = (i + 1) & mask;
            let n = self.slots[i].node;
            if n == VACANT {
                break;
            }
            // move it back unless its home lies cyclically in (hole, i]
            let home = home(n, self.slots.len());
            if (i.wrapping_sub(home) & mask) >= (i.wrapping_sub(hole) & mask) {
                self.slots[hole] = self.slots[i];
                hole = i;
            }
        }
        self.slots[hole].node = VACANT;
        self.slots[hole].value = T::default();
        self.len -= 1;
    }

    /// The slot holding `node`, or the empty one where it would go (the table is not empty).
    #[inline]
    fn slot(&self, node: NodeId) -> usize {
        let mask = self.slots.len() - 1;
        let mut i = home(node, self.slots.len());
        loop {
            let n = self.slots[i].node;
            if n == node || n == VACANT {
                return i;
            }
            i = (i + 1) & mask;
        }
    }

    /// Double the table (at least 16 slots) and re-place its entries.
    #[inline(never)]
    fn grow(&mut self) {
        let vacant = Cell { node: VACANT, value: T::default() };
        let len = (2 * self.slots.len()).max(16);
        let old = std::mem::replace(&mut self.slots, vec![vacant; len]);
        for c in old.into_iter().filter(|c| c.node != VACANT) {
            let i = self.slot(c.node);
            self.slots[i] = c;
        }
    }
}

/// Requests one coordinator has in flight per server (LOR's count, and the oracle's when blind).
/// Only servers with requests in flight have an entry: a coordinator of a large cluster deals
/// with thousands of servers over a run but has a few requests out at a time, so its table
/// stays a cache line or two instead of growing with every server it ever sent to.
#[derive(Clone, Debug, Default)]
pub struct InFlight(NodeTable<u32>);

impl InFlight {
    /// Requests in flight at `node`.
    #[inline]
    pub fn count(&self, node: NodeId) -> u32 {
        self.0.get(node)
    }

    /// One more sent to `node`.
    #[inline]
    pub fn sent(&mut self, node: NodeId) {
        *self.0.entry(node) += 1;
        debug_assert!(self.count(node) > 0, "a send to {node} is counted");
    }

    /// One answered by `node` (answers to requests the selector never saw sent, like writes,
    /// do not take the count below 0).
    #[inline]
    pub fn answered(&mut self, node: NodeId) {
        let before = self.count(node);
        if let Some(n) = self.0.get_mut(node) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.0.remove(node);
            }
        }
        debug_assert_eq!(self.count(node), before.saturating_sub(1), "an answer from {node} takes one off, down to 0");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_footprint_is_the_slot_a_lookup_reads_then_every_line_of_its_entry() {
        let mut m: NodeMap<[u64; 20]> = NodeMap::new();
        for node in [3, 1_000, 77_777] {
            m.get_or_insert_with(node, || [node as u64; 20]);
        }
        let addrs = |nodes: &[NodeId], reach| {
            let mut out = Vec::new();
            m.footprint(nodes, reach, &mut |a| out.push(a as usize));
            out
        };
        assert_eq!(addrs(&[3], Reach::Index), [&m.near[3] as *const u32 as usize]);
        let home_slot = &m.table[home(1_000, m.table.len())] as *const Slot as usize;
        assert_eq!(addrs(&[1_000], Reach::Index), [home_slot]);
        for node in [3, 1_000, 77_777] {
            let entry = m.get(node).unwrap() as *const [u64; 20] as usize;
            let lines = addrs(&[node], Reach::Entry);
            assert_eq!(lines.first(), Some(&(entry / LINE * LINE)), "from the entry's first line");
            assert_eq!(lines.last(), Some(&((entry + 159) / LINE * LINE)), "to its last");
            assert!(lines.windows(2).all(|w| w[1] == w[0] + LINE), "every line between");
        }
        assert!(addrs(&[5, 2_000], Reach::Entry).is_empty(), "no entry, nothing to fetch");
    }

    #[test]
    fn a_table_reads_absent_servers_as_default_and_keeps_every_entry_across_growth() {
        let mut t: NodeTable<u64> = NodeTable::default();
        assert_eq!(t.get(3), 0);
        let ids: Vec<NodeId> = (0..3_000).map(|i| (i * 7919 + 5) % 100_003).collect();
        for (n, &id) in ids.iter().enumerate() {
            *t.entry(id) += n as u64 + 1;
        }
        for (n, &id) in ids.iter().enumerate() {
            assert_eq!(t.get(id), n as u64 + 1, "node {id}");
        }
        assert_eq!(t.get(100_500), 0, "ids run below 100,003");
        assert_eq!(t.len, ids.len());
        assert!(4 * t.len <= 3 * t.slots.len(), "at most three quarters full");
        let mut f = InFlight::default();
        f.answered(9);
        assert_eq!(f.count(9), 0, "an answer never sent takes no count below 0");
        f.sent(9);
        f.sent(9);
        f.answered(9);
        assert_eq!(f.count(9), 1);
    }

    #[test]
    fn a_table_with_entries_removed_finds_every_other_entry_and_stays_short() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        let mut t: NodeTable<u32> = NodeTable::default();
        let mut model = std::collections::HashMap::new();
        for step in 0..200_000u32 {
            // ids from a large space, folded so that many share home slots
            let id = rng.random_range(0..40u32) * 1_024 + rng.random_range(0..3u32);
            if rng.random_bool(0.5) {
                *t.entry(id) = step + 1;
                model.insert(id, step + 1);
            } else {
                t.remove(id);
                model.remove(&id);
            }
            if step % 997 == 0 {
                for probe in 0..40 * 1_024 + 3 {
                    assert_eq!(t.get(probe), model.get(&probe).copied().unwrap_or(0), "id {probe}, step {step}");
                }
            }
            assert_eq!(t.len, model.len());
        }
        assert!(t.slots.len() <= 256, "at most 120 ids live at once: {} slots", t.slots.len());
        let mut f = InFlight::default();
        for id in [10_000, 20_000, 30_000] {
            f.sent(id);
            f.answered(id);
        }
        assert_eq!(f.0.len, 0, "a server with nothing in flight keeps no entry");
    }

    #[test]
    fn entries_are_made_once_found_again_and_iterate_in_insertion_order() {
        let mut m: NodeMap<u64> = NodeMap::new();
        assert!(m.get(3).is_none() && m.get_mut(3).is_none() && m.is_empty());
        // ids that collide in a small table, and a sparse spread over a large id space
        let ids: Vec<NodeId> = (0..200).map(|i| (i * 7919 + 5) % 100_003).chain([0, 8, 16, 24]).collect();
        for (n, &id) in ids.iter().enumerate() {
            *m.get_or_insert_with(id, || n as u64) += 1000;
        }
        assert_eq!(m.len(), ids.len());
        for (n, &id) in ids.iter().enumerate() {
            assert_eq!(m.get(id), Some(&(n as u64 + 1000)), "node {id}");
        }
        *m.get_or_insert_with(ids[7], || unreachable!("an entry is made once")) += 1;
        assert_eq!(m.get(ids[7]), Some(&1_008));
        assert!(m.get(100_500).is_none(), "ids run below 100,003");
        let order: Vec<NodeId> = m.iter().map(|(id, _)| id).collect();
        assert_eq!(order, ids);
        for (_, v) in m.iter_mut() {
            *v = 1;
        }
        assert_eq!(m.values().sum::<u64>(), ids.len() as u64);
    }
}
