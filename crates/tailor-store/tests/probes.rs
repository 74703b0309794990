//! Prequal on the store over real TCP: two real nodes and a peer that answers heartbeats,
//! reads and writes but never a probe. A client's reads through a node running `prequal` all
//! succeed; the node's probes to the real replicas are answered (counted at both ends), and
//! those to the silent peer are counted lost once the request timeout passes, leaking nothing.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};
use tailor_store::config::{Member, NodeConfig};
use tailor_store::internode::{read_frame, Message, Seal};
use tokio::io::AsyncWriteExt;

/// A counter's value in the node's metrics text.
fn counter(metrics: SocketAddr, name: &str) -> f64 {
    let text = tailor_store::cluster::http_get(metrics, "/metrics").expect("metrics answer");
    let line = text.lines().find(|l| l.starts_with(name) && !l.starts_with('#'));
    line.and_then(|l| l.rsplit(' ').next()).and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("{name} in {text}"))
}

/// A peer that answers every heartbeat, read and write of its connections, and no probe.
async fn silent_to_probes(listener: tokio::net::TcpListener) {
    loop {
        let Ok((sock, _)) = listener.accept().await else { return };
        tokio::spawn(async move {
            let (mut rd, mut wr) = sock.into_split();
            let (seal, mut lease) = (Seal::new(None), tailor_store::limits::Budget::unlimited().lease());
            while let Ok(Some(body)) = read_frame(&mut rd, 1 << 20, &mut lease).await {
                let answer = match seal.decode(&body) {
                    Ok(Message::Ping { id, .. }) => {
                        let wall = std::time::SystemTime::UNIX_EPOCH.elapsed().unwrap().as_micros() as u64;
                        let feedback = Default::default();
                        Message::Pong { id, feedback, healthy: true, clock: 0, wall, hints: 0, recovering: 0 }
                    }
                    Ok(Message::Read { id, .. }) => {
                        Message::ReadReply { id, version: 0, value: None, feedback: Default::default() }
                    }
                    Ok(Message::Write { id, .. }) => {
                        Message::WriteAck { id, applied: true, feedback: Default::default() }
                    }
                    _ => continue,
                };
                if wr.write_all(&seal.encode(&answer)).await.is_err() {
                    return;
                }
            }
        });
    }
}

/// Send one RESP command and read its one reply (a status, an error or a bulk string).
fn command(con: &mut BufReader<TcpStream>, args: &[&str]) -> String {
    let mut req = format!("*{}\r\n", args.len());
    for a in args {
        req.push_str(&format!("${}\r\n{a}\r\n", a.len()));
    }
    con.get_mut().write_all(req.as_bytes()).unwrap();
    let mut line = String::new();
    con.read_line(&mut line).unwrap();
    if let Some(n) = line.strip_prefix('$').and_then(|n| n.trim().parse::<usize>().ok()) {
        let mut body = vec![0; n + 2];
        con.read_exact(&mut body).unwrap();
        return String::from_utf8_lossy(&body[..n]).into_owned();
    }
    line.trim().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probes_are_answered_and_a_peer_that_answers_none_wedges_no_read() {
    let ports = tailor_store::cluster::free_ports(7).unwrap();
    let addr = |i: usize| SocketAddr::from(([127, 0, 0, 1], ports[i]));
    // node i: clients on 2i, peers on 2i + 1; metrics on 4 + i; the silent peer on 6
    let members: Vec<Member> =
        [addr(1), addr(3), addr(6)].into_iter().enumerate().map(|(id, peer)| Member { id: id as u32, peer }).collect();
    let silent = tokio::net::TcpListener::bind(addr(6)).await.unwrap();
    tokio::spawn(silent_to_probes(silent));
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let mut stops = Vec::new();
    let mut nodes = Vec::new();
    for (i, dir) in dirs.iter().enumerate() {
        let cfg = NodeConfig {
            id: i as u32,
            data_dir: dir.path().to_path_buf(),
            client_addr: addr(2 * i),
            peer_addr: Some(addr(2 * i + 1)),
            metrics_addr: Some(addr(4 + i)),
            members: members.clone(),
            replication: 3,
            selector: "prequal".into(),
            request_timeout_ms: 300,
            heartbeat_ms: 50,
            ..NodeConfig::default()
        };
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        stops.push(stop);
        nodes.push(tokio::spawn(tailor_store::start::run(cfg, async move { drop(stopped.await) })));
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    for i in 0..2 {
        assert!(tailor_store::cluster::wait_listening(addr(2 * i), deadline), "node {i} listens");
    }
    let client = addr(0);
    let (reads, elapsed) = tokio::task::spawn_blocking(move || {
        let mut con = BufReader::new(TcpStream::connect(client).unwrap());
        con.get_mut().set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        for k in 0..20 {
            assert_eq!(command(&mut con, &["SET", &format!("k{k}"), "v"]), "+OK");
        }
        let start = Instant::now();
        let mut reads = 0;
        while start.elapsed() < Duration::from_millis(1500) {
            let got = command(&mut con, &["GET", &format!("k{}", reads % 20)]);
            assert!(!got.starts_with('-'), "a read failed: {got}");
            reads += 1;
        }
        (reads, start.elapsed())
    })
    .await
    .unwrap();
    // probes sent in the read phase's last request timeout may still be out
    tokio::time::sleep(Duration::from_millis(400)).await;
    let m = |name| counter(addr(4), name);
    let (sent, replied, lost) =
        (m("tailor_probes_sent_total"), m("tailor_probes_replied_total"), m("tailor_probes_lost_total"));
    println!("{reads} reads in {elapsed:?}; probes sent {sent}, answered {replied}, lost {lost}");
    assert!(sent >= reads as f64, "prequal probes on every read: {sent} probes, {reads} reads");
    assert!(replied > 0.0 && lost > 0.0, "answered {replied}, lost {lost}");
    assert_eq!(sent, replied + lost, "every probe ended, answered or lost");
    assert!(counter(addr(5), "tailor_probes_answered_total") > 0.0, "node 1 answered node 0's probes");
    // a lost probe costs no read its timeout: far more reads than timeouts fit in the phase
    assert!(reads > 50, "only {reads} reads in {elapsed:?}");
    for stop in stops {
        let _ = stop.send(());
    }
    for node in nodes {
        node.await.unwrap().unwrap();
    }
}
