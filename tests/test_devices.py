"""Device names as a run has them (harness/devices.py)."""
from harness.devices import gpu_index, is_gpu


def test_a_gpu_is_named_cuda_with_or_without_its_index():
    assert is_gpu("cuda") and is_gpu("cuda:3") and not is_gpu("cpu") and not is_gpu("meta")
    assert gpu_index("cuda") == 0 and gpu_index("cuda:3") == 3
