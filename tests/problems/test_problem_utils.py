"""problems/utils.py, the helpers every reference imports: comparison semantics, seeding, cloning."""

from __future__ import annotations

import importlib.util
from types import ModuleType

import pytest
import torch
from problem_testkit import PROBLEMS

NAN, INF = float("nan"), float("inf")


def _load_utils() -> ModuleType:
    spec = importlib.util.spec_from_file_location("kernelrank_problem_utils", PROBLEMS / "utils.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


utils = _load_utils()


def test_allclose_accepts_values_within_atol_plus_rtol() -> None:
    expected = torch.tensor([1.0, 100.0, 0.0])
    received = expected + torch.tensor([1.5e-5, 1.0e-3, 0.5e-5])

    assert utils.verbose_allclose(received, expected, rtol=1e-5, atol=1e-5) == []
    assert utils.verbose_allclose(received, expected, rtol=1e-6, atol=1e-5)


def test_allclose_reports_the_count_and_the_first_mismatches() -> None:
    expected = torch.zeros(4, 5)
    received = expected.clone()
    received[0, 1] = received[2, 3] = received[3, 4] = 1.0

    reasons = utils.verbose_allclose(received, expected, max_print=2)

    assert reasons[0] == "Number of mismatched elements: 3"
    assert "(0, 1)" in reasons[1] and "(2, 3)" in reasons[2]
    assert reasons[3] == "... and 1 more mismatched elements"


@pytest.mark.parametrize(
    ("got", "want", "match"),
    [
        (NAN, NAN, True),
        (INF, INF, True),
        (-INF, -INF, True),
        (NAN, 1.0, False),
        (1.0, NAN, False),
        (INF, -INF, False),
        (1.0, INF, False),
        (INF, 1e30, False),
    ],
    ids=["nan-nan", "inf-inf", "-inf--inf", "nan-num", "num-nan", "inf--inf", "num-inf", "inf-num"],
)
def test_allclose_requires_nan_and_inf_in_the_same_places(got: float, want: float, match: bool) -> None:
    reasons = utils.verbose_allclose(torch.tensor([got, 2.0]), torch.tensor([want, 2.0]), rtol=1e-2, atol=1e-2)

    assert (reasons == []) is match


def test_allclose_rejects_other_shapes_devices_and_non_tensors() -> None:
    expected = torch.zeros(3)

    assert utils.verbose_allclose(torch.zeros(1, 3), expected)[0].startswith("SIZE MISMATCH")
    assert utils.verbose_allclose([0.0, 0.0, 0.0], expected)[0].startswith("OUTPUT TYPE MISMATCH")
    assert utils.verbose_allclose(torch.zeros(3, device="meta"), expected)[0].startswith("DEVICE MISMATCH")


def test_allclose_takes_an_elementwise_atol() -> None:
    expected = torch.zeros(3)
    received = torch.tensor([0.5, 0.5, 0.5])

    reasons = utils.verbose_allclose(received, expected, rtol=0, atol=torch.tensor([1.0, 0.1, 1.0]))

    assert reasons[0] == "Number of mismatched elements: 1" and "(1,)" in reasons[1]


def test_allclose_reports_a_zero_dimensional_mismatch() -> None:
    assert utils.verbose_allclose(torch.tensor(1.0), torch.tensor(2.0))[1].startswith("ERROR at ()")


def test_allequal_is_exact_and_matches_nan_with_nan() -> None:
    counts = torch.tensor([1, 2], dtype=torch.int32)
    assert utils.verbose_allequal(counts, counts.clone()) == []
    assert utils.verbose_allequal(counts, counts + 1)
    assert utils.verbose_allequal(torch.tensor([NAN, 1.0]), torch.tensor([NAN, 1.0])) == []
    assert utils.verbose_allequal(torch.tensor([1.0 + 1e-7]), torch.tensor([1.0]))


def test_match_reference_checks_dtype_and_values_on_the_harnesss_copy() -> None:
    """The harness hands each check a copy of its own, so the reference may write into it, as here."""

    def doubling_in_place(data: tuple[torch.Tensor]) -> torch.Tensor:
        return data[0].mul_(2)

    check = utils.make_match_reference(doubling_in_place, rtol=0, atol=0)
    fresh = lambda: (torch.tensor([1.0, 2.0]),)  # noqa: E731

    assert check(fresh(), torch.tensor([2.0, 4.0])) == (True, "")
    ok, message = check(fresh(), torch.tensor([2.0, 4.0], dtype=torch.float64))
    assert not ok and "DTYPE MISMATCH" in message
    ok, message = check(fresh(), torch.tensor([2.0, 5.0]))
    assert not ok and "Number of mismatched elements: 1" in message


def test_make_generator_is_reproducible_for_any_seed() -> None:
    for seed in (0, 42, 2**63 - 1, 2**70 + 3):
        first = torch.rand(4, generator=utils.make_generator(seed))
        assert torch.equal(first, torch.rand(4, generator=utils.make_generator(seed)))
    assert not torch.equal(
        torch.rand(4, generator=utils.make_generator(1)), torch.rand(4, generator=utils.make_generator(2))
    )


def test_make_generator_follows_the_selected_device() -> None:
    with torch.device("cpu"):
        assert utils.make_generator(1).device.type == "cpu"


def test_uniform_stays_in_its_interval() -> None:
    generator = utils.make_generator(7)
    draws = [utils.uniform(-3.0, 5.0, generator) for _ in range(200)]

    assert all(-3.0 <= d < 5.0 for d in draws) and len(set(draws)) == len(draws)


def test_set_seed_makes_torch_reproducible() -> None:
    utils.set_seed(1234)
    first = torch.rand(3)
    utils.set_seed(1234)

    assert torch.equal(first, torch.rand(3))


def test_clone_data_copies_tensors_in_nested_containers() -> None:
    data = {"pair": (torch.zeros(2), [torch.ones(1), 3.5]), "name": "x"}

    cloned = utils.clone_data(data)
    cloned["pair"][0].add_(1)
    cloned["pair"][1][0].add_(1)

    assert torch.equal(data["pair"][0], torch.zeros(2)) and torch.equal(data["pair"][1][0], torch.ones(1))
    assert cloned["pair"][1][1] == 3.5 and cloned["name"] == "x"
    assert isinstance(cloned["pair"], tuple) and isinstance(cloned["pair"][1], list)


def test_deterministic_context_turns_tf32_off_and_restores_settings() -> None:
    saved = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("high")
    try:
        with utils.DeterministicContext():
            assert torch.get_float32_matmul_precision() == "highest"
            assert torch.backends.cudnn.deterministic and not torch.backends.cudnn.allow_tf32
        assert torch.get_float32_matmul_precision() == "high"
    finally:
        torch.set_float32_matmul_precision(saved)
