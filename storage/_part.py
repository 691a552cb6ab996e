"""What every part of the store (challenges, admin records, reports, tokens) is built with: the store's two
cursor factories, so each part reads and writes through the store's one connection and its write lanes."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager

import duckdb

Cursor = duckdb.DuckDBPyConnection


class StorePart:
    def __init__(
        self,
        reading: Callable[[], AbstractContextManager[Cursor]],
        writing: Callable[..., AbstractContextManager[Cursor]],
    ) -> None:
        self._reading, self._writing = reading, writing
