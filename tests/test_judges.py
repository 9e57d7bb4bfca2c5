"""The runner's watch over judge processes: each stage held to its deadline, a dead judge a harness_error."""
import json
import sys
import time
from types import SimpleNamespace

from support import FAST_CONFIG, pair_job
from harness.runner import judges
from harness.common import stages
from harness.common.config import Config, build_config



def fake_judge(tmp_path, script: str) -> judges.Judge:
    """A Judge whose process is `script` (reading the config line and the job as the real one does)."""
    class Fake(judges.Judge):
        command = (sys.executable, "-c", "import sys, json, time\nsys.stdin.readline(); sys.stdin.readline()\n" + script)

    ctx = SimpleNamespace(config=config(), device="cpu")
    return Fake(ctx, None, warm=False, log_path=tmp_path / "judge.log")


def config(**changes) -> Config:
    return build_config(str(FAST_CONFIG), {"device": "cpu"}).replace(**changes)


JOB = pair_job(config=config())


def test_a_stage_past_its_deadline_stops_the_judge_and_names_the_stage(tmp_path):
    cfg = config(timeout=0.5, compile_timeout=1)  # correctness: (trials + 2) x 4 x timeout + 1 = 11 s (fast config)
    judge = fake_judge(tmp_path, 'print(json.dumps({"stage": "correctness"}), flush=True); time.sleep(600)')
    seen = []
    started = time.monotonic()
    result = judges.follow_pair(JOB, judge, cfg, tmp_path, "p__s", seen.append)
    assert result.status == "timeout" and "stage 'correctness'" in result.error, result.error
    assert time.monotonic() - started < stages.stage_deadlines(cfg)["correctness"] + 10
    assert seen == ["start", "correctness"] and judge.proc.poll() is not None  # the judge was stopped
    assert (tmp_path / "p__s.judge.log").exists()


def test_a_judge_that_dies_is_a_harness_error(tmp_path):
    judge = fake_judge(tmp_path, 'print(json.dumps({"stage": "reference"}), flush=True); sys.exit(7)')
    result = judges.follow_pair(JOB, judge, config(), tmp_path, "p__s")
    assert result.status == "harness_error" and "stage 'reference'" in result.error and "exit code 7" in result.error


def test_a_judge_killed_from_outside_is_named_a_likely_out_of_memory_kill(tmp_path):
    judge = fake_judge(tmp_path, 'import os, signal\nprint(json.dumps({"stage": "correctness"}), flush=True)\n'
                                 'os.kill(os.getpid(), signal.SIGKILL)')
    result = judges.follow_pair(JOB, judge, config(), tmp_path, "p__s")
    assert result.status == "harness_error" and "exit code -9" in result.error and "out-of-memory" in result.error
    assert "--set" in result.error


def test_a_judge_that_says_something_unreadable_is_a_harness_error(tmp_path):
    judge = fake_judge(tmp_path, 'print("not json", flush=True); time.sleep(600)')
    result = judges.follow_pair(JOB, judge, config(), tmp_path, "p__s")
    assert result.status == "harness_error" and "unreadable" in result.error


def test_a_judge_on_a_gpu_sees_it_alone_and_its_result_names_it_as_the_run_does(tmp_path, monkeypatch):
    """The pair on cuda:1: the judge is started with that GPU alone (its cuda:0), its Result says cuda:1."""
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)

    class Echo(judges.Judge):  # answers with the devices its Start and job named and the GPUs it was shown
        command = (sys.executable, "-c", "import json, os, sys\nstart = json.loads(sys.stdin.readline())\n"
                   "job = json.loads(sys.stdin.readline())\n"
                   "print(json.dumps({'result': {'problem': 'p', 'solution': 's', 'status': 'correct', "
                   "'device': job['device'], 'notes': [start['warm_device'], job['device'], "
                   "os.environ['CUDA_VISIBLE_DEVICES']]}}), flush=True)")

    judge = Echo(SimpleNamespace(config=config(), device="cuda:1"), "cuda:1", warm=True, log_path=tmp_path / "j.log")
    result = judges.follow_pair(pair_job(config=config(), device="cuda:1"), judge, config(), tmp_path, "p__s")
    assert (result.status, result.device, result.notes) == ("correct", "cuda:1", ["cuda:0", "cuda:0", "1"])


def test_judges_get_the_environment_as_it_is_when_they_start(monkeypatch):
    """The run's CPUs (procs.CPUS_ENV) are set after the runner imports judges.py: its judges pin timing by them."""
    from harness.common import procs

    monkeypatch.setenv(procs.CPUS_ENV, "0,1,2,3")
    assert judges.judge_env("cpu")[procs.CPUS_ENV] == "0,1,2,3"


def test_the_result_line_ends_the_pair(tmp_path):
    line = json.dumps({"result": {"problem": "p", "solution": "s", "status": "correct"}})
    judge = fake_judge(tmp_path, f'print(json.dumps({{"stage": "timing"}})); print({line!r}, flush=True)')
    assert judges.follow_pair(JOB, judge, config(), tmp_path, "p__s").status == "correct"


# -- judges started ahead: their CUDA start-ups kept out of a pair's timing ------------------------------------

class Ahead(judges.Judge):
    """A judge started ahead that says it is ready to warm up, logs every line it is sent, and warms up in 0.5 s."""
    command = (sys.executable, "-c", "\n".join([
        "import sys, json, time",
        "sys.stdin.readline()",
        'print(json.dumps({"ready_to_warm": True}), flush=True)',
        "for line in sys.stdin:",
        "    print(json.dumps({'got': line.strip()}), file=sys.stderr, flush=True)",
        "    if json.loads(line or '{}').get('warm'):",
        "        time.sleep(0.5)",
        '        print(json.dumps({"warmed": True}), flush=True)',
    ]))


def lines_sent(judge) -> list:
    """What the fake judge got on its stdin after its config line (from its log)."""
    return [json.loads(line)["got"] for line in judge.log_path.read_text().splitlines() if line.startswith('{"got"')]


def starter_of(tmp_path, monkeypatch, ahead: int = 1, pairs=None) -> judges.JudgeStarter:
    monkeypatch.setattr(judges, "Judge", Ahead)
    return judges.JudgeStarter(SimpleNamespace(config=config(), run_dir=tmp_path, device="cuda:0"), ("cuda:0",), ahead=ahead,
                               pairs=pairs)


def wait_for(condition, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_a_judge_ahead_warms_up_at_once_when_no_pair_is_timed(tmp_path, monkeypatch):
    starter = starter_of(tmp_path, monkeypatch)
    judge = starter.ready["cuda:0"][0]
    assert judge.warmed.wait(30)
    assert lines_sent(judge) == ['{"warm": true}']
    starter.close()


def test_a_judge_ahead_waits_out_a_timed_pair_and_the_pair_waits_for_warm_ups_under_way(tmp_path, monkeypatch):
    starter = starter_of(tmp_path, monkeypatch, ahead=0)
    starter.ahead = 1
    starter.holding.add("cuda:0")  # a pair is being timed on the GPU
    held = starter.start("cuda:0")
    wait_for(lambda: starter.held.get("cuda:0") == [held])  # it asked, and was held
    time.sleep(0.3)
    assert lines_sent(held) == [] and not held.warmed.is_set()
    starter.release_warm_ups("cuda:0")  # the pair's timing is over
    assert "cuda:0" not in starter.holding
    waited = starter.hold_warm_ups("cuda:0")  # the next pair's timing waits for that warm-up
    assert held.warmed.is_set() and 0.1 < waited < 30, waited
    assert lines_sent(held) == ['{"warm": true}']
    held.dismiss()


def test_a_judge_taken_for_a_pair_before_it_warmed_up_is_never_told_to(tmp_path, monkeypatch):
    starter = starter_of(tmp_path, monkeypatch, ahead=0)
    starter.ahead = 1
    starter.holding.add("cuda:0")
    judge = starter.start("cuda:0")
    wait_for(lambda: starter.held.get("cuda:0") == [judge])
    judge.taken = True  # what take() does
    starter.release_warm_ups("cuda:0")
    judge.write('{"problem": "p"}\n', last=True)
    assert judge.proc.wait(30) == 0
    assert lines_sent(judge) == ['{"problem": "p"}']


def test_no_more_judges_are_started_than_the_run_has_pairs(tmp_path, monkeypatch):
    """A one-pair run starts one judge: a judge ahead for no pair would only hold three CUDA contexts."""
    monkeypatch.setattr(judges, "Judge", Ahead)
    starter = judges.JudgeStarter(SimpleNamespace(config=config(), run_dir=tmp_path, device="cuda:0"), ("cuda:0",),
                                  ahead=2, pairs=1)
    assert len(starter.ready["cuda:0"]) == 1
    taken = starter.take("cuda:0")
    assert starter.ready["cuda:0"] == []
    taken.dismiss()
    starter.close()


def test_starters_of_two_devices_name_their_judges_logs_apart(tmp_path, monkeypatch):
    """A service has a starter per device and one log folder: a shared name lost a pair's log and its Result."""
    monkeypatch.setattr(judges, "Judge", Ahead)
    starters = [judges.JudgeStarter(SimpleNamespace(config=config(), run_dir=tmp_path, device=device), (device,),
                                    ahead=1, pairs=1) for device in ("cuda:0", "cuda:1")]
    taken = [starter.take(device) for starter, device in zip(starters, ("cuda:0", "cuda:1"))]
    assert taken[0].log_path != taken[1].log_path
    for judge, starter in zip(taken, starters):
        judge.dismiss()
        starter.close()


def test_a_pair_holds_start_ups_until_its_footprint_leaves_room(tmp_path, monkeypatch):
    starter = starter_of(tmp_path, monkeypatch, ahead=1)
    first = starter.ready["cuda:0"][0]
    starter.left = 2  # two pairs: the first's judge is replaced by one ahead
    assert starter.take("cuda:0") is first
    (ahead,) = starter.ready["cuda:0"]
    wait_for(lambda: starter.held.get("cuda:0") == [ahead])  # the pair has not said what it needs
    assert not ahead.warm_sent
    starter.release_warm_ups("cuda:0")  # a Footprint that leaves room
    assert ahead.warmed.wait(30)
    first.dismiss()
    starter.close()


def test_a_pair_that_crowds_the_gpu_has_the_judges_ahead_that_started_cuda_replaced(tmp_path, monkeypatch):
    starter = starter_of(tmp_path, monkeypatch, ahead=2, pairs=2)  # two pairs, two judges: both warm up at once
    first, second = starter.ready["cuda:0"]
    assert first.warmed.wait(30) and second.warmed.wait(30)
    assert starter.take("cuda:0") is first and starter.ready["cuda:0"] == [second]
    starter.make_room("cuda:0")  # the first pair's Footprint crowds the GPU
    second.proc.wait(30)  # let go, and its contexts with it
    (replacement,) = starter.ready["cuda:0"]
    assert replacement is not second
    wait_for(lambda: starter.held.get("cuda:0") == [replacement])  # it waits for the pair's end
    time.sleep(0.2)
    assert not replacement.warm_sent and not replacement.warmed.is_set()
    starter.release_warm_ups("cuda:0")
    assert replacement.warmed.wait(30)
    first.dismiss()
    starter.close()


class Starter:
    """Records what a followed pair asks of the judge starter."""
    ahead = 1

    def __init__(self):
        self.calls = []

    def __getattr__(self, name):
        return lambda *args, **kwargs: self.calls.append(name) or 0.0


def test_a_followed_pair_acts_on_its_footprint(tmp_path):
    for crowded, expected in ((True, ["make_room", "hold_warm_ups", "release_warm_ups"]),
                              (False, ["release_warm_ups", "hold_warm_ups", "release_warm_ups"])):
        footprint = json.dumps({"footprint": {"need_mb": 45056, "device_mb": 81559, "crowded": crowded}})
        result = json.dumps({"result": {"problem": "p", "solution": "s", "status": "correct"}})
        judge = fake_judge(tmp_path, f"print({footprint!r}, flush=True)\n"
                                     'print(json.dumps({"stage": "timing_setup"}), flush=True)\n'
                                     'sys.stdin.readline()\n'  # go
                                     'print(json.dumps({"stage": "finish"}), flush=True)\n'
                                     f"print({result!r}, flush=True)")
        judge.device, starter = "cuda:0", Starter()
        assert judges.follow_pair(JOB, judge, config(), tmp_path, "p__s", starter=starter).status == "correct"
        assert starter.calls == expected, (crowded, starter.calls)


def test_openmp_threads_sleep_on_gpu_runs_only_and_the_users_setting_wins(monkeypatch):
    assert judges.judge_env("cuda:0")["OMP_WAIT_POLICY"] == "PASSIVE"
    assert "OMP_WAIT_POLICY" not in judges.judge_env("cpu") or "OMP_WAIT_POLICY" in judges.USER_ENV
    monkeypatch.setattr(judges, "USER_ENV", {"OMP_WAIT_POLICY": "ACTIVE"})
    assert judges.judge_env("cuda:0")["OMP_WAIT_POLICY"] == "ACTIVE"
    assert judges.judge_env("cpu")["GLIBC_TUNABLES"] == "glibc.malloc.tcache_count=0"


def test_a_confirmation_blocks_judge_leaves_the_pairs_to_come_their_judges_ahead(tmp_path, monkeypatch):
    """A claim confirmed on fresh workers takes judges of its own (harness.runner.blocks): the run still has as many pairs to
    come, so the judge ahead it took is replaced, and the next pair finds one waiting."""
    starter = starter_of(tmp_path, monkeypatch, ahead=1, pairs=2)
    first = starter.take("cuda:0")
    (ahead,) = starter.ready["cuda:0"]
    block = starter.take("cuda:0", confirming=True)
    assert block is ahead and starter.left == 1 and len(starter.ready["cuda:0"]) == 1  # replaced for the next pair
    for judge in (first, block, *starter.ready["cuda:0"]):
        judge.dismiss()
    starter.close()
