//! Héron's Bloom size oracle across real nodes: large values written through one node become
//! "large" at another node's coordinator without it ever reading them, and rebuilds (with new
//! generations) drop keys whose values shrank.

mod common;
use common::*;
use tailor_store::cluster::ClusterOptions;
use tailor_store::config::{Consistency, OracleKind};

fn admin(con: &mut redis::Connection, args: &[&str]) -> String {
    let mut cmd = redis::cmd(args[0]);
    for a in &args[1..] {
        cmd.arg(*a);
    }
    cmd.query::<String>(con).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

fn class(con: &mut redis::Connection, key: &str) -> String {
    admin(con, &["TAILOR.GET", "size_class", key])
}

#[test]
fn large_keys_written_through_one_node_are_large_at_another() {
    // 4 nodes, k = 2: node 1 is a replica of only some keys, so it must learn from its peers'
    // deltas (heartbeat replies), not only from its own replica
    let opts = ClusterOptions {
        nodes: 4,
        replication: 2,
        selector: "heron".into(),
        write_consistency: Consistency::All,
        ..ClusterOptions::default()
    };
    let cl = TestCluster::start(opts, |c| {
        c.size_oracle = OracleKind::Bloom;
        c.bloom_rebuild_ms = 0; // rebuilds only on request, so the test controls generations
    });
    let mut a = cl.conn(0);
    let mut b = cl.conn(1);
    assert_eq!(admin(&mut b, &["TAILOR.GET", "size_oracle"]), "bloom");
    let large: Vec<String> = (0..8).map(|i| format!("big-{i}")).collect();
    let small: Vec<String> = (0..8).map(|i| format!("small-{i}")).collect();
    for (i, k) in large.iter().enumerate() {
        set(&mut a, k, &value(300 * 1024, i as u64)).unwrap();
    }
    for (i, k) in small.iter().enumerate() {
        set(&mut a, k, &value(1024, i as u64)).unwrap();
    }
    let all_large = |b: &mut redis::Connection| large.iter().all(|k| class(b, k) == "large");
    assert!(eventually(20, || all_large(&mut b)), "node 1 never classed every large key large");
    // the filters are deterministic, so these fixed keys give no false positive
    for k in &small {
        assert_eq!(class(&mut b, k), "small", "{k}");
    }
    assert_eq!(cl.metric(1, "tailor_selections_total", &[]), 0.0, "node 1 learned without reading");

    // a rebuild on one node moves every node to generation 1 (peers catch up), and node 1's
    // coordinator switches once every replica sent generation 1
    admin(&mut a, &["TAILOR.SET", "bloom_rebuild", "now"]);
    let gen = |i: usize, knob: &str| admin(&mut cl.conn(i), &["TAILOR.GET", knob]);
    assert!(
        eventually(20, || (0..4).all(|i| gen(i, "bloom_generation") == "1") && gen(1, "oracle_generation") == "1"),
        "generation 1 not reached: {:?}",
        (0..4).map(|i| (gen(i, "bloom_generation"), gen(i, "oracle_generation"))).collect::<Vec<_>>()
    );
    assert!(all_large(&mut b), "generation 1 still holds the large keys");

    // shrink one large key; the next generation no longer holds it
    set(&mut a, &large[0], b"now small").unwrap();
    assert_eq!(class(&mut b, &large[0]), "large", "stays large until the rebuild");
    admin(&mut b, &["TAILOR.SET", "bloom_rebuild", "now"]);
    assert!(eventually(20, || gen(1, "oracle_generation") == "2"), "generation 2 not reached");
    assert_eq!(class(&mut b, &large[0]), "small");
    assert!(large[1..].iter().all(|k| class(&mut b, k) == "large"));
    // reads of the shrunk key still return its value
    assert_eq!(get(&mut b, &large[0]).unwrap().as_deref(), Some(&b"now small"[..]));
}

#[test]
fn the_exact_oracle_only_knows_what_its_node_saw() {
    let opts = ClusterOptions { nodes: 2, replication: 2, write_consistency: Consistency::All, ..Default::default() };
    let cl = TestCluster::start(opts, |_| {});
    let (mut a, mut b) = (cl.conn(0), cl.conn(1));
    assert_eq!(admin(&mut a, &["TAILOR.GET", "size_oracle"]), "exact");
    set(&mut a, "big", &value(300 * 1024, 1)).unwrap();
    assert_eq!(class(&mut a, "big"), "large");
    assert_eq!(class(&mut b, "big"), "small", "node 1 never saw the write");
    get(&mut b, "big").unwrap();
    assert_eq!(class(&mut b, "big"), "large", "learned from the value it read");
    let err = redis::cmd("TAILOR.GET").arg("oracle_generation").query::<String>(&mut b).unwrap_err();
    assert!(err.to_string().contains("size_oracle"), "{err}");
}
