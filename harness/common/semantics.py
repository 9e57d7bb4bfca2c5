"""KernelBench's reference semantics, in one home for the judge, both workers and the lint: how a model is built
(the same seed before each construction, on the default device, then moved; the mode it was constructed in) and how
a call is made (no_grad, the same RNG seed before each side's call). README: "Reference semantics"."""
from __future__ import annotations

import contextlib
from typing import Optional

import torch


def build_model(cls, init_args: list, seed: int, device: torch.device, mode: str = "constructed",  # config.MODES
                dtype: Optional[torch.dtype] = None):
    """cls(*init_args) under `seed`, built on the default device (the CPU) and then moved, as KernelBench builds
    both models: the candidate keeps whatever its own __init__ made (it may transform its weights there)."""
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
    """One forward call without autograd; with a seed, the RNG is seeded first, so that a model that draws random
    numbers (Dropout in training mode) draws the same ones on both sides."""
    if seed is not None:
        torch.manual_seed(seed)
    with torch.no_grad():
        return model(*inputs)


class RandomDraws:
    """Seeds the RNG, then tells whether the code run inside drew random numbers (the generators' states moved)."""

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
    """The CPU generator's state, and the device's when it is a GPU."""
    states = [torch.get_rng_state()]
    if device.type == "cuda":
        states.append(torch.cuda.get_rng_state(device))
    return states


@contextlib.contextmanager
def random_norm_statistics(on: bool):
    """While on, every BatchNorm (and InstanceNorm) constructed draws its running statistics and affine parameters
    from the global RNG, in construction order, so that both sides draw the same ones: mean and bias ~ N(0, 0.5^2),
    variance and weight ~ U(0.5, 1.5)."""
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

    norm_base.reset_parameters = drawn  # type: ignore[method-assign, assignment]  # patched for the construction
    try:
        yield
    finally:
        norm_base.reset_parameters = plain  # type: ignore[method-assign]


def normal(tensor: torch.Tensor) -> None:
    tensor.normal_(0.0, 0.5)


def uniform(tensor: torch.Tensor) -> None:
    tensor.uniform_(0.5, 1.5)


# Module state that a forward may change and a later call read (KernelBench v0's VanillaRNN advances `self.hidden`):
# every buffer and plain tensor attribute of each submodule, never parameters, and never a norm layer's running
# statistics (a training-mode forward updates them and does not read them; eval mode reads them and does not update).
RUNNING_STATISTICS = ("running_mean", "running_var", "num_batches_tracked")


def state_tensors(model) -> dict:
    """{(submodule name, attribute): tensor} of the state a forward may change (none for a model that is no
    nn.Module)."""
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
    """What changes when a forward rebinds or writes into its state: each tensor's identity and version counter."""
    return {key: (id(t), t._version) for key, t in state_tensors(model).items()}


def model_state(model, on_cpu: bool = True) -> dict:
    """A copy of the model's state (state_tensors), on the CPU (else where each tensor is)."""
    return {key: t.detach().to("cpu" if on_cpu else t.device, copy=True) for key, t in state_tensors(model).items()}


def restore_state(model, state: dict, dtype: Optional[torch.dtype] = None) -> None:
    """Put a copy of `state` back into the model, each tensor on the device (and in `dtype`, for floating ones, when
    given: the float64 truth's model) of the attribute it replaces; attributes the model no longer has are set again."""
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
