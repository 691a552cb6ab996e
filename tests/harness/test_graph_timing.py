"""Graph timing on a machine without CUDA: it declines cleanly; the helpers and the result field work.

The CUDA path (capture, replay, checks) runs in bench/gpu_evidence.py on a GPU.
"""

import logging
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from harness.judge.graph_timing import copy_into, graph_replay_us
from harness.result import EvalResult, Mode, ShapeStats, Status

REPO = Path(__file__).resolve().parents[2]


def _never_called(*args):
    raise AssertionError("graph timing must not call anything for an input it cannot time")


def test_importing_the_module_leaves_torch_unimported():
    code = "import sys, harness.judge.graph_timing; print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_cpu_input_gets_no_graph_time_and_a_logged_reason(caplog):
    data = (torch.ones(8), torch.ones(8))
    with caplog.at_level(logging.INFO, logger="harness.judge.graph_timing"):
        timing = graph_replay_us(_never_called, data, refill=_never_called, check=_never_called)
    assert timing is None
    assert "graph timing skipped" in caplog.text


def test_replays_must_be_positive():
    with pytest.raises(ValueError, match="replays"):
        graph_replay_us(_never_called, (torch.ones(2),), refill=_never_called, check=_never_called, replays=0)


def test_copy_into_writes_fresh_values_into_the_same_tensors():
    static = {"x": torch.zeros(3), "pair": (torch.zeros(2, 2), [torch.zeros(1, dtype=torch.int64)]), "n": 5}
    fresh = {"x": torch.arange(3.0), "pair": (torch.full((2, 2), 7.0), [torch.tensor([9])]), "n": 6}
    storage = static["x"].data_ptr()
    copy_into(static, fresh)
    assert static["x"].data_ptr() == storage  # in place: a captured graph still reads it
    assert torch.equal(static["x"], fresh["x"])
    assert torch.equal(static["pair"][0], fresh["pair"][0])
    assert torch.equal(static["pair"][1][0], fresh["pair"][1][0])
    assert static["n"] == 5  # non-tensor leaves are the template's


@pytest.mark.parametrize("fresh", [(torch.ones(2),), [torch.ones(2), 1], {"a": torch.ones(2)}])
def test_copy_into_refuses_a_different_structure(fresh):
    with pytest.raises(ValueError):
        copy_into((torch.zeros(2), torch.zeros(2)), fresh)


def test_shape_stats_graph_us_is_optional_and_survives_json():
    def shape(**extra):
        return ShapeStats(
            spec={"size": 4},
            n=1,
            median_us=1.0,
            mean_us=1.0,
            trimmed_mean_us=1.0,
            std_us=0.0,
            ci_low_us=1.0,
            ci_high_us=1.0,
            min_us=1.0,
            p10_us=1.0,
            p90_us=1.0,
            max_us=1.0,
            first_call_us=1.0,
            **extra,
        )

    assert shape().graph_us is None
    result = EvalResult(
        status=Status.PASSED, mode=Mode.RANKED, problem="vectoradd", shapes=[shape(graph_us=2.5), shape()]
    )
    again = EvalResult.from_json(result.to_json())
    assert [s.graph_us for s in again.shapes] == [2.5, None]
    legacy = result.to_dict()
    del legacy["shapes"][0]["graph_us"]  # a result written before the field existed
    assert EvalResult.from_dict(legacy).shapes[0].graph_us is None
