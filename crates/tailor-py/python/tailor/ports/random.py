"""``random``: uniform choice among the replicas (tailor-core selector/random.rs)."""

from .. import Selector


class Random(Selector):
    name = "py-random"

    def __init__(self, env):
        # the native selector's salt, so both draw the same numbers
        self.rng = env.rng(0x5241_4E44 + env.coordinator)

    def select(self, now, req, replicas):
        return replicas[self.rng.below(len(replicas))]
