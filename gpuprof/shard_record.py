"""The `"shard"` record of a results file, checked before anything uses it.

`suite --shard K/N` writes {"index": K, "count": N, "units": the suite's unit count, "order": {row id:
its place in the whole suite}, "estimates_from": ...}; `merge` writes {"merged": [one record per file]}.
A record read from a file is data: each value's type and range is checked here, so a hand-edited
`"count": 1000000000000` cannot make `merge` count to it, and `"index": [1]` is one line, not a
traceback.
"""

from __future__ import annotations

from typing import Any

# More shards than any suite has units (a suite of 10,000 cases is already far beyond any real one).
MAX_SHARDS = 10_000
MAX_UNITS = 10_000_000


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def checked(value: Any) -> dict[str, Any]:
    """The record as a dict; TypeError or ValueError (the loader's "malformed results file: ...")
    naming the key for a wrong type or a value out of range."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise TypeError(f"\"shard\" must be an object, not {value!r:.40}")
    record = dict(value)
    if "index" in record or "count" in record:
        index: Any = record.get("index")
        count: Any = record.get("count")
        if not _whole(count) or not 1 <= count <= MAX_SHARDS:
            raise ValueError(f"\"shard\": \"count\" must be a whole number from 1 to {MAX_SHARDS:,}, "
                             f"not {count!r:.40}")
        if not _whole(index) or not 1 <= index <= count:
            raise ValueError(f"\"shard\": \"index\" must be a whole number from 1 to its count {count}, "
                             f"not {index!r:.40}")
        units: Any = record.get("units")
        if units is not None and (not _whole(units) or not 1 <= units <= MAX_UNITS):  # may be below the count:
            raise ValueError(f"\"shard\": \"units\" must be a whole number from 1 to "  # shards past it ran none
                             f"{MAX_UNITS:,}, not {units!r:.40}")
    order = record.get("order")
    if order is not None:
        if not isinstance(order, dict):
            raise TypeError(f"\"shard\": \"order\" must be an object of row id -> place, not {order!r:.40}")
        bad = next((k for k, v in order.items() if not _whole(v) or not 0 <= v <= MAX_UNITS), None)
        if bad is not None:
            raise ValueError(f"\"shard\": \"order\" of {bad!r:.60} must be a whole number from 0 to "
                             f"{MAX_UNITS:,}, not {order[bad]!r:.40}")
    merged = record.get("merged")
    if merged is not None and not (isinstance(merged, list) and all(isinstance(m, dict) for m in merged)):
        raise TypeError(f"\"shard\": \"merged\" must be a list of objects, not {merged!r:.40}")
    return record
