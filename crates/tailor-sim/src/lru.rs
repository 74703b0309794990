//! A fixed-capacity LRU set of keys: the per-server cache model.

use std::collections::HashMap;

const NIL: u32 = u32::MAX;

struct Slot {
    key: u64,
    prev: u32,
    next: u32,
}

/// Keys in recency order, evicting the least recently used beyond capacity.
pub struct Lru {
    capacity: usize,
    index: HashMap<u64, u32>,
    slots: Vec<Slot>,
    head: u32,
    tail: u32,
}

impl Lru {
    /// An empty cache holding at most `capacity` keys (≥ 1).
    pub fn new(capacity: usize) -> Self {
        Lru { capacity: capacity.max(1), index: HashMap::new(), slots: Vec::new(), head: NIL, tail: NIL }
    }

    /// Look `key` up, making it most recent; on a miss insert it (evicting the oldest). True on a hit.
    pub fn access(&mut self, key: u64) -> bool {
        if let Some(&i) = self.index.get(&key) {
            self.unlink(i);
            self.push_front(i);
            return true;
        }
        let i = if self.slots.len() < self.capacity {
            self.slots.push(Slot { key, prev: NIL, next: NIL });
            (self.slots.len() - 1) as u32
        } else {
            let victim = self.tail;
            self.unlink(victim);
            self.index.remove(&self.slots[victim as usize].key);
            self.slots[victim as usize].key = key;
            victim
        };
        self.index.insert(key, i);
        self.push_front(i);
        false
    }

    fn unlink(&mut self, i: u32) {
        let (prev, next) = (self.slots[i as usize].prev, self.slots[i as usize].next);
        if prev == NIL {
            self.head = next;
        } else {
            self.slots[prev as usize].next = next;
        }
        if next == NIL {
            self.tail = prev;
        } else {
            self.slots[next as usize].prev = prev;
        }
    }

    fn push_front(&mut self, i: u32) {
        self.slots[i as usize].prev = NIL;
        self.slots[i as usize].next = self.head;
        if self.head != NIL {
            self.slots[self.head as usize].prev = i;
        }
        self.head = i;
        if self.tail == NIL {
            self.tail = i;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicts_least_recently_used() {
        let mut c = Lru::new(2);
        assert!(!c.access(1));
        assert!(!c.access(2));
        assert!(c.access(1)); // 1 most recent, 2 oldest
        assert!(!c.access(3)); // evicts 2
        assert!(c.access(1));
        assert!(!c.access(2)); // evicts 3
        assert!(!c.access(3));
    }
}
