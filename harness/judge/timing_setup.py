"""The timing_setup stage of a pair (run by PairTiming before its rounds): the reference's FLOPs, both workers' timing
inputs, each side's timing method chosen and then agreed (the same method and batch on both sides), and one traced
call of each (no_custom_kernel)."""
from __future__ import annotations

import functools
import re

from harness.judge import footprint
from harness.worker import timing
from harness.judge.memory import release_cached_memory
from harness.common.problem_info import free_memory
from harness.common.verdict import Status, Verdict

# Torch operators that allocate, reshape or copy rather than compute.
BOOKKEEPING_OPS = re.compile(r"aten::(empty|view|reshape|_reshape|as_strided|detach|contiguous|expand|t$|transpose|"
                             r"permute|unsqueeze|squeeze|select|slice|alias|lift|resolve|_unsafe_view|clone|copy_|"
                             r"to$|_to_copy|zeros|ones|full|fill_|zero_|resize_|set_|result_type|item|"
                             r"_local_scalar_dense|is_|size|stride|numel|dim)")


class TimingSetup:
    """The timing_setup stage of one pair, for its PairTiming (whose workers, judge and memory retries it uses)."""

    def __init__(self, pair_timing):
        self.judge, self.reference = pair_timing.judge, pair_timing.reference
        self.cfg, self.job, self.device, self.result = (pair_timing.cfg, pair_timing.job, pair_timing.device,
                                                        pair_timing.result)
        self.sandbox, self.ref_sandbox = pair_timing.sandbox, pair_timing.ref_sandbox
        self.phase, self.reference_side = pair_timing.phase, pair_timing.reference_side
        self.expect_ok, self.hand_over = pair_timing.expect_ok, pair_timing.hand_over
        self.retried_when_full = pair_timing.retried_when_full

    def run(self) -> None:
        """Give both workers timing inputs, let them choose their timing methods, and trace one call of each."""
        trial = self.cfg.total_trials  # the timing inputs' seed: past the correctness trials'
        if self.job.flops is not None:  # counted by an earlier judge of this run on this problem
            self.reference.flops, self.reference.tf32_flops = self.job.flops, self.job.tf32_flops or 0
        else:
            with self.phase("timing_setup.flops"):
                self.reference.call(self.reference.make_inputs(trial, wide=False), count_flops=True)
        self.result.flops, self.result.tf32_flops = self.reference.flops, self.reference.tf32_flops
        release_cached_memory(self.device, outboxes=self.judge.outboxes())
        with self.phase("timing_setup.prepare"):
            self.send_timing_inputs(trial)
            self.prepare_sides()
        with self.phase("timing_setup.trace"):
            if self.uses_only_reference_ops():
                self.result.flags.append("no_custom_kernel")

    def uses_only_reference_ops(self) -> bool:
        """From runtime traces of one call per side: did the candidate only launch what the reference does?

        On a GPU: its kernels (copies and memsets aside) are all kernels the reference launches too. On
        the CPU, where a compiled extension's own loops leave no trace: every torch operator it computes
        with is one the reference uses. A candidate that computes nothing traceable is not flagged.
        """
        with self.reference_side():  # one side at a time, as everything the workers run from here on
            ref_reply = self.ref_sandbox.request("trace", self.cfg.timeout)
        new_reply = self.sandbox.request("trace", self.cfg.timeout)
        # a profiler that cannot start (no CUPTI, say, or no memory for it) leaves the flag unset; it blames no one
        try:
            ref, new = self.expect_ok(ref_reply), self.expect_ok(new_reply)
        except Verdict as verdict:
            if verdict.status == Status.CRASH or (verdict.status == Status.HARNESS_ERROR
                                                  and not footprint.OUT_OF_MEMORY.search(verdict.error or "")):
                raise
            return False
        try:
            if self.device.type == "cuda":
                mine = {k for k in new["kernels"] if not re.search(r"memcpy|memset", k, re.I)}
                if any(k.startswith("triton") for k in mine - set(ref["kernels"])):
                    self.result.backend = "triton"  # torch.compile's kernels, say, in a candidate written in torch
                return bool(mine) and mine <= set(ref["kernels"])
            mine = {op for op in new["ops"] if not BOOKKEEPING_OPS.match(op)}
            return bool(mine) and mine <= set(ref["ops"])
        except (TypeError, KeyError):
            raise Verdict(Status.CRASH, f"malformed trace from the worker: {str(new)[:200]}") from None

    def prepare_sides(self) -> None:
        """Both workers choose how to time their calls, the reference's first; on a GPU the pair is skipped unless
        the candidate's warm-up has the room the reference's took (PairMemory.check_room_alike); then both time them
        the same way. A candidate whose calls are timed in single windows takes as many a sample as the reference's
        worker chose."""
        gpu = self.device.type == "cuda"
        free_before = free_memory(self.device) if gpu else 0
        self.prepare_side(reference=True, allow_graph=True)
        if gpu:
            self.judge.memory.check_room_alike(free_before, free_memory(self.device))
        windows = self.result.ref_batch if self.result.ref_timer in timing.SINGLE_METHODS else None
        self.prepare_side(reference=False, allow_graph=True, windows=windows)
        self.same_method_both_sides()

    def same_method_both_sides(self) -> None:
        """Both sides timed the same way. A call timed alone while the other side's is batched is batched too (on
        the H100 a disturbed warm-up timed a 15 us reference alone, at ~190 us a call with its launch, against the
        candidate's graph: an A/A pair came out 12.3x). When one side's short call cannot be graph-captured, the
        other is timed with plain launches too: a graph replay leaves out the launch overhead that batched events
        include; batched still, however long its call measures (told nothing, a launch-bound reference measured on a
        busy host chose single windows: on the H100 two candidates whose kernels launch on the legacy default stream,
        timed in batches against it, came out 1.6x and 3.1x where KernelBench measured 0.97x and 1.31x, and flagged
        timer_tampering)."""
        r = self.result
        if "cuda_event" in (r.ref_timer, r.new_timer) and {r.ref_timer, r.new_timer} & set(timing.BATCHED_METHODS):
            graphs = "cuda_graph" in (r.ref_timer, r.new_timer)
            self.prepare_side(reference=r.ref_timer == "cuda_event", allow_graph=graphs, batched=True)
        if {r.ref_timer, r.new_timer} == {"cuda_graph", "batched_events"}:
            self.prepare_side(reference=r.ref_timer == "cuda_graph", batched=True)
        self.same_batch_both_sides()

    def same_batch_both_sides(self) -> None:
        """Batched sides time the same number of calls a window, the smaller side's: what a window costs beyond its
        calls (a graph's launch, the GPU's ramp) is then shared out alike. (On the H100, A/A pairs of ~20 us
        kernels chose batches of 8 and 12 from one noisy measurement each.)"""
        r = self.result
        batches = (r.ref_batch, r.new_batch)
        if (r.ref_timer not in timing.BATCHED_METHODS or r.new_timer != r.ref_timer
                or not all(isinstance(b, int) for b in batches) or r.ref_batch == r.new_batch):
            return
        batch = min(r.ref_batch, r.new_batch)
        self.prepare_side(reference=r.ref_batch > batch, allow_graph=r.ref_timer == "cuda_graph", batch=batch)
        if r.ref_timer != r.new_timer:  # captured again with the other's batch, its graph failed: plain launches both
            self.prepare_side(reference=r.ref_timer == "cuda_graph", batch=batch)

    def prepare_side(self, reference: bool, **how) -> None:
        """prepare_again on one side's worker (the reference's in its turn), its (method, batch) recorded."""
        r = self.result
        if reference:
            with self.reference_side():
                r.ref_timer, r.ref_batch = self.prepare_again(self.ref_sandbox, **how)
        else:
            r.new_timer, r.new_batch = self.prepare_again(self.sandbox, **how)

    def send_timing_inputs(self, trial: int) -> None:
        """Give each worker timing inputs of its own (the same ones), from its outbox. The inputs are made in the
        reference's outbox and the candidate's copied from them, so the judge holds two copies at most, not three
        (the 16 GiB input of KernelBench's 45_Average_Pooling_2D did not fit on the H100 three times over)."""
        def made_in_outbox():
            with self.ref_sandbox.outbox.allocating():
                return self.reference.make_inputs(trial, wide=False)

        ref_inputs = self.retried_when_full(made_in_outbox)
        new_inputs = self.retried_when_full(functools.partial(self.sandbox.outbox.copies, ref_inputs))
        self.hand_over()  # a worker that maps a pool block it mapped before does not wait for our writes
        with self.reference_side():
            self.expect_ok(self.ref_sandbox.request("set_timing_inputs", self.cfg.timeout, inputs=ref_inputs,
                                                    stateful=bool(self.reference.stateful)))
        # The reference's worker keeps a copy of its own: ours goes back before the candidate's worker makes its copy.
        del ref_inputs
        release_cached_memory(self.device, outboxes=[self.ref_sandbox.outbox])
        self.expect_ok(self.sandbox.request("set_timing_inputs", self.cfg.timeout, inputs=new_inputs,
                                            stateful=bool(self.reference.stateful)))
        del new_inputs
        release_cached_memory(self.device, outboxes=self.judge.outboxes())

    def prepare_again(self, sandbox, allow_graph: bool = False, batched: bool = False, batch: int | None = None,
                      windows: int | None = None) -> tuple:
        """Ask a worker to (re)choose its timing method (batched: batch its calls however long they measure; batch:
        this many calls a window; windows: this many single windows a sample, if its calls are not batched); its
        (method, batch)."""
        prepared = self.expect_ok(sandbox.request("prepare_timing", self.cfg.timeout, warmup=self.cfg.warmup,
                                                  allow_graph=allow_graph, batched=batched, batch=batch,
                                                  windows=windows, lead_us=self.cfg.launch_lead_us))
        method, batch = (prepared.get("method"), prepared.get("batch")) if isinstance(prepared, dict) else (None, None)
        return (method if method in timing.METHODS else "unknown"), (batch if isinstance(batch, int) else None)
