//! The Redis commands people use with a key-value store, driven by redis-rs (a real client)
//! against real node processes: SET's options, SETEX/PSETEX/SETNX/GETSET/GETDEL, MSET/MGET,
//! APPEND/STRLEN, DEL/UNLINK/EXISTS/TYPE, the EXPIRE family with TTL/PTTL/PERSIST; expiry as an
//! absolute time on every replica, across a restart and through repair; INCR as a counter; bad
//! arguments answered with errors, never a crash; MULTI/EXEC/DISCARD and their limits, redis-py's
//! pipelines with a node killed, INFO's keyspace counted like DBSIZE, CONFIG GET/SET.

mod common;
use common::*;
use redis::{cmd, Connection, RedisResult, Value};
use std::time::Duration;
use tailor_store::cluster::ClusterOptions;

/// Three nodes, every key on each, reads and writes at QUORUM (a read sees the write before it).
fn three(tweak: impl Fn(&mut tailor_store::config::NodeConfig)) -> TestCluster {
    let quorum = tailor_store::config::Consistency::Quorum;
    let opts = ClusterOptions { nodes: 3, replication: 3, read_consistency: quorum, ..ClusterOptions::default() };
    let cl = TestCluster::start(opts, tweak);
    all_up(&cl, 3);
    cl
}

/// Wait until each of the first `n` nodes sees every other up (a write right after the start
/// could otherwise find its replicas not yet up).
fn all_up(cl: &TestCluster, n: usize) {
    for (a, b) in (0..n).flat_map(|a| (0..n).filter(move |&b| b != a).map(move |b| (a, b))) {
        let up = eventually(10, || cl.metric(a, "tailor_peer_up", &[&format!("peer=\"{b}\"")]) == 1.0);
        assert!(up, "node {a} sees node {b}");
    }
}

/// `N` nodes, each key on `replication` of them, the default consistency levels, every node
/// seeing the others up.
fn cluster(nodes: usize, replication: usize) -> TestCluster {
    let cl = TestCluster::start(ClusterOptions { nodes, replication, ..ClusterOptions::default() }, |_| {});
    all_up(&cl, nodes);
    cl
}

fn command(args: &[&str]) -> redis::Cmd {
    let mut c = cmd(args[0]);
    for a in &args[1..] {
        c.arg(*a);
    }
    c
}

fn q<T: redis::FromRedisValue>(con: &mut Connection, args: &[&str]) -> T {
    command(args).query(con).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

/// The error text of a command that must fail.
fn error(con: &mut Connection, args: &[&str]) -> String {
    let r: RedisResult<Value> = command(args).query(con);
    match r {
        Err(e) => e.to_string(),
        Ok(v) => panic!("{args:?} answered {v:?}, expected an error"),
    }
}

/// The expiry (Unix ms) node `i`'s own replica holds for `key`, if it holds a value.
fn replica_expiry(cl: &TestCluster, i: usize, key: &str) -> Option<Option<u64>> {
    replica_value(cl, i, key).map(|v| tailor_store::expiry::decode(&v).1)
}

#[test]
fn set_options_and_string_commands_follow_redis() {
    let cl = three(|_| {});
    let mut con = cl.conn(0);
    assert_eq!(q::<String>(&mut con, &["SET", "k", "v1"]), "OK");
    assert_eq!(q::<Option<String>>(&mut con, &["SET", "k", "v2", "NX"]), None);
    assert_eq!(q::<Option<String>>(&mut con, &["SET", "k", "v2", "XX", "GET"]), Some("v1".into()));
    assert_eq!(q::<Option<String>>(&mut con, &["SET", "absent", "v", "XX"]), None);
    assert_eq!(q::<i64>(&mut con, &["EXISTS", "absent", "k", "k"]), 2);
    assert_eq!(q::<Option<String>>(&mut con, &["SET", "fresh", "v", "NX", "GET"]), None);
    assert_eq!(q::<String>(&mut con, &["GET", "fresh"]), "v");
    assert_eq!(q::<i64>(&mut con, &["SETNX", "fresh", "w"]), 0);
    assert_eq!(q::<i64>(&mut con, &["SETNX", "nx", "w"]), 1);
    assert_eq!(q::<Option<String>>(&mut con, &["GETSET", "nx", "x"]), Some("w".into()));
    assert_eq!(q::<Option<String>>(&mut con, &["GETDEL", "nx"]), Some("x".into()));
    assert_eq!(q::<Option<String>>(&mut con, &["GETDEL", "nx"]), None);
    assert_eq!(q::<String>(&mut con, &["MSET", "a", "1", "b", "2"]), "OK");
    assert_eq!(
        q::<Vec<Option<String>>>(&mut con, &["MGET", "a", "zz", "b"]),
        vec![Some("1".into()), None, Some("2".into())]
    );
    assert_eq!(q::<i64>(&mut con, &["APPEND", "a", "23"]), 3);
    assert_eq!(q::<i64>(&mut con, &["APPEND", "new", "xy"]), 2);
    assert_eq!(q::<i64>(&mut con, &["STRLEN", "a"]), 3);
    assert_eq!(q::<i64>(&mut con, &["STRLEN", "zz"]), 0);
    assert_eq!(q::<String>(&mut con, &["TYPE", "a"]), "string");
    assert_eq!(q::<String>(&mut con, &["TYPE", "zz"]), "none");
    assert_eq!(q::<i64>(&mut con, &["DEL", "a", "zz"]), 1);
    assert_eq!(q::<i64>(&mut con, &["UNLINK", "b", "new"]), 2);
    assert_eq!(q::<i64>(&mut con, &["EXISTS", "a", "b", "new"]), 0);
    // a value that looks like the expiry envelope round-trips untouched
    let tricky = [&tailor_store::expiry::MAGIC[..], &[1u8; 12]].concat();
    let _: () = cmd("SET").arg("tricky").arg(&tricky).query(&mut con).unwrap();
    assert_eq!(get(&mut con, "tricky").unwrap(), Some(tricky));
    assert_eq!(q::<i64>(&mut con, &["TTL", "tricky"]), -1);
    assert_eq!(q::<i64>(&mut con, &["INCR", "n"]), 1, "a replicated counter (tests/counters.rs)");
    assert_eq!(q::<i64>(&mut con, &["DECRBY", "n", "3"]), -2);
    assert!(error(&mut con, &["INCRBYFLOAT", "n", "1"]).contains("not supported"));
}

#[test]
fn bad_arguments_get_redis_errors_and_the_node_lives_on() {
    let cl = three(|_| {});
    let mut con = cl.conn(1);
    let invalid = "invalid expire time in 'set' command";
    for args in [
        &["SET", "k", "v", "EX", "9223372036854775807"][..],
        &["SET", "k", "v", "PX", "0"],
        &["SET", "k", "v", "EX", "-3"],
        &["SET", "k", "v", "EXAT", "-1"],
    ] {
        assert!(error(&mut con, args).contains(invalid), "{args:?}");
    }
    for args in [
        &["SET", "k", "v", "NX", "XX"][..],
        &["SET", "k", "v", "EX"],
        &["SET", "k", "v", "EX", "1", "PX", "1"],
        &["SET", "k", "v", "KEEPTTL", "EX", "1"],
        &["SET", "k", "v", "BOGUS"],
    ] {
        assert!(error(&mut con, args).contains("syntax error"), "{args:?}");
    }
    assert!(error(&mut con, &["SET", "k", "v", "EX", "ten"]).contains("not an integer"));
    assert!(error(&mut con, &["SETEX", "k", "0", "v"]).contains("invalid expire time in 'setex' command"));
    assert!(error(&mut con, &["PSETEX", "k", "x", "v"]).contains("not an integer"));
    assert!(error(&mut con, &["EXPIRE", "k", "9223372036854775807"]).contains("invalid expire time"));
    assert!(error(&mut con, &["EXPIRE", "k", "10", "NX", "XX"]).contains("not compatible"));
    assert!(error(&mut con, &["EXPIRE", "k", "10", "GT", "LT"]).contains("not compatible"));
    assert!(error(&mut con, &["EXPIRE", "k", "10", "SOON"]).contains("Unsupported option"));
    assert!(error(&mut con, &["MSET", "a", "1", "b"]).contains("wrong number of arguments"));
    assert!(error(&mut con, &["TTL"]).contains("wrong number of arguments"));
    assert!(error(&mut con, &["GETSET", "k"]).contains("wrong number of arguments"));
    let long = "k".repeat(70_000);
    assert!(error(&mut con, &["SETEX", &long, "10", "v"]).contains("max_key_bytes"));
    let mut mset = vec!["MSET"];
    mset.extend(std::iter::repeat_n(["k", "v"], 1100).flatten());
    assert!(error(&mut con, &mset).contains("above the limit"));
    assert_eq!(q::<String>(&mut con, &["PING"]), "PONG", "still serving");
}

#[test]
fn expiry_is_honoured_by_every_replica_and_by_the_expire_family() {
    let cl = three(|_| {});
    let mut con = cl.conn(0);
    assert_eq!(q::<String>(&mut con, &["SET", "short", "v", "PX", "400"]), "OK");
    assert_eq!(q::<String>(&mut con, &["SETEX", "long", "100", "v"]), "OK");
    let pttl: i64 = q(&mut con, &["PTTL", "short"]);
    assert!((1..=400).contains(&pttl), "{pttl}");
    assert_eq!(q::<i64>(&mut con, &["TTL", "long"]), 100);
    assert_eq!(q::<i64>(&mut con, &["TTL", "absent"]), -2);
    // every replica holds the same absolute expiry
    let at = replica_expiry(&cl, 0, "long").unwrap().unwrap();
    // (a QUORUM write is acknowledged by two replicas; the third applies it just after)
    let everywhere = eventually(5, || (0..3).all(|i| replica_expiry(&cl, i, "long") == Some(Some(at))));
    assert!(everywhere, "every replica holds expiry {at}");
    std::thread::sleep(Duration::from_millis(600));
    for i in 0..3 {
        let mut c = cl.conn(i);
        assert_eq!(q::<Option<String>>(&mut c, &["TAILOR.LOCALGET", "short"]), None, "node {i}'s replica");
        let _: () = cmd("CONSISTENCY").arg("one").query(&mut c).unwrap();
        assert_eq!(q::<Option<String>>(&mut c, &["GET", "short"]), None, "GET at ONE via node {i}");
        assert_eq!(replica_value(&cl, i, "short"), None, "internode read of node {i}");
    }
    assert_eq!(q::<i64>(&mut con, &["EXISTS", "short"]), 0);
    assert_eq!(q::<String>(&mut con, &["TYPE", "short"]), "none");
    assert_eq!(q::<i64>(&mut con, &["STRLEN", "short"]), 0);
    assert_eq!(q::<i64>(&mut con, &["TTL", "short"]), -2);
    // the EXPIRE family and its conditions
    assert_eq!(q::<i64>(&mut con, &["EXPIRE", "short", "10"]), 0, "absent");
    assert_eq!(q::<i64>(&mut con, &["EXPIRE", "long", "50", "GT"]), 0);
    assert_eq!(q::<i64>(&mut con, &["EXPIRE", "long", "50", "LT"]), 1);
    assert_eq!(q::<i64>(&mut con, &["TTL", "long"]), 50);
    assert_eq!(q::<i64>(&mut con, &["EXPIRE", "long", "70", "NX"]), 0);
    assert_eq!(q::<i64>(&mut con, &["PEXPIRE", "long", "70000", "XX"]), 1);
    assert_eq!(q::<i64>(&mut con, &["TTL", "long"]), 70);
    let at = tailor_store::expiry::now_ms() / 1000 + 200;
    assert_eq!(q::<i64>(&mut con, &["EXPIREAT", "long", &at.to_string()]), 1);
    assert!((199..=200).contains(&q::<i64>(&mut con, &["TTL", "long"])));
    assert_eq!(q::<i64>(&mut con, &["PEXPIREAT", "long", &(at * 1000).to_string()]), 1);
    assert_eq!(q::<i64>(&mut con, &["PERSIST", "long"]), 1);
    assert_eq!(q::<i64>(&mut con, &["PERSIST", "long"]), 0);
    assert_eq!(q::<i64>(&mut con, &["TTL", "long"]), -1);
    assert_eq!(q::<i64>(&mut con, &["EXPIRE", "long", "100"]), 1);
    assert_eq!(q::<String>(&mut con, &["SET", "long", "w", "KEEPTTL"]), "OK");
    assert_eq!(q::<i64>(&mut con, &["TTL", "long"]), 100, "KEEPTTL kept it");
    assert_eq!(q::<String>(&mut con, &["SET", "long", "w"]), "OK");
    assert_eq!(q::<i64>(&mut con, &["TTL", "long"]), -1, "a plain SET clears it");
    assert_eq!(q::<i64>(&mut con, &["EXPIRE", "long", "-1"]), 1, "a past expiry deletes");
    assert_eq!(q::<i64>(&mut con, &["EXISTS", "long"]), 0);
    let _: String = q(&mut con, &["SET", "at", "v", "PXAT", &(tailor_store::expiry::now_ms() + 300).to_string()]);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(q::<Option<String>>(&mut con, &["GET", "at"]), None);
}

#[test]
fn expiry_survives_a_restart_and_repair_brings_it_to_a_replica_that_missed_it() {
    let mut cl = three(|c| c.hint_max_bytes = 0);
    let mut con = cl.conn(0);
    assert_eq!(q::<String>(&mut con, &["SET", "k", "v"]), "OK");
    assert_eq!(q::<String>(&mut con, &["SET", "soon", "v", "PX", "1500"]), "OK");
    // the QUORUM acks came from two replicas; the third copy may still be on its way
    assert!(eventually(10, || replica_expiry(&cl, 2, "k") == Some(None)), "node 2 never got 'k'");
    cl.kill(2);
    assert!(eventually(10, || cl.metric(0, "tailor_peer_up", &["peer=\"2\""]) == 0.0), "node 0 sees node 2 down");
    assert_eq!(q::<i64>(&mut con, &["EXPIRE", "k", "300"]), 1);
    cl.restart(2);
    assert_eq!(replica_expiry(&cl, 2, "k"), Some(None), "node 2 missed the EXPIRE (no hints)");
    assert!(eventually(10, || cl.metric(0, "tailor_peer_up", &["peer=\"2\""]) == 1.0), "node 0 sees node 2");
    let report: String = cmd("TAILOR.REPAIR").query(&mut cl.conn(0)).unwrap();
    let at = replica_expiry(&cl, 0, "k").unwrap();
    assert!(at.is_some());
    assert_eq!(replica_expiry(&cl, 2, "k"), Some(at), "repair copied the expiry: {report}");
    let mut c2 = cl.conn(2);
    let _: () = cmd("CONSISTENCY").arg("one").query(&mut c2).unwrap();
    assert!((299..=300).contains(&q::<i64>(&mut c2, &["TTL", "k"])));
    // a restart keeps expiries, and the restarted replica expires the key on time
    cl.kill(0);
    cl.restart(0);
    assert_eq!(replica_expiry(&cl, 0, "k"), Some(at), "the expiry survived the restart");
    let mut c0 = cl.conn(0);
    let gone = eventually(5, || q::<Option<String>>(&mut c0, &["TAILOR.LOCALGET", "soon"]).is_none());
    assert!(gone, "the restarted replica expires 'soon'");
    assert_eq!(q::<i64>(&mut c0, &["EXISTS", "soon"]), 0);
}

#[test]
fn redis_py_runs_every_command() {
    let has = std::process::Command::new("python3").args(["-c", "import redis"]).status();
    assert!(has.is_ok_and(|s| s.success()), "redis-py is missing: pip install redis");
    let cl = three(|_| {});
    redis_py_check(&cl, 0, &[]);
}

/// Run scripts/redis-py-check.py against node `i`, in RESP2 and RESP3, with `extra` arguments.
fn redis_py_check(cl: &TestCluster, i: usize, extra: &[&str]) {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/redis-py-check.py");
    let port = cl.cfgs[i].client_addr.port().to_string();
    for protocol in ["2", "3"] {
        let args = [&[script, "--port", &port, "--protocol", protocol][..], extra].concat();
        let out = std::process::Command::new("python3").args(args).output().unwrap();
        let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "redis-py check (RESP{protocol}) failed:\n{stdout}\n{stderr}");
        assert!(stdout.contains("redis-py check passed"), "{stdout}");
    }
}

/// Issue 35: redis-py's `pipeline()` (MULTI/EXEC by default) and `pipeline(transaction=False)`
/// work at the default consistency levels on a 3-node cluster with one node killed (SIGKILL).
#[test]
fn redis_py_pipelines_work_with_a_node_killed() {
    let has = std::process::Command::new("python3").args(["-c", "import redis"]).status();
    assert!(has.is_ok_and(|s| s.success()), "redis-py is missing: pip install redis");
    let mut cl = cluster(3, 3);
    cl.kill(2);
    redis_py_check(&cl, 0, &["--pipelines"]);
}

#[test]
fn connection_commands_answer_like_redis() {
    let cl = TestCluster::start(ClusterOptions { nodes: 1, ..ClusterOptions::default() }, |_| {});
    let (mut a, mut b) = (cl.conn(0), cl.conn(0));
    let id: i64 = q(&mut a, &["CLIENT", "ID"]);
    assert_eq!(q::<String>(&mut a, &["CLIENT", "SETNAME", "alpha"]), "OK");
    assert_eq!(q::<Option<String>>(&mut a, &["CLIENT", "GETNAME"]), Some("alpha".into()));
    assert_eq!(q::<Option<String>>(&mut b, &["CLIENT", "GETNAME"]), None);
    assert!(error(&mut a, &["CLIENT", "SETNAME", "two words"]).contains("cannot contain spaces"));
    let list: String = q(&mut b, &["CLIENT", "LIST"]);
    assert!(list.contains(&format!("id={id} addr=127.0.0.1:")) && list.contains(" name=alpha "), "{list}");
    assert!(list.lines().count() >= 2 && list.contains("cmd=client"), "{list}");
    let mine: String = q(&mut a, &["CLIENT", "INFO"]);
    assert!(mine.starts_with(&format!("id={id} ")) && mine.contains("name=alpha"), "{mine}");
    let hello: Vec<Value> = q(&mut b, &["HELLO", "2", "SETNAME", "beta"]);
    assert_eq!((hello.len(), &hello[5]), (14, &Value::Int(2)));
    assert_eq!(q::<Option<String>>(&mut b, &["CLIENT", "GETNAME"]), Some("beta".into()));
    assert!(error(&mut b, &["HELLO", "4"]).contains("NOPROTO"));
    assert!(error(&mut b, &["HELLO", "x"]).contains("Protocol version"));
    let count: i64 = q(&mut a, &["COMMAND", "COUNT"]);
    assert_eq!(q::<Vec<Value>>(&mut a, &["COMMAND"]).len() as i64, count);
    let info: Vec<Value> = q(&mut a, &["COMMAND", "INFO", "mset", "nosuch"]);
    assert_eq!(info[1], Value::Nil);
    let Value::Array(mset) = &info[0] else { panic!("{info:?}") };
    assert_eq!(
        (&mset[1], &mset[3], &mset[4], &mset[5]),
        (&Value::Int(-3), &Value::Int(1), &Value::Int(-1), &Value::Int(2))
    );
    assert_eq!(q::<Vec<Value>>(&mut a, &["COMMAND", "DOCS", "get"]).len(), 2);
    let text: String = q(&mut a, &["INFO"]);
    for needle in [
        "# Server\r\nredis_version:7.2.0\r\ntailor_version:",
        "# Clients\r\nconnected_clients:2",
        "# Memory\r\nused_memory_rss:",
        "# Stats\r\ntotal_connections_received:",
        "# Keyspace\r\ndb0:keys=",
    ] {
        assert!(text.contains(needle), "{needle} not in {text}");
    }
    let only: String = q(&mut a, &["INFO", "memory"]);
    assert!(only.starts_with("# Memory") && !only.contains("# Server"), "{only}");
    let rss: u64 = only.lines().find_map(|l| l.strip_prefix("used_memory_rss:")).unwrap().parse().unwrap();
    assert!(rss > 1 << 20, "{rss}");
    drop(b);
    assert!(eventually(5, || q::<String>(&mut a, &["CLIENT", "LIST"]).lines().count() == 1), "b left the list");
}

#[test]
fn scan_lists_every_key_exactly_once_across_the_ring() {
    let cl = cluster(3, 2);
    let mut con = cl.conn(0);
    let mut written: Vec<String> = (0..300).map(|i| format!("key:{i}")).collect();
    for k in &written {
        set(&mut con, k, b"v").unwrap();
    }
    let _: i64 = q(&mut con, &["DEL", "key:7"]);
    let _: String = q(&mut con, &["SET", "key:8", "v", "PX", "1"]);
    written.retain(|k| k != "key:7" && k != "key:8");
    std::thread::sleep(Duration::from_millis(20));
    let (mut seen, mut cursor, mut steps) = (Vec::new(), 0u64, 0);
    loop {
        let (next, keys): (u64, Vec<String>) =
            cmd("SCAN").arg(cursor).arg("COUNT").arg(7).query(&mut cl.conn(1)).unwrap();
        seen.extend(keys);
        steps += 1;
        if next == 0 {
            break;
        }
        cursor = next;
        assert!(steps < 10_000, "the scan ends");
    }
    seen.sort();
    written.sort();
    assert_eq!(seen, written, "every live key exactly once");
    assert!(steps > 300 / 7, "COUNT bounds a step ({steps} steps)");
    assert_eq!(q::<i64>(&mut con, &["DBSIZE"]), 298);
    let mut ones: Vec<String> = q(&mut con, &["KEYS", "key:1?"]);
    ones.sort();
    assert_eq!(ones, (10..20).map(|i| format!("key:{i}")).collect::<Vec<_>>());
    let (next, matched): (u64, Vec<String>) =
        cmd("SCAN").arg(0).arg("MATCH").arg("nomatch*").arg("COUNT").arg(1000).query(&mut con).unwrap();
    assert!(matched.is_empty(), "nothing matches (next cursor {next})");
    assert!(error(&mut con, &["SCAN", "x"]).contains("invalid cursor"));
    assert!(error(&mut con, &["SCAN", "0", "COUNT", "0"]).contains("syntax error"));
    assert!(error(&mut con, &["SCAN", "0", "MATCH"]).contains("syntax error"));
    assert_eq!(q::<String>(&mut con, &["FLUSHDB"]), "OK");
    assert_eq!(q::<i64>(&mut cl.conn(2), &["DBSIZE"]), 0, "every key deleted cluster-wide");
}

/// Issue 36: `CONSISTENCY` is per connection and redis-py reconnects by itself, after which reads
/// fell back to ONE. The database number carries the level instead (1 ONE, 2 QUORUM, 3 ALL),
/// and redis-py re-sends it on every connection it makes.
#[test]
fn the_database_number_carries_the_consistency_level_across_reconnects() {
    let has = std::process::Command::new("python3").args(["-c", "import redis"]).status();
    assert!(has.is_ok_and(|s| s.success()), "redis-py is missing: pip install redis");
    let mut cl = three(|_| {});
    let port = cl.cfgs[0].client_addr.port();
    let script = format!(
        r#"
import redis, sys, time
r = redis.Redis(port={port}, db=2, socket_timeout=5)
assert r.execute_command("CONSISTENCY") == b"QUORUM", r.execute_command("CONSISTENCY")
r.set("k", "v")
r.connection_pool.disconnect()  # every connection dropped: the next command makes a new one
assert r.execute_command("CONSISTENCY") == b"QUORUM", "after a reconnect"
sys.stdout.write("ready\n"); sys.stdout.flush()
sys.stdin.readline()  # the node restarts meanwhile
for attempt in range(100):
    try:
        level = r.execute_command("CONSISTENCY"); break
    except (redis.ConnectionError, redis.TimeoutError):
        time.sleep(0.1)
assert level == b"QUORUM", level
assert r.get("k") == b"v"
assert redis.Redis(port={port}, db=3).execute_command("CONSISTENCY") == b"ALL"
try:
    redis.Redis(port={port}, db=4).ping(); sys.exit("db 4 was accepted")
except redis.ResponseError as e:
    assert "out of range" in str(e), e
print("ok")
"#
    );
    use std::io::{BufRead, Write};
    let mut py = std::process::Command::new("python3")
        .args(["-c", &script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(py.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(line, "ready\n", "redis-py's first part failed");
    cl.kill(0);
    cl.restart(0);
    writeln!(py.stdin.take().unwrap()).unwrap();
    line.clear();
    out.read_line(&mut line).unwrap();
    assert!(py.wait().unwrap().success() && line == "ok\n", "redis-py's second part failed: {line}");
}

/// Issue 35: `CONFIG GET` answers the node's real settings (a password masked), `CONFIG SET`
/// is refused naming `TAILOR.SET`, and INFO's uptime counts from the process's start, not from
/// the first INFO.
#[test]
fn config_get_answers_real_settings_and_uptime_counts_from_the_start() {
    let cl = TestCluster::start(ClusterOptions { nodes: 1, ..ClusterOptions::default() }, |c| {
        c.max_clients = 123;
        c.requirepass = Some("s3cret".into());
    });
    std::thread::sleep(Duration::from_millis(2_100));
    let url = format!("redis://:s3cret@{}/", cl.cfgs[0].client_addr);
    let mut con = redis::Client::open(url).unwrap().get_connection().unwrap();
    let info: String = q(&mut con, &["INFO", "server"]);
    let up: u64 = info.lines().find_map(|l| l.strip_prefix("uptime_in_seconds:")).unwrap().trim().parse().unwrap();
    assert!(up >= 2, "the node ran 2 s before its first INFO: uptime {up}");
    let max: Vec<String> = q(&mut con, &["CONFIG", "GET", "maxclients"]);
    assert_eq!(max, ["maxclients", "123"]);
    let mem: Vec<String> = q(&mut con, &["CONFIG", "GET", "MAXMEMORY"]);
    assert_eq!(mem, ["maxmemory", "0"]);
    let port = cl.cfgs[0].client_addr.port().to_string();
    let all: Vec<String> = q(&mut con, &["CONFIG", "GET", "*"]);
    assert!(all.windows(2).any(|w| w[0] == "port" && w[1] == port), "{all:?}");
    assert!(all.windows(2).any(|w| w[0] == "databases" && w[1] == "4"), "{all:?}");
    assert!(q::<Vec<String>>(&mut con, &["CONFIG", "GET", "no-such-parameter"]).is_empty());
    let max: Vec<String> = q(&mut con, &["CONFIG", "GET", "max*"]);
    assert_eq!(max, ["maxmemory", "0", "maxmemory-policy", "noeviction", "maxclients", "123"]);
    let pass: Vec<String> = q(&mut con, &["CONFIG", "GET", "requirepass", "appendonly"]);
    assert_eq!(pass, ["appendonly", "yes", "requirepass", "********"], "the password is masked");
    assert!(all.windows(2).any(|w| w[0] == "appendfsync" && w[1] == "always"), "{all:?}");
    assert!(error(&mut con, &["CONFIG", "SET", "maxclients", "5"]).contains("TAILOR.SET <knob> <value>"));
    assert!(error(&mut con, &["CONFIG", "REWRITE"]).contains("only CONFIG GET"));
    assert!(error(&mut con, &["CONFIG", "GET"]).contains("wrong number of arguments"));
}

/// Issue 35: INFO's `keys=` counts the cluster's keys as DBSIZE does (each key once, wherever
/// its replicas are), on every node, not one node's own replica.
#[test]
fn info_keyspace_counts_keys_like_dbsize() {
    let cl = cluster(3, 2);
    let mut con = cl.conn(0);
    for i in 0..150 {
        set(&mut con, &format!("k{i}"), b"v").unwrap();
    }
    let _: i64 = q(&mut con, &["DEL", "k0"]);
    for i in 0..3 {
        let mut c = cl.conn(i);
        let info: String = q(&mut c, &["INFO", "keyspace"]);
        assert_eq!(info, "# Keyspace\r\ndb0:keys=149\r\n", "node {i}");
        assert_eq!(q::<i64>(&mut c, &["DBSIZE"]), 149);
        let everything: String = q(&mut c, &["INFO"]);
        assert!(everything.ends_with("# Keyspace\r\ndb0:keys=149\r\n"), "{everything}");
    }
}

/// Send `commands` in one write (a pipeline, as redis-py's `pipeline()` does) and read every
/// reply, errors included, as text: `OK`, `-CODE detail`, `42`, `nil`, `[a, b]`.
fn replies(con: &mut Connection, commands: &[&[&str]]) -> Vec<String> {
    use redis::ConnectionLike;
    let packed: Vec<u8> = commands.iter().flat_map(|args| command(args).get_packed_command()).collect();
    let got = con.req_packed_commands(&packed, 0, commands.len()).expect("replies");
    got.iter().map(text).collect()
}

fn text(v: &Value) -> String {
    match v {
        Value::Okay => "OK".into(),
        Value::SimpleString(s) => s.clone(),
        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        Value::Int(n) => n.to_string(),
        Value::Nil => "nil".into(),
        Value::ServerError(e) => format!("-{} {}", e.code(), e.details().unwrap_or_default()),
        Value::Array(items) => format!("[{}]", items.iter().map(text).collect::<Vec<_>>().join(", ")),
        other => format!("{other:?}"),
    }
}

/// Issue 35: MULTI / EXEC / DISCARD answer as Redis does (QUEUED, the array of replies with a
/// failing command's error in its place, EXECABORT after a refusal at queue time, the nesting
/// and without-MULTI errors), WATCH is refused with the reason, and a transaction's size is
/// capped with an error naming the limit.
#[test]
fn multi_exec_and_discard_follow_redis() {
    let cl = three(|_| {});
    let mut con = cl.conn(0);
    let ran = replies(
        &mut con,
        &[
            &["MULTI"],
            &["SET", "t:a", "1"],
            &["SET", "t:b", "2"],
            &["GET", "t:a"],
            &["SET", "t:a", "x", "EX", "soon"],
            &["APPEND", "t:a", "2"],
            &["MGET", "t:a", "t:none", "t:b"],
            &["EXEC"],
        ],
    );
    let queued = vec!["QUEUED"; 6];
    assert_eq!(ran[..7], [&["OK"][..], &queued].concat());
    assert_eq!(ran[7], "[OK, OK, 1, -ERR value is not an integer or out of range, 2, [12, nil, 2]]");
    let nested = replies(&mut con, &[&["MULTI"], &["MULTI"], &["SET", "t:c", "1"], &["EXEC"], &["EXEC"], &["DISCARD"]]);
    let without = ["-ERR EXEC without MULTI", "-ERR DISCARD without MULTI"];
    assert_eq!(nested, [&["OK", "-ERR MULTI calls can not be nested", "QUEUED", "[OK]"][..], &without].concat());
    let dropped = replies(&mut con, &[&["MULTI"], &["SET", "t:d", "1"], &["DISCARD"], &["GET", "t:d"]]);
    assert_eq!(dropped, ["OK", "QUEUED", "OK", "nil"]);
    let aborted = replies(
        &mut con,
        &[&["MULTI"], &["NOSUCH", "x"], &["SET", "t:e", "1"], &["GET"], &["HELLO", "3"], &["EXEC"], &["GET", "t:e"]],
    );
    assert!(aborted[1].starts_with("-ERR unknown command 'NOSUCH'"), "{aborted:?}");
    assert_eq!(aborted[2..4], ["QUEUED", "-ERR wrong number of arguments for 'get' command"]);
    assert!(aborted[4].starts_with("-ERR HELLO is not allowed in a transaction"), "{aborted:?}");
    assert_eq!(aborted[5..], ["-EXECABORT Transaction discarded because of previous errors.", "nil"]);
    // session commands are queued and change the session in their turn
    let level = replies(&mut con, &[&["MULTI"], &["CONSISTENCY", "ALL"], &["GET", "t:b"], &["EXEC"], &["CONSISTENCY"]]);
    assert_eq!(level, ["OK", "QUEUED", "QUEUED", "[OK, 2]", "ALL"]);
    // QUIT is not queued: it closes the connection, and the transaction with it
    let mut quitter = cl.conn(1);
    assert_eq!(replies(&mut quitter, &[&["MULTI"], &["SET", "t:q", "1"], &["QUIT"]]), ["OK", "QUEUED", "OK"]);
    assert_eq!(q::<Option<String>>(&mut con, &["GET", "t:q"]), None);
    assert!(error(&mut con, &["WATCH", "t:a"]).contains("optimistic locking"));
    let watch = replies(&mut con, &[&["UNWATCH"], &["MULTI"], &["WATCH", "t:a"], &["UNWATCH"], &["EXEC"]]);
    assert_eq!(watch, ["OK", "OK", "-ERR WATCH inside MULTI is not allowed", "QUEUED", "[OK]"]);
    // the cap on queued commands
    let max = tailor_store::commands::MAX_QUEUED_COMMANDS;
    let many: Vec<&[&str]> = [&["MULTI"][..]].into_iter().chain(std::iter::repeat_n(&["PING"][..], max + 1)).collect();
    let capped = replies(&mut con, &[&many[..], &[&["EXEC"]]].concat());
    assert_eq!((capped[1].as_str(), capped[max].as_str()), ("QUEUED", "QUEUED"));
    assert!(capped[max + 1].contains(&format!("at most {max} commands")), "{}", capped[max + 1]);
    assert!(capped[max + 2].starts_with("-EXECABORT"), "{}", capped[max + 2]);
    assert_eq!(q::<String>(&mut con, &["PING"]), "PONG");
}

/// Issue 35: a transaction holds at most `max_command_bytes` of queued arguments, and EXEC's
/// reply at most what the node's buffer budget leaves; each refusal names its limit.
#[test]
fn a_transaction_is_bounded_by_the_nodes_byte_limits() {
    let opts = ClusterOptions { nodes: 1, ..ClusterOptions::default() };
    let cl = TestCluster::start(opts, |c| {
        (c.max_value_bytes, c.max_key_bytes) = (4_000, 100);
        (c.max_command_bytes, c.max_buffered_bytes) = (8_192, 64 * 1024);
    });
    let mut con = cl.conn(0);
    let big = "v".repeat(3_000);
    let mut queue: Vec<&[&str]> = vec![&["MULTI"]];
    let set: &[&str] = &["SET", "big", &big];
    queue.extend([set; 3]);
    queue.extend([&["SET", "small", "1"][..], &["EXEC"], &["GET", "big"]]);
    let bytes = replies(&mut con, &queue);
    assert_eq!(bytes[..3], ["OK", "QUEUED", "QUEUED"]);
    assert!(bytes[3].contains("at most 8192 bytes (max_command_bytes)"), "{}", bytes[3]);
    assert_eq!(bytes[4..], ["QUEUED", "-EXECABORT Transaction discarded because of previous errors.", "nil"]);
    // EXEC's reply: 3,000-byte values until the 64 KiB budget (less the input buffer) is spent
    assert_eq!(q::<String>(&mut con, &["SET", "big", &big]), "OK");
    let reads: Vec<&[&str]> =
        [&["MULTI"][..]].into_iter().chain([&["GET", "big"][..]; 30]).chain([&["EXEC"][..]]).collect();
    let exec = replies(&mut con, &reads).pop().unwrap();
    assert!(exec.starts_with(&format!("[{big}, {big}")), "the first replies fit");
    assert!(
        exec.ends_with("this command ran but its reply was dropped; queue fewer large reads]"),
        "{}",
        &exec[exec.len() - 300..]
    );
    assert!(exec.contains("65536-byte buffer budget (max_buffered_bytes)"));
    assert_eq!(q::<String>(&mut con, &["PING"]), "PONG", "the budget was given back");
}
