"""Worker-side helpers that run without a judge."""
import pytest
import torch

from harness import worker


def poisoned_reuse(device: str) -> torch.Tensor:
    """Free a block holding a 'result', poison, then take a block of the same size."""
    stale = torch.full((4096,), 0.5, device=device)
    del stale
    worker.poison_free_memory(torch.device(device), [4096 * 4])
    return torch.empty(4096, device=device)


def test_poisoning_leaves_no_stale_cpu_memory():
    reused = poisoned_reuse("cpu")
    assert not (reused == 0.5).any()  # no stale "result" survives: the block is poisoned, or fresh from the OS


@pytest.mark.gpu
def test_poisoning_turns_stale_gpu_memory_into_nan():
    assert poisoned_reuse("cuda").isnan().all()


def test_package_names_non_tensors_and_copies_aliases():
    x = torch.rand(3)
    assert worker.package(x.relu(), [x])["aliases_input"] is False
    reply = worker.package(x, [x])
    assert reply["aliases_input"] is True and reply["items"][0].data_ptr() != x.data_ptr()
    assert worker.package((x + 1, 3), [x])["items"][1] == {"not_tensor": "int"}
    assert worker.package("no", [x])["kind"] == "other"


def test_copy_matching_copies_same_named_same_shaped_tensors():
    model = torch.nn.Linear(4, 2)
    reference = {"weight": torch.ones(2, 4), "bias": torch.ones(3)}  # bias shape differs: left alone
    assert worker.copy_matching(model, reference) == 1
    assert torch.equal(model.weight, torch.ones(2, 4)) and not torch.equal(model.bias, torch.ones(2))
