"""Samples/s as the Cerebras modelzoo reports them: ``Rate`` (smoothed window) and ``GlobalRate``;
``tests/bert`` checks :class:`RateTracker` against the rates printed in real CS-2 logs.
"""

from __future__ import annotations

import time
from typing import Callable, Optional

__all__ = ["RateTracker"]


class RateTracker:
    """The modelzoo's ``RateTracker`` (inherited from torch_xla): ``add(n)`` after each step;
    ``rate()`` at each log step gives the window's rate smoothed with the previous report,
    ``(1 - s) * window + s * previous`` with ``s = 0.4``;
    ``global_rate()`` is every sample since ``start()`` over the time since then.
    ``clock`` is injectable for tests; ``now`` lets several readings share one instant.
    """

    def __init__(self, smoothing: float = 0.4, clock: Callable[[], float] = time.perf_counter):
        self.smoothing = smoothing
        self.clock = clock
        self.start()

    def start(self) -> None:
        self._start = self.clock()
        self._window_start = self._start
        self._window_count = 0.0
        self._done_count = 0.0
        self._last_rate: Optional[float] = None

    def add(self, count: float) -> None:
        self._window_count += count

    @property
    def count(self) -> float:
        return self._done_count + self._window_count

    def elapsed(self, now: Optional[float] = None) -> float:
        return (self.clock() if now is None else now) - self._start

    def rate(self, now: Optional[float] = None) -> float:
        """The smoothed rate of the window since the last call (ends the window)."""
        now = self.clock() if now is None else now
        delta = now - self._window_start
        if delta <= 0:
            return self._last_rate or 0.0
        current = self._window_count / delta
        smoothed = current if self._last_rate is None else (
            (1 - self.smoothing) * current + self.smoothing * self._last_rate)
        self._done_count += self._window_count
        self._window_count = 0.0
        self._window_start = now
        self._last_rate = smoothed
        return smoothed

    def global_rate(self, now: Optional[float] = None) -> float:
        delta = self.elapsed(now)
        return self.count / delta if delta > 0 else 0.0
