#!/usr/bin/env python3
"""Exercise a Tailor node with redis-py (a real client): every supported string, key and
expiry command, with assertions. Run by crates/tailor/tests/redis_commands.rs against a
started cluster, once per protocol version: python3 scripts/redis-py-check.py --port P [--protocol 3]
[--pipelines] (--pipelines: only redis-py's pipelines, MULTI/EXEC and plain)"""

import argparse
import sys
import time
import warnings

try:
    import redis
except ImportError:
    sys.exit("redis-py is missing: pip install redis")


def expect_error(fn, needle):
    try:
        fn()
    except redis.ResponseError as e:
        assert needle in str(e), f"{needle!r} not in {e!r}"
        return
    raise AssertionError(f"expected an error containing {needle!r}")


def check_pipelines(r):
    """pipeline() sends MULTI, the commands, EXEC (transaction=True, its default); with
    transaction=False it only pipelines. EXEC keeps this connection's order, nothing more."""
    with r.pipeline() as p:
        p.set("pipe:a", "1").get("pipe:a").set("pipe:b", "2", ex=100).mget("pipe:a", "pipe:b")
        p.append("pipe:a", "2").delete("pipe:b").exists("pipe:b").ttl("pipe:a")
        assert p.execute() == [True, b"1", True, [b"1", b"2"], 2, 1, 0, -1]
    with r.pipeline(transaction=False) as p:
        for i in range(50):
            p.set(f"pipe:{i}", i)
        p.mget([f"pipe:{i}" for i in range(50)])
        out = p.execute()
        assert out[:50] == [True] * 50 and out[50] == [str(i).encode() for i in range(50)]
    # a command that fails at EXEC has its error in its place, the others still run
    with r.pipeline() as p:
        p.set("pipe:c", "v").execute_command("SET", "pipe:c", "w", "EX", "x").get("pipe:c")
        out = p.execute(raise_on_error=False)
        assert out[0] is True and isinstance(out[1], redis.ResponseError) and out[2] == b"v", out
    # refused at queue time: EXECABORT, nothing ran (redis-py raises the first error)
    with r.pipeline() as p:
        p.set("pipe:d", "v").execute_command("NOSUCH", "x")
        expect_error(p.execute, "unknown command")
    assert r.get("pipe:d") is None
    with r.pipeline() as p:
        expect_error(lambda: p.watch("pipe:a"), "optimistic locking")
    with r.pipeline() as p:  # an empty transaction
        assert p.execute() == []


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--protocol", type=int, default=2, choices=[2, 3])
    ap.add_argument("--pipelines", action="store_true")
    args = ap.parse_args()
    warnings.simplefilter("ignore", DeprecationWarning)  # setex/psetex: still Redis commands
    r = redis.Redis(host=args.host, port=args.port, protocol=args.protocol, socket_timeout=10)
    assert r.ping()
    check_pipelines(r)
    if args.pipelines:
        print("redis-py check passed")
        return
    # SET and its options
    assert r.set("k", "v1") is True
    assert r.set("k", "v2", nx=True) is None
    assert r.set("k", "v2", xx=True, get=True) == b"v1"
    assert r.set("absent", "v", xx=True) is None
    assert r.set("e", "v", ex=100) is True
    assert r.ttl("e") == 100
    assert r.set("e", "w", keepttl=True) is True
    assert r.ttl("e") == 100
    assert r.set("p", "v", px=300) is True
    assert 0 < r.pttl("p") <= 300
    assert r.set("at", "v", exat=int(time.time()) + 50) is True
    assert 49 <= r.ttl("at") <= 50
    assert r.set("pat", "v", pxat=int(time.time() * 1000) + 50_000) is True
    # the other string commands
    assert r.setex("sx", 100, "v") is True and r.ttl("sx") == 100
    assert r.psetex("psx", 100_000, "v") is True and r.ttl("psx") == 100
    assert r.setnx("sx", "w") is False and r.setnx("nx", "w") is True
    assert r.getset("nx", "x") == b"w"
    assert r.getdel("nx") == b"x" and r.getdel("nx") is None
    assert r.mset({"a": "1", "b": "2"}) is True
    assert r.mget("a", "zz", "b") == [b"1", None, b"2"]
    assert r.append("a", "23") == 3 and r.strlen("a") == 3 and r.strlen("zz") == 0
    assert r.type("a") == b"string" and r.type("zz") == b"none"
    assert r.exists("a", "b", "zz") == 2
    assert r.delete("a", "zz") == 1 and r.unlink("b") == 1
    # expiry
    assert r.expire("k", 100) is True and r.ttl("k") == 100
    assert r.expire("k", 50, gt=True) is False
    assert r.expire("k", 50, lt=True) is True and r.ttl("k") == 50
    assert r.pexpire("k", 70_000, xx=True) is True and r.ttl("k") == 70
    assert r.expire("k", 10, nx=True) is False
    assert r.expireat("k", int(time.time()) + 200) is True
    assert r.pexpireat("k", int(time.time() * 1000) + 200_000) is True
    assert r.persist("k") is True and r.persist("k") is False and r.ttl("k") == -1
    assert r.ttl("zz") == -2 and r.pttl("zz") == -2
    time.sleep(0.5)
    assert r.get("p") is None and r.exists("p") == 0 and r.ttl("p") == -2
    # cluster-wide key listing
    assert b"k" in set(r.scan_iter(match="k", count=3)) and r.keys("sx") == [b"sx"]
    assert r.dbsize() == len(set(r.scan_iter(count=2)))
    # connection and server commands
    assert r.client_setname("py") is True and r.client_getname() in ("py", b"py")
    assert isinstance(r.client_id(), int)
    assert any(c.get("name") == "py" for c in r.client_list())
    assert r.info("server")["redis_version"] == "7.2.0"
    assert r.info("memory")["used_memory_rss"] > 0
    assert "db0" in r.info("keyspace")
    assert r.command_count() > 30
    # replicated counters
    r.delete("n")
    assert r.incr("n") == 1 and r.incrby("n", 9) == 10 and r.decr("n") == 9 and r.decrby("n", 4) == 5
    assert r.get("n") == b"5"
    # refused and bad arguments
    expect_error(lambda: r.incrbyfloat("n", 1.5), "not supported")
    r.set("s", "abc")
    expect_error(lambda: r.incr("s"), "value is not an integer or out of range")
    expect_error(lambda: r.set("k", "v", ex=9223372036854775807), "invalid expire time in 'set' command")
    expect_error(lambda: r.execute_command("SET", "k", "v", "NX", "XX"), "syntax error")
    expect_error(lambda: r.execute_command("EXPIRE", "k", "x"), "not an integer")
    assert r.ping()
    print("redis-py check passed")


if __name__ == "__main__":
    main()
