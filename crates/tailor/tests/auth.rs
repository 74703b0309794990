//! Passwords: with `requirepass`, a client must AUTH before anything else; with
//! `admin_password`, only the admin user may change how the node runs (`TAILOR.SET`). Checked
//! with redis-rs, which authenticates from the URL as any Redis client does.

mod common;
use common::*;
use tailor_store::cluster::ClusterOptions;
use tailor_store::internode::{Message, Seal};

fn conn(cl: &TestCluster, user_pass: &str) -> redis::Connection {
    let url = format!("redis://{user_pass}@{}/", cl.cfgs[0].client_addr);
    redis::Client::open(url).unwrap().get_connection().unwrap()
}

#[test]
fn requirepass_and_the_admin_user() {
    let cl = TestCluster::start(ClusterOptions { nodes: 1, ..ClusterOptions::default() }, |c| {
        c.requirepass = Some("data-pass".into());
        c.admin_password = Some("admin-pass".into());
    });
    let mut anonymous = cl.conn(0);
    let e = get(&mut anonymous, "k").unwrap_err();
    assert!(e.to_string().contains("NOAUTH"), "{e}");
    let e = redis::Client::open(format!("redis://:wrong@{}/", cl.cfgs[0].client_addr)).unwrap().get_connection();
    let e = e.err().expect("a wrong password is refused").to_string();
    assert!(e.contains("WRONGPASS") || e.contains("uthentication"), "{e}");
    assert_eq!(cl.metric(0, "tailor_auth_failures_total", &[]), 1.0);

    let mut user = conn(&cl, ":data-pass");
    set(&mut user, "k", b"v").unwrap();
    assert_eq!(get(&mut user, "k").unwrap(), Some(b"v".to_vec()));
    let e = redis::cmd("TAILOR.SET").arg("workers").arg(2).query::<()>(&mut user).unwrap_err();
    assert!(e.to_string().contains("admin"), "{e}");

    let mut admin = conn(&cl, "admin:admin-pass");
    let _: () = redis::cmd("TAILOR.SET").arg("workers").arg(2).query(&mut admin).unwrap();
    assert_eq!(get(&mut admin, "k").unwrap(), Some(b"v".to_vec()), "the admin reads data too");
    // the anonymous connection still cannot read, and the node kept serving throughout
    assert!(get(&mut anonymous, "k").is_err());
}

#[test]
fn internode_frames_need_the_cluster_secret() {
    let secret = "a secret shared by the cluster";
    let cl = TestCluster::start(ClusterOptions { nodes: 3, ..ClusterOptions::default() }, |c| {
        c.cluster_secret = Some(secret.into());
    });
    // the nodes sign their own frames: replication works (a QUORUM write's third copy may land
    // after a read at ONE picks that replica, so each node is asked until it has it)
    set(&mut cl.conn(0), "k", b"v").unwrap();
    for i in 0..3 {
        let mut con = cl.conn(i);
        let replicated = eventually(10, || get(&mut con, "k").ok().flatten().as_deref() == Some(b"v".as_slice()));
        assert!(replicated, "node {i} never read the value");
    }
    let now_us = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_micros() as u64;
    let forged = Message::Write {
        id: 9,
        key: b"k".to_vec(),
        version: now_us << 8,
        value: Some(b"forged".to_vec()),
        tags: Default::default(),
        age: 0,
    };
    let peer = cl.cfgs[0].peer_listen();
    for seal in [Seal::new(None), Seal::new(Some("not the cluster's secret"))] {
        let mut s = std::net::TcpStream::connect(peer).unwrap();
        s.set_read_timeout(Some(std::time::Duration::from_secs(10))).unwrap();
        std::io::Write::write_all(&mut s, &seal.encode(&forged)).unwrap();
        let mut reply = Vec::new();
        let _ = std::io::Read::read_to_end(&mut s, &mut reply);
        assert!(reply.is_empty(), "a forged frame got an answer");
    }
    assert_eq!(cl.metric(0, "tailor_forged_frames_total", &[]), 2.0);
    assert_eq!(get(&mut cl.conn(0), "k").unwrap(), Some(b"v".to_vec()), "the forged write was not applied");
    let signed = Seal::new(Some(secret));
    let mut s = std::net::TcpStream::connect(peer).unwrap();
    std::io::Write::write_all(&mut s, &signed.encode(&Message::Ping { id: 1, clock: 0 })).unwrap();
    let mut len = [0u8; 4];
    std::io::Read::read_exact(&mut s, &mut len).unwrap();
    let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
    std::io::Read::read_exact(&mut s, &mut body).unwrap();
    assert!(matches!(signed.decode(&body), Ok(Message::Pong { id: 1, .. })), "a signed frame is answered, signed");
}

#[test]
fn wrong_passwords_are_counted_slowed_and_cut_off() {
    let cl = TestCluster::start(ClusterOptions { nodes: 1, ..ClusterOptions::default() }, |c| {
        c.requirepass = Some("data-pass".into());
    });
    let mut s = std::net::TcpStream::connect(cl.cfgs[0].client_addr).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(30))).unwrap();
    let mut reader = std::io::BufReader::new(s.try_clone().unwrap());
    let mut line = String::new();
    let started = std::time::Instant::now();
    // HELLO's AUTH is counted like AUTH's (it was not); guesses past the tenth are not answered
    let hello = b"*5\r\n$5\r\nHELLO\r\n$1\r\n2\r\n$4\r\nAUTH\r\n$7\r\ndefault\r\n$5\r\nguess\r\n";
    std::io::Write::write_all(&mut s, hello).unwrap();
    std::io::BufRead::read_line(&mut reader, &mut line).unwrap();
    assert!(line.starts_with("-WRONGPASS"), "{line}");
    let mut answered = 1;
    for _ in 0..20 {
        if std::io::Write::write_all(&mut s, b"*2\r\n$4\r\nAUTH\r\n$5\r\nguess\r\n").is_err() {
            break;
        }
        line.clear();
        match std::io::BufRead::read_line(&mut reader, &mut line) {
            Ok(n) if n > 0 => answered += 1,
            _ => break,
        }
    }
    let took = started.elapsed();
    assert_eq!(answered, 10, "the connection closes after the tenth wrong password");
    assert!(took >= std::time::Duration::from_millis(1_000), "ten guesses took only {took:?}");
    assert_eq!(cl.metric(0, "tailor_auth_failures_total", &[]), 10.0);
    // the right password still works at once on a new connection, and CLIENT KILL says no
    let mut user = conn(&cl, ":data-pass");
    let e = redis::cmd("CLIENT").arg("KILL").arg("ID").arg(1).query::<()>(&mut user).unwrap_err();
    assert!(e.to_string().contains("not supported"), "{e}");
}
