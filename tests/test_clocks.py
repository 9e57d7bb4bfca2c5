"""GPU clocks through NVML, on a fake NVML: throttling, reason names, CUDA_VISIBLE_DEVICES mapping."""
import sys
import types

from harness.common import clocks


def fake_nvml(**reasons):
    return types.SimpleNamespace(nvmlClocksEventReasonAll=0xFF, nvmlClocksEventReasonNone=0, **reasons)


def test_reason_names_are_the_bits_set_without_prefix():
    nvml = fake_nvml(nvmlClocksEventReasonSwPowerCap=4, nvmlClocksEventReasonHwSlowdown=8,
                     nvmlClocksEventReasonGpuIdle=1)
    assert clocks.reason_names(nvml, 4 | 8) == ["HwSlowdown", "SwPowerCap"]
    assert clocks.reason_names(nvml, 0) == []


def test_an_sm_clock_that_falls_below_90_percent_is_throttling():
    monitor = clocks.ClockMonitor.__new__(clocks.ClockMonitor)
    monitor.sm, monitor.mem, monitor.reasons, monitor.nvml = [1980, 1980, 1900], [2619] * 3, 0, fake_nvml()
    assert not monitor.throttled()
    monitor.sm.append(1700)
    assert monitor.throttled()
    assert monitor.summary() == {"sm_mhz": [1700, 1980], "mem_mhz": [2619, 2619], "reasons": []}


def test_no_nvml_means_no_clocks_and_no_memory_figures():
    monitor = clocks.ClockMonitor.__new__(clocks.ClockMonitor)
    monitor.handle, monitor.sm, monitor.mem, monitor.reasons = None, [], [], 0
    monitor.sample()
    assert monitor.summary() is None and not monitor.throttled()


def test_nvml_index_follows_cuda_visible_devices(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,1")
    assert clocks.nvml_index(0) == 3 and clocks.nvml_index(1) == 1
    monkeypatch.setattr(clocks, "index_by_uuid", lambda prefix: None)  # a UUID NVML does not know: torch's index
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-1234")
    assert clocks.nvml_index(0) == 0
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert clocks.nvml_index(2) == 2


def test_gpus_named_by_uuid_are_found_in_nvml_before_cuda_starts(monkeypatch):
    """The runner never starts CUDA: with CUDA_VISIBLE_DEVICES naming GPUs by UUID (or a prefix of one, as CUDA
    takes), NVML's list says which GPU each is; before, every one was taken for GPU 0 (its clocks, its timing CPU)."""
    from types import SimpleNamespace

    uuids = ["GPU-aaaa-0", "GPU-bbbb-1", "GPU-cccc-2"]
    fake = SimpleNamespace(nvmlInit=lambda: None, nvmlDeviceGetCount=lambda: 3, nvmlDeviceGetHandleByIndex=lambda i: i,
                           nvmlDeviceGetUUID=lambda handle: uuids[handle].encode())
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-cccc-2,GPU-aaaa")
    assert clocks.nvml_index(0) == 2 and clocks.nvml_index(1) == 0
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-dddd")  # none of the machine's
    assert clocks.nvml_index(0) == 0


def test_a_gpu_is_found_in_nvml_by_its_uuid_once_cuda_is_started(monkeypatch):
    """CUDA_VISIBLE_DEVICES may name GPUs by UUID, and CUDA_DEVICE_ORDER may differ from NVML's PCI order: the UUID
    torch reports finds the right GPU; before CUDA starts (a judge started ahead), the index as before."""
    from types import SimpleNamespace

    import torch

    asked = []
    nvml = SimpleNamespace(nvmlDeviceGetHandleByUUID=lambda uuid: asked.append(uuid) or "by-uuid",
                           nvmlDeviceGetHandleByIndex=lambda index: asked.append(index) or "by-index")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-aaaa,GPU-bbbb")
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: False)
    assert clocks.nvml_handle(nvml, 1) == "by-index" and asked == [1]
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda i: SimpleNamespace(uuid=["aaaa", "bbbb"][i]))
    assert clocks.nvml_handle(nvml, 1) == "by-uuid" and asked[-1] == "GPU-bbbb"
