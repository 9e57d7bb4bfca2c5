"""The runner <-> judge wire (harness/common/protocol.py): each message as its line and back, and lines that are none."""
import json

import pytest

from harness.common import protocol as p
from harness.common.config import build_config
from support import pair_job

CONFIG = build_config(None, {"trials": 3})


@pytest.mark.parametrize("message", [
    p.Start(CONFIG, "cuda:0", 12.5), p.Start(build_config(), None, 1.0), p.Warm(), p.Go(), p.End(),
    p.Job(pair_job(problem="sigmoid", solution="a", secret=7, config=CONFIG), 3.25, True),
    p.Job(pair_job(problem="sigmoid", config=CONFIG, overrides={"dim": 16}, flops=12, block=2), 3.25, False),
])
def test_what_the_runner_sends_the_judge_reads(message):
    line = p.encode(message)
    assert line.endswith("\n") and line.count("\n") == 1
    assert p.from_runner(line) == message


@pytest.mark.parametrize("message", [
    p.ReadyToWarm(), p.Warmed(), p.Workers([11, 12]), p.Stage("correctness"), p.Outcome({"status": "correct"}),
    p.Footprint(45056, 81559, True), p.Footprint(12, 81559, False),
])
def test_what_the_judge_sends_the_runner_reads(message):
    assert p.from_judge(p.encode(message)) == message


def test_the_wire_is_what_it_was():
    """Byte for byte the lines of before the module (a judge of one version and a runner of another still agree)."""
    assert p.encode(p.Warm()) == '{"warm": true}\n' and p.encode(p.Go()) == "go\n" and p.encode(p.End()) == "\n"
    assert p.encode(p.Stage("timing")) == '{"stage": "timing"}\n'
    config = json.dumps(CONFIG.to_dict())
    assert p.encode(p.Job(pair_job(problem="x", config=CONFIG), 1.5, False)) == (  # the runner's dict's key order
        '{"problem": "x", "problem_path": "p.py", "solution": "s", "solution_path": "s.py", "solution_source": "", '
        '"overrides": {}, "device": "cpu", "config": ' + config + ', "secret": 7, "log_path": "/dev/null", '
        '"build_dir": "", "peaks_dir": "", "min_speedup": null, "flops": null, "tf32_flops": null, "block": 1, '
        '"sent_at": 1.5, "gated": false}\n')
    assert p.encode(p.Start(CONFIG, None, 2.0)) == '{"config": ' + config + ', "warm_device": null, "started_at": 2.0}\n'


def test_lines_that_are_no_message():
    assert p.from_judge('{"something": "else"}') is None  # ignored, as before
    assert p.from_judge('{"workers": "not a list"}') is None
    with pytest.raises(ValueError):
        p.from_judge("Traceback (most recent call last):")
    with pytest.raises(ValueError):
        p.from_judge("[1, 2]")
    with pytest.raises(ValueError):
        p.from_runner('{"what": 1}')
