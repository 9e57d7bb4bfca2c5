"""The timing phase of a pair: reference and candidate, each in a worker, in alternating rounds,
then statistics, roofline figures, clocks and the timing flags.

PairJudge (judge.py) runs correctness and then hands itself to PairTiming: this module uses the judge's
workers, inputs and checks through it and never imports judge.py."""
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

from harness.common import check, protocol, procs, stats
from harness.judge import roofline
from harness.worker import timing
from harness.common.stats import median_abs_deviation, spread_pct
from harness.common.clocks import ClockMonitor
from harness.common.config import Config
from harness.judge.gpu_probe import GpuProbe, ProbeUnavailable
from harness.judge.memory import release_cached_memory
from harness.judge.timing_setup import TimingSetup
from harness.common.stages import CONFIRM_PAUSE_S, CONFIRM_ROUNDS  # part of the timing stage's deadline
from harness.common.records import one_line
from harness.common.verdict import Status, Verdict, across


TIMED_CHECK_SHARE = 0.1  # share of timing rounds whose candidate output is checked (secretly chosen), plus the last
TAMPER_SHARE, TAMPER_SLACK_MS = 0.1, 0.2  # time a worker may leave unexplained beyond the reference's
ROUND_SEED_OFFSET = 1000  # timing rounds draw their inputs from trial seeds past the correctness trials'


@dataclass
class Requests:
    """One side's timing requests as the judge saw them: the worker's samples (ms), the judge's own wall clock
    around each request (ms), and the method and batch the worker timed with."""

    samples_ms: list
    judged_ms: list
    method: str
    batch: int


def timer_disagrees(ref: Requests, new: Requests, cold_cache: bool, flush_ms: float) -> bool:
    """Does the candidate's reported time disagree with the judge's own clock around its requests?

    Each request's wall time should be the work it claims (calls x reported time, flushes x the judge's own
    flush time) plus an overhead (IPC, synchronizes, the windows' lead spins) that the reference's worker, running
    the same code with the same method and batch (judge_timing_setup), shows. A worker that claims more time than
    passed, or whose unexplained time exceeds the reference's in the same rounds by over 10% of the request plus
    0.2 ms (plus the jitter of those differences), has been tampered with.
    """
    def unexplained(side: Requests) -> Optional[list]:
        batch_ok = isinstance(side.batch, int) and 0 < side.batch <= timing.MAX_BATCH
        if side.method not in timing.METHODS or not batch_ok:
            return None
        calls, flushes = timing.work_per_sample(side.method, side.batch, cold_cache)
        return [wall - calls * ms - flushes * flush_ms for ms, wall in zip(side.samples_ms, side.judged_ms)]

    new_left = unexplained(new)
    if new_left is None:
        return True  # a method or batch size our timer never chooses
    ref_left = unexplained(ref)
    # Claimed more than passed: against the reference's own, since the judge's estimate of a flush (timed in its own
    # process) can be off for both workers alike (on the 2-core CPU it made both sides' unexplained time negative).
    claimed_too_much = (statistics.median(new_left) - (statistics.median(ref_left) if ref_left else 0.0)
                        < -0.05 * statistics.median(new.judged_ms) - 0.1)
    # Round by round: both requests of a round meet the same load on the host, which their difference
    # cancels. A forged clock hides time in most rounds, so it moves the median difference; one within three
    # standard errors of that median (1.858 MAD / sqrt(n) for normal noise) is no evidence. (Three MADs, the
    # spread of one difference, hid a forged clock whose hidden time varied from call to call.)
    differences = [n - r for n, r in zip(new_left, ref_left or [0.0] * len(new_left))]
    excess = statistics.median(differences)
    jitter = 3 * 1.858 * median_abs_deviation(differences) / math.sqrt(len(differences))
    return claimed_too_much or excess > TAMPER_SHARE * statistics.median(new.judged_ms) + TAMPER_SLACK_MS + jitter


class ReferenceRescheduled(Exception):
    """The reference's worker was rescheduled while its side was being timed: its times are not its own."""


class PairTiming:
    """The timing phase of one pair, run by its PairJudge (its workers, inputs, reference and checks)."""

    def __init__(self, judge):
        self.judge, self.reference = judge, judge.reference
        self.cfg, self.job, self.device, self.result = judge.cfg, judge.job, judge.device, judge.result
        self.sandbox, self.ref_sandbox = judge.sandbox, judge.ref_sandbox
        self.phase, self.reference_side, self.expect_ok = judge.phase, judge.reference_side, judge.expect_ok
        self.hand_over = judge.hand_over
        self.round_inputs = None

    def time_pair(self) -> None:
        """Reference and candidate, each in its own worker, in alternating rounds, random order within each.

        The reference is timed in a worker too (trusted code, the same weights) so that both sides run
        under the same timing code in the same kind of process: an A/A pair must come out a tie.
        """
        with self.phase("timing_setup"):
            if self.judge.gated:  # judges started ahead may be starting CUDA on this GPU: the runner
                with self.phase("timing_setup.turn"):  # says when they are done (and holds the next ones)
                    protocol.next_from_runner()
            self.share_one_cpu()
            TimingSetup(self).run()
        with self.phase("timing"):
            self.time_rounds()

    def share_one_cpu(self) -> None:
        """GPU runs (when configured): both workers on one CPU, this GPU's (they run one at a time), so that both
        sides launch their work at the same host speed. (The H100 records of adc6cdb took the judge's CPU of the
        moment, which the judges of two GPUs can share.)"""
        if self.device.type == "cuda" and self.cfg.workers_share_cpu:
            cpu = procs.cpu_for_gpu(self.device.index or 0)
            if procs.share_one_cpu([self.ref_sandbox.proc.pid, self.sandbox.proc.pid], cpu):
                self.judge.ref_schedule.pin(cpu)  # no change for check_reference_scheduling

    def time_rounds(self) -> None:
        """The alternating rounds (Rounds), then statistics, the tampering cross-check and the compiled baseline."""
        rounds = Rounds(self)
        try:
            self.check_reference_scheduling()
            rounds_cfg = self.cfg.replace(target_ci_pct=target_pct(self.cfg, self.result.ref_timer))
            ref_ms, new_ms, tight = stats.alternate_rounds(rounds.ref_sample, rounds.new_sample, rounds_cfg, rounds.rng,
                                                           rounds.before_round, round_kept=rounds.round_kept,
                                                           undecided=self.straddles_the_gate())
            self.check_reference_scheduling()
        except ReferenceRescheduled as exc:
            print(f"no speedup: the reference's worker was rescheduled ({exc})", flush=True)
            self.result.flags.append("interference")
            self.result.timing_rounds = 0
            return
        self.after_rounds(rounds, ref_ms, new_ms, tight)

    def after_rounds(self, rounds: "Rounds", ref_ms: list, new_ms: list, tight: bool) -> None:
        """What the rounds tell: interference, the last timed output checked, the statistics, the tampering
        cross-check, and the compiled baseline."""
        cfg = self.cfg
        if rounds.probe:
            self.result.gpu_wait_ms = round(rounds.probe.waited_ms, 1)
        if (self.result.rounds_discarded or 0) >= cfg.interference_rounds or not ref_ms:
            self.result.flags.append("interference")
        if not ref_ms:  # every round had another process on the GPU: no speedup to report
            self.result.timing_rounds = 0
            return
        self.result.round_order = "".join(side or "?" for side in rounds.first[:len(ref_ms)])
        self.check_timed_output(len(ref_ms) - 1)
        self.result.timed_outputs_checked = 0 if self.reference.random_reference else len(rounds.checked) + 1
        self.record_timing(ref_ms, new_ms, tight, rounds.clocks)
        judge_timer = timing.Timer(self.device, cfg.cold_cache, cfg.launch_lead_us)
        self.result.judge_wall_ms = statistics.median(rounds.new_judged)
        if (self.time_disagrees(ref_ms, rounds.ref_judged, new_ms, rounds.new_judged, judge_timer)
                and self.disagrees_again(rounds, judge_timer)):
            self.result.flags.append("timer_tampering")
        if cfg.compile_baseline:
            self.time_compiled(self.round_inputs, judge_timer)

    def straddles_the_gate(self):
        """With --gate --min-speedup: a test of the rounds so far, true while the speedup's CI (as it will be reported)
        holds the bar, so that the rounds go on (gate_timing_s) until the gate can decide; None without a bar."""
        bar = self.job.min_speedup
        if bar is None:
            return None

        def undecided(ref_ms: list, new_ms: list) -> bool:
            ci = self.reported_ci(ref_ms, new_ms)
            return across(ci["speedup_ci_low"], ci["speedup_ci_high"], bar)
        return undecided

    def reported_ci(self, ref_ms: list, new_ms: list) -> dict:
        """The medians, the speedup and its CI widened by the harness's resolution, as a Result reports them."""
        resolution = resolution_pct(self.cfg, self.result.ref_timer, max(spread_pct(ref_ms), spread_pct(new_ms)),
                                    self.result.gpu)
        return {**stats.with_resolution(stats.speedup_with_ci(ref_ms, new_ms), resolution),
                "resolution_pct": resolution}

    def check_reference_scheduling(self) -> None:
        """Raise ReferenceRescheduled when the reference's worker no longer runs as it did before the candidate's code
        did (its threads' nice, policy, CPUs, cgroup, and that cgroup's limits; the judge's own pinning allowed): a
        process of the same user can slow it without signalling or reading it. The candidate's worker is refused
        such calls (harness.common.confine), but not everywhere, and not a write to a cgroup's files."""
        changes = self.judge.ref_schedule.changes()
        if changes:
            more = f"; {len(changes) - 3} more" if len(changes) > 3 else ""
            raise ReferenceRescheduled("; ".join(changes[:3]) + more)

    def gpu_probe(self):
        """The probe of other processes' GPU work for this pair's windows, or None (CPU, turned off, or not
        loadable here: then the judge's log says why)."""
        if self.device.type != "cuda" or not self.cfg.gpu_probe_ms:
            return None
        try:
            return GpuProbe(self.device, self.cfg.gpu_probe_ms)
        except ProbeUnavailable as exc:
            print(f"GPU probe unavailable, windows unchecked: {exc}", flush=True)
            return None

    def disagrees_again(self, rounds: "Rounds", judge_timer) -> bool:
        """The cross-check once more, on rounds of its own after a pause (not kept as samples): load on the
        host (another process on the candidate worker's core) can delay that worker's wake-ups for seconds,
        but a forged clock does not stop."""
        time.sleep(CONFIRM_PAUSE_S)
        first, walls = len(rounds.ref_judged), (len(self.result.ref_wall_ms), len(self.result.new_wall_ms))
        ref_ms, new_ms = [], []
        for _ in range(CONFIRM_ROUNDS):
            for side in rounds.rng.sample(["ref", "new"], 2):
                if side == "ref":
                    ref_ms.append(rounds.ref_sample())
                else:
                    new_ms.append(rounds.new_sample())
        del self.result.ref_wall_ms[walls[0]:], self.result.new_wall_ms[walls[1]:]
        return self.time_disagrees(ref_ms, rounds.ref_judged[first:], new_ms, rounds.new_judged[first:], judge_timer)

    def time_disagrees(self, ref_ms, ref_judged, new_ms, new_judged, judge_timer: timing.Timer) -> bool:
        """timer_disagrees on these rounds, with the judge's own cache-flush time."""
        cold = self.cfg.cold_cache
        with timing.threads(self.judge.worker_threads):  # a flush as the workers' threads make it
            flush_ms = statistics.median(judge_timer.window(judge_timer.flush)[0] for _ in range(5)) if cold else 0.0
        r = self.result
        return timer_disagrees(Requests(ref_ms, ref_judged, r.ref_timer, r.ref_batch or 1),
                               Requests(new_ms, new_judged, r.new_timer, r.new_batch or 1), cold, flush_ms)

    def make_round_inputs(self, index: int) -> None:
        """Fresh secret-seeded input contents for round `index` (each side's sample copies them in first: refresh_side),
        so a candidate that caches results by input pointer, shape or content replays nothing."""
        with self.phase("timing.refresh"):
            self.round_inputs = None  # checked by now: never two rounds' (multi-GB) inputs at once
            self.round_inputs = self.retried_when_full(
                lambda: self.reference.make_inputs(ROUND_SEED_OFFSET + index, wide=False))

    def refresh_side(self, sandbox) -> None:
        """Send one worker a copy of this round's inputs (from its outbox) and wait until it has copied them in.

        A copy of its own (the candidate could write into what it is sent; its output is checked against round_inputs,
        which never reach its worker), made in that worker's outbox, which keeps the memory for the next round's
        copy. (Tried on the H100: the round's inputs made in the reference's outbox and sent to it as they are, one
        copy a round instead of two: A/A pairs of the full-size sigmoid then came out 0.889 with the GPU probe on,
        twice; with a copy each, ties.)"""
        with self.phase("timing.refresh"):
            copy = self.retried_when_full(lambda: sandbox.outbox.copies(self.round_inputs))
            self.hand_over()
            self.expect_ok(sandbox.request("refresh_timing_inputs", self.cfg.timeout, inputs=copy))
            if sandbox is self.ref_sandbox and self.device.type == "cuda":
                # The reference's worker only copied from its copy (trusted code; the candidate's worker never maps
                # it): the same contents, which stand for the round's inputs from now on, so that the judge holds two
                # copies between rounds, not three (harness/judge/footprint.py). Not on the CPU: there a copy sent is a
                # file in /dev/shm that the candidate, the same user, can open and write (zeroed, the inputs that
                # its timed output was checked against passed a constant output).
                self.round_inputs = copy
            del copy
        # The worker has let go of it: back to its outbox, where the next round's copy reuses it. Memory is not handed
        # back to the GPU here (only a check's, and on running out). On the H100 the judge did so when under an eighth
        # of the GPU was free, which for KernelBench's Swish and L1Norm was every round: their A/A pairs then had one
        # ~14% slow sample a round and no tie in 200 rounds. Freeing and allocating GBs every round also cost ~6 s a
        # full-size sigmoid pair (results/gpu-acceptance/issue15-summary-h100.md).
        if self.device.type == "cuda":
            torch.cuda.ipc_collect()

    def check_timed_output(self, index: int) -> None:
        """The candidate's last timed output of round `index` must be right for that round's inputs (not checkable
        when the reference draws random numbers: its timed calls are not seeded)."""
        if self.reference.random_reference:
            return
        with self.phase("timing.checks"):
            self.compare_timed_output(index)
            # The reference's output (and what it needed on the way) back to the GPU: kept, it would leave the workers'
            # next calls without room (L1Norm's 8 GB tensors, say). A check is a tenth of the rounds.
            release_cached_memory(self.device)

    def compare_timed_output(self, index: int) -> None:
        ref_out = self.retried_when_full(lambda: self.reference.timed_call(self.round_inputs))
        # Which of the sample's calls windows (a graph's: Timer.snapshot_output), drawn after both ran.
        reply = self.expect_ok(self.sandbox.request("last_timed_output", self.cfg.timeout, window=secrets.randbelow(2)))
        problem = check.structure_problem(ref_out, reply)
        if problem:
            raise Verdict(Status.INCORRECT, f"timing round {index + 1}: {problem}", "wrong_timed_output")
        if reply.get("aliases_input") and "output_aliases_input" not in self.result.flags:
            raise Verdict(Status.INCORRECT, f"timing round {index + 1}: the timed call returned its input's own "
                                            "storage as its output, which no trial call did", "wrong_timed_output")
        try:
            self.judge.trials.check_outputs(self.round_inputs, ref_out, reply, f"timing round {index + 1}", None)
        except Verdict as verdict:
            verdict.flags.append("wrong_timed_output")
            raise

    def retried_when_full(self, make):
        """make(), once more after every process's cached GPU memory is handed back if the GPU was full (multi-GB
        tensors: three processes' caches can fill it, as KernelBench's 6-8 GB Swish and L1Norm tensors did on the
        H100: bench/results/kernelbench-aa-h100-memory.md)."""
        try:
            return make()
        except torch.cuda.OutOfMemoryError:
            pass  # (out of the except block first: its traceback holds what make() had allocated)
        self.judge.release_all_caches()
        return make()

    def record_timing(self, ref_ms: list, new_ms: list, tight: bool, clocks) -> None:
        """Statistics, roofline figures, clocks and timing flags from the raw samples."""
        summary = self.reported_ci(ref_ms, new_ms)
        for key, value in summary.items():
            setattr(self.result, key, value)
        r = self.result
        r.ref_samples_ms, r.new_samples_ms, r.timing_rounds = ref_ms, new_ms, len(ref_ms)
        r.tie, r.cache = stats.is_tie(summary), "cold" if self.cfg.cold_cache else "hot"
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
        if r.speedup > self.cfg.excessive_speedup:
            r.flags.append("excessive_speedup")

    def record_roofline(self) -> None:
        """Percent of speed of light for both sides; a candidate faster than the floor is flagged."""
        r = self.result
        try:
            with self.judge.memory.left_out_of_peak():
                peaks = roofline.device_peaks(self.device, self.reference.compute_dtype, Path(self.job.peaks_dir))
        except torch.cuda.OutOfMemoryError:  # first measured beside a pair that fills the GPU: measured another time
            release_cached_memory(self.device)
            self.judge.note("no speed of light: the device's peaks could not be measured beside this pair (out of "
                            "GPU memory); a later pair measures them")
            return
        tf32 = self.reference.tf32_flops if self.reference.compute_dtype == torch.float32 else 0
        r.floor_ms = roofline.floor_ms(self.reference.bytes_moved, self.reference.flops, peaks, tf32)
        r.sol_pct, r.ref_sol_pct = roofline.sol_pct(r.floor_ms, r.new_ms), roofline.sol_pct(r.floor_ms, r.ref_ms)
        if r.new_ms < roofline.BELOW_FLOOR * r.floor_ms:
            r.flags.append("below_roofline")

    def time_compiled(self, inputs: list, timer: timing.Timer) -> None:
        """torch.compile of the reference, timed the same way: a second baseline (not part of the verdict)."""
        try:
            compiled = torch.compile(self.reference.model)

            def call():
                with torch.no_grad():
                    return compiled(*inputs)

            timer.prepare(call, self.cfg.warmup)
            self.result.compiled_ms = statistics.median(timer.sample()[0] for _ in range(self.cfg.min_rounds))
        except Exception as exc:  # a baseline that cannot compile is reported, never fatal
            self.result.compiled_ms = None
            self.result.compiled_error = one_line(f"{type(exc).__name__}: {exc}", 200)


class Rounds:
    """The timing rounds of one pair as PairTiming runs them (stats.alternate_rounds calls these): each side's sample,
    its inputs refreshed and the GPU drained first; the timed-output checks before a round; which rounds count."""

    def __init__(self, pair: "PairTiming"):
        self.pair, self.cfg, self.result = pair, pair.cfg, pair.result
        self.clocks = ClockMonitor(pair.device.index or 0) if pair.device.type == "cuda" else None
        self.probe = pair.gpu_probe()
        self.window_clean = True  # this round's windows each began on a GPU of our own
        # the judge's own wall clock (ms) around each timing request
        self.ref_judged: list[float] = []
        self.new_judged: list[float] = []
        self.rng = random.Random(pair.reference.timing_seed())
        self.checked: list[int] = []  # rounds whose timed output was checked
        self.first: list[Optional[str]] = []  # which side each round timed first: "R" (reference) or "N" (candidate)
        self.replaces = replaces_every_round(pair.device, pair.cfg, pair.judge.block, pair.result.ref_timer)

    def gpu_is_ours(self) -> None:
        """Before a window: other processes' GPU work drained (the other worker is stopped by now). Before both
        sides' windows, though only the candidate can leave work behind: on the H100, with the probe before the
        reference's window alone, A/A pairs of 0.3-2 ms kernels came out 1.01-1.06 (a window right after a probe
        runs unlike one without)."""
        if self.probe and not self.probe.wait_until_ours(self.cfg.gpu_drain_s):
            self.window_clean = False

    def round_kept(self) -> bool:
        """A round counts when the GPU was ours before each window and still is after the last one."""
        kept = self.window_clean and not (self.probe and self.probe.other_work_ms() > 0)
        self.window_clean = True
        if not kept:
            self.first.pop()
            self.result.rounds_discarded = (self.result.rounds_discarded or 0) + 1
            for samples in (self.ref_judged, self.new_judged, self.result.ref_wall_ms, self.result.new_wall_ms):
                samples.pop()
        return kept

    def replace_side(self, sandbox) -> None:
        """Where replaces_every_round says so: the worker places its call's allocations anew behind a pad of a secret
        size before each of its samples (Worker.op_replace), so that where they landed is a round's draw, not the
        process's for good."""
        if self.replaces:
            pad = self.rng.randrange(0, (self.cfg.replace_pad_mb << 20) + 1, 1 << 20)
            self.pair.expect_ok(sandbox.request("replace", self.cfg.timeout, pad_bytes=pad))

    # Each side's window follows its own copy of the round's inputs, the same way on both sides. With both copies
    # made before the round, the reference's first, the candidate's inputs were always the last written: on the
    # H100, 7 of the 8 claimed --small level1 CIs that missed 1.0 at bf7d6ca favoured the candidate (with this
    # order, at 7710ba4, 2 of 28 missed, both favouring the reference); on the 2-core CPU the two workers of an A/A
    # pair then fell into different allocation regimes in half the pairs, and in none with this order
    # (bench/results/aa-coverage/).
    def ref_sample(self) -> float:
        pair = self.pair
        with pair.reference_side():
            self.replace_side(pair.ref_sandbox)
            pair.refresh_side(pair.ref_sandbox)
            self.gpu_is_ours()
            ms, wall = plausible_sample(pair.expect_ok(pair.ref_sandbox.request("time", self.cfg.timeout)))
            self.ref_judged.append(pair.ref_sandbox.last_request_ms)
        self.went_first("R")
        self.result.ref_wall_ms.append(wall)
        if self.clocks:
            self.clocks.sample()
        return ms

    def new_sample(self) -> float:
        pair = self.pair
        self.replace_side(pair.sandbox)
        pair.refresh_side(pair.sandbox)
        self.gpu_is_ours()
        ms, wall = plausible_sample(pair.expect_ok(pair.sandbox.request("time", self.cfg.timeout)))
        self.new_judged.append(pair.sandbox.last_request_ms)
        self.went_first("N")
        self.result.new_wall_ms.append(wall)
        return ms

    def before_round(self, index: int) -> None:
        """A tenth of the rounds first check the last round's timed output (and that the reference's worker was not
        rescheduled); every round gets fresh inputs."""
        if index and self.rng.random() < TIMED_CHECK_SHARE:
            self.pair.check_timed_output(index - 1)
            self.checked.append(index - 1)
            self.pair.check_reference_scheduling()
        self.pair.make_round_inputs(index)
        self.first.append(None)

    def went_first(self, side: str) -> None:
        """Note the side that opens this round (samples outside rounds, the tampering re-check's, are not rounds)."""
        if self.first and self.first[-1] is None:
            self.first[-1] = side


def replaces_every_round(device: torch.device, cfg: Config, block: int, method: str) -> bool:
    """Does each round re-place both sides' allocations (Worker.op_replace)? On a GPU (with replace_pad_mb): in a
    confirmation block (harness.runner.blocks), and in every block of a graph-timed pair, whose graph otherwise holds
    its inputs and output where they first landed for the process's life (the place alone moved a 2 us ReLU by 14-17% on
    the
    H200: docs/decisions/process-offset.md, session 57)."""
    return device.type == "cuda" and bool(cfg.replace_pad_mb) and (block > 1 or method == "cuda_graph")


def target_pct(cfg: Config, method: str) -> float:
    """The half-width, in percent, the rounds aim the speedup's CI at (a wider one at the caps is noisy_timing): on
    the CPU its own, cpu_target_ci_pct (a 2-core machine's calls spread by 10-40% from request to request)."""
    return cfg.cpu_target_ci_pct if method == "perf_counter" else cfg.target_ci_pct


def resolution_pct(cfg: Config, method: str, spread: float = 0.0, gpu: str | None = None) -> float:
    """The harness's resolution for a pair timed this way (both sides are): batched calls (graphs of microsecond
    kernels) and the CPU's clock have one of their own; a pair whose samples on either side spread by
    host_bound_spread_pct or more is bound by the host's speed, which differs between two processes (at least
    host_bound_resolution_pct); and a GPU model measured to need more has its own floor (gpu_resolution_pct, by a
    part of its name)."""
    if method in timing.BATCHED_METHODS:
        resolution = cfg.batched_resolution_pct
    else:
        resolution = cfg.cpu_resolution_pct if method == "perf_counter" else cfg.timing_resolution_pct
    if spread >= cfg.host_bound_spread_pct:
        resolution = max(resolution, cfg.host_bound_resolution_pct)
    if gpu and method != "perf_counter":
        resolution = max([resolution] + [pct for part, pct in cfg.gpu_resolution_pct.items()
                                         if part.lower() in gpu.lower()])
    return resolution


def plausible_sample(payload) -> tuple[float, float]:
    """A worker's timing sample, [ms, wall ms]: both must be positive, finite numbers."""
    try:
        ms, wall = (float(x) for x in payload)
    except (TypeError, ValueError):
        raise Verdict(Status.CRASH, f"malformed timing reply from the worker: {str(payload)[:200]}") from None
    if not (0 < ms < float("inf") and 0 < wall < float("inf")):
        raise Verdict(Status.CRASH, f"implausible timing sample from the worker: {ms!r} ms, wall {wall!r} ms")
    return ms, wall
