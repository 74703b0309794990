"""Strategies written in Python, with tailor-core's API (docs/python.md).

A selector subclasses ``Selector`` and defines ``select(now, req, replicas)``; a local policy
subclasses ``LocalQueue`` and defines ``push(now, job)`` and ``pop(now)``. ``register`` makes
either usable by name in any spec run from Python (``selectors=["py-lor"]``). Times are
integer nanoseconds; every engine passes ``now`` in, and a strategy reads no clock of its own.
"""

from . import _native

# every registration, by name: a program that embeds Python (the `tailor` binary built with
# `--features python`) registers them again into its own tables (crates/tailor-py/src/embed.rs)
REGISTERED = {}

_FACTS = ("queue_len", "service_time", "busy", "dq", "pending_work")
_HOOKS = ("on_sent", "on_response", "on_facts", "on_timer")


class Selector:
    """One coordinator's replica selector. Built as ``cls(env)`` for every coordinator of every
    run; ``env.rng(salt)`` is its deterministic random stream.

    Class attributes: ``name`` (its name in specs), ``facts`` (the facts it reads, among
    ``queue_len, service_time, busy, dq, pending_work``; engines measure optional ones only for
    selectors that declare them), ``size_oracle`` (whether it reads ``req.hint_bytes`` etc.).
    """

    name = None
    facts = ()
    size_oracle = False

    def __init__(self, env):
        self.env = env

    def select(self, now, req, replicas):
        """Choose among ``replicas`` (node ids, all up, primary first) for ``req``: return a
        replica id, ``tailor.Send(replica, priority, size_class)``, or ``tailor.Wait(retry_at)``
        / ``None`` to keep the request at the coordinator until the next response."""
        raise NotImplementedError

    def on_sent(self, now, req, replica):
        """``req`` was sent to ``replica`` (after a send decision)."""

    def on_response(self, now, resp):
        """A response arrived (``resp.facts`` are its facts; apply them only if ``resp.fresh``)."""

    def on_facts(self, now, facts):
        """Facts arrived without answering this selector's request (a write ack)."""

    def on_timer(self, now):
        """The timer asked for by ``next_timer`` fired."""

    def next_timer(self):
        """When ``on_timer`` is next needed (ns), or None. Asked after every call."""
        return None


class LocalQueue:
    """A replica's queue-ordering policy. Built as ``cls(seed)`` for every replica of every
    run. ``push(now, job)`` gets each arriving job; ``pop(now)`` returns the job to run next,
    one of those it was given (it is only called while jobs wait)."""

    name = None

    def __init__(self, seed):
        self.seed = seed

    def push(self, now, job):
        raise NotImplementedError

    def pop(self, now):
        raise NotImplementedError


def _defined(cls, base, hooks):
    return [h for h in hooks if getattr(cls, h) is not getattr(base, h)]


def register(cls=None, *, name=None):
    """Register a ``Selector`` or ``LocalQueue`` subclass under ``name`` (default: its ``name``
    attribute); usable as a decorator. Registering a name again replaces the strategy."""

    def apply(cls):
        strategy = name or cls.name
        if not strategy:
            raise _native.TailorError(f"{cls.__name__} has no name: set `name = \"...\"` or pass name=")
        if issubclass(cls, Selector):
            if cls.select is Selector.select:
                raise _native.TailorError(f"selector `{strategy}` does not define select(now, req, replicas)")
            hooks = _defined(cls, Selector, _HOOKS)
            if "on_timer" in hooks and cls.next_timer is Selector.next_timer:
                raise _native.TailorError(f"selector `{strategy}` defines on_timer but not next_timer")
            facts = list(cls.facts)
            unknown = [f for f in facts if f not in _FACTS]
            if unknown:
                raise _native.TailorError(f"selector `{strategy}` reads unknown facts {unknown} (known: {', '.join(_FACTS)})")
            _native.register_selector(strategy, cls, facts, bool(cls.size_oracle), hooks)
            REGISTERED[strategy] = ("selector", cls, facts, bool(cls.size_oracle), hooks)
        elif issubclass(cls, LocalQueue):
            if cls.push is LocalQueue.push or cls.pop is LocalQueue.pop:
                raise _native.TailorError(f"local policy `{strategy}` must define push(now, job) and pop(now)")
            _native.register_local(strategy, cls)
            REGISTERED[strategy] = ("local", cls)
        else:
            raise TypeError("register() takes a tailor.Selector or tailor.LocalQueue subclass")
        return cls

    return apply if cls is None else apply(cls)


def unregister(name):
    """Forget a strategy registered from Python; whether there was one."""
    REGISTERED.pop(name, None)
    return _native.unregister_selector(name) or _native.unregister_local(name)


def argmin_random_ties(items, rng, key):
    """The index of the item with the smallest ``key``, ties broken uniformly with ``rng``
    (a ``tailor.Rng``) exactly as tailor-core's built-ins break them; None if empty."""
    best = float("inf")
    chosen = None
    ties = 0
    for i, item in enumerate(items):
        s = key(item)
        if s < best:
            best, chosen, ties = s, i, 1
        elif s == best:
            ties += 1
            if rng.below(ties) == 0:
                chosen = i
    return chosen
