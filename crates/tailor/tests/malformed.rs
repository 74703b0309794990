//! Malformed input never takes a node down: truncated, oversized and garbage RESP frames, and
//! garbage internode frames, followed by a check that the node still serves.

mod common;
use common::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;
use tailor_store::cluster::ClusterOptions;

fn raw(addr: std::net::SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s
}

/// Send `bytes`, then read until the node closes or `want` bytes arrived.
fn exchange(addr: std::net::SocketAddr, bytes: &[u8], want: usize) -> String {
    let mut s = raw(addr);
    let _ = s.write_all(bytes);
    let _ = s.shutdown(std::net::Shutdown::Write);
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    while out.len() < want {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn still_serves(cl: &TestCluster) {
    for i in 0..cl.cfgs.len() {
        let mut con = cl.conn(i);
        set(&mut con, &format!("alive{i}"), b"yes").unwrap();
        assert_eq!(get(&mut con, &format!("alive{i}")).unwrap(), Some(b"yes".to_vec()));
    }
}

#[test]
fn garbage_resp_and_internode_frames_do_not_take_a_node_down() {
    let cl = TestCluster::start(ClusterOptions { nodes: 3, ..ClusterOptions::default() }, |c| {
        c.max_value_bytes = 1 << 20;
    });
    let client = cl.cfgs[0].client_addr;
    // garbage: protocol errors, the connection is closed
    for junk in
        [&b"*abc\r\n"[..], b"*1\r\n:12\r\n", b"*2\r\n$3\r\nGET\r\n$1\r\nkXY\r\n", b"*1\r\n$-5\r\n", b"*99999999999\r\n"]
    {
        let r = exchange(client, junk, usize::MAX);
        assert!(r.starts_with("-ERR Protocol error"), "{junk:?} -> {r}");
    }
    let r = exchange(client, &[b'x'; 100_000], usize::MAX);
    assert!(r.contains("too big inline request"), "{r}");
    let r = exchange(client, &(0..=255u8).cycle().take(5000).collect::<Vec<_>>(), usize::MAX);
    assert!(r.starts_with("-ERR"), "binary garbage -> {r}");
    // truncated frames: the node waits for the rest; closing mid-frame is harmless
    for cut in [&b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$10\r\nabc"[..], b"*2\r\n$3\r\nGE", b"*"] {
        let mut s = raw(client);
        s.write_all(cut).unwrap();
        drop(s);
    }
    // oversized: refused with an error, the same connection keeps working (pipelined after it)
    let mut big = b"*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$2000000\r\n".to_vec();
    big.extend(std::iter::repeat_n(b'z', 2_000_000));
    big.extend_from_slice(b"\r\n*1\r\n$4\r\nPING\r\n");
    let r = exchange(client, &big, 100);
    assert!(r.contains("-ERR argument of 2000000 bytes exceeds the maximum"), "{r}");
    assert!(r.ends_with("+PONG\r\n"), "{r}");
    // an oversized argument before other arguments is skipped with them
    let mut big2 = b"*3\r\n$3\r\nSET\r\n$2000000\r\n".to_vec();
    big2.extend(std::iter::repeat_n(b'k', 2_000_000));
    big2.extend_from_slice(b"\r\n$1\r\nv\r\n*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\n");
    let r = exchange(client, &big2, 60);
    assert!(r.contains("exceeds the maximum") && r.ends_with("$2\r\nhi\r\n"), "{r}");
    // a bulk over the hard protocol limit is a protocol error
    let r = exchange(client, b"*2\r\n$3\r\nGET\r\n$999999999999\r\n", usize::MAX);
    assert!(r.starts_with("-ERR Protocol error"), "{r}");

    // internode: bad version, unknown kind, huge declared length, truncated body, random bytes
    let peer = cl.cfgs[0].peer_listen();
    let frames: Vec<Vec<u8>> = vec![
        vec![0, 0, 0, 2, 99, 1],
        vec![0, 0, 0, 2, 1, 200],
        vec![0xff, 0xff, 0xff, 0xff, 1, 1],
        vec![0, 0, 0, 20, 1, 1, 0, 0],
        vec![0, 0, 0, 14, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 255, 255, 255, 255],
        (0..=255u8).cycle().take(3000).collect(),
        vec![0, 0, 0, 10, 1, 4, 1, 2, 3, 4, 5, 6, 7, 8],
    ];
    for f in frames {
        let mut s = raw(peer);
        let _ = s.write_all(&f);
        // a truncated frame then EOF: the node must drop the connection, not wait or crash
        let _ = s.shutdown(std::net::Shutdown::Write);
        let mut sink = Vec::new();
        let _ = s.read_to_end(&mut sink);
    }
    still_serves(&cl);
    let errors = cl.metric(0, "tailor_protocol_errors_total", &[]);
    assert!(errors >= 10.0, "{errors}");
}
