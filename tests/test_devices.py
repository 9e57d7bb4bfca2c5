"""Device names as a run has them (harness/common/devices.py)."""
from harness.common.devices import gpu_index, is_gpu


def test_a_gpu_is_named_cuda_with_or_without_its_index():
    assert is_gpu("cuda") and is_gpu("cuda:3") and not is_gpu("cpu") and not is_gpu("meta")
    assert gpu_index("cuda") == 0 and gpu_index("cuda:3") == 3


def test_the_judge_and_workers_parse_a_device_once_into_an_indexed_torch_device():
    import torch

    from harness.common.devices import torch_device

    assert torch_device("cpu") == torch.device("cpu")
    assert torch_device("cuda:1") == torch.device("cuda", 1)
    if torch.cuda.is_available():
        assert torch_device("cuda").index == torch.cuda.current_device()
