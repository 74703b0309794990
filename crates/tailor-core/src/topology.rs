//! Racks (or datacenters): which one a node or a coordinator sits in. One rule for every
//! engine, so a spec's `cluster.topology` places the simulator's servers, the store's nodes and
//! the rack-aware selector's view of them alike.

/// The rack of node (or coordinator) `id` among `racks` racks: `id mod racks`. Consecutive
/// nodes alternate racks, so a ring whose replica groups are consecutive nodes spreads each
/// key's replicas over the racks as NetworkTopologyStrategy does. `racks` 0 or 1: one rack.
#[inline]
pub fn rack_of(id: u32, racks: usize) -> usize {
    if racks <= 1 {
        0
    } else {
        id as usize % racks
    }
}

#[cfg(test)]
mod tests {
    use super::rack_of;

    #[test]
    fn nodes_alternate_racks_and_no_topology_is_one_rack() {
        let racks: Vec<_> = (0..5).map(|n| rack_of(n, 2)).collect();
        assert_eq!(racks, [0, 1, 0, 1, 0]);
        assert_eq!(rack_of(7, 0), 0);
        assert_eq!(rack_of(7, 1), 0);
    }
}
