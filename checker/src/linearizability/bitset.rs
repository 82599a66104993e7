//! The memo cache's key half: the set of linearized operations, and a fast hasher for it.
//!
//! Every step of the search hashes a (bitset, state) pair, so SipHash (std's default, built
//! against hash flooding, which cannot happen here) would dominate the run time.

use std::hash::{BuildHasherDefault, Hash, Hasher};

#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub(crate) struct Bitset(Box<[u64]>);

impl Bitset {
    pub fn new(bits: usize) -> Self {
        Bitset(vec![0; bits.div_ceil(64)].into_boxed_slice())
    }
    pub fn set(&mut self, bit: usize) {
        self.0[bit / 64] |= 1 << (bit % 64);
    }
    pub fn clear(&mut self, bit: usize) {
        self.0[bit / 64] &= !(1 << (bit % 64));
    }
    pub fn get(&self, bit: usize) -> bool {
        self.0[bit / 64] & (1 << (bit % 64)) != 0
    }
    /// Every bit of `self` is set in `other` (same length).
    pub fn is_subset(&self, other: &Bitset) -> bool {
        self.0.iter().zip(other.0.iter()).all(|(a, b)| a & !b == 0)
    }
    /// Heap bytes, for bounding the cache.
    pub fn heap_bytes(&self) -> usize {
        self.0.len() * 8
    }
}

impl Hash for Bitset {
    fn hash<H: Hasher>(&self, state: &mut H) {
        // Word by word, without the length prefix a slice would add: all bitsets of one
        // search have the same length.
        for &w in self.0.iter() {
            state.write_u64(w);
        }
    }
}

/// FxHash-style multiply-rotate, with a final mix so the high bits (which hashbrown uses for
/// its control bytes) depend on every input bit.
#[derive(Default, Clone, Copy)]
pub(crate) struct FastHasher(u64);

const K: u64 = 0xf135_7aea_2e62_a9c5;

impl Hasher for FastHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.write_u64(u64::from_le_bytes(c.try_into().expect("8 bytes")));
        }
        let mut tail = [0u8; 8];
        tail[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
        self.write_u64(u64::from_le_bytes(tail) ^ bytes.len() as u64);
    }
    fn write_u8(&mut self, i: u8) {
        self.write_u64(i as u64);
    }
    fn write_u32(&mut self, i: u32) {
        self.write_u64(i as u64);
    }
    fn write_usize(&mut self, i: usize) {
        self.write_u64(i as u64);
    }
    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(26) ^ i).wrapping_mul(K);
    }
    fn finish(&self) -> u64 {
        let h = self.0 ^ (self.0 >> 29);
        h.wrapping_mul(K) ^ (h >> 32)
    }
}

pub(crate) type FastBuild = BuildHasherDefault<FastHasher>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn set_and_clear_round_trip_and_hash_by_content() {
        let mut a = Bitset::new(130);
        a.set(0);
        a.set(129);
        let mut b = a.clone();
        b.clear(129);
        assert_ne!(a, b);
        b.set(129);
        assert_eq!(a, b);
        let mut seen: HashSet<Bitset, FastBuild> = HashSet::default();
        let mut c = Bitset::new(130);
        c.set(129);
        assert!(c.is_subset(&a) && !a.is_subset(&c) && a.get(0) && !c.get(0));
        assert!(seen.insert(a));
        assert!(!seen.insert(b));
        assert_eq!(Bitset::new(130).heap_bytes(), 24);
    }
}
