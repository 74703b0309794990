"""``p2c-peak-ewma``: power of two choices by peak-EWMA latency times requests in flight, as in
Finagle and Linkerd (selector/p2c_peak_ewma.rs, default tau 10 s)."""

import math

from .. import Selector


class _Peer:
    __slots__ = ("cost", "stamp", "in_flight")

    def __init__(self):
        self.cost = 0.0
        self.stamp = 0
        self.in_flight = 0

    def observe(self, now, rtt, tau):
        w = math.exp(-float(max(now - self.stamp, 0)) / tau)
        self.cost = rtt if rtt > self.cost else self.cost * w + rtt * (1.0 - w)
        self.stamp = now


class P2cPeakEwma(Selector):
    name = "py-p2c-peak-ewma"
    tau_ms = 10_000.0

    def __init__(self, env):
        self.peers = {}
        self.tau = float(max(round(self.tau_ms * 1_000_000), 1))
        self.rng = env.rng(0x0050_3243 + env.coordinator)

    def _load(self, now, node):
        p = self.peers.get(node)
        if p is None:
            return 0.0
        p.observe(now, 0.0, self.tau)
        return p.cost * (p.in_flight + 1.0)

    def select(self, now, req, replicas):
        n = len(replicas)
        if n == 1:
            return replicas[0]
        a = self.rng.below(n)
        b = self.rng.below(n - 1)
        if b >= a:
            b += 1
        ra, rb = replicas[a], replicas[b]
        la, lb = self._load(now, ra), self._load(now, rb)
        return rb if lb < la else ra

    def on_sent(self, now, req, replica):
        self.peers.setdefault(replica, _Peer()).in_flight += 1

    def on_response(self, now, resp):
        p = self.peers.setdefault(resp.replica, _Peer())
        p.in_flight = max(p.in_flight - 1, 0)
        p.observe(now, float(max(now - resp.sent_at, 0)), self.tau)
