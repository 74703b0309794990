"""``fcfs``: first come, first served (local/fcfs.rs)."""

from collections import deque

from .. import LocalQueue


class Fcfs(LocalQueue):
    name = "py-fcfs"

    def __init__(self, seed):
        self.queue = deque()

    def push(self, now, job):
        self.queue.append(job)

    def pop(self, now):
        return self.queue.popleft()
