//! A node's Prometheus endpoint shows end-to-end read and write latency histograms that count
//! exactly the requests a real client sent, with cumulative buckets.

mod common;
use common::*;
use tailor_store::cluster::ClusterOptions;

/// `(le, cumulative count)` of every bucket of histogram `name`, in exposition order.
fn buckets(text: &str, name: &str) -> Vec<(String, u64)> {
    let prefix = format!("{name}_bucket{{");
    text.lines()
        .filter(|l| l.starts_with(&prefix))
        .map(|l| {
            let le = l.split("le=\"").nth(1).and_then(|r| r.split('"').next()).expect("an le label").to_string();
            let n = l.rsplit(' ').next().and_then(|v| v.parse().ok()).expect("a count");
            (le, n)
        })
        .collect()
}

#[test]
fn latency_histograms_count_the_requests_a_client_sent() {
    let cl = TestCluster::start(ClusterOptions { nodes: 3, ..ClusterOptions::default() }, |_| {});
    let mut con = cl.conn(1);
    let (sets, gets) = (40u64, 70u64);
    for i in 0..sets {
        set(&mut con, &format!("k{i}"), &value(100, i)).expect("SET");
    }
    for i in 0..gets {
        get(&mut con, &format!("k{}", i % sets)).expect("GET");
    }
    let text = cl.metrics(1);
    for (name, sent) in [("tailor_read_latency_seconds", gets), ("tailor_write_latency_seconds", sets)] {
        let b = buckets(&text, name);
        assert_eq!(b.last().map(|(le, _)| le.as_str()), Some("+Inf"), "{name} ends with +Inf:\n{text}");
        assert_eq!(b.last().unwrap().1, sent, "{name} counts every request sent:\n{text}");
        assert!(b.windows(2).all(|w| w[0].1 <= w[1].1), "{name} buckets are cumulative: {b:?}");
        assert_eq!(b.len(), tailor_store::metrics::LATENCY_BUCKETS.len() + 1, "{name}: every bucket rendered");
        let count = cl.metric(1, &format!("{name}_count"), &[]);
        let sum = cl.metric(1, &format!("{name}_sum"), &[]);
        assert_eq!(count as u64, sent, "{name}_count");
        assert!(sum > 0.0 && sum < sent as f64 * 1.0, "{name}_sum {sum} s over {sent} loopback requests");
    }
    // the other nodes coordinated nothing
    assert_eq!(cl.metric(0, "tailor_read_latency_seconds_count", &[]), 0.0);
    assert_eq!(cl.metric(2, "tailor_write_latency_seconds_count", &[]), 0.0);
}
