"""Fixtures of the fault suite: the e2e service (in-process core) and a problems folder for core processes."""

from __future__ import annotations

from e2e.conftest import make_system, problems  # noqa: F401 - the service fixtures, reused as they are
