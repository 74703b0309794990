//! Tailor's node ids for the driver's nodes: each host id gets the next id the first time it is
//! seen, and keeps it (a selector's per-replica state is keyed by these ids).

use scylla::cluster::NodeRef;
use std::collections::HashMap;
use tailor_core::model::NodeId;
use uuid::Uuid;

/// Host id ↔ node id.
#[derive(Debug, Default)]
pub struct NodeIds {
    ids: HashMap<Uuid, NodeId>,
    hosts: Vec<Uuid>,
}

impl NodeIds {
    /// The id of `node`, made if new.
    pub fn id(&mut self, node: NodeRef<'_>) -> NodeId {
        self.id_of(node.host_id)
    }

    /// The id of host `host`, made if new.
    pub fn id_of(&mut self, host: Uuid) -> NodeId {
        *self.ids.entry(host).or_insert_with(|| {
            self.hosts.push(host);
            NodeId::try_from(self.hosts.len() - 1).expect("fewer than 2^32 nodes")
        })
    }

    /// The host id of node `id`.
    pub fn host(&self, id: NodeId) -> Option<Uuid> {
        self.hosts.get(id as usize).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_dense_stable_and_reversible() {
        let mut ids = NodeIds::default();
        let (a, b) = (Uuid::from_u128(7), Uuid::from_u128(3));
        assert_eq!((ids.id_of(a), ids.id_of(b), ids.id_of(a)), (0, 1, 0));
        assert_eq!((ids.host(1), ids.host(2)), (Some(b), None));
    }
}
