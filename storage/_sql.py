"""Small SQL helpers shared by the store's queries and writes."""

from collections.abc import Sized


def placeholders(values: Sized) -> str:
    """``?, ?, ?`` for an ``IN (...)`` list.

    A literal list lets DuckDB probe the primary-key index key by key; ``IN (SELECT unnest(?))`` becomes
    a join that scans the whole table (measured at 1M runs: 33 ms against 4.7 ms for 64 keys).
    """
    return ", ".join("?" * len(values))
