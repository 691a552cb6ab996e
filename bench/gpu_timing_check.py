"""GPU smoke test of harness.timing.CudaTimer:  python3 bench/gpu_timing_check.py

1. torch.mul on 8 / 32 / 256 MiB fp32 tensors: CudaTimer (median of 200 calls) beside
   triton.testing.do_bench(..., return_mode="median"), which also flushes L2 before each call.
2. A submission that does its work on a side stream: its sync gap, and escaped_timing's verdict,
   beside the same matmul on the timed stream.
3. torch.cuda.Event.elapsed_time and torch.cuda.synchronize patched after make_timer(): CudaTimer's
   median must not move; a timer built after the patch shows what the patch would have done.

Prints a short report; "CHECK" marks a line to look at. Exit status 2 when no CUDA GPU is visible.
"""

from __future__ import annotations

import statistics
import sys
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout, no install needed

import torch  # noqa: E402

from harness.device import system_info  # noqa: E402
from harness.stats import escaped_timing  # noqa: E402
from harness.timing import Timer, calibrate_sync_gap, make_timer, warm_up_device  # noqa: E402

CALLS = 200
SIZES_MIB = (8, 32, 256)
AGREE = 0.05  # CudaTimer vs do_bench, and before vs after the patch


def medians(timer: Timer, fn, calls: int = CALLS) -> tuple[float, float]:
    """(median event time, median sync gap) in us over ``calls`` timed calls, after one untimed call."""
    timer.untimed(fn)
    timings = [timer.time_call(fn)[1] for _ in range(calls)]
    return (statistics.median(t.event_us for t in timings), statistics.median(t.sync_us - t.event_us for t in timings))


def verdict(ok: bool) -> str:
    return "ok" if ok else "CHECK"


def compare_with_do_bench(timer: Timer) -> None:
    try:
        from triton.testing import do_bench
    except ImportError:
        do_bench = None
        print("triton is not installed: the do_bench column is empty")
    print(f"{'torch.mul':>10} {'CudaTimer us':>13} {'do_bench us':>12} {'diff':>7} {'gap us':>7}")
    for mib in SIZES_MIB:
        x = torch.rand(mib * 2**20 // 4, device="cuda")
        fn = partial(torch.mul, x, 2, out=torch.empty_like(x))
        ours, gap = medians(timer, fn)
        if do_bench is None:
            print(f"{mib:>6} MiB {ours:>13.1f} {'-':>12} {'-':>7} {gap:>7.1f}")
            continue
        theirs = do_bench(fn, return_mode="median") * 1000
        diff = ours / theirs - 1
        print(f"{mib:>6} MiB {ours:>13.1f} {theirs:>12.1f} {diff:>+7.1%} {gap:>7.1f}  {verdict(abs(diff) <= AGREE)}")


def side_stream(timer: Timer, baseline_us: float) -> None:
    a = torch.rand(4096, 4096, device="cuda")
    c = torch.empty_like(a)
    side = torch.cuda.Stream()

    def escaping_kernel() -> torch.Tensor:
        with torch.cuda.stream(side):
            torch.mm(a, a, out=c)
        return c

    for name, fn, should_escape in (
        ("side stream", escaping_kernel, True),
        ("timed stream", partial(torch.mm, a, a, out=c), False),
    ):
        event, gap = medians(timer, fn, calls=20)
        escaped = escaped_timing(gap, baseline_us, event)
        print(
            f"4096^2 mm on the {name:<12}: event {event:>9.1f} us, sync gap {gap:>9.1f} us, "
            f"escaped_timing={escaped}  {verdict(escaped == should_escape)}"
        )


def patched_timer(timer: Timer) -> None:
    x = torch.rand(32 * 2**20 // 4, device="cuda")
    fn = partial(torch.mul, x, 2, out=torch.empty_like(x))
    before, _ = medians(timer, fn)
    originals = torch.cuda.Event.elapsed_time, torch.cuda.synchronize
    torch.cuda.Event.elapsed_time = lambda self, end_event: 1e-3  # what a cheating submission does
    torch.cuda.synchronize = lambda device=None: None
    try:
        after, _ = medians(timer, fn)
        fooled, _ = medians(make_timer("cuda"), fn, calls=20)
    finally:
        torch.cuda.Event.elapsed_time, torch.cuda.synchronize = originals
    print(
        f"patched Event.elapsed_time + synchronize: CudaTimer {before:.1f} -> {after:.1f} us "
        f"({after / before - 1:+.1%})  {verdict(abs(after / before - 1) <= AGREE)}; "
        f"a timer built after the patch reads {fooled:.1f} us"
    )


def main() -> int:
    if not torch.cuda.is_available():
        print(
            "gpu_timing_check needs a CUDA GPU, and torch sees none here (torch.cuda.is_available() is "
            "False); run it on a GPU machine.",
            file=sys.stderr,
        )
        return 2
    timer = make_timer("cuda")
    warm_up_device(timer)
    info = system_info("cuda")
    print(
        f"{info.gpu_name} | driver {info.driver or '?'} | CUDA {info.cuda} | torch {info.torch} | "
        f"triton {info.triton or '-'} | L2 {info.l2_bytes} B | flush {timer.flush_bytes} B | "
        f"SM clock {info.sm_clock_mhz or '?'} MHz"
    )
    baseline = calibrate_sync_gap(timer)
    print(f"sync-gap baseline of an empty call: {baseline:.1f} us\n")
    compare_with_do_bench(timer)
    print()
    side_stream(timer, baseline)
    print()
    patched_timer(timer)
    return 0


if __name__ == "__main__":
    sys.exit(main())
