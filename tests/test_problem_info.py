"""What a problem asks for, sized on the meta device (harness/common/problem_info.py), and the memory shortfall message."""
from pathlib import Path
from types import SimpleNamespace

import torch

from harness.common import problem_info
from harness.common.load import load_module

ROOT = Path(__file__).resolve().parents[1]


def test_the_full_size_sigmoid_is_sized_without_allocating_it():
    path = ROOT / "problems" / "sigmoid.py"
    module = load_module(path.read_text(), str(path), "problem_module", {})
    assert problem_info.sizes(module) == problem_info.Sizes(6 << 30, 6 << 30, 0, (torch.float32,))
    shrunk = load_module(path.read_text(), str(path), "problem_module", {"batch_size": 256})
    assert problem_info.sizes(shrunk).inputs == 256 * 393216 * 4


def test_the_host_shortfall_names_the_figures_and_the_sizes_to_shrink():
    path = ROOT / "problems" / "sigmoid.py"
    size = problem_info.sizes(load_module(path.read_text(), str(path), "problem_module", {}))
    message = problem_info.memory_shortfall(size, path.read_text(), {}, 8 << 30)
    assert message.startswith("needs over 36.0 GiB of memory (inputs 6.0 GiB, output 6.0 GiB, each held 3 times over")
    assert "8.0 GiB available here" in message and "batch_size=4096, dim=393216" in message
    assert problem_info.memory_shortfall(size, path.read_text(), {}, 64 << 30) is None


def test_a_problem_that_cannot_run_on_the_meta_device_is_not_sized_and_runs_as_it_is():
    module = SimpleNamespace(Model=lambda: (_ for _ in ()).throw(RuntimeError("needs data")), get_inputs=lambda: [],
                             get_init_inputs=lambda: [])
    assert problem_info.sizes(module) is None
    assert problem_info.memory_shortfall(None, "", {}, 0) is None


def test_weights_are_sized_in_the_dtype_the_run_casts_them_to():
    path = ROOT / "tests" / "fixtures" / "problems" / "fx_linear.py"
    module = load_module(path.read_text(), str(path), "problem_module", {})
    full, half = problem_info.sizes(module), problem_info.sizes(module, torch.float16)
    assert full.weights > 0 and half.weights * 2 == full.weights and half.inputs * 2 == full.inputs
