from pathlib import Path

import pytest

from support import FIXTURES, ROOT
from harness.common import discover

SEEDS = ROOT.parent / "shared" / "seeds"
SEED_FILES = {
    "000_10ecf60cb83bb32f.txt": "sigmoid/seed000_shared_memory.py",
    "001_f6f04495364d44c2.txt": "sigmoid/seed001_fast_math.py",
    "002_f8fff41f0c416267.txt": "gemm_sigmoid_scaling_residualadd/seed002_fused_epilogue.py",
    "003_c99034769bc928db.txt": "hardsigmoid/seed003_elementwise.py",
    "004_c5aeffa0e7eb8bb2.txt": "matmul_sigmoid_sum/seed004_fused_sigmoid_sum.py",
}


def test_problem_by_name_and_path():
    assert discover.resolve_problem("sigmoid") == [ROOT / "problems" / "sigmoid.py"]
    path = FIXTURES / "problems" / "fx_relu.py"
    assert discover.resolve_problem(str(path)) == [path]


def test_problem_directory_is_recursive_and_sorted():
    files = discover.resolve_problem(str(FIXTURES / "problems"))
    assert files == sorted(files) and FIXTURES / "problems" / "fx_relu.py" in files


def test_unknown_problem_did_you_mean():
    with pytest.raises(discover.DiscoveryError, match="Unknown problem 'sigmod'. Did you mean 'sigmoid'\\?"):
        discover.resolve_problem("sigmod")


def test_missing_problem_file():
    with pytest.raises(discover.DiscoveryError, match="Problem file not found"):
        discover.resolve_problem("nowhere/x.py")


def test_default_candidates_are_the_solutions_folder():
    pairs = discover.find_pairs(["sigmoid"])
    assert [p.solution for p in pairs] == sorted(p.stem for p in (ROOT / "solutions" / "sigmoid").glob("*.py"))


def test_empty_solutions_folder_is_an_error():
    with pytest.raises(discover.DiscoveryError, match="missing or empty"):
        discover.find_pairs([str(FIXTURES / "problems" / "fx_no_model.py")])


def test_missing_solution_file():
    with pytest.raises(discover.DiscoveryError, match="Solution file not found"):
        discover.find_pairs(["sigmoid"], ["no_such_candidate.py"])


def test_extract_takes_the_last_modelnew_block():
    text = "```python\nclass ModelNew: pass  # first\n```\ntext\n```python\nclass ModelNew: pass  # last\n```\n"
    assert "# last" in discover.extract_code(text)


def test_extract_tolerates_a_fence_with_trailing_prose_and_an_unclosed_block():
    text = "```python\nclass ModelNew:\n    x = 1\n``` Here is why...\n```python\nclass ModelNew:\n    x = 2\n"
    assert "x = 2" in discover.extract_code(text)


def test_extract_without_modelnew_fails():
    with pytest.raises(discover.ExtractError):
        discover.extract_code("```python\nprint('hi')\n```")


@pytest.mark.skipif(not SEEDS.is_dir(), reason="../shared/seeds not beside the checkout")
@pytest.mark.parametrize("seed, candidate", sorted(SEED_FILES.items()))
def test_each_seed_extracts_to_its_committed_candidate(seed, candidate):
    extracted = discover.read_source(SEEDS / seed)
    assert extracted == (ROOT / "solutions" / candidate).read_text()


def test_module_constants_and_set_parsing():
    constants = discover.module_constants((ROOT / "problems" / "sigmoid.py").read_text())
    assert constants == {"batch_size": 4096, "dim": 393216}
    assert discover.module_constants("a = {[1]: 2}\nb = 3\nc = f()\n") == {"a": None, "b": 3, "c": None}
    # KernelBench writes some sizes as arithmetic (level1/98_KLDivLoss: batch_size = 8192 * 2): the --set hint names them
    assert discover.module_constants("b = 8192 * 2\nd = -b // 4 + 2 ** 3\ne = b * 0.5\nf = 2 ** 1000\ng = 1 // 0\n"
                                     "s = (b * 2,)\nt = (b, f)\n") == {
        "b": 16384, "d": -4088, "e": None, "f": None, "g": None, "s": (32768,), "t": None}
    assert discover.parse_set(["batch_size=32", "shape=(1, 2)", "flag=True"]) == {
        "batch_size": 32, "shape": (1, 2), "flag": True}


@pytest.mark.parametrize("item", ["batch_size", "=3", "dim=abc"])
def test_bad_set_items(item):
    with pytest.raises(discover.DiscoveryError, match="Bad --set"):
        discover.parse_set([item])


def test_set_naming_no_constant():
    with pytest.raises(discover.DiscoveryError, match="has no module constant 'dimm'.*batch_size, dim"):
        discover.check_overrides([ROOT / "problems" / "sigmoid.py"], {"dimm": 3})


def test_needs_cuda_from_source():
    assert discover.needs_cuda((ROOT / "solutions" / "sigmoid" / "seed001_fast_math.py").read_text())
    assert discover.needs_cuda((ROOT / "solutions" / "sigmoid" / "cpp_parallel.py").read_text()) is None
    assert discover.cpu_only((ROOT / "solutions" / "sigmoid" / "cpp_parallel.py").read_text())


@pytest.mark.parametrize("marker", ["with_cuda=True", "#include <cublas_v2.h>", "#include <ATen/cuda/CUDAContext.h>",
                                    "at::cuda::getCurrentCUDABlasHandle()"])
def test_a_cpp_extension_that_calls_cuda_from_cpp_is_no_cpu_candidate(marker):
    """C++ sources only, but built with CUDA and calling cuBLAS (a real generation, cudal1-l1-p3): judged on a GPU,
    skipped on the CPU."""
    source = f"from torch.utils.cpp_extension import load_inline\ncpp = {marker!r}\next = load_inline('x', cpp)\n"
    assert discover.cpu_only(source) is None and discover.needs_cuda(source)


def test_importing_load_inline_without_calling_it_builds_nothing():
    """A torch-only candidate that imports load_inline and never calls it (a real generation, pango-l1-p10-agent) is no
    CPU extension: it is judged on a GPU."""
    assert discover.cpu_only("from torch.utils.cpp_extension import load_inline\nimport torch\n") is None


def test_two_candidates_with_one_name_are_an_error(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    for folder in ("a", "b"):
        (tmp_path / folder / "k.py").write_text("class ModelNew: pass\n")
    with pytest.raises(discover.DiscoveryError, match="Two files named 'k'"):
        discover.find_pairs(["sigmoid"], [str(tmp_path / "a" / "k.py"), str(tmp_path / "b" / "k.py")])


@pytest.mark.skipif(not SEEDS.is_dir(), reason="../shared/seeds not beside the checkout")
@pytest.mark.parametrize("seed", sorted(SEED_FILES))
def test_each_seed_answer_is_skipped_on_the_cpu_not_a_compile_error(seed):
    from harness.runner import runner

    problem = ROOT / "problems" / f"{Path(SEED_FILES[seed]).parent}.py"
    pair = discover.Pair(problem.stem, problem, Path(seed).stem, SEEDS / seed)
    result = runner.skip_for_device(pair, discover.read_source(SEEDS / seed), "cpu")
    assert result is not None and result.status == "skipped" and "needs a CUDA GPU" in result.error
