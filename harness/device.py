"""What the harness knows about the machine: versions, L2 size, SM clock and datasheet peaks.

Importing this module touches neither torch nor CUDA: a fork-server parent may import it and must stay
CUDA-free. ``system_info("cuda")`` and ``l2_cache_bytes()`` initialise CUDA; call them in the worker.
``sm_clock_mhz()`` and ``driver_version()`` ask the driver (nvidia-smi, else NVML through pynvml) and never
initialise CUDA; the harness server reads the driver version and the highest SM clock once, before it
forks, so evaluations do not pay for nvidia-smi. The SM clock during timed calls comes from the timer
itself (``harness.timing``).
"""

from __future__ import annotations

import functools
import importlib.metadata
import json
import logging
import os
import platform
import re
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.result import SystemInfo

log = logging.getLogger(__name__)

SMI_TIMEOUT_S = 5.0
GPU_IDLE_WAIT_S = 5.0  # the driver needs a moment to tear a dead process's context down


@dataclass(frozen=True)
class Peaks:
    """Datasheet peak rates of one GPU model: dense (no 2:4 sparsity) tensor/vector throughput."""

    bandwidth_gbps: float  # DRAM bandwidth, GB/s (10^9 bytes per second)
    tflops: dict[str, float]  # dtype name ("fp32", "tf32", "bf16", "fp16", "fp8") -> TFLOP/s
    needs: str = "this GPU needs"  # whose peak, in the sentence that rejects a time under its floor


# No CPU core moves more than three 64-byte lines a cycle through its L1 (two loads and a store, the widest cores of
# 2026) at 5 GHz: 960 GB/s, rounded up. Data that fits in the caches moves far faster than DRAM, so only this limit,
# times the cores, is a floor no honest kernel can go under; flops are left out (AMX and AVX-512 differ too much).
CPU_CORE_LIMIT_GBPS = 1000.0


def cpu_speed_limit(cores: float) -> Peaks:
    """The speed no kernel on ``cores`` CPU cores can beat, for the speed-of-light floor only (not a % of peak)."""
    return Peaks(CPU_CORE_LIMIT_GBPS * max(1.0, cores), {}, f"the job's {max(1.0, cores):g} CPU cores need")


def _hopper(bandwidth_gbps: float, fp32: float, bf16: float) -> Peaks:
    """Hopper parts: TF32 is half the BF16/FP16 rate and FP8 twice it."""
    return Peaks(bandwidth_gbps, {"fp32": fp32, "tf32": bf16 / 2, "bf16": bf16, "fp16": bf16, "fp8": bf16 * 2})


def _ampere(bandwidth_gbps: float) -> Peaks:
    return Peaks(bandwidth_gbps, {"fp32": 19.5, "tf32": 156.0, "bf16": 312.0, "fp16": 312.0})


# NVIDIA datasheet figures (product pages / datasheets of each GPU), dense rates: the datasheets quote
# tensor rates "with sparsity", which are twice these. Matched against the CUDA device name in order,
# most specific first; word boundaries keep "L4" from matching "L40S" and "H200" from matching "GH200".
_PEAKS: list[tuple[str, Peaks]] = [
    (r"\bH100\b.*\bPCIe\b", _hopper(2000.0, fp32=51.0, bf16=756.0)),
    (r"\bH100\b.*\bNVL\b", _hopper(3900.0, fp32=60.0, bf16=835.5)),
    (r"\bH100\b", _hopper(3350.0, fp32=67.0, bf16=989.5)),  # SXM5, "NVIDIA H100 80GB HBM3"
    (r"\bH200\b.*\bNVL\b", _hopper(4800.0, fp32=60.0, bf16=835.5)),
    (r"\bH200\b", _hopper(4800.0, fp32=67.0, bf16=989.5)),  # SXM
    (r"\bA100\b.*80GB.*\bPCIe\b", _ampere(1935.0)),
    (r"\bA100\b.*80GB", _ampere(2039.0)),  # SXM4 80GB
    (r"\bA100\b", _ampere(1555.0)),  # 40GB, SXM4 and PCIe
    (r"\bL40S\b", Peaks(864.0, {"fp32": 91.6, "tf32": 183.0, "bf16": 362.05, "fp16": 362.05, "fp8": 733.0})),
    (r"\bL4\b", Peaks(300.0, {"fp32": 30.3, "tf32": 60.0, "bf16": 121.0, "fp16": 121.0, "fp8": 242.5})),
    (r"\bT4\b", Peaks(320.0, {"fp32": 8.1, "fp16": 65.0})),
    (r"\bB200\b", Peaks(8000.0, {"fp32": 80.0, "tf32": 1100.0, "bf16": 2250.0, "fp16": 2250.0, "fp8": 4500.0})),
]


PEAKS_FILE_ENV = "KERNELRANK_PEAKS_FILE"


def peaks_for(gpu_name: str) -> Peaks | None:
    """Peaks for a CUDA device name such as "NVIDIA H100 80GB HBM3": the datasheet's, with any measured figures
    from ``$KERNELRANK_PEAKS_FILE`` put over them; None when neither knows the GPU (or on CPU)."""
    datasheet = next((p for pattern, p in _PEAKS if re.search(pattern, gpu_name, re.IGNORECASE)), None)
    measured = next(
        (
            p
            for pattern, p in measured_peaks(os.environ.get(PEAKS_FILE_ENV, ""))
            if re.search(pattern, gpu_name, re.IGNORECASE)
        ),
        None,
    )
    if measured is None:
        return datasheet
    if datasheet is None:
        return measured if measured.bandwidth_gbps > 0 else None
    return Peaks(measured.bandwidth_gbps or datasheet.bandwidth_gbps, {**datasheet.tflops, **measured.tflops})


@functools.cache
def measured_peaks(path: str) -> tuple[tuple[str, Peaks], ...]:
    """Measured peaks from a JSON file: ``{"H100.*HBM3": {"bandwidth_gbps": 3010, "tflops": {"fp16": 720}}}``, keys
    matched like the datasheet table's (a regular expression, case ignored). Unreadable files count as empty."""
    if not path:
        return ()
    try:
        with open(path) as stream:
            table = json.load(stream)
        return tuple(
            (
                str(pattern),
                Peaks(
                    float(entry.get("bandwidth_gbps") or 0),
                    {str(k): float(v) for k, v in dict(entry.get("tflops") or {}).items()},
                ),
            )
            for pattern, entry in dict(table).items()
        )
    except (OSError, ValueError, TypeError, AttributeError) as exc:
        log.warning("measured peaks in %s are unreadable (%s); using the datasheet's", path, exc)
        return ()


def l2_cache_bytes() -> int:
    """L2 size of the current CUDA device in bytes; 0 when torch does not report it. Initialises CUDA."""
    import torch

    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    return int(getattr(props, "L2_cache_size", 0))


def system_info(device: str) -> SystemInfo:
    """Versions and hardware of this machine for the result; GPU fields stay empty on CPU."""
    import torch

    info = SystemInfo(
        device=device,
        torch=torch.__version__,
        triton=_package_version("triton"),
        python=platform.python_version(),
        platform=platform.platform(),
        cpu=_cpu_model(),
    )
    if device != "cuda":
        return info
    info.gpu_name = torch.cuda.get_device_name(torch.cuda.current_device())
    info.gpu_count = torch.cuda.device_count()
    info.cuda = torch.version.cuda or ""
    info.l2_bytes = l2_cache_bytes()
    info.driver = driver_version()
    info.max_sm_clock_mhz = max_sm_clock_mhz() or 0
    return info


def sm_clock_mhz() -> int | None:
    """Current SM clock of the GPU this process computes on, in MHz; None when unreadable."""
    value = _smi_query("clocks.sm")
    if value is None:
        value = _nvml_query(lambda nvml, handle: nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM))
    return _mhz(value)


@functools.cache
def max_sm_clock_mhz() -> int | None:
    """The highest SM clock the GPU may run at, in MHz; None when unreadable. Asked once per process."""
    value = _smi_query("clocks.max.sm")
    if value is None:
        value = _nvml_query(lambda nvml, handle: nvml.nvmlDeviceGetMaxClockInfo(handle, nvml.NVML_CLOCK_SM))
    return _mhz(value)


def _mhz(value: Any) -> int | None:
    try:
        return int(float(value)) if value is not None else None
    except ValueError:
        log.warning("unreadable SM clock %r", value)
        return None


def gpu_compute_processes() -> list[str] | None:
    """Processes computing on the visible GPU, per nvidia-smi (pids, or "?" where it hides them); None when
    nvidia-smi cannot say. Never initialises CUDA."""
    command = ["nvidia-smi", "-i", _visible_gpu(), "--query-compute-apps=pid", "--format=csv,noheader"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=SMI_TIMEOUT_S, check=True)
    except (OSError, subprocess.SubprocessError) as exc:
        log.debug("nvidia-smi compute apps unavailable: %s", exc)
        return None
    return [line.strip() or "?" for line in done.stdout.splitlines() if line.strip() and "No running" not in line]


def gpu_idle(wait_s: float = GPU_IDLE_WAIT_S) -> bool | None:
    """No compute process on the visible GPU once a job is gone, waiting up to ``wait_s`` for the driver to tear
    the dead process's context down; None when nvidia-smi cannot say."""
    deadline = time.monotonic() + wait_s
    while (busy := gpu_compute_processes()) and time.monotonic() < deadline:
        time.sleep(0.1)
    if busy:
        log.error("the GPU still runs %s after the job ended", ", ".join(busy))
    return None if busy is None else not busy


@functools.cache
def driver_version() -> str:
    """The NVIDIA driver's version ("580.159.04"); "" where there is none. Asked once per process."""
    value = _smi_query("driver_version")
    if value is None:
        value = _nvml_query(lambda nvml, handle: nvml.nvmlSystemGetDriverVersion())
    return str(value) if value is not None else ""


def _visible_gpu() -> str:
    """The driver's id of this process's first visible GPU (index or UUID), without initialising CUDA."""
    return os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip() or "0"


def _smi_query(field: str) -> str | None:
    """One field of ``nvidia-smi --query-gpu`` for the visible GPU, or None when nvidia-smi cannot say."""
    command = ["nvidia-smi", "-i", _visible_gpu(), f"--query-gpu={field}", "--format=csv,noheader,nounits"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=SMI_TIMEOUT_S, check=True)
    except (OSError, subprocess.SubprocessError) as exc:
        log.debug("nvidia-smi %s unavailable: %s", field, exc)
        return None
    value = done.stdout.strip().splitlines()[0].strip() if done.stdout.strip() else ""
    return value if value and "N/A" not in value and "Not Supported" not in value else None


def _nvml_query(query: Callable[[Any, Any], Any]) -> Any | None:
    """``query(pynvml, handle)`` for the visible GPU when pynvml is installed and NVML answers, else None."""
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
        try:
            gpu = _visible_gpu()
            handle = (
                pynvml.nvmlDeviceGetHandleByIndex(int(gpu)) if gpu.isdigit() else pynvml.nvmlDeviceGetHandleByUUID(gpu)
            )
            value = query(pynvml, handle)
        finally:
            pynvml.nvmlShutdown()
    except pynvml.NVMLError as exc:
        log.debug("NVML query failed: %s", exc)
        return None
    return value.decode() if isinstance(value, bytes) else value


def _package_version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return ""


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor()
