//! One node (replication 1): storage, RESP and `tailor node` end to end.

mod common;
use common::*;
use tailor_store::cluster::ClusterOptions;

fn one() -> TestCluster {
    TestCluster::start(ClusterOptions { nodes: 1, replication: 1, ..ClusterOptions::default() }, |c| {
        c.max_value_bytes = 2 << 20;
    })
}

#[test]
fn values_of_1kb_and_1mb_round_trip() {
    let cl = one();
    let mut con = cl.conn(0);
    for (i, len) in [1024usize, 1 << 20].into_iter().enumerate() {
        let v = value(len, i as u64);
        set(&mut con, &format!("k{i}"), &v).unwrap();
        assert_eq!(get(&mut con, &format!("k{i}")).unwrap(), Some(v));
    }
    assert_eq!(get(&mut con, "missing").unwrap(), None);
    set(&mut con, "k0", b"new").unwrap();
    assert_eq!(get(&mut con, "k0").unwrap(), Some(b"new".to_vec()));
}

#[test]
fn redis_commands_and_errors() {
    let cl = one();
    let mut con = cl.conn(0);
    let pong: String = redis::cmd("PING").query(&mut con).unwrap();
    assert_eq!(pong, "PONG");
    let echo: String = redis::cmd("ECHO").arg("hi").query(&mut con).unwrap();
    assert_eq!(echo, "hi");
    set(&mut con, "a", b"1").unwrap();
    set(&mut con, "b", b"2").unwrap();
    let m: Vec<Option<String>> = redis::cmd("MGET").arg("a").arg("zz").arg("b").query(&mut con).unwrap();
    assert_eq!(m, vec![Some("1".into()), None, Some("2".into())]);
    let n: i64 = redis::cmd("EXISTS").arg("a").arg("b").arg("zz").query(&mut con).unwrap();
    assert_eq!(n, 2);
    let n: i64 = redis::cmd("DEL").arg("a").arg("zz").query(&mut con).unwrap();
    assert_eq!(n, 1);
    assert_eq!(get(&mut con, "a").unwrap(), None);
    let _: () = redis::cmd("SELECT").arg(0).query(&mut con).unwrap();
    let _: () = redis::cmd("CLIENT").arg("SETNAME").arg("t").query(&mut con).unwrap();
    let cfg: Vec<String> = redis::cmd("CONFIG").arg("GET").arg("save").query(&mut con).unwrap();
    assert_eq!(cfg, vec!["save".to_string(), String::new()]);
    let info: String = redis::cmd("INFO").query(&mut con).unwrap();
    assert!(info.contains("redis_version:"), "{info}");
    let _: redis::Value = redis::cmd("COMMAND").arg("DOCS").query(&mut con).unwrap();
    let e = redis::cmd("FLY").arg("x").query::<()>(&mut con).unwrap_err();
    assert!(e.to_string().contains("unknown command 'FLY'"), "{e}");
    let e = redis::cmd("GET").query::<()>(&mut con).unwrap_err();
    assert!(e.to_string().contains("wrong number of arguments for 'get' command"), "{e}");
    let e = redis::cmd("HELLO").arg(4).query::<()>(&mut con).unwrap_err();
    assert!(e.to_string().contains("NOPROTO"), "RESP2 and RESP3 only: {e}");
    // a value above the maximum is refused and the connection stays usable
    let e = set(&mut con, "big", &vec![1u8; 3 << 20]).unwrap_err();
    assert!(e.to_string().contains("exceeds the maximum"), "{e}");
    set(&mut con, "after", b"ok").unwrap();
    assert_eq!(get(&mut con, "after").unwrap(), Some(b"ok".to_vec()));
    // admin knobs
    let _: () = redis::cmd("TAILOR.SET").arg("beta_us").arg("5").query(&mut con).unwrap();
    let b: String = redis::cmd("TAILOR.GET").arg("beta_us").query(&mut con).unwrap();
    assert_eq!(b, "5");
    let e = redis::cmd("TAILOR.SET").arg("warp").arg("9").query::<()>(&mut con).unwrap_err();
    assert!(e.to_string().contains("unknown knob"), "{e}");
}

#[test]
fn data_survives_a_clean_restart() {
    let mut cl = one();
    let mut con = cl.conn(0);
    set(&mut con, "durable", b"yes").unwrap();
    drop(con);
    cl.kill(0);
    cl.restart(0);
    let mut con = cl.conn(0);
    assert_eq!(get(&mut con, "durable").unwrap(), Some(b"yes".to_vec()));
}
