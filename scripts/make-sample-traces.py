#!/usr/bin/env python3
"""Writes the small sample traces under examples/traces/ (docs/traces.md): a Twitter
cache-trace CSV and a libCacheSim oracleGeneral binary file, each also zstd-compressed.

The requests are synthetic (seeded, so the files are the same on every run), written in the
published formats: Twitter's `timestamp,anonymized key,key size,value size,client id,
operation,TTL` (twitter/cache-trace's README) and oracleGeneral's 24-byte little-endian
records `u32 time, u64 id, u32 size, i64 next access` (libCacheSim). Needs the `zstd` tool.
"""
import random
import struct
import subprocess
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "examples" / "traces"
SECONDS = 10
RATE = 100  # requests per second
KEYS = 400


def zipf_keys(rng, n, s=1.0):
    weights = [1.0 / (i + 1) ** s for i in range(n)]
    return lambda: rng.choices(range(n), weights)[0]


def twitter(rng):
    pick = zipf_keys(rng, KEYS)
    spaces = ["nz:u:", "tw:t:", "sc:"]
    names = [f"{spaces[i % 3]}{rng.getrandbits(64):016x}" for i in range(KEYS)]
    sizes = [int(rng.lognormvariate(6, 1.5)) + 1 for _ in range(KEYS)]
    ops = ["get"] * 80 + ["gets"] * 3 + ["set"] * 9 + ["add", "cas", "replace", "append", "prepend"] + ["delete"] * 2 + ["incr"]
    lines = []
    for second in range(1_585_699_200, 1_585_699_200 + SECONDS):
        for _ in range(rng.randint(RATE // 2, RATE * 3 // 2)):
            k = pick()
            op = rng.choice(ops)
            miss = op.startswith("get") and rng.random() < 0.05
            value = 0 if miss or op in ("delete", "incr") else sizes[k]
            ttl = rng.choice([0, 600, 86400]) if op not in ("get", "gets", "delete") else 0
            lines.append(f"{second},{names[k]},{len(names[k])},{value},{k % 7 + 1},{op},{ttl}\n")
    return "".join(lines)


def oracle_general(rng):
    pick = zipf_keys(rng, KEYS)
    sizes = [int(rng.lognormvariate(8, 1.2)) + 1 for _ in range(KEYS)]
    reqs = []
    for second in range(SECONDS):
        for _ in range(rng.randint(RATE // 2, RATE * 3 // 2)):
            reqs.append((second, pick()))
    out = bytearray()
    for i, (second, k) in enumerate(reqs):
        nxt = next((j for j in range(i + 1, len(reqs)) if reqs[j][1] == k), -1)
        out += struct.pack("<IQIq", second, 1_000_003 * k + 17, sizes[k], nxt)
    return bytes(out)


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    tw = OUT / "twitter-sample.csv"
    tw.write_text(twitter(random.Random(2020)))
    og = OUT / "sample.oracleGeneral.bin"
    og.write_bytes(oracle_general(random.Random(2021)))
    for f in (tw, og):
        subprocess.run(["zstd", "-q", "-f", "-19", str(f), "-o", str(f) + ".zst"], check=True)
        print(f, f.stat().st_size, "bytes;", str(f) + ".zst", Path(str(f) + ".zst").stat().st_size, "bytes")


if __name__ == "__main__":
    main()
