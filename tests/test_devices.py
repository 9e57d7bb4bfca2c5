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


def test_a_judge_on_a_gpu_sees_that_gpu_alone_as_cuda_0(monkeypatch):
    """Its CUDA start-up then touches no other GPU, whose pairs it would slow (docs/decisions/one-gpu-each.md)."""
    from harness.common.devices import as_seen_alone, only_this_gpu

    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert only_this_gpu("cuda:1") == {"CUDA_VISIBLE_DEVICES": "1"} and as_seen_alone("cuda:1") == "cuda:0"
    assert only_this_gpu("cuda") == {"CUDA_VISIBLE_DEVICES": "0"}
    assert only_this_gpu("cpu") == {} and only_this_gpu(None) == {} and as_seen_alone("cpu") == "cpu"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "5, GPU-abc")  # the run's own choice, by index or UUID
    assert only_this_gpu("cuda:0") == {"CUDA_VISIBLE_DEVICES": "5"}
    assert only_this_gpu("cuda:1") == {"CUDA_VISIBLE_DEVICES": "GPU-abc"}
    assert only_this_gpu("cuda:2") == {} and as_seen_alone("cuda:2") == "cuda:2"  # not visible: left to fail as it is
