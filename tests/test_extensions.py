"""A candidate's extension builds as the judge and the build stage see them (harness/common/extensions.py)."""
from harness.common.extensions import build_failure, candidate_build_env, first_compiler_error


def test_first_compiler_error_names_file_and_line():
    log = "[1/2] c++ ...\n/usr/include/torch/all.h:5:2: error: #error C++17 required\nmore: error: later"
    assert first_compiler_error(log) == ": all.h:5:2: error: #error C++17 required"
    assert first_compiler_error("g++: error: unrecognized option") == ": g++: error: unrecognized option"
    assert first_compiler_error("all fine") == ""
    nvcc = "FAILED: cuda.cuda.o\n/tmp/x/cuda.cu(25): error: identifier \"y\" is undefined\n1 error detected"
    assert first_compiler_error(nvcc) == ': cuda.cu(25): error: identifier "y" is undefined'


def test_a_failed_build_is_cut_to_its_gist_and_anything_else_is_none():
    message = "Error building extension 'fx_ext': [1/2] c++ ... main.cpp:4:52: error: no member named 'x' ... (2000 lines)"
    assert build_failure(message, "") == "Error building extension 'fx_ext': main.cpp:4:52: error: no member named 'x' ... (2000 lines)"
    assert build_failure("Error building extension 'e'", "in the log: k.cu:9: error: bad") == \
        "Error building extension 'e': k.cu:9: error: bad"
    assert build_failure("RuntimeError: something else", "k.cu:9: error: bad") is None


def test_a_candidates_builds_and_triton_cache_go_to_its_own_folder():
    env = candidate_build_env("/cache/abc")
    assert env == {"TORCH_EXTENSIONS_DIR": "/cache/abc", "TRITON_CACHE_DIR": "/cache/abc/triton"}
