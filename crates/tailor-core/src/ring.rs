//! Consistent-hashing token ring: a key's replicas are the owner of its token and the next
//! `k - 1` distinct nodes clockwise.

use crate::model::NodeId;
use std::ops::Deref;

/// Largest replication factor a [`ReplicaSet`] holds inline.
pub const MAX_REPLICAS: usize = 8;

/// A key's replicas in ring order (primary first), stored inline so lookups never allocate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ReplicaSet {
    ids: [NodeId; MAX_REPLICAS],
    len: u8,
}

impl ReplicaSet {
    /// A set holding `ids` in order; panics if more than [`MAX_REPLICAS`].
    pub fn from_slice(ids: &[NodeId]) -> Self {
        assert!(ids.len() <= MAX_REPLICAS, "replication factor above {MAX_REPLICAS}");
        let mut set = ReplicaSet { ids: [0; MAX_REPLICAS], len: ids.len() as u8 };
        set.ids[..ids.len()].copy_from_slice(ids);
        set
    }

    /// The same set without the replicas for which `down` is true (order kept).
    pub fn retain_up(&self, down: impl Fn(NodeId) -> bool) -> Self {
        let mut out = ReplicaSet { ids: [0; MAX_REPLICAS], len: 0 };
        for &id in self.iter() {
            if !down(id) {
                out.ids[out.len as usize] = id;
                out.len += 1;
            }
        }
        out
    }
}

impl Deref for ReplicaSet {
    type Target = [NodeId];
    fn deref(&self) -> &[NodeId] {
        &self.ids[..self.len as usize]
    }
}

/// Errors building a ring.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum RingError {
    /// The replication factor must be between 1 and the number of nodes (and ≤ MAX_REPLICAS).
    #[error("replication factor {k} is invalid for {nodes} nodes (must be 1..={max})")]
    BadReplication { k: usize, nodes: usize, max: usize },
    /// A ring needs nodes and at least one token per node.
    #[error("a ring needs at least one node and one token per node")]
    Empty,
}

/// The token ring.
#[derive(Clone, Debug)]
pub struct Ring {
    nodes: usize,
    k: usize,
    /// Sorted token positions.
    tokens: Vec<u64>,
    /// Replica set owning the range ending at each token.
    sets: Vec<ReplicaSet>,
    /// How a key's token finds its range.
    search: Search,
}

/// How [`Ring::replicas`] finds the first token at least a key's.
#[derive(Clone, Debug)]
enum Search {
    /// One token per node, evenly spaced (`step·(n+1)` is node `n`'s): by arithmetic, so a
    /// lookup reads one entry of `sets` and nothing else, where the index and the tokens were
    /// two more cache misses per request of the simulator at thousands of nodes.
    Even { step: u64 },
    /// Pseudo-random tokens (virtual nodes): through the bucket index.
    Indexed(Buckets),
}

/// An index over the sorted tokens by their high bits, so a lookup reads one entry and a run
/// of one or two tokens instead of binary-searching the whole list: at thousands of nodes that
/// search missed the cache on every request of the simulator. About two buckets per token.
#[derive(Clone, Debug)]
struct Buckets {
    /// A token's bucket is `token >> shift`.
    shift: u32,
    /// `starts[b]`: the first token index whose token is in bucket `b` or above; one more entry
    /// than buckets, the last being the number of tokens.
    starts: Vec<u32>,
}

impl Buckets {
    fn new(tokens: &[u64]) -> Buckets {
        assert!(tokens.len() < u32::MAX as usize, "fewer than 4 G tokens");
        let bits = (2 * tokens.len()).next_power_of_two().trailing_zeros().clamp(1, 32);
        let shift = 64 - bits;
        let mut starts = Vec::with_capacity((1 << bits) + 1);
        let mut i = 0;
        for b in 0..(1u64 << bits) {
            while i < tokens.len() && tokens[i] >> shift < b {
                i += 1;
            }
            starts.push(i as u32);
        }
        starts.push(tokens.len() as u32);
        Buckets { shift, starts }
    }

    /// The first index in `tokens` whose token is at least `h` (`tokens.len()` if none): the
    /// global binary search's answer, searched only within `h`'s bucket.
    #[inline]
    fn first_at_least(&self, tokens: &[u64], h: u64) -> usize {
        let b = (h >> self.shift) as usize;
        let (lo, hi) = (self.starts[b] as usize, self.starts[b + 1] as usize);
        lo + tokens[lo..hi].partition_point(|&t| t < h)
    }
}

/// A stable 64-bit mix of a key (SplitMix64 finaliser): the same in every process and run.
pub fn hash_key(key: u64) -> u64 {
    let mut z = key.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The token of `key` (its position on the ring).
#[inline]
pub fn token(key: u64) -> u64 {
    hash_key(key)
}

/// Tokens `first..=last` of the ring and the replicas of the keys whose token falls there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TokenRange {
    /// First token of the range.
    pub first: u64,
    /// Last token of the range (inclusive, `>= first`).
    pub last: u64,
    /// Replicas of every key in the range.
    pub replicas: ReplicaSet,
}

impl Ring {
    /// A ring of `nodes` nodes with replication factor `k`. With `vnodes == 1` tokens are evenly
    /// spaced, so the replica groups are exactly `{i, i+1, ..., i+k-1} mod m`, each owning an
    /// equal share of keys; with more virtual nodes, tokens are pseudo-random but deterministic.
    pub fn new(nodes: usize, k: usize, vnodes: usize) -> Result<Ring, RingError> {
        if nodes == 0 || vnodes == 0 {
            return Err(RingError::Empty);
        }
        if k == 0 || k > nodes || k > MAX_REPLICAS {
            return Err(RingError::BadReplication { k, nodes, max: nodes.min(MAX_REPLICAS) });
        }
        let mut owned: Vec<(u64, NodeId)> = Vec::with_capacity(nodes * vnodes);
        if vnodes == 1 {
            let step = u64::MAX / nodes as u64;
            for n in 0..nodes {
                owned.push((step.wrapping_mul(n as u64 + 1), n as NodeId));
            }
        } else {
            for n in 0..nodes {
                for v in 0..vnodes {
                    owned.push((hash_key(((n as u64) << 32) | v as u64), n as NodeId));
                }
            }
        }
        owned.sort_unstable();
        let tokens: Vec<u64> = owned.iter().map(|t| t.0).collect();
        let mut sets = Vec::with_capacity(owned.len());
        for start in 0..owned.len() {
            let mut ids = Vec::with_capacity(k);
            let mut i = start;
            while ids.len() < k {
                let node = owned[i % owned.len()].1;
                if !ids.contains(&node) {
                    ids.push(node);
                }
                i += 1;
            }
            sets.push(ReplicaSet::from_slice(&ids));
        }
        let search = if vnodes == 1 {
            Search::Even { step: u64::MAX / nodes as u64 }
        } else {
            Search::Indexed(Buckets::new(&tokens))
        };
        Ok(Ring { nodes, k, tokens, sets, search })
    }

    /// Number of nodes.
    pub fn nodes(&self) -> usize {
        self.nodes
    }

    /// Replication factor.
    pub fn replication(&self) -> usize {
        self.k
    }

    /// Every token range of the ring in token order, covering `0..=u64::MAX` once. Range `i`
    /// ends at token `i`; the one that wraps past `u64::MAX` is split in two (both with the
    /// same replicas) so that every range is a plain interval.
    pub fn ranges(&self) -> Vec<TokenRange> {
        let n = self.tokens.len();
        let mut out = Vec::with_capacity(n + 1);
        out.push(TokenRange { first: 0, last: self.tokens[0], replicas: self.sets[0] });
        for i in 1..n {
            if self.tokens[i] > self.tokens[i - 1] {
                out.push(TokenRange { first: self.tokens[i - 1] + 1, last: self.tokens[i], replicas: self.sets[i] });
            }
        }
        if self.tokens[n - 1] < u64::MAX {
            out.push(TokenRange { first: self.tokens[n - 1] + 1, last: u64::MAX, replicas: self.sets[0] });
        }
        out
    }

    /// The replicas of `key`, primary first.
    #[inline]
    pub fn replicas(&self, key: u64) -> ReplicaSet {
        let h = token(key);
        let idx = match &self.search {
            Search::Even { step } => Self::even_owner(self.nodes as u64, *step, h),
            Search::Indexed(buckets) => buckets.first_at_least(&self.tokens, h),
        };
        self.sets[if idx == self.tokens.len() { 0 } else { idx }]
    }

    /// On an evenly spaced ring of `m` nodes, the index of the first token at least `h` (`m`
    /// past the last token): `floor(h·m / 2^64)`, which is within one of it since the spacing
    /// is `floor(u64::MAX / m)`, settled exactly against the tokens.
    #[inline]
    fn even_owner(m: u64, step: u64, h: u64) -> usize {
        let token = |n: u64| step * (n + 1);
        let mut n = ((h as u128 * m as u128) >> 64) as u64;
        while n > 0 && token(n - 1) >= h {
            n -= 1;
        }
        while n < m && token(n) < h {
            n += 1;
        }
        n as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bucket_index_finds_what_a_binary_search_finds() {
        for (nodes, vnodes) in [(1, 1), (3, 1), (7, 5), (50, 1), (64, 16), (5_000, 1)] {
            let ring = Ring::new(nodes, 1, vnodes).unwrap();
            let t = &ring.tokens;
            let buckets = Buckets::new(t);
            // tokens themselves, their neighbours, both ends and spread-out hashes
            let probes = t.iter().flat_map(|&x| [x.wrapping_sub(1), x, x.wrapping_add(1)]);
            let probes = probes.chain([0, 1, u64::MAX - 1, u64::MAX]).chain((0..20_000).map(hash_key));
            for h in probes {
                assert_eq!(buckets.first_at_least(t, h), t.partition_point(|&x| x < h), "token {h}");
            }
        }
    }

    /// The arithmetic search of an evenly spaced ring finds what a binary search finds, tokens
    /// and their neighbours and both ends included.
    #[test]
    fn an_even_ring_computes_what_a_search_finds() {
        for nodes in [1, 2, 3, 5, 50, 4_999, 5_000, 10_000] {
            let ring = Ring::new(nodes, 1, 1).unwrap();
            let Search::Even { step } = ring.search else { panic!("one token per node is an even ring") };
            let t = &ring.tokens;
            let probes = t.iter().flat_map(|&x| [x.wrapping_sub(1), x, x.wrapping_add(1)]);
            let probes = probes.chain([0, 1, u64::MAX - 1, u64::MAX]).chain((0..20_000).map(hash_key));
            for h in probes {
                assert_eq!(Ring::even_owner(nodes as u64, step, h), t.partition_point(|&x| x < h), "{nodes}: {h}");
            }
        }
    }

    #[test]
    fn single_token_groups_are_consecutive_nodes() {
        let ring = Ring::new(5, 3, 1).unwrap();
        for key in 0..1000 {
            let set = ring.replicas(key);
            assert_eq!(set.len(), 3);
            let first = set[0];
            assert_eq!(&*set, &[first, (first + 1) % 5, (first + 2) % 5]);
        }
    }

    #[test]
    fn keys_spread_evenly_over_primaries() {
        let ring = Ring::new(10, 3, 1).unwrap();
        let mut counts = [0u32; 10];
        for key in 0..100_000 {
            counts[ring.replicas(key)[0] as usize] += 1;
        }
        for c in counts {
            assert!((9_000..11_000).contains(&c), "uneven share {c}");
        }
    }

    #[test]
    fn vnodes_give_distinct_replicas() {
        let ring = Ring::new(7, 3, 16).unwrap();
        for key in 0..1000 {
            let set = ring.replicas(key);
            let mut ids = set.to_vec();
            ids.sort();
            ids.dedup();
            assert_eq!(ids.len(), 3);
        }
    }

    #[test]
    fn ranges_cover_the_ring_once_and_agree_with_replicas() {
        for (nodes, vnodes) in [(1, 1), (3, 1), (5, 1), (7, 16)] {
            let ring = Ring::new(nodes, nodes.min(3), vnodes).unwrap();
            let ranges = ring.ranges();
            assert_eq!(ranges[0].first, 0);
            assert_eq!(ranges.last().unwrap().last, u64::MAX);
            for w in ranges.windows(2) {
                assert_eq!(w[1].first, w[0].last + 1, "contiguous, no overlap");
            }
            for key in 0..2000 {
                let t = token(key);
                let r = ranges.iter().find(|r| (r.first..=r.last).contains(&t)).unwrap();
                assert_eq!(r.replicas, ring.replicas(key));
            }
        }
    }

    #[test]
    fn bad_replication_is_an_error() {
        assert!(matches!(Ring::new(2, 3, 1), Err(RingError::BadReplication { .. })));
        assert_eq!(Ring::new(0, 1, 1).unwrap_err(), RingError::Empty);
    }

    #[test]
    fn retain_up_drops_down_replicas() {
        let set = ReplicaSet::from_slice(&[4, 5, 6]);
        assert_eq!(&*set.retain_up(|n| n == 5), &[4, 6]);
    }
}
