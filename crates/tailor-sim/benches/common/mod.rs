//! How the benches scale the `c3` setup to a cluster size (the `scale` and `floor` benches).

/// Clients per server.
pub const CLIENTS_PER_SERVER: usize = 3;

/// Requests per server, unless a bench is told otherwise.
pub const REQUESTS_PER_SERVER: u64 = 2_000;

/// The overrides that run the `c3` setup on `servers` servers with `requests` requests, its
/// clients scaled with the servers.
pub fn size_overrides(servers: usize, requests: u64) -> [String; 3] {
    [
        format!("cluster.servers={servers}"),
        format!("cluster.clients={}", CLIENTS_PER_SERVER * servers),
        format!("workload.requests={requests}"),
    ]
}
