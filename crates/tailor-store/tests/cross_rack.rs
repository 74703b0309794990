//! The emulated cross-rack link (`emulation.racks`, `emulation.cross_delay_us`, mapped from a
//! spec's `cluster.topology`): a read from a coordinator in another rack takes the delay each
//! way, one from the same rack does not.

use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tailor_store::config::{EmulationConfig, Member, NodeConfig};
use tailor_store::internode::{Message, Seal};
use tailor_store::peer::Peer;

#[tokio::test(start_paused = true)]
async fn each_frame_leaves_the_delay_after_it_was_queued_in_order() {
    let (tx, rx) = tokio::sync::mpsc::channel(16);
    let mut out = tailor_store::internode::delay::delayed(rx, Duration::from_millis(5));
    let start = tokio::time::Instant::now();
    tx.send(1).await.unwrap();
    tokio::time::sleep(Duration::from_millis(2)).await;
    tx.send(2).await.unwrap();
    assert_eq!(out.recv().await, Some(1));
    assert_eq!(start.elapsed(), Duration::from_millis(5));
    assert_eq!(out.recv().await, Some(2));
    assert_eq!(start.elapsed(), Duration::from_millis(7), "not delayed behind the first");
    drop(tx);
    assert_eq!(out.recv().await, None);
}

#[test]
fn peers_in_other_racks_get_the_cross_delay() {
    let e = EmulationConfig { racks: 2, cross_delay_us: 5000, ..EmulationConfig::default() };
    assert_eq!(e.cross_delay(0, 1), Some(Duration::from_millis(5)));
    assert_eq!(e.cross_delay(0, 2), None, "nodes 0 and 2 share rack 0");
    assert_eq!(EmulationConfig::default().cross_delay(0, 1), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cross_rack_read_takes_at_least_the_delay_both_ways() {
    let ports = tailor_store::cluster::free_ports(2).unwrap();
    let addr = |i: usize| SocketAddr::from(([127, 0, 0, 1], ports[i]));
    let dir = tempfile::tempdir().unwrap();
    let cfg = NodeConfig {
        data_dir: dir.path().to_path_buf(),
        client_addr: addr(0),
        peer_addr: Some(addr(1)),
        members: vec![Member { id: 0, peer: addr(1) }],
        replication: 1,
        ..NodeConfig::default()
    };
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let node = tokio::spawn(tailor_store::start::run(cfg, async move { drop(stopped.await) }));
    let deadline = Instant::now() + Duration::from_secs(10);
    while !tailor_store::cluster::wait_listening(addr(1), deadline) {}

    let delay = Duration::from_millis(200);
    let read = |id| Message::Read { id, key: b"k".to_vec(), tags: Default::default(), age: 0 };
    let timed = |peer: Peer, id| async move {
        let start = Instant::now();
        let reply = peer.call(read(id), Duration::from_secs(5)).await;
        assert!(matches!(reply, Ok(Message::ReadReply { .. })), "{reply:?}");
        start.elapsed()
    };
    let near = Peer::new(0, 0, addr(1), 1 << 20, 3, Seal::new(None));
    let far = Peer::new(0, 0, addr(1), 1 << 20, 3, Seal::new(None)).with_cross_delay(delay);
    let far_time = timed(far, 1).await;
    let near_time = timed(near, 2).await;
    assert!(far_time >= 2 * delay, "the far read took {far_time:?}, under twice {delay:?}");
    assert!(near_time < 2 * delay, "the near read took {near_time:?}");
    let _ = stop.send(());
    node.await.unwrap().unwrap();
}
