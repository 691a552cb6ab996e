"""A full disk under the database: the sender is told plainly, nothing is half-stored, and it works again
once there is room. The database lives on a small tmpfs (needs root to mount; skipped otherwise)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
from fault_kit import CountingRunner

from core.contracts.messages import CommandKind, Tone

CORRECT = (Path(__file__).parents[1] / "fixtures" / "harness" / "submissions" / "correct.py").read_text()
DISK_MB = 16


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """``tmp_path/var`` as a 16 MB tmpfs."""
    home = tmp_path / "var"
    home.mkdir()
    if os.geteuid() != 0 or not shutil.which("mount"):
        pytest.skip("mounting a small file system needs root")
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={DISK_MB}m", "tmpfs", str(home)], capture_output=True, text=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield home
    finally:
        subprocess.run(["umount", "-l", str(home)], check=False)


def fill(disk: Path) -> Path:
    """Take every free byte of ``disk``; remove the returned file to give them back."""
    filler = disk / "filler"
    with filler.open("wb") as out, contextlib.suppress(OSError):
        while True:
            out.write(b"\0" * (1 << 16))
            out.flush()
    return filler


def text(reply) -> str:
    return " ".join(part.text for part in reply.parts)


@pytest.mark.slow
async def test_a_full_disk_refuses_plainly_keeps_what_was_stored_and_recovers(small_disk, make_system, tmp_path):
    system = await make_system(CountingRunner(delay_s=1.0))
    first = await system.submit("ada", CORRECT, leaderboard="vectoradd")
    await system.finals({run["run_id"] for run in first.data["runs"]})

    pending = await system.submit("bob", CORRECT + "# pending\n", leaderboard="vectoradd")  # its result comes later
    filler = fill(small_disk)
    absorbed = []  # DuckDB may fit a small write into space its files already hold: the next one cannot fit
    for attempt in range(10):
        refused = await system.submit("cy", CORRECT + f"# refused {attempt}\n", leaderboard="vectoradd")
        if refused.tone is Tone.ERROR:
            break
        absorbed.append(refused)
    assert refused.tone is Tone.ERROR and "disk under its database is full" in text(refused)
    assert (await system.ask("ada", CommandKind.LIST)).tone is not Tone.ERROR  # reading still works
    await asyncio.sleep(2.5)  # bob's result arrives and cannot be stored yet
    (bob_run,) = pending.data["runs"]
    assert system.store.run(bob_run["run_id"]).state != "done"
    filler.unlink()  # room again: the result is stored when it comes back

    later = await system.submit("dee", CORRECT + "# later\n", leaderboard="vectoradd")
    assert later.tone is not Tone.ERROR
    run_ids = {run["run_id"] for reply in (pending, later, *absorbed) for run in reply.data["runs"]}
    finals = await system.finals(run_ids, timeout_s=60)
    assert {reply.data["status"] for reply in finals.values()} == {"passed"}

    copy = tmp_path / "copy"  # what a crash now would leave: the file and its write-ahead log
    copy.mkdir()
    for name in ("kernelrank.duckdb", "kernelrank.duckdb.wal"):
        if (small_disk / name).exists():
            shutil.copy(small_disk / name, copy / name)
    with duckdb.connect(str(copy / "kernelrank.duckdb"), read_only=True) as con:
        rows = con.execute(
            "SELECT s.file_name, r.state, r.status FROM submissions s JOIN runs r "
            "ON r.submission_id = s.id ORDER BY s.id"
        ).fetchall()
    # ada, bob, dee and what the disk absorbed: cy's refused submission left nothing
    assert rows == [("k.py", "done", "passed")] * (3 + len(absorbed))
