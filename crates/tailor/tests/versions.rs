//! Write versions come from each node's hybrid logical clock: a version from the future (a
//! peer whose clock runs far ahead, or a forged frame such as version 2^64 − 1, which used to
//! make a key unwritable while SET kept answering OK) is refused, and the key stays writable.

mod common;
use common::*;
use tailor_store::cluster::ClusterOptions;
use tailor_store::config::Consistency;
use tailor_store::internode::Message;

#[test]
fn a_version_from_the_future_is_refused_and_the_key_stays_writable() {
    let opts = ClusterOptions { nodes: 3, write_consistency: Consistency::All, ..ClusterOptions::default() };
    let cl = TestCluster::start(opts, |_| {});
    let poison = Message::Write {
        id: 1,
        key: b"k".to_vec(),
        version: u64::MAX,
        value: Some(b"poison".to_vec()),
        tags: Default::default(),
        age: 0,
    };
    for cfg in &cl.cfgs {
        match internode(cfg, &poison) {
            Message::Failed { reason, .. } => assert!(reason.contains("ahead of this node's clock"), "{reason}"),
            other => panic!("node {} accepted a version from the future: {other:?}", cfg.id),
        }
    }
    // a version a little ahead (within the 500 ms offset) is an ordinary write
    let now_us = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_micros() as u64;
    let version = (now_us + 100_000) << 8;
    let near = Message::Write {
        id: 2,
        key: b"j".to_vec(),
        version,
        value: Some(b"a".to_vec()),
        tags: Default::default(),
        age: 0,
    };
    assert!(matches!(internode(&cl.cfgs[0], &near), Message::WriteAck { applied: true, .. }));
    let mut con = cl.conn(1);
    set(&mut con, "k", b"fresh").unwrap();
    for i in 0..3 {
        assert_eq!(get(&mut cl.conn(i), "k").unwrap(), Some(b"fresh".to_vec()), "node {i}");
    }
    assert!(cl.metric(0, "tailor_limit_refusals_total", &[]) >= 1.0);
}
