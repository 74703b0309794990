//! Merkle trees of token ranges, for anti-entropy (`anti_entropy.rs`; Cassandra's repair).
//!
//! A range of tokens `first..=last` is cut into `2^depth` leaves of equal token width; a leaf's
//! hash covers `(key, version, tombstone flag)` of every key whose token falls in it, in token
//! order, and an inner node hashes its two children. Two replicas holding the same versions of
//! a range have equal roots; where they differ, only the leaves under differing inner nodes
//! need their keys exchanged. Hashes are SHA-256 truncated to 16 bytes: collisions between
//! replicas of one leaf are not a concern at 2^-64 odds, and a whole tree of 2^10 leaves is
//! 16 KB on the wire.

use sha2::{Digest, Sha256};

/// Bytes of one tree hash.
pub const HASH_BYTES: usize = 16;

/// One node of a tree.
pub type Hash = [u8; HASH_BYTES];

/// The hash of a leaf no key falls in.
pub const EMPTY: Hash = [0; HASH_BYTES];

/// Deepest tree built or accepted from a peer: 2^14 leaves, 256 KB on the wire.
pub const MAX_DEPTH: u8 = 14;

/// Tokens `first..=last` (never empty).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tokens {
    /// First token.
    pub first: u64,
    /// Last token (inclusive).
    pub last: u64,
}

impl Tokens {
    /// The tokens `first..=last`, or `None` if `last < first`.
    pub fn new(first: u64, last: u64) -> Option<Tokens> {
        (first <= last).then_some(Tokens { first, last })
    }

    /// Whether `token` is one of these.
    pub fn contains(&self, token: u64) -> bool {
        (self.first..=self.last).contains(&token)
    }

    /// How many tokens (up to 2^64).
    fn span(&self) -> u128 {
        (self.last - self.first) as u128 + 1
    }

    /// The leaf (of `leaves`) that `token`, one of these, falls in.
    pub fn leaf_of(&self, token: u64, leaves: usize) -> usize {
        assert!(self.contains(token), "token {token} outside {self:?}");
        ((token - self.first) as u128 * leaves as u128 / self.span()) as usize
    }

    /// The tokens of leaf `i` of `leaves` (`None` when the range has fewer tokens than leaves
    /// and none falls in this one): exactly those for which [`Tokens::leaf_of`] is `i`.
    pub fn leaf(&self, i: usize, leaves: usize) -> Option<Tokens> {
        assert!(i < leaves, "leaf {i} of {leaves}");
        let (span, n) = (self.span(), leaves as u128);
        let lo = (i as u128 * span).div_ceil(n);
        let hi = ((i as u128 + 1) * span).div_ceil(n);
        (lo < hi).then(|| Tokens { first: self.first + lo as u64, last: self.first + (hi - 1) as u64 })
    }
}

/// A tree received from a peer that cannot be one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a Merkle tree needs 2^depth leaves with depth at most {MAX_DEPTH}; got {0} leaves")]
pub struct BadTree(pub usize);

/// A complete binary tree of hashes over `2^depth` leaves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MerkleTree {
    /// Heap order: `nodes[1]` is the root, node `i` has children `2i` and `2i + 1`, and the
    /// leaves are `nodes[n..2n]` (`nodes[0]` is unused).
    nodes: Vec<Hash>,
}

fn parent(left: &Hash, right: &Hash) -> Hash {
    let digest = Sha256::new().chain_update(left).chain_update(right).finalize();
    digest[..HASH_BYTES].try_into().expect("SHA-256 is longer than a tree hash")
}

impl MerkleTree {
    /// The tree over `leaves` (a power of two of them, at most `2^MAX_DEPTH`).
    pub fn from_leaves(leaves: Vec<Hash>) -> Result<MerkleTree, BadTree> {
        let n = leaves.len();
        if !n.is_power_of_two() || n > 1 << MAX_DEPTH {
            return Err(BadTree(n));
        }
        let mut nodes = vec![EMPTY; n];
        nodes.extend(leaves);
        for i in (1..n).rev() {
            nodes[i] = parent(&nodes[2 * i], &nodes[2 * i + 1]);
        }
        Ok(MerkleTree { nodes })
    }

    /// The root hash.
    pub fn root(&self) -> Hash {
        self.nodes[1]
    }

    /// The leaves, in token order.
    pub fn leaves(&self) -> &[Hash] {
        &self.nodes[self.nodes.len() / 2..]
    }

    /// The leaves where `self` and `other` (of the same depth) differ, found from the root
    /// down, visiting only subtrees whose hashes differ.
    pub fn differing_leaves(&self, other: &MerkleTree) -> Vec<usize> {
        assert_eq!(self.nodes.len(), other.nodes.len(), "trees of different depths");
        let n = self.nodes.len() / 2;
        let mut out = Vec::new();
        let mut stack = vec![1];
        while let Some(i) = stack.pop() {
            if self.nodes[i] == other.nodes[i] {
                continue;
            }
            if i >= n {
                out.push(i - n);
            } else {
                stack.extend([2 * i + 1, 2 * i]);
            }
        }
        out
    }
}

/// Builds a range's tree from its keys, given in token order (one pass, one leaf hasher open
/// at a time).
pub struct TreeBuilder {
    tokens: Tokens,
    leaves: Vec<Hash>,
    open: Option<(usize, Sha256)>,
}

impl TreeBuilder {
    /// A builder for `tokens` with `2^depth` leaves.
    pub fn new(tokens: Tokens, depth: u8) -> TreeBuilder {
        assert!(depth <= MAX_DEPTH, "depth {depth} above {MAX_DEPTH}");
        TreeBuilder { tokens, leaves: vec![EMPTY; 1 << depth], open: None }
    }

    /// Add `key` (token `token`) at `version`; keys must come in token order.
    pub fn add(&mut self, token: u64, key: &[u8], version: u64, tombstone: bool) {
        let leaf = self.tokens.leaf_of(token, self.leaves.len());
        match &self.open {
            Some((open, _)) if *open == leaf => {}
            Some((open, _)) => {
                assert!(*open < leaf, "keys out of token order");
                self.close();
                self.open = Some((leaf, Sha256::new()));
            }
            None => self.open = Some((leaf, Sha256::new())),
        }
        let (_, h) = self.open.as_mut().expect("a leaf is open");
        h.update((key.len() as u32).to_le_bytes());
        h.update(key);
        h.update(version.to_le_bytes());
        h.update([tombstone as u8]);
    }

    fn close(&mut self) {
        if let Some((leaf, h)) = self.open.take() {
            self.leaves[leaf] = h.finalize()[..HASH_BYTES].try_into().expect("SHA-256 is longer than a tree hash");
        }
    }

    /// The finished tree.
    pub fn finish(mut self) -> MerkleTree {
        self.close();
        MerkleTree::from_leaves(self.leaves).expect("2^depth leaves, depth checked")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: Tokens = Tokens { first: 0, last: u64::MAX };

    fn tree(keys: &[(u64, &[u8], u64)], depth: u8) -> MerkleTree {
        let mut sorted = keys.to_vec();
        sorted.sort();
        let mut b = TreeBuilder::new(ALL, depth);
        for (t, k, v) in sorted {
            b.add(t, k, v, false);
        }
        b.finish()
    }

    #[test]
    fn identical_data_gives_equal_roots() {
        let keys: Vec<(u64, &[u8], u64)> =
            (0..500u64).map(|i| (i.wrapping_mul(0x9E37_79B9_7F4A_7C15), &b"k"[..], i)).collect();
        let (a, b) = (tree(&keys, 10), tree(&keys, 10));
        assert_eq!(a.root(), b.root());
        assert!(a.differing_leaves(&b).is_empty());
        assert_ne!(a.root(), tree(&[], 10).root(), "keys change the root");
    }

    #[test]
    fn one_differing_key_differs_exactly_on_its_path() {
        let keys: Vec<(u64, &[u8], u64)> =
            (0..500u64).map(|i| (i.wrapping_mul(0x9E37_79B9_7F4A_7C15), &b"k"[..], i)).collect();
        let a = tree(&keys, 10);
        let mut changed = keys.clone();
        changed[42].2 += 1;
        let b = tree(&changed, 10);
        let leaf = ALL.leaf_of(keys[42].0, 1024);
        assert_eq!(a.differing_leaves(&b), vec![leaf]);
        let path: Vec<usize> = std::iter::successors(Some(1024 + leaf), |&i| (i > 1).then_some(i / 2)).collect();
        let differing: Vec<usize> = (1..2048).rev().filter(|&i| a.nodes[i] != b.nodes[i]).collect();
        assert_eq!(differing, path, "the leaf and its ancestors, nothing else");
        // a tombstone with the same version is a different entry
        let mut b = TreeBuilder::new(ALL, 10);
        let mut sorted = keys.clone();
        sorted.sort();
        for (t, k, v) in &sorted {
            b.add(*t, k, *v, *t == keys[42].0);
        }
        assert_eq!(a.differing_leaves(&b.finish()), vec![leaf]);
    }

    #[test]
    fn leaves_partition_a_range() {
        for (tokens, n) in [(ALL, 1024), (Tokens { first: 10, last: 12 }, 8), (Tokens { first: 5, last: 1004 }, 16)] {
            let mut next = tokens.first;
            for i in 0..n {
                let Some(leaf) = tokens.leaf(i, n) else { continue };
                assert_eq!(leaf.first, next, "contiguous");
                assert_eq!(tokens.leaf_of(leaf.first, n), i);
                assert_eq!(tokens.leaf_of(leaf.last, n), i);
                next = leaf.last.wrapping_add(1);
            }
            assert_eq!(next, tokens.last.wrapping_add(1), "covers the range");
        }
        assert_eq!(Tokens::new(3, 2), None);
        assert_eq!(Tokens { first: 10, last: 12 }.leaf(1, 8), None, "3 tokens, 8 leaves");
    }

    #[test]
    fn bad_leaf_counts_are_refused() {
        assert_eq!(MerkleTree::from_leaves(vec![EMPTY; 3]), Err(BadTree(3)));
        assert_eq!(MerkleTree::from_leaves(vec![]), Err(BadTree(0)));
        assert!(MerkleTree::from_leaves(vec![EMPTY; 1 << (MAX_DEPTH + 1)]).is_err());
        let one = MerkleTree::from_leaves(vec![[1; HASH_BYTES]]).unwrap();
        assert_eq!(one.root(), [1; HASH_BYTES]);
        assert_eq!(one.differing_leaves(&MerkleTree::from_leaves(vec![EMPTY]).unwrap()), vec![0]);
    }
}
