"""``lor``: fewest requests outstanding from this coordinator, ties at random (selector/lor.rs)."""

from collections import Counter

from .. import Selector, argmin_random_ties


class Lor(Selector):
    name = "py-lor"

    def __init__(self, env):
        self.outstanding = Counter()
        self.rng = env.rng(0x004C_4F52 + env.coordinator)

    def select(self, now, req, replicas):
        return replicas[argmin_random_ties(replicas, self.rng, lambda r: self.outstanding[r])]

    def on_sent(self, now, req, replica):
        self.outstanding[replica] += 1

    def on_response(self, now, resp):
        if self.outstanding[resp.replica] > 0:
            self.outstanding[resp.replica] -= 1
