"""The judge's timing phase (harness/judge/timing.py), in parts that run without workers."""
import os
from types import SimpleNamespace

import pytest
import torch

from harness.common import procs
from harness.common.config import build_config
from harness.judge.timing import plausible_sample, replaces_every_round, resolution_pct
from harness.common.verdict import Verdict
from support import pair_job


def tamper_check(ref_judged, new_judged, samples_ms=0.1):
    """judge_timing.timer_disagrees on made-up rounds: perf_counter samples, no cache flush."""
    from harness.judge.timing import Requests, timer_disagrees

    samples = [samples_ms] * len(ref_judged)
    return timer_disagrees(Requests(samples, ref_judged, "perf_counter", 1),
                           Requests(samples, new_judged, "perf_counter", 1), cold_cache=False, flush_ms=0.0)


def test_tamper_check_cancels_load_that_both_sides_of_a_round_meet():
    import random

    rng = random.Random(0)
    load = [rng.choice([0.0, 0.0, 0.8, 1.5]) for _ in range(20)]  # bursts on the host, the same for a round
    ref = [0.3 + extra + rng.uniform(0, 0.05) for extra in load]
    new = [0.3 + extra + rng.uniform(0, 0.05) for extra in load]
    new[::2] = [t + 0.7 for t in new[::2]]  # ... and half the rounds slower for the candidate alone
    assert not tamper_check(ref, new)


def test_tamper_check_sees_time_hidden_in_most_rounds():
    ref = [0.3 + 0.01 * (i % 5) for i in range(20)]
    hidden = [t + (0.9 if i % 5 else 0.0) for i, t in enumerate(ref)]  # a forged clock hides 0.9 ms in 80% of rounds
    assert tamper_check(ref, hidden)
    assert not tamper_check(ref, [t + 0.05 for t in ref])  # 0.05 ms: within the slack


def test_tamper_check_refuses_a_method_or_batch_the_timer_never_chooses():
    from harness.judge.timing import Requests, timer_disagrees

    honest = Requests([0.1] * 10, [0.3] * 10, "perf_counter", 1)
    assert timer_disagrees(honest, Requests([0.1] * 10, [0.3] * 10, "stopwatch", 1), False, 0.0)
    assert timer_disagrees(honest, Requests([0.1] * 10, [0.3] * 10, "perf_counter", 10**9), False, 0.0)
    assert not timer_disagrees(honest, honest, False, 0.0)


def test_tamper_check_sees_a_worker_claim_more_time_than_passed():
    from harness.judge.timing import Requests, timer_disagrees

    ref = Requests([0.1] * 10, [0.3] * 10, "perf_counter", 1)
    assert timer_disagrees(ref, Requests([5.0] * 10, [0.3] * 10, "perf_counter", 1), False, 0.0)


def test_a_flush_the_judge_overestimates_for_both_sides_is_no_tampering():
    """Both sides' requests take 2.2 ms for a 0.1 ms call and a flush the workers make in 2.0 ms; the judge, timing a
    flush itself, says 2.4 ms. Each side then seems to claim 0.3 ms more than passed: alike, so no worker forged."""
    from harness.judge.timing import Requests, timer_disagrees

    side = Requests([0.1] * 10, [2.2] * 10, "perf_counter", 1)
    assert not timer_disagrees(side, side, cold_cache=True, flush_ms=2.4)
    assert timer_disagrees(side, Requests([1.5] * 10, [2.2] * 10, "perf_counter", 1), cold_cache=True, flush_ms=2.4)


def test_tamper_check_sees_a_clock_slowed_20x_whose_hidden_time_varies():
    """patches_the_timer on a loaded host: each call really takes 2-8 ms, the worker reports 1/20 of it. The
    hidden time varies call to call by more than its own median's distance from the slack: the spread of the
    median, not of one round, is what may excuse it."""
    import random

    from harness.judge.timing import Requests, timer_disagrees

    rng = random.Random(1)
    real = [rng.choice([2.0, 4.0, 8.0]) + rng.uniform(0, 0.5) for _ in range(14)]
    overhead = [0.3 + rng.choice([0.0, 0.0, 0.0, 1.5]) for _ in range(14)]  # load bursts, the same for both sides
    ref = Requests([0.15] * 14, [0.15 + o for o in overhead], "perf_counter", 1)
    new = Requests([t / 20 for t in real], [t + o for t, o in zip(real, overhead)], "perf_counter", 1)
    assert timer_disagrees(ref, new, cold_cache=False, flush_ms=0.0)


RESOLUTIONS = build_config().replace(timing_resolution_pct=0.5, batched_resolution_pct=1.0, cpu_resolution_pct=2.0,
                                     host_bound_resolution_pct=1.5, host_bound_spread_pct=8.0)


def test_graph_timed_and_cpu_pairs_take_resolutions_of_their_own():
    cfg = RESOLUTIONS
    assert resolution_pct(cfg, "cuda_graph") == resolution_pct(cfg, "batched_events") == 1.0
    assert resolution_pct(cfg, "cuda_event") == 0.5 and resolution_pct(cfg, "perf_counter") == 2.0


class FakeWorker:
    """A worker as PairTiming's rounds see it: its requests logged."""

    def __init__(self, name, requests):
        self.name, self.requests, self.last_request_ms = name, requests, 1.0
        self.sent = []  # what the judge sent it
        self.outbox = SimpleNamespace(copies=self.copies)
        self.proc = SimpleNamespace(pid=os.getpid())

    def copies(self, values):
        self.sent += [x.clone() for x in values]
        return self.sent[-len(values):]

    def request(self, op, timeout, **kwargs):
        self.requests.append((self.name, op))
        return [0.5, 0.6] if op == "time" else {}


def fake_pair(ref, new):
    """A PairTiming on the CPU whose workers are `ref` and `new` (FakeWorkers), its checks and statistics stubbed."""
    import contextlib

    from harness.judge.timing import PairTiming

    pair = PairTiming.__new__(PairTiming)
    pair.cfg = build_config().replace(min_rounds=10, max_rounds=30, max_timing_s=30.0, target_ci_pct=1.0,
                                      cpu_target_ci_pct=3.0, min_timing_s=0.0, timeout=5.0, gpu_probe_ms=0.0,
                                      interference_rounds=3, cold_cache=False, launch_lead_us=0.0, compile_baseline=False)
    pair.device, pair.job = torch.device("cpu"), pair_job()
    pair.ctx = SimpleNamespace(result=SimpleNamespace(flags=[], gpu=None), note=lambda text: None, worker_threads=1)
    pair.report = SimpleNamespace(rounds_discarded=None, ref_wall_ms=[], new_wall_ms=[], flags=[], gpu_wait_ms=None,
                                  timed_outputs_checked=None, judge_wall_ms=None, ref_batch=1, ref_timer="perf_counter")
    pair.ref_sandbox, pair.sandbox = ref, new
    pair.workers = SimpleNamespace(ref_schedule=procs.Schedule.read(os.getpid()))
    pair.reference = SimpleNamespace(timing_seed=lambda: 7, random_reference=False,
                                     make_inputs=lambda seed, wide: [torch.full((4,), float(seed))])
    pair.reference_side = contextlib.nullcontext
    pair.phase = lambda name: contextlib.nullcontext()
    pair.expect_ok, pair.hand_over = (lambda reply: reply), (lambda: None)
    pair.check_timed_output = lambda index: None
    pair.record_timing = lambda ref_ms, new_ms, tight, clocks: None
    return pair


def test_each_sides_window_follows_its_own_copy_of_the_rounds_inputs():
    """Both sides' inputs are copied in right before their own window, never both before the round (which made the
    candidate's inputs always the last written)."""
    requests = []
    pair = fake_pair(FakeWorker("ref", requests), FakeWorker("new", requests))
    pair.time_disagrees = lambda *args: False
    pair.time_rounds()
    timed = [i for i, (_, op) in enumerate(requests) if op == "time"]
    assert len(timed) >= 20
    assert all(requests[i - 1] == (requests[i][0], "refresh_timing_inputs") for i in timed)
    firsts = {requests[i][0] for i in timed[::2]}
    assert firsts == {"ref", "new"}  # the order within a round is still random


def test_on_the_cpu_the_judge_checks_timed_outputs_against_inputs_of_its_own():
    """On the CPU a tensor sent to a worker is a file in /dev/shm that the candidate, the same user, can write: the
    reference's copy must not become the inputs a timed output is checked against (red team: zeroed there, they let a
    constant output pass the checks)."""
    requests = []
    ref = FakeWorker("ref", requests)
    pair = fake_pair(ref, FakeWorker("new", requests))
    pair.time_disagrees = lambda *args: False
    pair.time_rounds()
    assert ref.sent and not any(x is sent for x in pair.round_inputs for sent in ref.sent)


def checked_pair(reply: dict, flags=()):
    """A PairTiming whose candidate's worker sends `reply` for a timed-output check of relu on [-1, 2]."""
    pair = fake_pair(FakeWorker("ref", []), FakeWorker("new", []))
    pair.sandbox.request = lambda op, timeout, **kwargs: reply
    pair.round_inputs = [torch.tensor([-1.0, 2.0])]
    pair.ctx.result.flags = list(flags)  # the trials'
    pair.reference.timed_call = lambda inputs: torch.relu(inputs[0])
    pair.trials = SimpleNamespace(check_outputs=lambda *args: None)
    pair.retried_when_full = lambda make: make()
    return pair


def test_a_timed_call_that_returns_its_input_where_no_trial_did_is_wrong():
    """Written over its own (private, refreshed) timing inputs, a timed output is right and costs no allocation; no
    trial call did that, so the timed calls were not the calls that were checked (red team, CPU: 1.11x before)."""
    reply = {"kind": "tensor", "items": [torch.tensor([0.0, 2.0])], "aliases_input": True}
    with pytest.raises(Verdict) as raised:
        checked_pair(reply).compare_timed_output(0)
    assert "returned its input's own storage" in raised.value.error and "wrong_timed_output" in raised.value.flags
    checked_pair(reply, ["output_aliases_input"]).compare_timed_output(0)  # as in trials


def test_a_pair_bound_by_the_host_takes_the_host_bound_resolution():
    from harness.common.stats import spread_pct

    cfg = RESOLUTIONS
    steady, launch_bound = [1.0, 1.01, 0.99, 1.0, 1.02], [3.0, 3.6, 2.7, 3.1, 4.2, 2.9]
    assert spread_pct(steady) < 8.0 <= spread_pct(launch_bound)
    assert resolution_pct(cfg, "cuda_event", spread_pct(steady)) == 0.5
    assert resolution_pct(cfg, "cuda_event", spread_pct(launch_bound)) == 1.5
    assert resolution_pct(cfg, "cuda_graph", spread_pct(launch_bound)) == 1.5
    assert resolution_pct(cfg, "perf_counter", spread_pct(launch_bound)) == 2.0  # never narrower than the method's


def test_the_cpu_aims_at_a_ci_of_its_own():
    from harness.judge.timing import target_pct

    cfg = build_config().replace(target_ci_pct=1.0, cpu_target_ci_pct=3.0)
    assert target_pct(cfg, "perf_counter") == 3.0
    assert target_pct(cfg, "cuda_event") == target_pct(cfg, "cuda_graph") == 1.0


def test_worker_timing_samples_must_be_plausible():
    assert plausible_sample([1.5, 1.6]) == (1.5, 1.6)
    for bad in ([0.0, 1.0], [1.0, -1.0], [float("nan"), 1.0], [float("inf"), 1.0], ["fast", 1.0], [1.0], None):
        with pytest.raises(Verdict):
            plausible_sample(bad)



def test_a_graph_timed_pair_re_places_every_round_of_every_block_others_only_in_confirmation_blocks():
    """A captured graph holds its inputs and output where they first landed for the process's life (a 2 us ReLU's time
    moved 14-17% with the place on the H200), so its rounds re-place from the first block; plain launches move their
    inputs every round anyway, and are re-placed in confirmation blocks; never on the CPU or with replace_pad_mb 0."""
    cfg, gpu = build_config(), torch.device("cuda", 0)
    assert replaces_every_round(gpu, cfg, 1, "cuda_graph") and replaces_every_round(gpu, cfg, 2, "cuda_graph")
    assert not replaces_every_round(gpu, cfg, 1, "cuda_event") and replaces_every_round(gpu, cfg, 2, "cuda_event")
    assert not replaces_every_round(torch.device("cpu"), cfg, 2, "perf_counter")
    assert not replaces_every_round(gpu, cfg.replace(replace_pad_mb=0), 2, "cuda_graph")


def test_a_gpu_model_measured_to_need_more_resolution_has_its_own_floor():
    """gpu_resolution_pct: the H200's A/A pairs needed 2.0% whatever the method; other GPUs and the CPU keep theirs."""
    cfg = build_config()
    assert resolution_pct(cfg, "cuda_event", 0.0, "NVIDIA H200") == 2.0
    assert resolution_pct(cfg, "cuda_graph", 0.0, "NVIDIA H200 NVL") == 2.0
    assert resolution_pct(cfg, "cuda_event", 0.0, "NVIDIA H100 80GB HBM3") == 0.5
    assert resolution_pct(cfg, "cuda_event", 0.0, None) == 0.5
    assert resolution_pct(cfg.replace(gpu_resolution_pct={"h200": 3.0}), "cuda_graph", 0.0, "NVIDIA H200") == 3.0
    assert resolution_pct(cfg, "perf_counter", 0.0, "NVIDIA H200") == cfg.resolution.cpu_resolution_pct


def test_gpu_resolution_pct_must_map_names_to_percents(tmp_path):
    from harness.common.config import ConfigError

    for bad in ("gpu_resolution_pct: 2.0\n", "gpu_resolution_pct: {H200: 12}\n", "gpu_resolution_pct: {H200: x}\n"):
        path = tmp_path / "c.yaml"
        path.write_text(bad)
        with pytest.raises(ConfigError, match="gpu_resolution_pct|resolution for GPU"):
            build_config(path)
