"""Roofline arithmetic: achieved GB/s and TFLOP/s, share of the GPU's peak, and the speed-of-light floor.

A problem declares per-shape work as expressions over its spec's args (``task.yml``: ``roofline: {bytes:
"3 * size * 2", flops: "size", dtype: fp16}``). ``dtype`` names the lowest compute precision the problem's
checker accepts (a fp32 matmul whose tolerance admits TF32 declares ``tf32``): it picks the peak used for
% of peak and for the floor. The expressions are evaluated by a small ``ast`` walker, never ``eval``.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from typing import Any

from harness.device import Peaks
from harness.problem import Roofline

# A time under this share of the floor is impossible: the 20 % grace absorbs datasheet rounding, clocks above
# base and timer resolution, so an honest kernel never falls under it (the best reach 90-95 % of peak).
IMPOSSIBLE_FRACTION = 0.80
MAX_EXPR_CHARS = 500

_BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[float], float]] = {ast.USub: operator.neg, ast.UAdd: operator.pos}
_CALLS = {"min": min, "max": max}


def evaluate_expr(expr: str, spec: dict[str, Any]) -> float:
    """Value of an arithmetic expression over the spec's numeric args; ValueError on anything else."""
    if len(expr) > MAX_EXPR_CHARS:
        raise ValueError(f"roofline expression is longer than {MAX_EXPR_CHARS} characters.")
    try:
        value = _evaluate(ast.parse(expr.strip(), mode="eval").body, spec)
    except SyntaxError as exc:
        raise ValueError(f"roofline expression {expr!r} is not valid arithmetic ({exc.msg}).") from exc
    except ZeroDivisionError as exc:
        raise ValueError(f"roofline expression {expr!r} divides by zero for spec {spec}.") from exc
    except OverflowError as exc:
        raise ValueError(f"roofline expression {expr!r} is too large to compute for spec {spec}.") from exc
    except ValueError as exc:
        raise ValueError(f"roofline expression {expr!r}: {exc}") from exc
    if not math.isfinite(value):
        raise ValueError(f"roofline expression {expr!r} is not finite for spec {spec}.")
    return value


def _evaluate(node: ast.AST, spec: dict[str, Any]) -> float:
    """Float arithmetic throughout: huge powers overflow at once instead of growing giant integers."""
    if isinstance(node, ast.Constant):
        return _number(node.value, "a constant")
    if isinstance(node, ast.Name):
        if node.id not in spec:
            raise ValueError(f"unknown name {node.id!r}; the spec has {', '.join(sorted(spec)) or 'no args'}.")
        return _number(spec[node.id], f"spec arg {node.id!r}")
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        value = _BINARY[type(node.op)](_evaluate(node.left, spec), _evaluate(node.right, spec))
        if not isinstance(value, float):  # a negative base to a fractional power is complex
            raise ValueError(f"{ast.unparse(node)} is not a real number.")
        return value
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_evaluate(node.operand, spec))
    if isinstance(node, ast.Call):
        name = node.func.id if isinstance(node.func, ast.Name) else ""
        if name not in _CALLS or node.keywords or len(node.args) < 2:
            raise ValueError("the only calls allowed are min(a, b, ...) and max(a, b, ...).")
        return _CALLS[name](_evaluate(arg, spec) for arg in node.args)
    raise ValueError(
        f"{type(node).__name__} is not allowed; use numbers, spec args, + - * / // % **, parentheses, min and max."
    )


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{what} is {value!r}, not a number.")
    return float(value)


def achieved(
    roofline: Roofline | None, spec: dict[str, Any], median_us: float, peaks: Peaks | None, dtype: str | None = None
) -> tuple[float | None, float | None, float | None]:
    """(achieved GB/s, achieved TFLOP/s, fraction of the bound resource's peak); None where not computable.

    The fraction is the larger of bandwidth/peak and throughput/peak of ``dtype`` (default: the roofline's).
    """
    if roofline is None or not (math.isfinite(median_us) and median_us > 0):
        return None, None, None
    moved, flops = _work(roofline, spec)
    gbps = moved / median_us / 1e3 if moved > 0 else None  # bytes per us -> GB/s
    tflops = flops / median_us / 1e6 if flops > 0 else None  # flops per us -> TFLOP/s
    fractions = []
    if peaks is not None:
        if gbps is not None:
            fractions.append(gbps / peaks.bandwidth_gbps)
        peak_tflops = peaks.tflops.get(dtype or roofline.dtype)
        if tflops is not None and peak_tflops:
            fractions.append(tflops / peak_tflops)
    return gbps, tflops, max(fractions) if fractions else None


def speed_of_light_floor_us(
    roofline: Roofline | None, spec: dict[str, Any], peaks: Peaks | None, dtype: str | None = None
) -> float | None:
    """The roofline floor in us: the larger of bytes at peak bandwidth and flops at peak throughput. None when
    the roofline or the peaks are unknown."""
    if roofline is None or peaks is None:
        return None
    moved, flops = _work(roofline, spec)
    times_us = [moved / (peaks.bandwidth_gbps * 1e3)] if moved > 0 else []
    peak_tflops = peaks.tflops.get(dtype or roofline.dtype)
    if flops > 0 and peak_tflops:
        times_us.append(flops / (peak_tflops * 1e6))
    return max(times_us) if times_us else None


def impossible_time(
    roofline: Roofline | None, spec: dict[str, Any], median_us: float, peaks: Peaks | None, dtype: str | None = None
) -> str | None:
    """Why ``median_us`` cannot be a real time (not positive and finite, or under ``IMPOSSIBLE_FRACTION`` of the
    roofline floor), as a sentence; None when it is possible."""
    if not (math.isfinite(median_us) and median_us > 0):
        return f"{median_us} us is not a positive, finite time"
    floor_us = speed_of_light_floor_us(roofline, spec, peaks, dtype)
    if floor_us is None or median_us >= IMPOSSIBLE_FRACTION * floor_us:
        return None
    assert roofline is not None and peaks is not None
    moved, flops = _work(roofline, spec)
    bound = (
        f"{moved:.3g} bytes at {peaks.bandwidth_gbps:.4g} GB/s"
        if moved / (peaks.bandwidth_gbps * 1e3) >= floor_us
        else f"{flops:.3g} operations at {peaks.tflops[dtype or roofline.dtype]:.4g} TFLOP/s"
    )
    return (
        f"{median_us:.3g} us is under {IMPOSSIBLE_FRACTION:.0%} of the {floor_us:.3g} us {peaks.needs} at least "
        f"({bound}, its peak)"
    )


def below_speed_of_light(
    roofline: Roofline | None, spec: dict[str, Any], median_us: float, peaks: Peaks | None, dtype: str | None = None
) -> bool:
    """True when ``median_us`` is impossible (``impossible_time`` says why)."""
    return impossible_time(roofline, spec, median_us, peaks, dtype) is not None


def _work(roofline: Roofline, spec: dict[str, Any]) -> tuple[float, float]:
    """(bytes, flops) of one call on ``spec``."""
    moved, flops = evaluate_expr(str(roofline.bytes), spec), evaluate_expr(str(roofline.flops), spec)
    if moved < 0 or flops < 0:
        raise ValueError(f"roofline for spec {spec} gives negative work ({moved} bytes, {flops} flops).")
    return moved, flops
