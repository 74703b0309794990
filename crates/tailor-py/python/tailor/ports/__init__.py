"""Python ports of built-in strategies, rule for rule and draw for draw: the parity tests run
each beside its native twin and expect the same results run for run (the libCacheSim way of
checking a plugin API), and they are the examples to start a new strategy from.

``register_all()`` registers them as ``py-random``, ``py-lor``, ``py-p2c-peak-ewma`` and
``py-fcfs``.
"""

from .fcfs import Fcfs
from .lor import Lor
from .p2c_peak_ewma import P2cPeakEwma
from .random import Random

ALL = (Random, Lor, P2cPeakEwma, Fcfs)


def register_all():
    """Register every port under its ``py-`` name."""
    from .. import register

    for cls in ALL:
        register(cls)
