"""GPU clocks and throttle reasons, read through NVML; the GPU's settings are never changed."""
from __future__ import annotations

import os
import sys
from typing import Any, Optional

from harness.common.devices import visible_gpus

THROTTLE_DROP = 0.9  # below 90% of the highest SM clock is throttling


class ClockMonitor:
    """Samples one GPU's SM and memory clocks and throttle reasons (a no-op without NVML)."""

    def __init__(self, device_index: int):
        self.handle: Any = None
        self.nvml: Any = None
        self.sm: list[int] = []
        self.mem: list[int] = []
        self.reasons = 0
        try:
            self.nvml = started_nvml()
            self.handle = nvml_handle(self.nvml, device_index)
        except Exception:  # no NVML: clocks unknown
            self.handle = None

    def sample(self) -> None:
        """Read the clocks now."""
        if self.handle is None:
            return
        try:
            self.sm.append(self.nvml.nvmlDeviceGetClockInfo(self.handle, self.nvml.NVML_CLOCK_SM))
            self.mem.append(self.nvml.nvmlDeviceGetClockInfo(self.handle, self.nvml.NVML_CLOCK_MEM))
            self.reasons |= self.nvml.nvmlDeviceGetCurrentClocksEventReasons(self.handle)
        except Exception:
            self.handle = None

    def summary(self) -> Optional[dict]:
        """Each clock's min and max (MHz) and the throttle reasons seen; None if unknown."""
        if not self.sm:
            return None
        return {"sm_mhz": [min(self.sm), max(self.sm)], "mem_mhz": [min(self.mem), max(self.mem)],
                "reasons": reason_names(self.nvml, self.reasons)}

    def throttled(self) -> bool:
        """Did the SM clock fall during the pair?"""
        return bool(self.sm) and min(self.sm) < THROTTLE_DROP * max(self.sm)


def started_nvml():
    """The pynvml module, NVML initialised (raises where either is missing: each caller has its fallback)."""
    import pynvml

    pynvml.nvmlInit()
    return pynvml


def nvml_handle(pynvml, torch_index: int):
    """NVML's handle of torch's GPU: by UUID where CUDA is started here, else by nvml_index."""
    uuid = torch_uuid(torch_index)
    if uuid is not None:
        try:
            return pynvml.nvmlDeviceGetHandleByUUID(uuid)
        except Exception:  # a MIG device, an older nvidia-ml-py
            pass
    return pynvml.nvmlDeviceGetHandleByIndex(nvml_index(torch_index))


def machine_gpus(fallback: int) -> int:
    """The machine's GPU count by NVML (not CUDA_VISIBLE_DEVICES's), else `fallback`."""
    try:
        return int(started_nvml().nvmlDeviceGetCount())
    except Exception:
        return fallback


def physical_index(torch_index: int) -> int:
    """NVML's index of torch's GPU `torch_index`."""
    try:
        pynvml = started_nvml()
        return pynvml.nvmlDeviceGetIndex(nvml_handle(pynvml, torch_index))
    except Exception:
        return nvml_index(torch_index)


def torch_uuid(torch_index: int) -> Optional[str]:
    """NVML's UUID of torch's GPU where CUDA is started here (asking would start it), else None."""
    torch = sys.modules.get("torch")
    try:
        if torch is None or not torch.cuda.is_initialized():
            return None
        uuid = str(torch.cuda.get_device_properties(torch_index).uuid)
    except Exception:
        return None
    return uuid if uuid.startswith(("GPU-", "MIG-")) else f"GPU-{uuid}"


def nvml_index(torch_index: int) -> int:
    """NVML's index of torch's GPU through CUDA_VISIBLE_DEVICES (an index, or a UUID NVML knows; else torch's)."""
    ids = visible_gpus() or []
    if torch_index >= len(ids):
        return torch_index
    if all(v.isdigit() for v in ids):
        return int(ids[torch_index])
    found = index_by_uuid(ids[torch_index])
    return torch_index if found is None else found


def index_by_uuid(prefix: str) -> Optional[int]:
    """NVML's index of the GPU whose UUID starts with `prefix` (CUDA takes a prefix), or None."""
    try:
        pynvml = started_nvml()
        for index in range(pynvml.nvmlDeviceGetCount()):
            uuid = pynvml.nvmlDeviceGetUUID(pynvml.nvmlDeviceGetHandleByIndex(index))
            if (uuid.decode() if isinstance(uuid, bytes) else str(uuid)).startswith(prefix):
                return index
    except Exception:  # no NVML
        pass
    return None


def reason_names(nvml, mask: int) -> list:
    """The names of the clock-event reasons set in `mask`."""
    names = []
    for attr in dir(nvml):
        if attr.startswith("nvmlClocksEventReason") and attr not in ("nvmlClocksEventReasonAll",
                                                                     "nvmlClocksEventReasonNone"):
            bit = getattr(nvml, attr)
            if isinstance(bit, int) and bit and mask & bit == bit:
                names.append(attr.removeprefix("nvmlClocksEventReason"))
    return sorted(set(names))


def gpu_memory_of_groups(device_index: int, groups: list) -> Optional[list]:
    """GPU bytes held by each process group in `groups`, per NVML; None where it cannot say."""
    try:
        pynvml = started_nvml()
        handle = nvml_handle(pynvml, device_index)
        processes = pynvml.nvmlDeviceGetComputeRunningProcesses(handle)
    except Exception:
        return None
    held = [0] * len(groups)
    for process in processes:
        try:
            group = os.getpgid(process.pid)
        except (ProcessLookupError, PermissionError):
            continue
        if group in groups and process.usedGpuMemory is not None:
            held[groups.index(group)] += process.usedGpuMemory
    return held if any(held) else None  # NVML sees other PIDs than ours
