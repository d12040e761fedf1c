"""Arrays kept from one run to the next in this process, bounded in bytes.

A lesson that draws many random numbers (the variance experiment) keeps what it drew when the
run asks for it (the explorer runs a lesson again at every edit): the next run with the same
settings takes the same numbers instead of drawing them again.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any


class Kept:
    """Arrays drawn (or computed from draws) by earlier runs in this process, by name, up to
    ``limit`` bytes: the least recently used go first. Threads share it."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.entries: OrderedDict[tuple[Any, ...], tuple[Any, int]] = OrderedDict()
        self.size = 0  # bytes kept
        self.hits = self.misses = 0
        self.lock = threading.Lock()

    def get(self, name: tuple[Any, ...]) -> Any:
        with self.lock:
            found = self.entries.get(name)
            if found is None:
                self.misses += 1
                return None
            self.hits += 1
            self.entries.move_to_end(name)
            return found[0]

    def put(self, name: tuple[Any, ...], value: Any, size: int) -> None:
        with self.lock:
            if name in self.entries or size > self.limit:
                return
            self.entries[name] = (value, size)
            self.size += size
            while self.size > self.limit:
                _, (_, dropped) = self.entries.popitem(last=False)
                self.size -= dropped

    def clear(self) -> None:
        with self.lock:
            self.entries.clear()
            self.size = self.hits = self.misses = 0
