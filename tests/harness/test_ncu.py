"""Nsight Compute's CSV (raw page, base units) read into the profile summary; when ncu cannot be used."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.codec import from_jsonable, to_jsonable
from harness.judge import ncu
from harness.result import ProfileEntry

SAMPLE = Path(__file__).resolve().parents[1] / "fixtures" / "harness" / "ncu" / "raw_page.csv"


def test_the_raw_page_becomes_one_profile_per_kernel_launch() -> None:
    add_pairs, tail = ncu.parse_raw_csv(SAMPLE.read_text())

    assert add_pairs.name.startswith("add_pairs(")
    assert add_pairs.grid == "(4224, 1, 1)" and add_pairs.block == "(256, 1, 1)"
    assert add_pairs.duration_us == pytest.approx(66.976)  # nanoseconds in base units
    assert add_pairs.dram_gbps == pytest.approx(3012.3457, rel=1e-6)  # bytes per second
    assert add_pairs.memory_pct == pytest.approx(91.42) and add_pairs.compute_pct == pytest.approx(23.87)
    assert (add_pairs.occupancy_pct, add_pairs.theoretical_occupancy_pct) == (88.03, 100.0)
    assert add_pairs.stalls == {"long_scoreboard": 27.51, "wait": 2.31, "lg_throttle": 1.92}  # top 3, largest first
    assert tail.dram_gbps == pytest.approx(0.001234567)  # thousands separators are read
    assert list(tail.stalls) == ["wait", "long_scoreboard"]  # zeros are not reasons


def test_the_summary_table_and_the_result_round_trip() -> None:
    kernels = ncu.parse_raw_csv(SAMPLE.read_text())
    table = ncu.summary(kernels)

    header = ["kernel", "time", "memory", "compute", "DRAM", "occupancy", "top", "stalls"]
    assert table.splitlines()[0].split() == header
    assert "67 us" in table and "91.4 %" in table and "3.01e+03 GB/s" in table and "long_scoreboard 28" in table
    entry = ProfileEntry(spec={"size": 4096}, table=table, tool="ncu", kernels=kernels)
    assert from_jsonable(ProfileEntry, to_jsonable(entry)) == entry


@pytest.mark.parametrize("text", ["", "==PROF== nothing profiled\n", '"ID","Kernel Name"\n'])
def test_output_without_kernels_gives_none(text: str) -> None:
    assert ncu.parse_raw_csv(text) == []


def test_ncu_runs_unprivileged_at_the_gpus_clocks_on_the_submissions_calls_only() -> None:
    command = ncu.profile_command("/tmp/r.ncu-rep", ["python", "-m", "harness.judge.profile_target"])
    assert command[command.index("--clock-control") + 1] == "none"
    assert command[command.index("--profile-from-start") + 1] == "off"
    assert command[-3:] == ["python", "-m", "harness.judge.profile_target"]
    assert ncu.csv_command("r")[1:] == ["--import", "r", "--csv", "--page", "raw", "--print-units", "base"]


def test_why_ncu_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ncu, "executable", lambda: None)
    assert "not installed" in ncu.unavailable_reason()
    monkeypatch.setattr(ncu, "executable", lambda: "/usr/bin/ncu")
    params = tmp_path / "params"
    params.write_text("RmProfilingAdminOnly: 1\n")
    monkeypatch.setattr(ncu, "PARAMS", params)
    monkeypatch.setattr(ncu.os, "geteuid", lambda: 1000)
    assert "only administrators" in ncu.unavailable_reason()
    params.write_text("RmProfilingAdminOnly: 0\n")
    assert ncu.unavailable_reason() is None
