"""The timing phase of a pair: reference and candidate, each in a worker, in alternating rounds,
then statistics, roofline figures, clocks and the timing flags. Mixed into PairJudge."""
from __future__ import annotations

import random
import statistics
from pathlib import Path

import torch

from harness import check, inputs as inputs_mod, roofline, stats, timing
from harness.clocks import ClockMonitor
from harness.records import Status, Verdict, one_line
from harness.sandbox import WorkerFailure


class PairTiming:
    """Timing methods of PairJudge (which provides cfg, job, device, model, result, sandbox and helpers)."""

    def time_pair(self) -> None:
        """Reference and candidate, each in its own worker, in alternating rounds, random order within each.

        The reference is timed in a worker too (trusted code, the same weights) so that both sides run
        under the same timing code in the same kind of process: an A/A pair must come out a tie.
        """
        cfg = self.cfg
        private = self.make_inputs(cfg["trials"] + cfg["wide_trials"], wide=False)
        release_cached_memory(self.device)
        try:
            self.ref_sandbox = self.spawn_worker()
            self.load_into(self.ref_sandbox, self.job["problem_path"], Path(self.job["problem_path"]).read_text(),
                           "Model")
            ref_method, ref_batch = self.prepare_side(self.ref_sandbox, private)
        except (Verdict, WorkerFailure) as exc:  # the reference is trusted: this is the harness's failure
            raise Verdict(Status.CRASH, f"the reference's timing worker failed: {exc}") from None
        self.result.ref_timer, self.result.ref_batch = ref_method, ref_batch
        self.result.new_timer, self.result.new_batch = self.prepare_side(self.sandbox, private)
        clocks = ClockMonitor(self.device.index or 0) if self.device.type == "cuda" else None

        def ref_sample() -> float:
            try:
                ms, wall = plausible_sample(self.expect_ok(self.ref_sandbox.request("time", cfg["timeout"])))
            except (Verdict, WorkerFailure) as exc:
                raise Verdict(Status.CRASH, f"the reference's timing worker failed: {exc}") from None
            self.result.ref_wall_ms.append(wall)
            if clocks:
                clocks.sample()
            return ms

        def new_sample() -> float:
            ms, wall = plausible_sample(self.expect_ok(self.sandbox.request("time", cfg["timeout"])))
            self.result.new_wall_ms.append(wall)
            return ms

        ref_ms, new_ms, tight = stats.alternate_rounds(ref_sample, new_sample, cfg, random.Random(self.job["secret"]))
        self.record_timing(ref_ms, new_ms, tight, clocks)
        if cfg["compile_baseline"]:
            self.time_compiled(private, timing.Timer(self.device, cfg["cold_cache"]))

    def prepare_side(self, sandbox, inputs: list) -> tuple:
        """Give a worker its own copy of the timing inputs and let it warm up; its (method, batch)."""
        self.expect_ok(sandbox.request("set_timing_inputs", self.cfg["timeout"], inputs=inputs_mod.clone_tensors(inputs)))
        release_cached_memory(self.device)
        prepared = self.expect_ok(sandbox.request("prepare_timing", self.cfg["timeout"], warmup=self.cfg["warmup"]))
        method, batch = (prepared.get("method"), prepared.get("batch")) if isinstance(prepared, dict) else (None, None)
        return (method if method in timing.METHODS else "unknown"), (batch if isinstance(batch, int) else None)

    def record_timing(self, ref_ms: list, new_ms: list, tight: bool, clocks) -> None:
        """Statistics, roofline figures, clocks and timing flags from the raw samples."""
        summary = stats.speedup_with_ci(ref_ms, new_ms, self.cfg["bootstrap_samples"])
        for key, value in summary.items():
            setattr(self.result, key, value)
        r = self.result
        r.ref_samples_ms, r.new_samples_ms, r.timing_rounds = ref_ms, new_ms, len(ref_ms)
        r.tie, r.cache = stats.is_tie(summary), "cold" if self.cfg["cold_cache"] else "hot"
        r.gbps, r.ref_gbps = self.bytes_moved / (r.new_ms * 1e6), self.bytes_moved / (r.ref_ms * 1e6)
        if self.flops:
            r.tflops, r.ref_tflops = self.flops / (r.new_ms * 1e9), self.flops / (r.ref_ms * 1e9)
        self.record_roofline()
        if clocks:
            r.clocks = clocks.summary()
            if clocks.throttled():
                r.flags.append("throttled")
        if not tight:
            r.flags.append("noisy_timing")
        if r.speedup > self.cfg["excessive_speedup"]:
            r.flags.append("excessive_speedup")

    def record_roofline(self) -> None:
        """Percent of speed of light for both sides; a candidate faster than the floor is flagged."""
        r = self.result
        dtype = check.items(self.ref_out_example)[0].dtype if self.ref_out_example is not None else torch.float32
        peaks = roofline.device_peaks(self.device, dtype, Path(self.job["peaks_dir"]))
        r.floor_ms = roofline.floor_ms(self.bytes_moved, self.flops, peaks)
        r.sol_pct, r.ref_sol_pct = roofline.sol_pct(r.floor_ms, r.new_ms), roofline.sol_pct(r.floor_ms, r.ref_ms)
        if r.new_ms < roofline.BELOW_FLOOR * r.floor_ms:
            r.flags.append("below_roofline")

    def time_compiled(self, inputs: list, timer: timing.Timer) -> None:
        """torch.compile of the reference, timed the same way: a second baseline (not part of the verdict)."""
        try:
            compiled = torch.compile(self.model)

            def call():
                with torch.no_grad():
                    return compiled(*inputs)

            timer.prepare(call, self.cfg["warmup"])
            self.result.compiled_ms = statistics.median(timer.sample()[0] for _ in range(self.cfg["min_rounds"]))
        except Exception as exc:  # a baseline that cannot compile is reported, never fatal
            self.result.compiled_ms = None
            self.result.compiled_error = one_line(f"{type(exc).__name__}: {exc}", 200)


def plausible_sample(payload) -> tuple[float, float]:
    """A worker's timing sample, [ms, wall ms]: both must be positive, finite numbers."""
    try:
        ms, wall = (float(x) for x in payload)
    except (TypeError, ValueError):
        raise Verdict(Status.CRASH, f"malformed timing reply from the worker: {str(payload)[:200]}") from None
    if not (0 < ms < float("inf") and 0 < wall < float("inf")):
        raise Verdict(Status.CRASH, f"implausible timing sample from the worker: {ms!r} ms, wall {wall!r} ms")
    return ms, wall


def release_cached_memory(device: torch.device) -> None:
    """Hand this process's cached GPU blocks back, so the worker can use the memory."""
    if device.type == "cuda":
        torch.cuda.empty_cache()
