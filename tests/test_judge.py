"""Judge helpers that need no worker."""
import pytest

from harness.records import first_compiler_error
from harness.judge_timing import plausible_sample
from harness.records import Verdict


def test_worker_timing_samples_must_be_plausible():
    assert plausible_sample([1.5, 1.6]) == (1.5, 1.6)
    for bad in ([0.0, 1.0], [1.0, -1.0], [float("nan"), 1.0], [float("inf"), 1.0], ["fast", 1.0], [1.0], None):
        with pytest.raises(Verdict):
            plausible_sample(bad)


def test_first_compiler_error_names_file_and_line():
    log = "[1/2] c++ ...\n/usr/include/torch/all.h:5:2: error: #error C++17 required\nmore: error: later"
    assert first_compiler_error(log) == ": all.h:5:2: error: #error C++17 required"
    assert first_compiler_error("g++: error: unrecognized option") == ": g++: error: unrecognized option"
    assert first_compiler_error("all fine") == ""
