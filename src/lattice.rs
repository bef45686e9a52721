//! Generalization lattices. A [`Node`] gives a level for each QI of a subset of
//! the quasi-identifiers (all of them, for the full lattice).

use itertools::Itertools;

/// A generalization: QI indices (ascending, job order) and a level for each.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Node {
    pub attrs: Vec<usize>,
    pub levels: Vec<u8>,
}

impl Node {
    /// A node over all `n` QIs.
    pub fn full(levels: Vec<u8>) -> Node {
        Node { attrs: (0..levels.len()).collect(), levels }
    }

    pub(crate) fn height(&self) -> u32 {
        height(&self.levels)
    }

    /// Is `self` at or above `other` on every QI of `self` (a rollup source must
    /// cover all of `self`'s QIs at lower or equal levels)?
    pub fn generalizes(&self, other: &Node) -> bool {
        self.attrs
            .iter()
            .zip(&self.levels)
            .all(|(a, l)| other.attrs.iter().position(|b| b == a).is_some_and(|i| other.levels[i] <= *l))
    }
}

/// A node's height: the sum of its levels.
pub(crate) fn height(levels: &[u8]) -> u32 {
    levels.iter().map(|&l| l as u32).sum()
}

/// Sort level vectors in lattice order: by height, then lexicographically.
pub fn sort(nodes: &mut [Vec<u8>]) {
    nodes.sort_by_key(|l| (height(l), l.clone()));
}

/// The full lattice over QIs with these hierarchy heights.
#[derive(Debug, Clone)]
pub struct Lattice {
    pub heights: Vec<u8>,
}

impl Lattice {
    pub fn new(heights: Vec<u8>) -> Lattice {
        Lattice { heights }
    }

    pub fn size(&self) -> u64 {
        self.heights.iter().map(|&h| h as u64 + 1).product()
    }

    /// Every node, bottom-up by height, then lexicographically.
    pub fn nodes(&self) -> Vec<Vec<u8>> {
        let mut all: Vec<Vec<u8>> = self.heights.iter().map(|&h| 0..=h).multi_cartesian_product().collect();
        if self.heights.is_empty() {
            all.clear();
        }
        sort(&mut all);
        all
    }

    /// Direct generalizations: one QI one level up.
    pub(crate) fn up(&self, levels: &[u8]) -> Vec<Vec<u8>> {
        (0..levels.len())
            .filter(|&a| levels[a] < self.heights[a])
            .map(|a| {
                let mut n = levels.to_vec();
                n[a] += 1;
                n
            })
            .collect()
    }

    /// Direct specializations: one QI one level down.
    pub(crate) fn down(&self, levels: &[u8]) -> Vec<Vec<u8>> {
        (0..levels.len())
            .filter(|&a| levels[a] > 0)
            .map(|a| {
                let mut n = levels.to_vec();
                n[a] -= 1;
                n
            })
            .collect()
    }

    pub fn top(&self) -> Vec<u8> {
        self.heights.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adult_sized_lattice() {
        let l = Lattice::new(vec![4, 3, 2, 2, 1, 1, 2, 1]);
        assert_eq!(l.size(), 4320);
        let nodes = l.nodes();
        assert_eq!(nodes.len(), 4320);
        assert_eq!(nodes[0], vec![0; 8]);
        assert_eq!(nodes[4319], l.top());
        assert_eq!(l.up(&l.top()).len(), 0);
        assert_eq!(l.up(&[0; 8]).len(), 8);
        assert_eq!(l.down(&[1, 0, 0, 0, 0, 0, 0, 1]), vec![vec![0, 0, 0, 0, 0, 0, 0, 1], vec![1, 0, 0, 0, 0, 0, 0, 0]]);
    }

    #[test]
    fn generalizes_needs_every_attribute_covered() {
        let a = Node { attrs: vec![0, 2], levels: vec![1, 1] };
        assert!(a.generalizes(&Node::full(vec![0, 5, 1])));
        assert!(!a.generalizes(&Node::full(vec![2, 0, 0])));
        assert!(!a.generalizes(&Node { attrs: vec![0], levels: vec![0] }));
    }
}
