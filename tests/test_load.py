from pathlib import Path

from harness.common.load import load_module

SOURCE = "batch_size = 4096\nshape = (1, 2)\nname = 'x'\ndef size():\n    return batch_size\n"


def test_overrides_replace_top_level_constants():
    module = load_module(SOURCE, Path("p.py"), "loaded_for_test", {"batch_size": 8, "shape": (3, 4)})
    assert module.batch_size == 8 and module.size() == 8 and module.shape == (3, 4) and module.name == "x"


def test_a_tuple_that_crossed_json_as_a_list_is_a_tuple_again():
    """--set shape=(3,4) reaches the judge through its JSON job, as [3, 4]."""
    module = load_module(SOURCE, Path("p.py"), "loaded_for_test3", {"shape": [3, 4]})
    assert module.shape == (3, 4)


def test_without_overrides_the_source_is_unchanged():
    module = load_module(SOURCE, Path("p.py"), "loaded_for_test2")
    assert module.size() == 4096


def test_a_failing_module_is_not_left_registered():
    import sys

    try:
        load_module("raise ValueError('no')", Path("bad.py"), "loaded_bad")
    except ValueError:
        pass
    assert "loaded_bad" not in sys.modules


def test_functions_have_source_even_when_the_path_does_not_lead_to_it(tmp_path, monkeypatch):
    import inspect

    # a relative path seen from another folder, or a .md answer the code was extracted from: Triton's @jit
    # calls inspect on its kernels, which must then still find their source
    monkeypatch.chdir(tmp_path)
    for path in (Path("solutions/sigmoid/relative.py"), tmp_path / "answer.md"):
        module = load_module(SOURCE, path, f"loaded_source_{path.suffix[1:]}")
        assert inspect.getsource(module.size) == "def size():\n    return batch_size\n"


def test_the_problem_file_runs_first_in_the_candidates_namespace():
    """KernelBench's eval execs the problem and the candidate into one dict: the candidate sees the problem's imports
    and constants (overridden as the problem's are), and its own definitions win."""
    problem = ("import math\nbatch_size = 4096\nname = 'problem'\n", Path("problem.py"))
    module = load_module("name = 'candidate'\ndef size():\n    return math.floor(batch_size / 2)\n", Path("c.py"),
                         "loaded_with_problem", {"batch_size": 8}, problem)
    assert module.size() == 4 and module.name == "candidate" and module.__file__ == "c.py"
