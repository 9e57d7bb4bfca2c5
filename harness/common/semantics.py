"""KernelBench's reference semantics for the judge, workers and lint: how a model is built and called (README)."""
from __future__ import annotations

import contextlib
from typing import Optional

import torch


def build_model(cls, init_args: list, seed: int, device: torch.device, mode: str = "constructed",  # config.MODES
                dtype: Optional[torch.dtype] = None):
    """cls(*init_args) under `seed`, built on the CPU then moved (KernelBench's way)."""
    torch.manual_seed(seed)
    with random_norm_statistics(mode == "eval"):
        model = cls(*init_args)
    if isinstance(model, torch.nn.Module):
        model = model.to(device)
        if mode == "eval":
            model.eval()
        if dtype is not None:
            model = model.to(dtype)
    return model


def call(model, inputs: list, seed: Optional[int] = None):
    """One forward without autograd, the RNG seeded with `seed` first (Dropout draws alike)."""
    if seed is not None:
        torch.manual_seed(seed)
    with torch.no_grad():
        return model(*inputs)


class RandomDraws:
    """Seeds the RNG, then tells whether the code inside drew from it."""

    def __init__(self, device: torch.device, seed: Optional[int]):
        self.device, self.seed, self.drawn = device, seed, False

    def __enter__(self):
        if self.seed is not None:
            torch.manual_seed(self.seed)
        self.before = rng_states(self.device)
        return self

    def __exit__(self, *exc):
        self.drawn = any(not torch.equal(a, b) for a, b in zip(self.before, rng_states(self.device)))


def rng_states(device: torch.device) -> list:
    """The CPU's and the GPU's generator states."""
    states = [torch.get_rng_state()]
    if device.type == "cuda":
        states.append(torch.cuda.get_rng_state(device))
    return states


@contextlib.contextmanager
def random_norm_statistics(on: bool):
    """While on, norm layers draw their statistics and affine parameters from the RNG as built."""
    if not on:
        yield
        return
    norm_base = torch.nn.modules.batchnorm._NormBase
    plain = norm_base.reset_parameters

    def drawn(module) -> None:
        plain(module)
        with torch.no_grad():
            for name, draw in (("running_mean", normal), ("running_var", uniform), ("weight", uniform),
                               ("bias", normal)):
                tensor = getattr(module, name, None)
                if isinstance(tensor, torch.Tensor) and tensor.is_floating_point():
                    draw(tensor)

    norm_base.reset_parameters = drawn
    try:
        yield
    finally:
        norm_base.reset_parameters = plain


def normal(tensor: torch.Tensor) -> None:
    tensor.normal_(0.0, 0.5)


def uniform(tensor: torch.Tensor) -> None:
    tensor.uniform_(0.5, 1.5)


# A norm layer's running statistics are no state: a forward reads or updates them, never both.
RUNNING_STATISTICS = ("running_mean", "running_var", "num_batches_tracked")


def state_tensors(model) -> dict:
    """{(submodule, attribute): tensor} of the buffers and plain tensors a forward may change."""
    if not isinstance(model, torch.nn.Module):
        return {}
    found = {}
    for name, module in model.named_modules():
        norm = isinstance(module, torch.nn.modules.batchnorm._NormBase)
        for attr, value in [*module._buffers.items(), *vars(module).items()]:
            if (isinstance(value, torch.Tensor) and not isinstance(value, torch.nn.Parameter)
                    and not (norm and attr in RUNNING_STATISTICS)):
                found[(name, attr)] = value
    return found


def state_fingerprint(model) -> dict:
    """Each state tensor's id and version: what a forward's rebinding or write changes."""
    return {key: (id(t), t._version) for key, t in state_tensors(model).items()}


def model_state(model, on_cpu: bool = True) -> dict:
    """A copy of the model's state, on the CPU or where each tensor is."""
    return {key: t.detach().to("cpu" if on_cpu else t.device, copy=True) for key, t in state_tensors(model).items()}


def restore_state(model, state: dict, dtype: Optional[torch.dtype] = None) -> None:
    """Put a copy of `state` back on each attribute's device (floats in `dtype` if given)."""
    for (name, attr), saved in state.items():
        module = model.get_submodule(name)
        current = getattr(module, attr, None)
        value = saved.to(current.device if isinstance(current, torch.Tensor) else saved.device, copy=True)
        if dtype is not None and value.is_floating_point():
            value = value.to(dtype)
        if attr in module._buffers:
            module._buffers[attr] = value
        else:
            setattr(module, attr, value)
