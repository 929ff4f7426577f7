"""``KeyedStats``: what a ``KeyedLimiter`` reports for dashboards."""

from __future__ import annotations

from dataclasses import dataclass

from ._ffi import rate_keyed_stats


@dataclass(frozen=True)
class KeyedStats:
    """A keyed table's statistics (``KeyedLimiter.stats()``)."""

    #: The capacity the table was created with: this many live keys always fit.
    capacity: int
    #: The most keys the table holds at once: its slots, twice ``capacity``.
    max_keys: int
    #: Keys whose state was not a new key's at the time asked.
    live_keys: int
    #: Requests for new keys refused with ``TableFull`` since the table was created; for
    #: a shared table (``KeyedLimiter.open``), since its file was, by every process.
    table_full: int

    @classmethod
    def from_c(cls, stats: rate_keyed_stats) -> KeyedStats:
        """The statistics the C library filled in, a ``struct rate_keyed_stats``."""
        return cls(stats.capacity, stats.max_keys, stats.live_keys, stats.table_full)
