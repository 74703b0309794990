//! Passwords: with `requirepass`, a client must AUTH before anything else; with
//! `admin_password`, only the admin user may change how the node runs (`TAILOR.SET`). Checked
//! with redis-rs, which authenticates from the URL as any Redis client does.

mod common;
use common::*;
use tailor_store::cluster::ClusterOptions;

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
