//! What one Cassandra node is started with: its `cassandra.yaml`, its logging configuration and
//! its JVM options. The server jar ships without `conf/`, so both files are written per node.
//!
//! Choices, all for running Tailor's strategies faithfully on one machine:
//! - Node `i` listens on `127.0.0.(i+1)` with Cassandra's default ports (loopback addresses
//!   need no network setup on Linux) and its own JMX port `7199 + i`.
//! - `RackInferringSnitch`: a topology snitch, so a coordinator sorts itself first among a key's
//!   replicas and serves a read at consistency ONE itself when it is a replica. Together with the
//!   dynamic snitch off, the node the driver's policy chose is the node that reads (the
//!   `SimpleSnitch` keeps ring order and would forward to the primary instead).
//! - The dynamic snitch is an option: off for Tailor's own selectors, on to measure Cassandra's
//!   server-side strategy.

use std::fmt::Write as _;
use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;

/// Cassandra's native protocol (CQL) port.
pub const CQL_PORT: u16 = 9042;

/// The first node's JMX port; node `i` uses `JMX_BASE + i`.
pub const JMX_BASE: u16 = 7199;

/// The loopback address of node `index` (0-based).
pub fn node_ip(index: usize) -> IpAddr {
    assert!(index < 254, "at most 254 loopback nodes");
    IpAddr::V4(Ipv4Addr::new(127, 0, 0, index as u8 + 1))
}

/// Settings of one node's configuration.
#[derive(Clone, Debug)]
pub struct NodeSettings {
    /// 0-based index.
    pub index: usize,
    /// Whether the server-side dynamic snitch reorders replicas.
    pub dynamic_snitch: bool,
    /// Virtual nodes per node.
    pub num_tokens: u32,
}

/// `cassandra.yaml` for a node whose files live under `home`.
pub fn cassandra_yaml(s: &NodeSettings, home: &Path) -> String {
    let ip = node_ip(s.index);
    let seed = node_ip(0);
    let dir = |name: &str| home.join(name).display().to_string();
    let mut y = String::new();
    let _ = writeln!(y, "cluster_name: tailor");
    let _ = writeln!(y, "num_tokens: {}", s.num_tokens);
    let _ = writeln!(y, "allocate_tokens_for_local_replication_factor: 3");
    let _ = writeln!(y, "partitioner: org.apache.cassandra.dht.Murmur3Partitioner");
    let _ = writeln!(y, "endpoint_snitch: RackInferringSnitch");
    let _ = writeln!(y, "dynamic_snitch: {}", s.dynamic_snitch);
    let _ = writeln!(y, "commitlog_sync: periodic");
    let _ = writeln!(y, "commitlog_sync_period: 10000ms");
    let _ = writeln!(y, "seed_provider:");
    let _ = writeln!(y, "  - class_name: org.apache.cassandra.locator.SimpleSeedProvider");
    let _ = writeln!(y, "    parameters:");
    let _ = writeln!(y, "      - seeds: \"{seed}:7000\"");
    let _ = writeln!(y, "listen_address: {ip}");
    let _ = writeln!(y, "rpc_address: {ip}");
    let _ = writeln!(y, "storage_port: 7000");
    let _ = writeln!(y, "native_transport_port: {CQL_PORT}");
    let _ = writeln!(y, "start_native_transport: true");
    let _ = writeln!(y, "data_file_directories: [\"{}\"]", dir("data"));
    for (key, name) in [
        ("commitlog_directory", "commitlog"),
        ("saved_caches_directory", "saved_caches"),
        ("hints_directory", "hints"),
        ("cdc_raw_directory", "cdc_raw"),
    ] {
        let _ = writeln!(y, "{key}: \"{}\"", dir(name));
    }
    y
}

/// Logback configuration: INFO and above to `home/system.log`, nothing to the console.
pub fn logback_xml(home: &Path) -> String {
    format!(
        r#"<configuration>
  <appender name="FILE" class="ch.qos.logback.core.FileAppender">
    <file>{}</file>
    <encoder><pattern>%-5level [%thread] %date{{ISO8601}} %F:%L - %msg%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="FILE"/></root>
</configuration>
"#,
        home.join("system.log").display()
    )
}

/// Modules Cassandra reaches into on Java 11 and later (the list its own
/// `conf/jvm11-server.options` and `jvm17-server.options` carry).
const JPMS_EXPORTS: &[&str] = &[
    "java.base/jdk.internal.misc",
    "java.base/jdk.internal.ref",
    "java.base/sun.nio.ch",
    "java.management.rmi/com.sun.jmx.remote.internal.rmi",
    "java.rmi/sun.rmi.registry",
    "java.rmi/sun.rmi.server",
    "java.sql/java.sql",
    "java.base/java.lang.ref",
    "jdk.unsupported/sun.misc",
];

const JPMS_OPENS: &[&str] = &[
    "java.base/java.lang.module",
    "java.base/jdk.internal.loader",
    "java.base/jdk.internal.ref",
    "java.base/jdk.internal.reflect",
    "java.base/jdk.internal.math",
    "java.base/jdk.internal.module",
    "java.base/jdk.internal.util.jar",
    "jdk.management/com.sun.management.internal",
    "java.base/sun.nio.ch",
    "java.base/java.io",
    "java.base/java.nio",
    "java.base/java.util.concurrent",
    "java.base/java.util",
    "java.base/java.util.concurrent.atomic",
    "java.base/java.lang",
    "java.base/java.math",
    "java.base/java.lang.reflect",
    "java.base/java.net",
];

/// The JVM arguments (before the main class) of node `index` with a `heap_mb` heap.
pub fn jvm_args(index: usize, heap_mb: u32, home: &Path, lib: &Path) -> Vec<String> {
    let mut args = vec![
        format!("-Xms{heap_mb}m"),
        format!("-Xmx{heap_mb}m"),
        "-XX:+UseG1GC".into(),
        "-Djdk.attach.allowAttachSelf=true".into(),
        format!("-Dcassandra.config=file://{}", home.join("cassandra.yaml").display()),
        format!("-Dlogback.configurationFile={}", home.join("logback.xml").display()),
        format!("-Dcassandra.storagedir={}", home.display()),
        format!("-Dcassandra.jmx.local.port={}", JMX_BASE + index as u16),
        "-Dcassandra-foreground=yes".into(),
        // a fresh loopback cluster has nothing to wait for: no gossip to settle, no ring to learn
        "-Dcassandra.skip_wait_for_gossip_to_settle=0".into(),
        "-Dcassandra.ring_delay_ms=3000".into(),
    ];
    args.extend(JPMS_EXPORTS.iter().flat_map(|m| ["--add-exports".to_string(), format!("{m}=ALL-UNNAMED")]));
    args.extend(JPMS_OPENS.iter().flat_map(|m| ["--add-opens".to_string(), format!("{m}=ALL-UNNAMED")]));
    args.push("-cp".into());
    args.push(format!("{}/*", lib.display()));
    args
}

/// The class Cassandra's start script runs.
pub const MAIN_CLASS: &str = "org.apache.cassandra.service.CassandraDaemon";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_get_their_own_address_and_jmx_port_and_share_one_seed() {
        let home = Path::new("/tmp/x/node2");
        let y = cassandra_yaml(&NodeSettings { index: 2, dynamic_snitch: false, num_tokens: 16 }, home);
        assert!(y.contains("listen_address: 127.0.0.3\n"));
        assert!(y.contains("rpc_address: 127.0.0.3\n"));
        assert!(y.contains("seeds: \"127.0.0.1:7000\""));
        assert!(y.contains("dynamic_snitch: false\n"));
        assert!(y.contains("endpoint_snitch: RackInferringSnitch\n"));
        assert!(y.contains("\"/tmp/x/node2/commitlog\""));
        let args = jvm_args(2, 512, home, Path::new("/c/lib"));
        assert!(args.contains(&"-Dcassandra.jmx.local.port=7201".to_string()));
        assert!(args.contains(&"-Xmx512m".to_string()));
        assert_eq!(args.last().map(String::as_str), Some("/c/lib/*"));
    }
}
