"""bench/kernelbench_aa.py's --small sizing: shrinking to a target, and sizes kept for a resumed sweep."""
import json
import sys

import pytest

from support import ROOT

sys.path.insert(0, str(ROOT / "bench"))
import kernelbench_aa  # noqa: E402

PROBLEM = '''import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return a @ b

N = 2048
shape = (64, 512)
kernel_size = 3

def get_inputs():
    return [torch.rand(N, N), torch.rand(N, N)]

def get_init_inputs():
    return []
'''


def test_shrunk_halves_the_largest_size_until_the_cost_is_under_the_target():
    sizes = {"N": 2048, "shape": (64, 512)}
    cost = lambda problem, o: o.get("N", 2048) * max(o.get("shape", (64, 512))) / 1e3  # noqa: E731
    overrides, after = kernelbench_aa.shrunk(None, sizes, {}, cost, 100.0)
    assert overrides == {"N": 256, "shape": (64, 256)} and after == pytest.approx(65.536)


def test_shrunk_keeps_a_size_the_model_refuses_and_stops_when_nothing_is_left():
    sizes = {"N": 2048, "M": 64}
    def refuses_under_1024(problem, o):
        return None if o.get("N", 2048) < 1024 else o.get("N", 2048) * o.get("M", 64)
    overrides, after = kernelbench_aa.shrunk(None, sizes, {}, refuses_under_1024, 1.0)
    assert overrides == {"N": 1024, "M": 16} and after == 1024 * 16  # N kept at 1024; M down to the floor
    assert kernelbench_aa.shrunk(None, sizes, {}, lambda p, o: None, 1.0) == ({}, None)  # no cost: as they came


def test_small_sizes_are_chosen_once_and_kept_for_a_resumed_sweep(tmp_path, monkeypatch):
    problem = tmp_path / "level1" / "1_Square.py"
    problem.parent.mkdir()
    problem.write_text(PROBLEM)
    out = tmp_path / "bench"
    manifest, estimates = kernelbench_aa.write_pairs([problem], out, small=True)
    kept = json.loads((out / "sizes.json").read_text())["level1/1_Square"]
    assert kept["set"]["N"] < 2048 and kept["estimate_us"] <= kernelbench_aa.SMALL_TARGET_US
    assert "kernel_size" not in kept["set"]  # not a size
    first = manifest.read_text()

    def chosen_again(problem):
        raise AssertionError("sizes chosen again on resume")
    monkeypatch.setattr(kernelbench_aa, "small_sizes", chosen_again)
    manifest, estimates = kernelbench_aa.write_pairs([problem], out, small=True)
    assert manifest.read_text() == first and estimates["1_Square"]["set"] == kept["set"]


def test_a_kept_tuple_size_comes_back_a_tuple(tmp_path):
    problem = tmp_path / "level1" / "2_Shape.py"
    problem.parent.mkdir()
    problem.write_text(PROBLEM)
    out = tmp_path / "bench"
    out.mkdir()
    (out / "sizes.json").write_text(json.dumps({"level1/2_Shape": {"set": {"shape": [64, 256]}, "estimate_us": 20.0,
                                                                      "measured_us": None}}))
    manifest, _ = kernelbench_aa.write_pairs([problem], out, small=True)
    assert manifest.read_text().splitlines()[1].endswith('"shape=(64,256)"')


def test_a_lower_floor_lets_sizes_under_twice_the_default_shrink():
    cost = lambda problem, o: o.get("C", 24) * 1.0  # noqa: E731
    assert kernelbench_aa.shrunk(None, {"C": 24}, {}, cost, 10.0) == ({}, 24.0)  # under 2 x SIZE_FLOOR: kept
    assert kernelbench_aa.shrunk(None, {"C": 24}, {}, cost, 10.0, floor=4) == ({"C": 6}, 6.0)
