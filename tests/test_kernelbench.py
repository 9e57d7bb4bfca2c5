"""KernelBench-format problems unmodified, generation folders, manifests, --set across problems, --precision,
backends and `run.py list`, on small problems written in KernelBench's own style."""
import json
import subprocess
import sys

import pytest

from support import FAST_CONFIG, FIXTURES, ROOT
from harness.common import discover

KERNELBENCH = FIXTURES / "kernelbench"
GENERATIONS = FIXTURES / "generations"
SMALL = ["--set", "N=64", "--set", "batch_size=4", "--set", "dim=256", "--set", "features=4", "--set", "dim1=8",
         "--set", "dim2=8", "--set", "height=8", "--set", "width=8"]


def run(*args, timeout=900):
    return subprocess.run([sys.executable, "run.py", *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def test_generation_names_find_their_problems():
    pairs = discover.find_pairs([], [str(GENERATIONS)], problems_root=str(KERNELBENCH))
    assert [(p.problem, p.solution) for p in pairs] == [
        ("1_Square_matrix_multiplication_", "level_1_problem_1_sample_0_kernel"),
        ("23_Softmax", "level_1_problem_23_sample_0_kernel"),
        ("40_LayerNorm", "level_1_problem_40_sample_0_kernel"),
        ("6_Conv2d_ReLU", "level_2_problem_6_sample_1_kernel"),  # an LLM response (.md)
    ]


def test_names_manifests_and_bad_names():
    assert discover.resolve_problem("23_Softmax", (KERNELBENCH,)) == [KERNELBENCH / "level1" / "23_Softmax.py"]
    assert discover.resolve_problem("level2/6_Conv2d_ReLU", (KERNELBENCH,)) == [KERNELBENCH / "level2" / "6_Conv2d_ReLU.py"]
    with pytest.raises(discover.DiscoveryError, match="Did you mean '23_Softmax'"):
        discover.resolve_problem("23_Softmx", (KERNELBENCH,))
    pairs = discover.find_pairs([], manifest=str(GENERATIONS / "manifest.csv"), problems_root=str(KERNELBENCH))
    assert [(p.problem, p.solution) for p in pairs] == [("40_LayerNorm", "level_1_problem_40_sample_0_kernel"),
                                                        ("23_Softmax", "level_1_problem_23_sample_0_kernel")]
    with pytest.raises(discover.DiscoveryError, match="not named level_L_problem_P"):
        discover.find_pairs([], [str(FIXTURES / "solutions" / "fx_relu")], problems_root=str(KERNELBENCH))
    paths = discover.resolve_problem(str(KERNELBENCH))
    discover.check_overrides(paths, {"N": 64, "dim1": 8})  # each applies where it is a constant
    with pytest.raises(discover.DiscoveryError, match="no problem has a module constant 'no_such_constant'"):
        discover.check_overrides(paths, {"no_such_constant": 1})


def test_backends_from_source():
    assert discover.backend_of("import triton\n@triton.jit\ndef k(): pass") == "triton"
    assert discover.backend_of("load_inline(name='x', cpp_sources=s, cuda_sources=c)") == "cuda"
    assert discover.backend_of("from torch.utils.cpp_extension import load_inline\nload_inline(cpp_sources=s)") == "cpp"
    assert discover.backend_of("import torch\nclass ModelNew: pass") == "torch"


def test_a_generation_folder_runs_unmodified_on_the_cpu(tmp_path):
    out = tmp_path / "run"
    proc = run("--problems-root", str(KERNELBENCH), "--solution", str(GENERATIONS), "--device", "cpu",
               "--config", str(FAST_CONFIG), "--out", str(out), *SMALL)
    assert proc.returncode == 0, proc.stderr[-2000:]
    results = {r["problem"]: r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())}
    assert set(results) == {"1_Square_matrix_multiplication_", "23_Softmax", "40_LayerNorm", "6_Conv2d_ReLU"}
    for problem, r in results.items():
        assert r["status"] == "correct", (problem, r["error"])
        assert r["backend"] == "torch" and r["precision"] == "fp32"
    board = (out / "leaderboard.csv").read_text()
    assert "model_a" not in board and ",generations,torch,fp32,constructed," in board  # set = the folder's name


def test_precision_casts_both_sides_and_is_part_of_the_key(tmp_path):
    out = tmp_path / "run"
    common = ["--problem", str(KERNELBENCH / "level1" / "23_Softmax.py"), "--solution",
              str(GENERATIONS / "level_1_problem_23_sample_0_kernel.py"), "--device", "cpu",
              "--config", str(FAST_CONFIG), "--out", str(out), "--set", "batch_size=4", "--set", "dim=256"]
    assert run(*common, "--precision", "bf16").returncode == 0
    assert run(*common, "--resume").returncode == 0  # fp32: another key, so judged again
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [(r["precision"], r["status"]) for r in records] == [("bf16", "correct"), ("fp32", "correct")]
    assert records[0]["key"] != records[1]["key"]
    assert records[0]["max_abs_err"] > 100 * records[1]["max_abs_err"]  # computed in bfloat16 on both sides
    assert run(*common, "--precision", "fp8").returncode == 2


def test_list_shows_sizes_flops_and_candidates():
    proc = run("list", "--problems-root", str(KERNELBENCH), "--set", "N=64")
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stdout.split())
    assert "1_Square_matrix_multiplication_ N=64" in text
    assert "inputs float32[64x64], float32[64x64] (0.0 MB), 0.000524 GFLOP" in text  # 2 x 64^3 FLOPs
    assert "40_LayerNorm batch_size=16, features=64, dim1=256, dim2=256" in text
    listing = " ".join(run("list").stdout.split())
    assert "sigmoid batch_size=4096, dim=393216 inputs float32[4096x393216] (6,442.5 MB)" in listing
    assert "seed001_fast_math.py" in listing


def test_a_manifest_entry_sets_its_own_sizes(tmp_path):
    """A `set` column: --set for that entry alone, recorded in its result, and part of its key."""
    generation = GENERATIONS / "level_1_problem_23_sample_0_kernel.py"
    manifest = tmp_path / "pairs.csv"
    manifest.write_text(f"problem,candidate,set\n23_Softmax,{generation},batch_size=4 dim=256\n")
    pairs = discover.find_pairs([], manifest=str(manifest), problems_root=str(KERNELBENCH))
    assert [p.overrides for p in pairs] == [{"batch_size": 4, "dim": 256}]
    out = tmp_path / "run"
    proc = run("--manifest", str(manifest), "--problems-root", str(KERNELBENCH), "--device", "cpu",
               "--config", str(FAST_CONFIG), "--out", str(out), "--set", "dim=128")  # the entry's own wins
    assert proc.returncode == 0, proc.stderr[-2000:]
    (record,) = map(json.loads, (out / "results.jsonl").read_text().splitlines())
    assert record["status"] == "correct" and record["overrides"] == {"batch_size": 4, "dim": 256}, record["error"]
    yaml_manifest = tmp_path / "pairs.yaml"
    yaml_manifest.write_text(f"- {{problem: 23_Softmax, candidate: {generation}, set: {{batch_size: 4, dim: 256}}}}\n")
    pairs = discover.find_pairs([], manifest=str(yaml_manifest), problems_root=str(KERNELBENCH))
    assert [p.overrides for p in pairs] == [{"batch_size": 4, "dim": 256}]
    manifest.write_text(f"problem,candidate,set\n23_Softmax,{generation},no_such_constant=1\n")
    with pytest.raises(discover.DiscoveryError, match="entry 1: .*no_such_constant"):
        discover.find_pairs([], manifest=str(manifest), problems_root=str(KERNELBENCH))
