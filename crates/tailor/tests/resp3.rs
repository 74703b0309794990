//! RESP3 per connection: `HELLO 3` switches a connection to RESP3 (its reply already a map),
//! `HELLO 2` back; null is `_` and field-value replies are maps in RESP3, while RESP2
//! connections see exactly what they saw before. Checked on the wire, with redis-rs asking for
//! RESP3 in its URL, and with redis-py's `protocol=3`.

mod common;
use common::*;
use redis::{cmd, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;
use tailor_store::cluster::ClusterOptions;

fn one_node() -> TestCluster {
    TestCluster::start(ClusterOptions { nodes: 1, ..ClusterOptions::default() }, |_| {})
}

/// A raw connection that sends inline commands and reads each reply's exact bytes.
struct Raw(BufReader<TcpStream>);

impl Raw {
    fn open(cl: &TestCluster) -> Raw {
        let s = TcpStream::connect(cl.cfgs[0].client_addr).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        Raw(BufReader::new(s))
    }

    /// Send `line` and return its whole reply as written on the wire.
    fn ask(&mut self, line: &str) -> String {
        self.0.get_mut().write_all(format!("{line}\r\n").as_bytes()).unwrap();
        let mut out = String::new();
        self.value(&mut out);
        out
    }

    /// Read one RESP2 or RESP3 value into `out`.
    fn value(&mut self, out: &mut String) {
        let start = out.len();
        self.0.read_line(out).expect("a reply line");
        let line = out[start..].trim_end().to_string();
        let n = |l: &str| l[1..].parse::<i64>().expect("a length");
        match line.as_bytes().first() {
            Some(b'$') if n(&line) >= 0 => {
                let mut body = vec![0u8; n(&line) as usize + 2];
                self.0.read_exact(&mut body).unwrap();
                out.push_str(&String::from_utf8(body).unwrap());
            }
            Some(b'*') => (0..n(&line).max(0)).for_each(|_| self.value(out)),
            Some(b'%') => (0..2 * n(&line)).for_each(|_| self.value(out)),
            _ => {}
        }
    }
}

#[test]
fn hello_switches_the_wire_format_per_connection() {
    let cl = one_node();
    let (mut a, mut b) = (Raw::open(&cl), Raw::open(&cl));
    assert_eq!(a.ask("GET missing"), "$-1\r\n", "RESP2 until HELLO");
    let hello = a.ask("HELLO 3");
    assert!(hello.starts_with("%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n"), "{hello}");
    assert!(hello.contains("$5\r\nproto\r\n:3\r\n") && hello.ends_with("$7\r\nmodules\r\n*0\r\n"), "{hello}");
    assert_eq!(a.ask("GET missing"), "_\r\n");
    assert_eq!(a.ask("MGET missing"), "*1\r\n_\r\n");
    assert_eq!(a.ask("CONFIG GET appendonly"), "%1\r\n$10\r\nappendonly\r\n$3\r\nyes\r\n");
    assert_eq!(b.ask("GET missing"), "$-1\r\n", "the other connection stays on RESP2");
    assert_eq!(b.ask("CONFIG GET appendonly"), "*2\r\n$10\r\nappendonly\r\n$3\r\nyes\r\n");
    // a refused HELLO keeps the version
    let noproto = "-NOPROTO unsupported protocol version (this node speaks 2 and 3)\r\n";
    assert_eq!(a.ask("HELLO 4"), noproto);
    assert_eq!(a.ask("GET missing"), "_\r\n");
    let hello = a.ask("HELLO 2");
    assert!(hello.starts_with("*14\r\n$6\r\nserver\r\n") && hello.contains("proto\r\n:2\r\n"), "{hello}");
    assert_eq!(a.ask("GET missing"), "$-1\r\n");
}

#[test]
fn a_failed_hello_auth_does_not_switch() {
    let cl = TestCluster::start(ClusterOptions { nodes: 1, ..ClusterOptions::default() }, |c| {
        c.requirepass = Some("s3cret".into());
    });
    let mut a = Raw::open(&cl);
    let wrong = "-WRONGPASS invalid username-password pair or user is disabled.\r\n";
    assert_eq!(a.ask("HELLO 3 AUTH default nope"), wrong);
    assert_eq!(a.ask("AUTH s3cret"), "+OK\r\n");
    assert_eq!(a.ask("GET missing"), "$-1\r\n", "still RESP2");
    assert!(a.ask("HELLO 3 AUTH default s3cret").starts_with("%7\r\n"));
    assert_eq!(a.ask("GET missing"), "_\r\n");
}

/// A map reply's value for `field`.
fn field<'a>(map: &'a [(Value, Value)], name: &str) -> &'a Value {
    let key = |k: &Value| matches!(k, Value::BulkString(b) if b == name.as_bytes());
    map.iter().find(|(k, _)| key(k)).map(|(_, v)| v).unwrap_or_else(|| panic!("no {name} in {map:?}"))
}

#[test]
fn redis_rs_speaks_resp3_when_asked() {
    let cl = one_node();
    let url = format!("redis://{}/?protocol=resp3", cl.cfgs[0].client_addr);
    let client = redis::Client::open(url).expect("client");
    let mut con = client.get_connection_with_timeout(Duration::from_secs(10)).expect("connect: HELLO 3");
    let hello: Value = cmd("HELLO").arg(3).query(&mut con).unwrap();
    let Value::Map(map) = hello else { panic!("HELLO 3 answers a map: {hello:?}") };
    let text = |s: &str| Value::BulkString(s.as_bytes().to_vec());
    assert_eq!(field(&map, "server"), &text("redis"));
    assert_eq!(field(&map, "version"), &text("7.2.0"));
    assert_eq!(field(&map, "proto"), &Value::Int(3));
    assert!(matches!(field(&map, "id"), Value::Int(id) if *id > 0));
    assert_eq!((field(&map, "mode"), field(&map, "role")), (&text("standalone"), &text("master")));
    assert_eq!(field(&map, "modules"), &Value::Array(Vec::new()));
    set(&mut con, "here", b"v").unwrap();
    assert_eq!(cmd("GET").arg("missing").query::<Value>(&mut con).unwrap(), Value::Nil);
    assert_eq!(get(&mut con, "missing").unwrap(), None);
    let mget: Value = cmd("MGET").arg("here").arg("missing").query(&mut con).unwrap();
    assert_eq!(mget, Value::Array(vec![text("v"), Value::Nil]));
    let config: Value = cmd("CONFIG").arg("GET").arg("save").query(&mut con).unwrap();
    assert_eq!(config, Value::Map(vec![(text("save"), text(""))]));
    let Value::Map(docs) = cmd("COMMAND").arg("DOCS").arg("get").query(&mut con).unwrap() else { panic!() };
    let Value::Map(get_doc) = field(&docs, "get") else { panic!("{docs:?}") };
    assert_eq!(field(get_doc, "group"), &text("string"));
    // the same commands on RESP2: nil and flat arrays
    let mut old = cl.conn(0);
    assert_eq!(cmd("GET").arg("missing").query::<Value>(&mut old).unwrap(), Value::Nil);
    let mget: Value = cmd("MGET").arg("here").arg("missing").query(&mut old).unwrap();
    assert_eq!(mget, Value::Array(vec![text("v"), Value::Nil]));
    let config: Value = cmd("CONFIG").arg("GET").arg("save").query(&mut old).unwrap();
    assert_eq!(config, Value::Array(vec![text("save"), text("")]));
}

#[test]
fn redis_py_speaks_resp3_and_resp2() {
    let has = std::process::Command::new("python3").args(["-c", "import redis"]).status();
    assert!(has.is_ok_and(|s| s.success()), "redis-py is missing: pip install redis");
    let cl = one_node();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/redis-py-resp3-check.py");
    let port = cl.cfgs[0].client_addr.port().to_string();
    let out = std::process::Command::new("python3").args([script, "--port", &port]).output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "redis-py RESP3 check failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("redis-py RESP3 check passed"), "{stdout}");
}
