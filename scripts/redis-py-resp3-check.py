#!/usr/bin/env python3
"""Exercise a Tailor node with redis-py over RESP3 (protocol=3) and RESP2 side by side: the
handshake, nil for missing keys, MGET with a missing key, maps where Redis answers maps. Run by
crates/tailor/tests/resp3.rs against a started node: python3 scripts/redis-py-resp3-check.py --port P"""

import argparse
import sys

try:
    import redis
except ImportError:
    sys.exit("redis-py is missing: pip install redis")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--host", default="127.0.0.1")
    args = ap.parse_args()
    r3 = redis.Redis(host=args.host, port=args.port, protocol=3, socket_timeout=10)
    r2 = redis.Redis(host=args.host, port=args.port, protocol=2, socket_timeout=10)
    assert r3.ping() and r2.ping()
    hello = r3.execute_command("HELLO", 3)
    assert isinstance(hello, dict), hello
    fields = {k.decode() if isinstance(k, bytes) else k: v for k, v in hello.items()}
    assert fields["proto"] == 3, fields
    assert fields["server"] in (b"redis", "redis") and fields["version"] in (b"7.2.0", "7.2.0"), fields
    assert fields["mode"] in (b"standalone", "standalone") and fields["modules"] == [], fields
    assert isinstance(fields["id"], int) and fields["id"] > 0, fields
    for r in (r3, r2):
        assert r.set("here", "v") is True
        assert r.get("missing") is None
        assert r.mget("here", "missing") == [b"v", None]
        assert r.set("here", "w", nx=True) is None
        assert r.getdel("missing") is None
        assert r.ttl("missing") == -2
        assert r.client_getname() is None
    assert r3.config_get("appendonly") in ({b"appendonly": b"yes"}, {"appendonly": "yes"})
    assert r2.config_get("appendonly") in ({b"appendonly": b"yes"}, {"appendonly": "yes"})
    print("redis-py RESP3 check passed")


if __name__ == "__main__":
    main()
