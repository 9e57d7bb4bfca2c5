"""cuda_graph (harness/common/methods/cuda_graph.py) on the CPU with stand-in graphs: a replay must reproduce a call on
other inputs, a late window is timed again, a sample is A B B A of replays (the captures themselves: test_gpu.py)."""
from types import SimpleNamespace

import torch

from harness.common.methods import cuda_graph
from harness.worker import timing


def test_a_graph_replay_right_only_on_the_capture_inputs_is_refused():
    """A kernel launched on the legacy default stream runs outside a CUDA graph's capture; captured work that reads
    what it wrote replays the capture's result (kbl-l3-p2-o1, a real generation). Replays are checked on other inputs
    too, which are then given back as they were. (A stand-in for the graph: the capture itself is in test_gpu.py.)"""
    timer = timing.Timer(torch.device("cpu"), cold_cache=False)
    x = torch.rand(64)
    original = x.clone()
    outside_the_capture = torch.sigmoid(x)  # computed once, while the graph was captured

    class StaleReplay:
        def replay(self):
            timer.last_output.copy_(outside_the_capture * 2)

    timer.fn, timer.last_output, timer.graphs = (lambda: torch.sigmoid(x) * 2), torch.empty(64), (StaleReplay(), None)
    assert cuda_graph.replay_reproduces_call(timer)  # on the capture's own inputs the replay looks right
    timer.inputs = [x]
    assert not cuda_graph.replay_reproduces_call(timer) and torch.equal(x, original)

    class HonestReplay:
        def replay(self):
            timer.last_output.copy_(torch.sigmoid(x) * 2)

    timer.graphs = (HonestReplay(), None)
    assert cuda_graph.replay_reproduces_call(timer) and torch.equal(x, original)


def test_inputs_the_graph_check_cannot_halve_are_left_as_they_were():
    """Only float16/bfloat16/float32/float64 inputs are halved (float8 has no multiply), and every input halved is
    doubled back, also when the check raises."""
    timer = timing.Timer(torch.device("cpu"), cold_cache=False)
    x, labels = torch.rand(8), torch.arange(8)
    timer.prepare(lambda: x * 2, warmup=0, inputs=[x, labels, torch.zeros(2, dtype=torch.float8_e4m3fn)])
    assert [t.dtype for t in timer.inputs] == [torch.float32]
    original = x.clone()
    calls = []

    def fails_on_other_inputs():
        calls.append(None)
        if len(calls) > 1:
            raise RuntimeError("no")
        return x * 2

    class Replay:
        def replay(self):
            timer.last_output.copy_(x * 2)

    timer.fn, timer.last_output, timer.graphs = fails_on_other_inputs, torch.empty(8), (Replay(), None)
    try:
        cuda_graph.replay_reproduces_call(timer)
    except RuntimeError:
        pass
    assert torch.equal(x, original) and len(calls) == 2


def test_a_graph_window_whose_launch_outlasted_its_lead_is_timed_again(monkeypatch):
    """Late launches are retried at most LATE_LAUNCH_RETRIES times, each late window's output copy dropped, so the
    judge draws among the copies of the windows kept."""
    timer = timing.Timer(torch.device("cpu"), cold_cache=False)
    late = [True, True, False]  # the first two windows late
    timed = []

    def window(body, then=None):
        timer.launch_late = late[len(timed)] if len(timed) < len(late) else True
        timed.append(len(timed))
        if then is not None:
            then()
        return float(len(timed)), float(len(timed))

    monkeypatch.setattr(timer, "window", window)
    timer.last_output = torch.ones(2)
    assert cuda_graph.graph_window(timer, lambda: None, timer.snapshot_output) == (3.0, 3.0) and len(timer.snapshots) == 1
    timed.clear()
    late = []  # every window late: the last retry is kept
    assert cuda_graph.graph_window(timer, lambda: None, None) == (4.0, 4.0) and len(timed) == cuda_graph.LATE_LAUNCH_RETRIES + 1


def test_a_graph_timed_sample_retimes_its_late_windows_and_keeps_two_output_copies(monkeypatch):
    """Timer.sample on a graph (a stand-in: the capture is in test_gpu.py): calls, flushes, flushes, calls, each window
    late once is timed again; the sample is their difference per call, with one output copy per calls window."""
    timer = timing.Timer(torch.device("cpu"), cold_cache=True)
    replays = []
    calls, flushes = (SimpleNamespace(replay=lambda kind=kind: replays.append(kind)) for kind in ("calls", "flushes"))
    timer.method, timer.batch, timer.graphs, timer.last_output = "cuda_graph", 2, (calls, flushes), torch.ones(2)
    timed = []

    def window(body, then=None):
        timer.launch_late = len(timed) % 2 == 0  # every first try late, every second on time
        timed.append(body)
        body()
        if then is not None:
            then()
        return (3.0 if body == calls.replay else 1.0), 0.0

    monkeypatch.setattr(timer, "window", window)
    ms, _ = timer.sample()
    assert ms == (3.0 + 3.0 - 1.0 - 1.0) / (2 * 2) and len(timed) == 8
    assert replays == ["flushes"] + [k for k in ("calls", "flushes", "flushes", "calls") for _ in range(2)]
    assert len(timer.snapshots) == 2

