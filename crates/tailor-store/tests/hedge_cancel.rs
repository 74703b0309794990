//! Hedge cancellation over real TCP: a node with one worker busy on a slow read holds a second
//! read in its queue; the coordinator's `Cancel` for it is answered at once as failed, and the
//! replica never executes it (its metrics say one read served, one copy cancelled).

use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tailor_store::config::{EmulationConfig, Member, NodeConfig};
use tailor_store::internode::{Message, Seal};
use tailor_store::peer::Peer;

/// A counter's value in the node's metrics text.
fn counter(metrics: SocketAddr, name: &str) -> f64 {
    let text = tailor_store::cluster::http_get(metrics, "/metrics").expect("metrics answer");
    let line = text.lines().find(|l| l.starts_with(name) && !l.starts_with('#'));
    line.and_then(|l| l.rsplit(' ').next()).and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("{name} in {text}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_queued_copy_is_answered_at_once_and_never_executed() {
    let ports = tailor_store::cluster::free_ports(3).unwrap();
    let addr = |i: usize| SocketAddr::from(([127, 0, 0, 1], ports[i]));
    let dir = tempfile::tempdir().unwrap();
    let cfg = NodeConfig {
        data_dir: dir.path().to_path_buf(),
        client_addr: addr(0),
        peer_addr: Some(addr(1)),
        metrics_addr: Some(addr(2)),
        members: vec![Member { id: 0, peer: addr(1) }],
        replication: 1,
        workers: 1,
        emulation: EmulationConfig { beta_us: 400_000.0, ..EmulationConfig::default() },
        ..NodeConfig::default()
    };
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let node = tokio::spawn(tailor_store::start::run(cfg, async move { drop(stopped.await) }));
    let deadline = Instant::now() + Duration::from_secs(10);
    while !tailor_store::cluster::wait_listening(addr(1), deadline) {}

    let peer = std::sync::Arc::new(Peer::new(0, 0, addr(1), 1 << 20, 3, Seal::new(None)));
    let read = |id| Message::Read { id, key: b"k".to_vec(), tags: Default::default(), age: 0 };
    let timeout = Duration::from_secs(5);
    let (p1, p2) = (peer.clone(), peer.clone());
    let first = tokio::spawn(async move { p1.call(read(1), timeout).await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let second = tokio::spawn(async move { p2.call(read(2), timeout).await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let asked = Instant::now();
    peer.tell(&Message::Cancel { id: 2 });
    match second.await.unwrap() {
        Ok(Message::Failed { id: 2, reason, .. }) => assert_eq!(reason, "cancelled"),
        other => panic!("the cancelled copy's answer: {other:?}"),
    }
    assert!(asked.elapsed() < Duration::from_millis(200), "answered at once, not after the running read");
    assert!(matches!(first.await.unwrap(), Ok(Message::ReadReply { id: 1, .. })), "the running read finishes");
    // the worker is free: a copy still queued would have run by now
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(counter(addr(2), "tailor_cancelled_copies_total"), 1.0);
    assert_eq!(counter(addr(2), "tailor_reads_served_total"), 1.0, "the cancelled read was not executed");
    assert!(counter(addr(2), "tailor_cancel_saved_ns_total") > 0.0);
    let _ = stop.send(());
    node.await.unwrap().unwrap();
}
