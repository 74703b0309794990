//! TLS for clients: a node with `tls_addr` serves redis-rs over TLS (rustls) beside its
//! plain-text port, with passwords, with mutual TLS, under the same `max_clients` cap; a client
//! that does not speak TLS or never finishes its handshake is dropped while others are served;
//! bad certificate files stop the node at start-up with an error naming the field and the file.
//! The certificates are made here with rcgen: a CA, a server certificate for 127.0.0.1 and
//! localhost, and client certificates from that CA and from another one.

mod common;
use common::*;
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
use redis::{ClientTlsConfig, TlsCertificates};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tailor_store::cluster::{free_ports, ClusterOptions};
use tailor_store::config::NodeConfig;

/// A certificate and its key, in PEM.
struct Identity {
    cert: String,
    key: String,
}

/// What a test needs: the CA, the files the node reads, and client identities.
struct Pki {
    dir: tempfile::TempDir,
    ca: String,
    /// Signed by the CA.
    client: Identity,
    /// Signed by a CA the node does not know.
    stranger: Identity,
}

fn ca(name: &str) -> CertifiedIssuer<'static, KeyPair> {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(rcgen::DnType::CommonName, name);
    CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap()
}

fn issue(ca: &CertifiedIssuer<'static, KeyPair>, names: &[&str]) -> Identity {
    let key = KeyPair::generate().unwrap();
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let cert = CertificateParams::new(names).unwrap().signed_by(&key, ca).unwrap();
    Identity { cert: cert.pem(), key: key.serialize_pem() }
}

impl Pki {
    fn new() -> Pki {
        let dir = tempfile::tempdir().unwrap();
        let authority = ca("tailor test CA");
        let server = issue(&authority, &["localhost", "127.0.0.1"]);
        std::fs::write(dir.path().join("ca.pem"), authority.pem()).unwrap();
        std::fs::write(dir.path().join("server.pem"), &server.cert).unwrap();
        std::fs::write(dir.path().join("server.key"), &server.key).unwrap();
        let client = issue(&authority, &["client"]);
        let stranger = issue(&ca("another CA"), &["client"]);
        Pki { ca: authority.pem(), client, stranger, dir }
    }

    fn file(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Turn TLS on in `c` on a fresh port, with this PKI's server certificate.
    fn enable(&self, c: &mut NodeConfig) {
        c.tls_addr = Some(SocketAddr::from(([127, 0, 0, 1], free_ports(1).unwrap()[0])));
        c.tls_cert_file = Some(self.file("server.pem"));
        c.tls_key_file = Some(self.file("server.key"));
    }

    /// A redis-rs client of `addr` over TLS trusting this CA, presenting `id` if given;
    /// `user_pass` as in a URL (`:password@`), or empty.
    fn client(&self, addr: SocketAddr, user_pass: &str, id: Option<&Identity>) -> redis::Client {
        let client_tls = id.map(|i| ClientTlsConfig {
            client_cert: i.cert.clone().into_bytes(),
            client_key: i.key.clone().into_bytes(),
        });
        let certs = TlsCertificates { client_tls, root_cert: Some(self.ca.clone().into_bytes()) };
        redis::Client::build_with_tls(format!("rediss://{user_pass}{addr}/"), certs).unwrap()
    }

    fn conn(&self, addr: SocketAddr, user_pass: &str, id: Option<&Identity>) -> redis::RedisResult<redis::Connection> {
        self.client(addr, user_pass, id).get_connection_with_timeout(Duration::from_secs(10))
    }
}

/// A one-node cluster with TLS on (this PKI's server certificate), after `tweak`; and its TLS
/// address.
fn tls_node(pki: &Pki, tweak: impl Fn(&mut NodeConfig)) -> (TestCluster, SocketAddr) {
    let opts = ClusterOptions { nodes: 1, replication: 1, ..ClusterOptions::default() };
    let cl = TestCluster::start(opts, |c| {
        pki.enable(c);
        tweak(c)
    });
    let tls = cl.cfgs[0].tls_addr.expect("TLS on");
    (cl, tls)
}

fn ping(con: &mut redis::Connection) -> redis::RedisResult<String> {
    redis::cmd("PING").query(con)
}

/// The connection if it answers a PING.
fn pinged(r: redis::RedisResult<redis::Connection>) -> Option<redis::Connection> {
    r.and_then(|mut c| ping(&mut c).map(|_| c)).ok()
}

/// Connect until a connection answers (the start-up probes' connections may not have given
/// their slots back yet).
fn served_within_10s(connect: impl Fn() -> redis::RedisResult<redis::Connection>) -> redis::Connection {
    let mut con = None;
    assert!(eventually(10, || {
        con = pinged(connect());
        con.is_some()
    }));
    con.expect("a connection within 10 s")
}

fn refused(r: redis::RedisResult<redis::Connection>) -> bool {
    pinged(r).is_none()
}

/// Send `bytes` on a raw TCP connection and read until the node closes it (within 10 s).
/// (Bytes sent to a connection the node refuses and closes at once may reset it before its
/// error is read: send none there.)
fn raw_exchange(addr: SocketAddr, bytes: &[u8]) -> Vec<u8> {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(bytes).unwrap();
    let mut reply = Vec::new();
    let _ = s.read_to_end(&mut reply);
    reply
}

#[test]
fn set_get_and_auth_over_tls_beside_the_plain_port() {
    let pki = Pki::new();
    let (cl, tls) = tls_node(&pki, |c| {
        c.requirepass = Some("data-pass".into());
    });
    let mut anonymous = pki.conn(tls, "", None).unwrap();
    let e = get(&mut anonymous, "k").unwrap_err();
    assert!(e.to_string().contains("NOAUTH"), "{e}");
    assert!(pki.conn(tls, ":wrong@", None).is_err(), "a wrong password is refused over TLS too");

    let mut con = pki.conn(tls, ":data-pass@", None).unwrap();
    set(&mut con, "k", b"over tls").unwrap();
    assert_eq!(get(&mut con, "k").unwrap(), Some(b"over tls".to_vec()));
    let big = value(3 << 20, 7);
    set(&mut con, "big", &big).unwrap();
    assert_eq!(get(&mut con, "big").unwrap(), Some(big), "a value of many TLS records");
    let info: String = redis::cmd("INFO").query(&mut con).unwrap();
    assert!(info.contains(&format!("tls_port:{}", tls.port())), "{info}");

    // the plain port keeps working, with the same password
    let url = format!("redis://:data-pass@{}/", cl.cfgs[0].client_addr);
    let mut plain = redis::Client::open(url).unwrap().get_connection().unwrap();
    assert_eq!(get(&mut plain, "k").unwrap(), Some(b"over tls".to_vec()));
    assert_eq!(cl.metric(0, "tailor_tls_handshake_failures_total", &[]), 0.0);
}

#[test]
fn a_tls_only_node_refuses_plain_text_on_its_tls_port() {
    let pki = Pki::new();
    let (cl, tls) = tls_node(&pki, |c| {
        c.client_addr.set_port(0);
    });
    let reply = raw_exchange(tls, b"*1\r\n$4\r\nPING\r\n");
    assert!(!String::from_utf8_lossy(&reply).contains("PONG"), "plain text was answered: {reply:?}");
    // (the start-up probes, which connect and close, count too)
    assert!(cl.metric(0, "tailor_tls_handshake_failures_total", &[]) >= 1.0);
    let mut con = pki.conn(tls, "", None).unwrap();
    assert_eq!(ping(&mut con).unwrap(), "PONG", "the node keeps serving TLS clients");
    let info: String = redis::cmd("INFO").query(&mut con).unwrap();
    assert!(info.contains("tcp_port:0"), "{info}");
}

#[test]
fn mutual_tls_needs_a_certificate_from_the_ca() {
    let pki = Pki::new();
    let (cl, tls) = tls_node(&pki, |c| {
        c.tls_ca_cert_file = Some(pki.file("ca.pem"));
        c.tls_auth_clients = true;
    });
    assert!(refused(pki.conn(tls, "", None)), "a client without a certificate is refused");
    assert!(refused(pki.conn(tls, "", Some(&pki.stranger))), "a certificate from another CA is refused");
    let mut con = pki.conn(tls, "", Some(&pki.client)).unwrap();
    set(&mut con, "k", b"v").unwrap();
    assert_eq!(get(&mut con, "k").unwrap(), Some(b"v".to_vec()));
    assert!(cl.metric(0, "tailor_tls_handshake_failures_total", &[]) >= 2.0);
}

#[test]
fn silent_tls_clients_are_dropped_after_the_handshake_timeout_while_others_are_served() {
    let pki = Pki::new();
    let (cl, tls) = tls_node(&pki, |c| {
        c.tls_handshake_timeout_ms = 1500;
    });
    let start = Instant::now();
    let silent: Vec<TcpStream> = (0..2).map(|_| TcpStream::connect(tls).unwrap()).collect();
    let mut served = pki.conn(tls, "", None).unwrap();
    set(&mut served, "k", b"v").unwrap();
    for mut s in silent {
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let mut buf = [0u8; 64];
        assert!(matches!(s.read(&mut buf), Ok(0) | Err(_)), "a silent client was not dropped");
    }
    let took = start.elapsed();
    assert!(took >= Duration::from_millis(1400) && took < Duration::from_secs(15), "dropped after {took:?}");
    // (counted just after the socket is closed; the start-up probes went to the plain port)
    let counted = || cl.metric(0, "tailor_tls_handshake_failures_total", &[]) == 2.0;
    assert!(eventually(10, counted), "{}", cl.metric(0, "tailor_tls_handshake_failures_total", &[]));
    assert_eq!(get(&mut served, "k").unwrap(), Some(b"v".to_vec()), "the TLS client was served throughout");
}

#[test]
fn max_clients_counts_plain_and_tls_clients_together() {
    let pki = Pki::new();
    let (cl, tls) = tls_node(&pki, |c| {
        c.max_clients = 2;
    });
    let plain_url = format!("redis://{}/", cl.cfgs[0].client_addr);
    let plain = served_within_10s(|| redis::Client::open(plain_url.as_str()).unwrap().get_connection());
    let mut secure = served_within_10s(|| pki.conn(tls, "", None));
    let reply = raw_exchange(cl.cfgs[0].client_addr, b"");
    assert!(String::from_utf8_lossy(&reply).contains("max number of clients reached"), "{reply:?}");
    assert!(refused(pki.conn(tls, "", None)), "a TLS client over the cap is closed");
    assert!(cl.metric(0, "tailor_connections_refused_total", &[]) >= 2.0);
    drop(plain);
    assert!(eventually(10, || pinged(pki.conn(tls, "", None)).is_some()), "a slot is free again");
    assert_eq!(ping(&mut secure).unwrap(), "PONG");
}

/// Run `tailor node` on `cfg` and return its exit status and output (it must exit within 30 s).
fn start_failing(cfg: &NodeConfig, dir: &Path) -> (std::process::ExitStatus, String) {
    let path = dir.join("node.toml");
    std::fs::write(&path, cfg.to_toml()).unwrap();
    let mut child = std::process::Command::new(exe())
        .args(["node", "--config"])
        .arg(&path)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the node started despite its bad TLS files");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    (out.status, String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr))
}

#[test]
fn bad_tls_files_stop_the_node_with_an_error_naming_the_field_and_the_file() {
    let pki = Pki::new();
    let dir = tempfile::tempdir().unwrap();
    let mut cfg =
        tailor_store::cluster::plan(&ClusterOptions { nodes: 1, replication: 1, ..Default::default() }, dir.path())
            .unwrap()
            .remove(0);
    pki.enable(&mut cfg);
    let missing = pki.file("no-such-cert.pem");
    cfg.tls_cert_file = Some(missing.clone());
    let (status, out) = start_failing(&cfg, dir.path());
    assert!(!status.success());
    assert!(out.contains("`tls_cert_file`") && out.contains(&*missing.to_string_lossy()), "{out}");

    pki.enable(&mut cfg);
    cfg.tls_key_file = Some(pki.file("ca.pem"));
    let (status, out) = start_failing(&cfg, dir.path());
    assert!(!status.success());
    assert!(out.contains("`tls_key_file`") && out.contains("ca.pem") && out.contains("no private key"), "{out}");
}
