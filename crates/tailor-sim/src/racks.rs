//! Which hops cross racks (`cluster.topology`): a coordinator and a server in different racks
//! talk over the slower link, `cross_delay_ms` more each way.

use tailor_core::model::NodeId;
use tailor_core::time::{from_ms, Nanos};
use tailor_core::topology::rack_of;
use tailor_spec::Spec;

/// The racks of the run's servers and coordinators, and the extra delay between two racks.
pub struct Racks {
    servers: Vec<u16>,
    clients: Vec<u16>,
    cross: Nanos,
}

impl Racks {
    /// The spec's racks, or `None` when every hop takes the same delay (no topology, one rack
    /// or no cross delay): the engine then keeps its single hops lane.
    pub fn new(spec: &Spec) -> Option<Box<Racks>> {
        let t = &spec.cluster.topology;
        if !t.is_split() {
            return None;
        }
        let place = |n: usize| (0..n).map(|i| rack_of(i as u32, t.racks) as u16).collect();
        Some(Box::new(Racks {
            servers: place(spec.cluster.servers),
            clients: place(spec.cluster.coordinators()),
            cross: from_ms(t.cross_delay_ms),
        }))
    }

    /// Whether a message between coordinator `client` and `server` crosses racks.
    #[inline]
    pub fn far(&self, client: u32, server: NodeId) -> bool {
        self.clients[client as usize] != self.servers[server as usize]
    }

    /// The extra one-way delay of a cross-rack message.
    #[inline]
    pub fn cross(&self) -> Nanos {
        self.cross
    }
}
