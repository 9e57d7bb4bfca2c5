"""The runner's watch over judge processes: each stage held to its deadline, a dead judge a harness_error."""
import json
import re
import sys
import time
from types import SimpleNamespace

from support import FAST_CONFIG, ROOT
from harness import judges
from harness.config import build_config

JOB = {"problem": "p", "solution": "s"}


def fake_judge(tmp_path, script: str) -> judges.Judge:
    """A Judge whose process is `script` (reading the config line and the job as the real one does)."""
    class Fake(judges.Judge):
        command = (sys.executable, "-c", "import sys, json, time\nsys.stdin.readline(); sys.stdin.readline()\n" + script)

    ctx = SimpleNamespace(config={})
    return Fake(ctx, None, warm=False, log_path=tmp_path / "judge.log")


def config(**changes) -> dict:
    return {**build_config(str(FAST_CONFIG), {"device": "cpu"}), **changes}


def test_a_stage_past_its_deadline_stops_the_judge_and_names_the_stage(tmp_path):
    cfg = config(timeout=0.5)  # correctness: (trials + 2) x 3 x timeout = 7.5 s with the fast config
    judge = fake_judge(tmp_path, 'print(json.dumps({"stage": "correctness"}), flush=True); time.sleep(600)')
    stages = []
    started = time.monotonic()
    result = judges.run_judge(JOB, judge, cfg, tmp_path, "p__s", stages.append)
    assert result.status == "timeout" and "stage 'correctness'" in result.error, result.error
    assert time.monotonic() - started < judges.stage_deadlines(cfg)["correctness"] + 10
    assert stages == ["start", "correctness"] and judge.proc.poll() is not None  # the judge was stopped
    assert (tmp_path / "p__s.judge.log").exists()


def test_a_judge_that_dies_is_a_harness_error(tmp_path):
    judge = fake_judge(tmp_path, 'print(json.dumps({"stage": "reference"}), flush=True); sys.exit(7)')
    result = judges.run_judge(JOB, judge, config(), tmp_path, "p__s")
    assert result.status == "harness_error" and "stage 'reference'" in result.error and "exit code 7" in result.error


def test_a_judge_that_says_something_unreadable_is_a_harness_error(tmp_path):
    judge = fake_judge(tmp_path, 'print("not json", flush=True); time.sleep(600)')
    result = judges.run_judge(JOB, judge, config(), tmp_path, "p__s")
    assert result.status == "harness_error" and "unreadable" in result.error


def test_the_result_line_ends_the_pair(tmp_path):
    line = json.dumps({"result": {"problem": "p", "solution": "s", "status": "correct"}})
    judge = fake_judge(tmp_path, f'print(json.dumps({{"stage": "timing"}})); print({line!r}, flush=True)')
    assert judges.run_judge(JOB, judge, config(), tmp_path, "p__s").status == "correct"


def test_every_stage_the_judge_announces_has_a_deadline():
    """Top-level phases (no dot) are the stages the judge announces; each needs a deadline in the runner."""
    source = "".join((ROOT / "harness" / name).read_text() for name in ("judge.py", "judge_timing.py"))
    announced = {name for name in re.findall(r'self\.phase\("([^"]+)"\)', source) if "." not in name}
    deadlines = judges.stage_deadlines(config())
    assert announced and announced | {"start"} == set(deadlines), (announced, set(deadlines))
    assert all(0 < seconds < float("inf") for seconds in deadlines.values())
