"""Fixtures of the fault suite: the e2e service (in-process core), a problems folder for core processes, jobs."""

from __future__ import annotations

from bus.conftest import make_job  # noqa: F401 - a RunJob for a tiny CPU problem
from e2e.conftest import make_system, problems  # noqa: F401 - the service fixtures, reused as they are
