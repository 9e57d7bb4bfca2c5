"""The CUDA path, on a real GPU: CUDA IPC between judge and worker, CUDA events, seed candidates."""
import json
import statistics
import subprocess
import sys

import pytest
import torch

from harness.common import handover
from support import FAST_CONFIG, FIXTURES, ROOT, service_results

pytestmark = pytest.mark.gpu
RELU = FIXTURES / "solutions" / "fx_relu"
ADVERSARIAL = ROOT / "tests" / "adversarial" / "cpu"


def run(args, out_dir, timeout=1200):
    proc = subprocess.run([sys.executable, "run.py", *args, "--out", str(out_dir)], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr
    return {r["solution"]: r for r in map(json.loads, (out_dir / "results.jsonl").read_text().splitlines())}


def test_fixtures_on_cuda(tmp_path):
    names = ["correct_torch", "mutates_input", "returns_subclass", "segfault", "wrong_shape", "infinite_loop"]
    args = ["--problem", str(FIXTURES / "problems" / "fx_relu.py"), "--device", "cuda", "--config", str(FAST_CONFIG)]
    for name in names:
        folder = RELU if name == "correct_torch" else ADVERSARIAL
        args += ["--solution", str(folder / f"{name}.py")]
    results = run(args, tmp_path)
    assert results["correct_torch"]["status"] == "correct"
    assert results["correct_torch"]["new_timer"] in ("cuda_graph", "cuda_event") and results["correct_torch"]["gpu"]
    assert results["correct_torch"]["clocks"]["sm_mhz"][1] > 0 and results["correct_torch"]["sol_pct"] > 0
    assert results["mutates_input"]["status"] == "incorrect"
    assert "output_aliases_input" in results["mutates_input"]["flags"]
    assert results["returns_subclass"]["status"] == "incorrect"
    assert results["segfault"]["status"] == "crash"
    assert results["wrong_shape"]["status"] == "incorrect"
    assert results["infinite_loop"]["status"] == "timeout"


def test_sigmoid_seeds_small_on_cuda_without_a_device_flag(tmp_path):
    """As the README types it (no --device: auto picks cuda:0), at a small size."""
    results = run(["--problem", "sigmoid", "--set", "batch_size=64", "--set", "dim=4096"], tmp_path)
    assert {r["device"] for r in results.values()} == {"cuda:0"}
    assert "harness_error" not in {r["status"] for r in results.values()}
    assert results["seed000_shared_memory"]["status"] == "compile_error"
    assert results["seed001_fast_math"]["status"] == "correct"
    assert results["seed001_fast_math"]["speedup_ci_low"] <= results["seed001_fast_math"]["speedup"]
    assert results["cpp_parallel"]["status"] == "skipped"
    assert results["triton_sigmoid"]["status"] == "correct" and results["triton_sigmoid"]["backend"] == "triton"


def test_triton_candidate_in_float16(tmp_path):
    results = run(["--problem", "sigmoid", "--solution", "solutions/sigmoid/triton_sigmoid.py", "--device", "cuda",
                   "--precision", "fp16", "--set", "batch_size=64", "--set", "dim=4096"], tmp_path)
    triton_result = results["triton_sigmoid"]
    assert triton_result["status"] == "correct", triton_result["error"]
    assert (triton_result["backend"], triton_result["precision"]) == ("triton", "fp16")


def test_triton_candidate_in_an_llm_answer(tmp_path):
    answer = tmp_path / "triton_answer.md"  # Triton's @jit must find its kernel's source in the extracted code
    answer.write_text("Here is a Triton kernel:\n\n```python\n" + (ROOT / "solutions/sigmoid/triton_sigmoid.py").read_text()
                      + "```\n")
    results = run(["--problem", "sigmoid", "--solution", str(answer), "--device", "cuda", "--config", str(FAST_CONFIG),
                   "--set", "batch_size=64", "--set", "dim=4096"], tmp_path / "out")
    assert results["triton_answer"]["status"] == "correct", results["triton_answer"]["error"]
    assert results["triton_answer"]["backend"] == "triton"


def test_cuda_timer_sees_a_sleep_kernel():
    from harness.worker import timing

    timer = timing.Timer(torch.device("cuda"), cold_cache=True)
    assert timer.flush_buffer.numel() >= 128 << 20
    assert timer.prepare(lambda: torch.cuda._sleep(10_000_000), warmup=2) == "cuda_event"
    ms, wall = timer.sample()
    assert 1.0 < ms and wall >= ms * 0.9


def test_a_long_call_is_batched_when_told():
    """The other side's call is short: this one is batched too, however long it measured (same_method_both_sides)."""
    from harness.worker import timing

    x = torch.rand(1 << 20, device="cuda")
    timer = timing.Timer(torch.device("cuda"), cold_cache=True)
    assert timer.prepare(lambda: torch.cuda._sleep(1_000_000) or torch.sigmoid(x), warmup=2, batched=True) \
        in ("cuda_graph", "batched_events") and timer.batch >= 2


def test_a_batch_size_can_be_asked_for():
    """same_batch_both_sides: the side with the larger batch is prepared again with the other's."""
    from harness.worker import timing

    x = torch.rand(1024, device="cuda")
    timer = timing.Timer(torch.device("cuda"), cold_cache=True)
    assert timer.prepare(lambda: torch.sigmoid(x), warmup=2, batch=5) == "cuda_graph" and timer.batch == 5


def test_the_lead_keeps_the_hosts_launch_latency_out_of_a_window():
    """A window that starts behind a GPU spin counts the GPU's work: a host that takes 2 ms to launch a 10 us
    kernel is timed at ~10 us with the lead, at >= 2 ms without it."""
    import time

    from harness.worker import timing

    x = torch.rand(1024, device="cuda")

    def slow_to_launch():
        time.sleep(0.002)
        return torch.sigmoid(x)

    for lead_us, low, high in ((0.0, 1.5, 100.0), (5000.0, 0.0, 0.5)):
        timer = timing.Timer(torch.device("cuda"), cold_cache=False, lead_us=lead_us)
        ms = sorted(timer.window(slow_to_launch)[0] for _ in range(5))[2]
        assert low < ms < high, (lead_us, ms)


def test_short_calls_are_timed_by_graph_replay():
    from harness.worker import timing

    x = torch.rand(1024, device="cuda")
    timer = timing.Timer(torch.device("cuda"), cold_cache=True)
    assert timer.prepare(lambda: torch.sigmoid(x), warmup=3) == "cuda_graph" and timer.batch > 1
    ms, _ = timer.sample()
    assert 0 < ms < 0.05  # a 4 KB sigmoid: microseconds, not the launch overhead of a whole window


def test_a_graphs_output_is_copied_behind_each_calls_window_and_no_tail_is_counted():
    """What the judge checks of a graph-timed call is its output as each calls window ended (work of another thread
    left after the end event comes too late for it), so a graph's window counts no synchronize tail."""
    from harness.worker import timing

    x = torch.rand(4096, device="cuda")
    timer = timing.Timer(torch.device("cuda"), cold_cache=True)
    assert timer.prepare(lambda: torch.sigmoid(x), warmup=3, inputs=[x]) == "cuda_graph" and not timer.counts_tail()
    timer.sample()
    assert len(timer.snapshots) == 2 and all(torch.equal(s, torch.sigmoid(x)) for s in timer.snapshots)
    assert all(s.data_ptr() != timer.last_output.data_ptr() for s in timer.snapshots)
    x.mul_(0.5)
    timer.sample()  # a new sample's copies replace the last one's
    assert len(timer.snapshots) == 2 and torch.equal(timer.snapshots[0], torch.sigmoid(x))


def test_a_graphs_launch_fits_behind_its_lead_and_a_late_one_is_retimed():
    """A graph's window is led by methods.CUDA_GRAPH.min_lead_us of spin however short the config's lead: a launch the host makes in
    0.3 ms adds nothing to the window. One that takes 3 ms is late, and graph_window times it again (LATE_LAUNCH_RETRIES)."""
    import time

    from harness.common.methods import cuda_graph
    from harness.worker import timing

    x = torch.rand(4096, device="cuda")
    timer = timing.Timer(torch.device("cuda"), cold_cache=False, lead_us=100.0)
    assert timer.prepare(lambda: torch.sigmoid(x), warmup=3, inputs=[x]) == "cuda_graph"
    replay = timer.graphs[0].replay
    windows = []

    def launched_in(seconds):
        def body():
            windows.append(None)
            time.sleep(seconds)
            replay()
        return body

    alone = min(cuda_graph.graph_window(timer, launched_in(0.0), None)[0] for _ in range(3))
    windows.clear()
    ms, _ = cuda_graph.graph_window(timer, launched_in(0.0003), None)
    assert ms < alone + 0.1 and not timer.launch_late and len(windows) == 1, (ms, alone)
    windows.clear()
    ms, _ = cuda_graph.graph_window(timer, launched_in(0.003), None)
    assert timer.launch_late and len(windows) == cuda_graph.LATE_LAUNCH_RETRIES + 1


def test_a_confirmation_blocks_replace_moves_a_graphs_inputs_and_its_replays_follow():
    """Worker.op_replace captures a graph again with its inputs and flush buffer at new offsets; the next round's
    contents, filled in place, are what the replays read, and the new flush buffer is what they write."""
    from harness.worker import worker

    w = worker.Worker("cuda", cold_cache=True)
    w.model = torch.nn.ReLU()
    x = torch.randn(16, 4096, device="cuda")
    assert w.op_set_timing_inputs([x])[0] == "ok"
    assert w.op_prepare_timing(warmup=3, lead_us=100.0) == ("ok", {"method": "cuda_graph", "batch": w.timer.batch})
    places, flush_places = set(), set()
    for round_ in range(6):
        assert w.op_replace(pad_bytes=(round_ + 1) << 20)[0] == "ok"
        fresh = torch.randn(16, 4096, device="cuda")
        assert w.op_refresh_timing_inputs([fresh])[0] == "ok"
        w.timer.flush_buffer.zero_()
        w.timer.sample()
        places.add(w.timing_inputs[0].data_ptr())
        flush_places.add(w.timer.flush_buffer.data_ptr())
        assert all(torch.equal(s, torch.relu(fresh)) for s in w.timer.snapshots)
        assert w.timer.flush_buffer.count_nonzero() > 0  # the replays flush through the new buffer
    assert len(places) > 1 and len(flush_places) > 1


def test_a_short_call_the_host_takes_long_to_launch_is_sorted_by_its_gpu_time():
    """Two tiny kernels with 1 ms of host time between them: a plain window behind the 100 us lead reads ~1 ms (the GPU
    waits on the host); behind SORTING_LEAD_US the GPU's few microseconds show, and the call is graph-timed."""
    import time

    from harness.worker import timing

    x = torch.rand(1024, device="cuda")
    timer = timing.Timer(torch.device("cuda"), cold_cache=True, lead_us=100.0)

    def forward():
        y = x + 1
        time.sleep(0.001)
        return y * 2

    assert timer.prepare(forward, warmup=2, inputs=[x]) == "cuda_graph"


def test_uncapturable_short_calls_fall_back_to_batched_events():
    from harness.worker import timing

    x = torch.rand(1024, device="cuda")
    timer = timing.Timer(torch.device("cuda"), cold_cache=True)

    def queries_its_stream():
        y = torch.sigmoid(x)
        # Not allowed while the stream is being captured, yet, unlike a synchronize, it does not wait:
        # the call stays short (a synchronize puts a host round trip of ~0.2 ms into the call's own time).
        torch.cuda.current_stream().query()
        return y

    assert timer.prepare(queries_its_stream, warmup=3) == "batched_events"
    assert timer.sample()[0] > 0
    assert torch.rand(4, device="cuda").shape == (4,)  # the failed capture left the random generator usable


def test_side_stream_work_is_inside_the_window():
    from harness.worker import timing

    timer = timing.Timer(torch.device("cuda"), cold_cache=False)
    side = torch.cuda.Stream()

    def launch_on_side_stream():
        with torch.cuda.stream(side):
            torch.cuda._sleep(10_000_000)

    timer.prepare(launch_on_side_stream, warmup=1)
    on_side = statistics.median(timer.sample()[0] for _ in range(5))
    timer.prepare(lambda: torch.cuda._sleep(10_000_000), warmup=1)
    on_current = statistics.median(timer.sample()[0] for _ in range(5))
    assert on_side > 1.0 and abs(on_side / on_current - 1) < 0.05, (on_side, on_current)


def test_a_call_with_work_on_the_legacy_default_stream_is_timed_without_a_graph():
    """An extension's `<<<grid, block>>>` with no stream launches on the legacy default stream; captured on one of
    torch's (non-blocking) streams it would run outside the graph, and the captured work after it would read the
    capture's intermediate on every replay (kbl-l3-p2-o1 and kbl-l2-p9-dsc in the real generations). Captured on a
    blocking stream, the launch fails the capture, and nothing of the failure is left for the next call."""
    from harness.worker import timing

    x = torch.rand(1024, device="cuda")

    def escapes():
        hidden = torch.empty_like(x)
        with torch.cuda.stream(torch.cuda.default_stream()):  # handle 0, the legacy default stream
            torch.sigmoid(x, out=hidden)
        return hidden * 2

    assert torch.cuda.default_stream().cuda_stream == 0
    timer = timing.Timer(torch.device("cuda"), cold_cache=True)
    assert timer.prepare(escapes, warmup=3) == "batched_events"
    assert torch.equal(escapes(), torch.sigmoid(x) * 2) and timer.sample()[0] > 0
    assert timer.prepare(lambda: torch.sigmoid(x) * 2, warmup=3, inputs=[x]) == "cuda_graph"


def test_peaks_on_the_gpu(tmp_path):
    from harness.judge import roofline

    peaks = roofline.device_peaks(torch.device("cuda"), torch.float32, tmp_path)
    assert 500 < peaks["copy_gbps"] < 10_000 and 5 < peaks["matmul_tflops"] < 2000
    assert torch.backends.cuda.matmul.allow_tf32 is False  # measuring the TF32 rate restored the setting
    a = torch.randn(4096, 4096, device="cuda")
    cuda_cores = 2 * 4096**3 / (roofline.measure_ms(lambda: a @ a, torch.device("cuda"), 5) * 1e9)
    tf32 = 2 * 4096**3 / (roofline.tf32_matmul_ms(a, a, torch.device("cuda")) * 1e9)
    assert peaks["matmul_tflops"] >= 0.9 * max(cuda_cores, tf32 / 3)  # a 3xTF32 GEMM is not below the floor
    assert peaks["tf32_tflops"] >= 0.9 * tf32  # nor is a TF32 convolution, where the math flags allow it


def test_compiled_baseline_and_hot_cache_are_recorded(tmp_path):
    config = tmp_path / "compiled.yaml"
    config.write_text((FAST_CONFIG.read_text()) + "compile_baseline: true\ncompile_timeout: 600\ntimeout: 300\n")
    candidate = tmp_path / "aa_sigmoid.py"
    candidate.write_text((ROOT / "problems" / "sigmoid.py").read_text() + "\nModelNew = Model\n")
    results = run(["--problem", "sigmoid", "--solution", str(candidate), "--device", "cuda", "--config", str(config),
                   "--set", "batch_size=64", "--set", "dim=4096"], tmp_path / "out")
    result = results["aa_sigmoid"]
    assert result["status"] == "correct" and result["cache"] == "hot"
    assert result["compiled_ms"] and result["compiled_ms"] > 0, result.get("compiled_error")


def test_graphs_can_be_refused_and_must_reproduce_the_call():
    from harness.common.methods import cuda_graph
    from harness.worker import timing

    x = torch.rand(1024, device="cuda")
    timer = timing.Timer(torch.device("cuda"), cold_cache=True)
    assert timer.prepare(lambda: torch.sigmoid(x), warmup=3, allow_graph=False) == "batched_events"
    assert timer.prepare(lambda: torch.sigmoid(x), warmup=3) == "cuda_graph"
    assert cuda_graph.replay_reproduces_call(timer)


def test_nvml_tells_the_gpu_memory_of_a_process_group():
    """What the judge blames a candidate with: the memory a worker's process group holds, from NVML."""
    from harness.common import clocks

    holder = subprocess.Popen([sys.executable, "-c", "import torch, time; x = torch.empty(2 << 30, dtype=torch.uint8, "
                               "device='cuda'); print('ready', flush=True); time.sleep(60)"],
                              stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        held = clocks.gpu_memory_of_groups(0, [holder.pid, 1])
        assert held is not None and held[0] >= 2 << 30 and held[1] == 0, held
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_pairs_on_a_second_gpu(tmp_path):
    """Pairs on cuda:1 (--devices all, or --device cuda:1), whose judge's current device was cuda:0: every one was a
    harness_error while its outbox's memory pool was made on cuda:0."""
    outbox = handover.Outbox(torch.device("cuda", 1))
    for _ in range(2):  # the second use of a pool made on another device failed
        for _ in range(2):
            sent = outbox.copies([torch.ones(4, device="cuda:1")])
            assert sent[0].device == torch.device("cuda", 1) and sent[0].sum() == 4
        outbox.release()
    args = ["--problem", str(FIXTURES / "problems" / "fx_relu.py"), "--config", str(FAST_CONFIG), "--device", "cuda:1",
            "--solution", str(RELU / "correct_torch.py"), "--solution", str(ADVERSARIAL / "mutates_input.py")]
    results = run(args, tmp_path)
    assert results["correct_torch"]["status"] == "correct" and results["correct_torch"]["device"] == "cuda:1"
    assert results["mutates_input"]["status"] == "incorrect"


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_a_service_on_two_gpus_judges_on_both_each_pair_seeing_its_gpu_alone(tmp_path):
    """run.py serve --devices 0,1: half its pairs were harness_error (log names shared by the devices' judges); each
    pair's processes see their GPU alone (docs/decisions/one-gpu-each.md): this candidate is right only then."""
    from harness.runner import environment
    from harness.runner.service import Service

    alone = ("import torch\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n"
             "        return x.clamp(min=0) if torch.cuda.device_count() == 1 else x\n")
    problem = (FIXTURES / "problems" / "fx_relu.py").read_text()
    service = Service(tmp_path, str(FAST_CONFIG), {"device": "cuda"}, ["cuda:0", "cuda:1"],
                      environment.probe_environment("cuda"))
    results = [r or {} for r in service_results(service, [(problem, alone, None)] * 4, 600, drain_s=120)]
    assert [r.get("status") for r in results] == ["correct"] * 4, [r.get("error") for r in results]
    assert {r["device"] for r in results} == {"cuda:0", "cuda:1"}


def test_an_out_of_memory_a_candidate_caught_is_counted(tmp_path):
    """worker_ooms: an allocation that found no memory and was caught (as cuDNN does, falling back to an algorithm
    with a smaller workspace) is counted in its worker, and only there."""
    candidate = tmp_path / "catches_an_oom.py"
    candidate.write_text((RELU / "correct_torch.py").read_text().replace(
        "class ModelNew(nn.Module):\n", "class ModelNew(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        try:\n"
        "            card = torch.cuda.get_device_properties(torch.cuda.current_device())\n"
        "            torch.empty(card.total_memory + 2**30, dtype=torch.uint8, device='cuda')\n"
        "        except torch.cuda.OutOfMemoryError:\n            pass\n\n"))
    results = run(["--problem", str(FIXTURES / "problems" / "fx_relu.py"), "--config", str(FAST_CONFIG),
                   "--solution", str(candidate)], tmp_path / "out")
    # (An earlier version asked for 2**60 bytes: it failed on the H100 at 56d997a, how was cut from the log; a request
    # just beyond the card is one that only a lack of memory refuses.)
    assert results["catches_an_oom"]["status"] == "correct", results["catches_an_oom"]["error"]
    ooms = results["catches_an_oom"]["worker_ooms"]
    assert ooms["worker"] >= 1 and ooms["reference_worker"] == 0, ooms
