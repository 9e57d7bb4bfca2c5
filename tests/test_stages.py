"""The stages of a pair and their deadlines (harness/common/stages.py): every stage the judge announces has one."""
import re

from support import FAST_CONFIG, ROOT
from harness.common import stages
from harness.common.config import build_config


def config(**changes) -> dict:
    return build_config(str(FAST_CONFIG), {"device": "cpu"}).replace(**changes)


def test_every_stage_the_judge_announces_has_a_deadline():
    """Top-level phases (no dot) are the stages the judge announces; each needs a deadline in the runner."""
    source = "".join((ROOT / "harness" / "judge" / name).read_text() for name in ("judge.py", "timing.py"))
    announced = {name for name in re.findall(r'self\.phase\("([^"]+)"\)', source) if "." not in name}
    deadlines = stages.stage_deadlines(config())
    assert announced and announced | {"start"} == set(deadlines), (announced, set(deadlines))
    assert all(0 < seconds < float("inf") for seconds in deadlines.values())


def test_the_correctness_deadline_grows_with_the_trials_and_the_request_limit():
    """Per trial: the float64 truth, the reference, the candidate's call and the release, each a request's time."""
    cfg = config(timeout=2.0)
    more = cfg.replace(trials=cfg.correctness.trials + 1)
    assert stages.stage_deadlines(more)["correctness"] - stages.stage_deadlines(cfg)["correctness"] == 4 * 2.0
