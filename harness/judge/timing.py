"""The timing phase of a pair: alternating rounds of both workers, then statistics, roofline, clocks and flags.
PairTiming works through its pair's context (context.PairContext); this module never imports judge.py."""
from __future__ import annotations

import math
import random
import secrets
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import torch

from harness.common import check, methods, protocol, procs, stats
from harness.judge import roofline
from harness.worker import timing
from harness.common.stats import median_abs_deviation, spread_pct
from harness.common.clocks import ClockMonitor
from harness.common.config import Config
from harness.judge.gpu_probe import GpuProbe, ProbeUnavailable
from harness.judge.memory import release_cached_memory
from harness.judge.reports import TimingReport
from harness.judge.timing_setup import TimingSetup
from harness.common.stages import CONFIRM_PAUSE_S, CONFIRM_ROUNDS  # in the timing stage's deadline
from harness.common.records import one_line
from harness.common.verdict import Status, Verdict, across


TIMED_CHECK_SHARE = 0.1  # share of rounds whose timed output is checked, plus the last
TAMPER_SHARE, TAMPER_SLACK_MS = 0.1, 0.2  # unexplained time allowed beyond the reference's
ROUND_SEED_OFFSET = 1000  # past the correctness trials' seeds


@dataclass
class Requests:
    """One side's samples, the judge's wall clock around each (ms), method and batch."""

    samples_ms: list
    judged_ms: list
    method: str
    batch: int


def timer_disagrees(ref: Requests, new: Requests, cold_cache: bool, flush_ms: float) -> bool:
    """Does the candidate's time disagree with the judge's clock? docs/decisions/tamper-check.md"""
    def unexplained(side: Requests) -> Optional[list]:
        batch_ok = isinstance(side.batch, int) and 0 < side.batch <= methods.batched_events.MAX_BATCH
        method = methods.named(side.method)
        if method is None or not batch_ok:
            return None
        calls, flushes = method.work_per_sample(side.batch, cold_cache)
        return [wall - calls * ms - flushes * flush_ms for ms, wall in zip(side.samples_ms, side.judged_ms)]

    new_left = unexplained(new)
    if new_left is None:
        return True  # a method or batch our timer never chooses
    ref_left = unexplained(ref)
    # Against the reference's own: the judge's flush estimate can be off for both alike.
    claimed_too_much = (statistics.median(new_left) - (statistics.median(ref_left) if ref_left else 0.0)
                        < -0.05 * statistics.median(new.judged_ms) - 0.1)
    # Round by round, the host's load cancels; within 3 standard errors of the median is no evidence.
    differences = [n - r for n, r in zip(new_left, ref_left or [0.0] * len(new_left))]
    excess = statistics.median(differences)
    jitter = 3 * 1.858 * median_abs_deviation(differences) / math.sqrt(len(differences))
    return claimed_too_much or excess > TAMPER_SHARE * statistics.median(new.judged_ms) + TAMPER_SLACK_MS + jitter


class ReferenceRescheduled(Exception):
    """The reference's worker was rescheduled during its timing."""


class PairTiming:
    """The timing phase of one pair, run by its PairJudge; its findings in `report`."""

    def __init__(self, ctx, trials):
        self.ctx, self.trials, self.reference, self.workers = ctx, trials, ctx.reference, ctx.workers
        self.cfg, self.job, self.device = ctx.cfg, ctx.job, ctx.device
        self.report = TimingReport()  # what this phase measured (reports.into_result)
        self.sandbox, self.ref_sandbox = ctx.workers.sandbox, ctx.workers.ref_sandbox
        self.phase, self.reference_side, self.expect_ok = ctx.phase, ctx.workers.reference_side, ctx.workers.expect_ok
        self.hand_over = ctx.workers.hand_over
        self.round_inputs = None

    def time_pair(self) -> None:
        """Set up and run the rounds (the reference in a worker too: an A/A pair is a tie)."""
        with self.phase("timing_setup"):
            if self.ctx.gated:  # the runner says when the judges ahead are done with CUDA
                with self.phase("timing_setup.turn"):
                    protocol.next_from_runner()
            self.share_one_cpu()
            TimingSetup(self).run()
        with self.phase("timing"):
            self.time_rounds()

    def share_one_cpu(self) -> None:
        """On a GPU: both workers on this GPU's CPU (docs/decisions/timing-alike.md)."""
        if self.device.type == "cuda" and self.cfg.timing.workers_share_cpu:
            cpu = procs.cpu_for_gpu(self.device.index or 0)
            if procs.share_one_cpu([self.ref_sandbox.proc.pid, self.sandbox.proc.pid], cpu):
                self.workers.ref_schedule.pin(cpu)  # not a change the scheduling check sees

    def time_rounds(self) -> None:
        """The rounds, then after_rounds; a rescheduled reference voids the speedup."""
        rounds = Rounds(self)
        try:
            self.check_reference_scheduling()
            aim = self.cfg.timing.replace(target_ci_pct=target_pct(self.cfg, self.report.ref_timer))
            ref_ms, new_ms, tight = stats.alternate_rounds(rounds.ref_sample, rounds.new_sample, aim, rounds.rng,
                                                           rounds.before_round, round_kept=rounds.round_kept,
                                                           undecided=self.straddles_the_gate())
            self.check_reference_scheduling()
        except ReferenceRescheduled as exc:
            print(f"no speedup: the reference's worker was rescheduled ({exc})", flush=True)
            self.report.flags.append("interference")
            self.report.timing_rounds = 0
            return
        self.after_rounds(rounds, ref_ms, new_ms, tight)

    def after_rounds(self, rounds: "Rounds", ref_ms: list, new_ms: list, tight: bool) -> None:
        """Interference, last output check, statistics, tampering check, compiled baseline."""
        cfg = self.cfg
        if rounds.probe:
            self.report.gpu_wait_ms = round(rounds.probe.waited_ms, 1)
        if (self.report.rounds_discarded or 0) >= cfg.timing.interference_rounds or not ref_ms:
            self.report.flags.append("interference")
        if not ref_ms:  # every round was dropped for interference
            self.report.timing_rounds = 0
            return
        self.report.round_order = "".join(side or "?" for side in rounds.first[:len(ref_ms)])
        self.check_timed_output(len(ref_ms) - 1)
        self.report.timed_outputs_checked = 0 if self.reference.random_reference else len(rounds.checked) + 1
        self.record_timing(ref_ms, new_ms, tight, rounds.clocks)
        judge_timer = timing.Timer(self.device, cfg.timing.cold_cache, cfg.timing.launch_lead_us)
        self.report.judge_wall_ms = statistics.median(rounds.new_judged)
        if (self.time_disagrees(ref_ms, rounds.ref_judged, new_ms, rounds.new_judged, judge_timer)
                and self.disagrees_again(rounds, judge_timer)):
            self.report.flags.append("timer_tampering")
        if cfg.timing.compile_baseline:
            self.time_compiled(self.round_inputs, judge_timer)

    def straddles_the_gate(self):
        """With --min-speedup: a test, true while the reported CI holds the bar; else None."""
        bar = self.job.min_speedup
        if bar is None:
            return None

        def undecided(ref_ms: list, new_ms: list) -> bool:
            ci = self.reported_ci(ref_ms, new_ms)
            return across(ci["speedup_ci_low"], ci["speedup_ci_high"], bar)
        return undecided

    def reported_ci(self, ref_ms: list, new_ms: list) -> dict:
        """The medians, speedup and CI widened by the resolution, as reported."""
        resolution = resolution_pct(self.cfg, self.report.ref_timer, max(spread_pct(ref_ms), spread_pct(new_ms)),
                                    self.ctx.result.gpu)
        return {**stats.with_resolution(stats.speedup_with_ci(ref_ms, new_ms), resolution),
                "resolution_pct": resolution}

    def check_reference_scheduling(self) -> None:
        """Raise ReferenceRescheduled if the reference's scheduling changed (docs/threat-model.md)."""
        changes = self.workers.ref_schedule.changes()
        if changes:
            more = f"; {len(changes) - 3} more" if len(changes) > 3 else ""
            raise ReferenceRescheduled("; ".join(changes[:3]) + more)

    def gpu_probe(self):
        """The GPU probe, or None (CPU, turned off, or not loadable: logged)."""
        if self.device.type != "cuda" or not self.cfg.timing.gpu_probe_ms:
            return None
        try:
            return GpuProbe(self.device, self.cfg.timing.gpu_probe_ms)
        except ProbeUnavailable as exc:
            print(f"GPU probe unavailable, windows unchecked: {exc}", flush=True)
            return None

    def disagrees_again(self, rounds: "Rounds", judge_timer) -> bool:
        """The cross-check again, on rounds of its own after a pause."""
        time.sleep(CONFIRM_PAUSE_S)
        first, walls = len(rounds.ref_judged), (len(self.report.ref_wall_ms), len(self.report.new_wall_ms))
        ref_ms, new_ms = [], []
        for _ in range(CONFIRM_ROUNDS):
            for side in rounds.rng.sample(["ref", "new"], 2):
                if side == "ref":
                    ref_ms.append(rounds.ref_sample())
                else:
                    new_ms.append(rounds.new_sample())
        del self.report.ref_wall_ms[walls[0]:], self.report.new_wall_ms[walls[1]:]
        return self.time_disagrees(ref_ms, rounds.ref_judged[first:], new_ms, rounds.new_judged[first:], judge_timer)

    def time_disagrees(self, ref_ms, ref_judged, new_ms, new_judged, judge_timer: timing.Timer) -> bool:
        """timer_disagrees with the judge's own flush time."""
        cold = self.cfg.timing.cold_cache
        with timing.threads(self.ctx.worker_threads):  # as the workers' threads make it
            flush_ms = statistics.median(judge_timer.window(judge_timer.flush)[0] for _ in range(5)) if cold else 0.0
        r = self.report
        return timer_disagrees(Requests(ref_ms, ref_judged, r.ref_timer, r.ref_batch or 1),
                               Requests(new_ms, new_judged, r.new_timer, r.new_batch or 1), cold, flush_ms)

    def make_round_inputs(self, index: int) -> None:
        """Fresh secret-seeded inputs for round `index`: no cached result replays."""
        with self.phase("timing.refresh"):
            self.round_inputs = None  # never two rounds' inputs at once
            self.round_inputs = self.retried_when_full(
                lambda: self.reference.make_inputs(ROUND_SEED_OFFSET + index, wide=False))

    def refresh_side(self, sandbox) -> None:
        """One worker's own copy of the round's inputs, copied in: docs/decisions/timing-rounds.md"""
        with self.phase("timing.refresh"):
            copy = self.retried_when_full(lambda: sandbox.outbox.copies(self.round_inputs))
            self.hand_over()
            self.expect_ok(sandbox.request("refresh_timing_inputs", self.cfg.limits.timeout, inputs=copy))
            if sandbox is self.ref_sandbox and self.device.type == "cuda":
                # It stands for the round's inputs (not on the CPU, where /dev/shm is writable).
                self.round_inputs = copy
            del copy
        # Back to its outbox for the next round, not to the GPU (a slow sample a round).
        if self.device.type == "cuda":
            torch.cuda.ipc_collect()

    def check_timed_output(self, index: int) -> None:
        """Check round `index`'s last timed output (not for a random reference)."""
        if self.reference.random_reference:
            return
        with self.phase("timing.checks"):
            self.compare_timed_output(index)
            # Kept, it would leave the workers no room.
            release_cached_memory(self.device)

    def compare_timed_output(self, index: int) -> None:
        ref_out = self.retried_when_full(lambda: self.reference.timed_call(self.round_inputs))
        # Which calls window's output (Timer.snapshot_output), drawn after both ran.
        reply = self.expect_ok(self.sandbox.request("last_timed_output", self.cfg.limits.timeout,
                                                    window=secrets.randbelow(2)))
        problem = check.structure_problem(ref_out, reply)
        if problem:
            raise Verdict(Status.INCORRECT, f"timing round {index + 1}: {problem}", "wrong_timed_output")
        if reply.get("aliases_input") and "output_aliases_input" not in self.ctx.result.flags:  # the trials' flag
            raise Verdict(Status.INCORRECT, f"timing round {index + 1}: the timed call returned its input's own "
                                            "storage as its output, which no trial call did", "wrong_timed_output")
        try:
            self.trials.check_outputs(self.round_inputs, ref_out, reply, f"timing round {index + 1}", None)
        except Verdict as verdict:
            verdict.flags.append("wrong_timed_output")
            raise

    def retried_when_full(self, make):
        """make(), again after every cache is handed back if the GPU was full."""
        try:
            return make()
        except torch.cuda.OutOfMemoryError:
            pass  # leave the except block first: its traceback holds make()'s memory
        self.workers.release_all_caches()
        return make()

    def record_timing(self, ref_ms: list, new_ms: list, tight: bool, clocks) -> None:
        """Statistics, roofline, clocks and flags from the samples."""
        summary = self.reported_ci(ref_ms, new_ms)
        for key, value in summary.items():
            setattr(self.report, key, value)
        r = self.report
        r.ref_samples_ms, r.new_samples_ms, r.timing_rounds = ref_ms, new_ms, len(ref_ms)
        r.tie, r.cache = stats.is_tie(summary), "cold" if self.cfg.timing.cold_cache else "hot"
        moved, flops = self.reference.bytes_moved, self.reference.flops
        r.gbps, r.ref_gbps = moved / (r.new_ms * 1e6), moved / (r.ref_ms * 1e6)
        if flops:
            r.tflops, r.ref_tflops = flops / (r.new_ms * 1e9), flops / (r.ref_ms * 1e9)
        self.record_roofline()
        if clocks:
            r.clocks = clocks.summary()
            if clocks.throttled():
                r.flags.append("throttled")
        if not tight:
            r.flags.append("noisy_timing")
        if r.speedup > self.cfg.resolution.excessive_speedup:
            r.flags.append("excessive_speedup")

    def record_roofline(self) -> None:
        """Speed-of-light figures; below_roofline under the floor."""
        r = self.report
        try:
            with self.ctx.memory.left_out_of_peak():
                peaks = roofline.device_peaks(self.device, self.reference.compute_dtype, Path(self.job.peaks_dir))
        except torch.cuda.OutOfMemoryError:  # beside a full GPU: a later pair measures them
            release_cached_memory(self.device)
            self.ctx.note("no speed of light: the device's peaks could not be measured beside this pair (out of "
                            "GPU memory); a later pair measures them")
            return
        tf32 = self.reference.tf32_flops if self.reference.compute_dtype == torch.float32 else 0
        r.floor_ms = roofline.floor_ms(self.reference.bytes_moved, self.reference.flops, peaks, tf32)
        r.sol_pct, r.ref_sol_pct = roofline.sol_pct(r.floor_ms, r.new_ms), roofline.sol_pct(r.floor_ms, r.ref_ms)
        if r.new_ms < roofline.BELOW_FLOOR * r.floor_ms:
            r.flags.append("below_roofline")

    def time_compiled(self, inputs: list, timer: timing.Timer) -> None:
        """torch.compile of the reference, timed alike (not in the verdict)."""
        try:
            compiled = torch.compile(self.reference.model)

            def call():
                with torch.no_grad():
                    return compiled(*inputs)

            timer.prepare(call, self.cfg.timing.warmup)
            self.report.compiled_ms = statistics.median(timer.sample()[0] for _ in range(self.cfg.timing.min_rounds))
        except Exception as exc:  # reported, never fatal
            self.report.compiled_ms = None
            self.report.compiled_error = one_line(f"{type(exc).__name__}: {exc}", 200)


class Rounds:
    """One pair's rounds, as stats.alternate_rounds calls them."""

    def __init__(self, pair: "PairTiming"):
        self.pair, self.cfg, self.report = pair, pair.cfg, pair.report
        self.clocks = ClockMonitor(pair.device.index or 0) if pair.device.type == "cuda" else None
        self.probe = pair.gpu_probe()
        self.window_clean = True  # each window so far began on a GPU of our own
        self.ref_judged: list[float] = []  # judge's clock around each request, ms
        self.new_judged: list[float] = []
        self.rng = random.Random(pair.reference.timing_seed())
        self.checked: list[int] = []
        self.first: list[Optional[str]] = []  # "R" or "N": who opened each round
        self.replaces = replaces_every_round(pair.device, pair.cfg, pair.job.block, pair.report.ref_timer)

    def gpu_is_ours(self) -> None:
        """Drain other GPU work before each side's window: docs/decisions/timing-rounds.md"""
        if self.probe and not self.probe.wait_until_ours(self.cfg.timing.gpu_drain_s):
            self.window_clean = False

    def round_kept(self) -> bool:
        """A round counts when the GPU was ours around its windows."""
        kept = self.window_clean and not (self.probe and self.probe.other_work_ms() > 0)
        self.window_clean = True
        if not kept:
            self.first.pop()
            self.report.rounds_discarded = (self.report.rounds_discarded or 0) + 1
            for samples in (self.ref_judged, self.new_judged, self.report.ref_wall_ms, self.report.new_wall_ms):
                samples.pop()
        return kept

    def replace_side(self, sandbox) -> None:
        """Re-place the worker's allocations behind a secret pad, where due."""
        if self.replaces:
            pad = self.rng.randrange(0, (self.cfg.resolution.replace_pad_mb << 20) + 1, 1 << 20)
            self.pair.expect_ok(sandbox.request("replace", self.cfg.limits.timeout, pad_bytes=pad))

    # Each side's window follows its own copy of the inputs: docs/decisions/timing-rounds.md
    def ref_sample(self) -> float:
        with self.pair.reference_side():
            ms, wall = self.side_sample(self.pair.ref_sandbox, self.ref_judged)
        self.went_first("R")
        self.report.ref_wall_ms.append(wall)
        if self.clocks:
            self.clocks.sample()
        return ms

    def new_sample(self) -> float:
        ms, wall = self.side_sample(self.pair.sandbox, self.new_judged)
        self.went_first("N")
        self.report.new_wall_ms.append(wall)
        return ms

    def side_sample(self, sandbox, judged: list) -> tuple:
        """One side's (ms, wall ms): its memory re-placed where due, its inputs refreshed, the GPU checked, timed."""
        self.replace_side(sandbox)
        self.pair.refresh_side(sandbox)
        self.gpu_is_ours()
        ms, wall = plausible_sample(self.pair.expect_ok(sandbox.request("time", self.cfg.limits.timeout)))
        judged.append(sandbox.last_request_ms)
        return ms, wall

    def before_round(self, index: int) -> None:
        """Fresh inputs; in a tenth of rounds, the last timed output checked first."""
        if index and self.rng.random() < TIMED_CHECK_SHARE:
            self.pair.check_timed_output(index - 1)
            self.checked.append(index - 1)
            self.pair.check_reference_scheduling()
        self.pair.make_round_inputs(index)
        self.first.append(None)

    def went_first(self, side: str) -> None:
        """Note the side that opens this round."""
        if self.first and self.first[-1] is None:
            self.first[-1] = side


def replaces_every_round(device: torch.device, cfg: Config, block: int, method: str) -> bool:
    """Does each round re-place both sides' allocations? docs/decisions/process-offset.md"""
    return device.type == "cuda" and bool(cfg.resolution.replace_pad_mb) and (block > 1 or methods.is_graph(method))


def declared(method: str) -> methods.Method:
    """What a side's method declares (a name our timer never chooses: as CUDA events)."""
    return methods.named(method) or methods.CUDA_EVENT


def target_pct(cfg: Config, method: str) -> float:
    """The CI half-width (percent) the rounds aim at: the method's own."""
    return getattr(cfg.timing, declared(method).target_key)


def resolution_pct(cfg: Config, method: str, spread: float = 0.0, gpu: str | None = None) -> float:
    """The resolution (percent) for this method, spread and GPU: docs/judging.md."""
    resolution = getattr(cfg.resolution, declared(method).resolution_key)
    if spread >= cfg.resolution.host_bound_spread_pct:
        resolution = max(resolution, cfg.resolution.host_bound_resolution_pct)
    if gpu and not declared(method).host_clock:
        resolution = max([resolution] + [pct for part, pct in cfg.resolution.gpu_resolution_pct.items()
                                         if part.lower() in gpu.lower()])
    return resolution


def plausible_sample(payload) -> tuple[float, float]:
    """(ms, wall ms), both positive and finite, or a crash."""
    try:
        ms, wall = (float(x) for x in payload)
    except (TypeError, ValueError):
        raise Verdict(Status.CRASH, f"malformed timing reply from the worker: {str(payload)[:200]}") from None
    if not (0 < ms < float("inf") and 0 < wall < float("inf")):
        raise Verdict(Status.CRASH, f"implausible timing sample from the worker: {ms!r} ms, wall {wall!r} ms")
    return ms, wall
