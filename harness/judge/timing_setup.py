"""The timing_setup stage, run by PairTiming before its rounds: the FLOPs, both workers' timing inputs, each side's
timing method chosen and agreed, and one traced call of each (no_custom_kernel)."""
from __future__ import annotations

import functools
import re

from harness.common import methods
from harness.judge import footprint
from harness.judge.memory import release_cached_memory
from harness.common.problem_info import free_memory
from harness.common.verdict import Status, Verdict

# Torch operators that allocate, reshape or copy rather than compute.
BOOKKEEPING_OPS = re.compile(r"aten::(empty|view|reshape|_reshape|as_strided|detach|contiguous|expand|t$|transpose|"
                             r"permute|unsqueeze|squeeze|select|slice|alias|lift|resolve|_unsafe_view|clone|copy_|"
                             r"to$|_to_copy|zeros|ones|full|fill_|zero_|resize_|set_|result_type|item|"
                             r"_local_scalar_dense|is_|size|stride|numel|dim)")


class TimingSetup:
    """The timing_setup stage of one pair, through its PairTiming."""

    def __init__(self, pair_timing):
        self.workers, self.reference = pair_timing.workers, pair_timing.reference
        self.cfg, self.job, self.device, self.report = (pair_timing.cfg, pair_timing.job, pair_timing.device,
                                                        pair_timing.report)
        self.sandbox, self.ref_sandbox = pair_timing.sandbox, pair_timing.ref_sandbox
        self.phase, self.reference_side = pair_timing.phase, pair_timing.reference_side
        self.expect_ok, self.hand_over = pair_timing.expect_ok, pair_timing.hand_over
        self.retried_when_full = pair_timing.retried_when_full

    def run(self) -> None:
        """Timing inputs to both workers, their methods chosen, one call of each traced."""
        trial = self.cfg.correctness.total_trials  # the timing inputs' seed: past the correctness trials'
        if self.job.flops is not None:  # counted by an earlier judge of this run on this problem
            self.reference.flops, self.reference.tf32_flops = self.job.flops, self.job.tf32_flops or 0
        else:
            with self.phase("timing_setup.flops"):
                self.reference.call(self.reference.make_inputs(trial, wide=False), count_flops=True)
        self.report.flops, self.report.tf32_flops = self.reference.flops, self.reference.tf32_flops
        release_cached_memory(self.device, outboxes=self.workers.outboxes())
        with self.phase("timing_setup.prepare"):
            self.send_timing_inputs(trial)
            self.prepare_sides()
        with self.phase("timing_setup.trace"):
            if self.uses_only_reference_ops():
                self.report.flags.append("no_custom_kernel")

    def uses_only_reference_ops(self) -> bool:
        """Did the candidate launch only the reference's kernels (GPU) or torch operators (CPU)? Nothing traced: no."""
        with self.reference_side():  # one side at a time, as everything the workers run from here on
            ref_reply = self.ref_sandbox.request("trace", self.cfg.limits.timeout)
        new_reply = self.sandbox.request("trace", self.cfg.limits.timeout)
        # a profiler that cannot start leaves the flag unset and blames no one
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
                    self.report.backend = "triton"  # torch.compile's kernels, say, in a candidate written in torch
                return bool(mine) and mine <= set(ref["kernels"])
            mine = {op for op in new["ops"] if not BOOKKEEPING_OPS.match(op)}
            return bool(mine) and mine <= set(ref["ops"])
        except (TypeError, KeyError):
            raise Verdict(Status.CRASH, f"malformed trace from the worker: {str(new)[:200]}") from None

    def prepare_sides(self) -> None:
        """Both workers choose a timing method, the reference's first (its room checked), then are made alike."""
        gpu = self.device.type == "cuda"
        free_before = free_memory(self.device) if gpu else 0
        self.prepare_side(reference=True, allow_graph=True)
        if gpu:
            self.reference.memory.check_room_alike(free_before, free_memory(self.device))
        ref = methods.named(self.report.ref_timer)
        windows = self.report.ref_batch if ref and not ref.batched else None
        self.prepare_side(reference=False, allow_graph=True, windows=windows)
        self.same_method_both_sides()

    def same_method_both_sides(self) -> None:
        """One method on both sides (batched over alone, plain over graph): docs/decisions/timing-alike.md"""
        r = self.report
        ref, new = methods.named(r.ref_timer), methods.named(r.new_timer)
        if ref and new and ref.batched != new.batched and not (ref.host_clock or new.host_clock):
            batched = ref if ref.batched else new  # the single side batched, with a graph if the other has one
            self.prepare_side(reference=not ref.batched, allow_graph=batched.graph, batched=True)
            ref, new = methods.named(r.ref_timer), methods.named(r.new_timer)
        if ref and new and ref.batched and new.batched and ref.graph != new.graph:
            self.prepare_side(reference=ref.graph, batched=True)  # the graph's side to plain launches
        self.same_batch_both_sides()

    def same_batch_both_sides(self) -> None:
        """Batched sides time the smaller batch: docs/decisions/timing-alike.md"""
        r = self.report
        batches = (r.ref_batch, r.new_batch)
        ref = methods.named(r.ref_timer)
        if (not (ref and ref.batched) or r.new_timer != r.ref_timer
                or not all(isinstance(b, int) for b in batches) or r.ref_batch == r.new_batch):
            return
        batch = min(r.ref_batch, r.new_batch)
        self.prepare_side(reference=r.ref_batch > batch, allow_graph=methods.is_graph(r.ref_timer), batch=batch)
        if r.ref_timer != r.new_timer:  # captured again with the other's batch, its graph failed: plain launches both
            self.prepare_side(reference=methods.is_graph(r.ref_timer), batch=batch)

    def prepare_side(self, reference: bool, **how) -> None:
        """prepare_again on one side's worker, its (method, batch) recorded."""
        r = self.report
        if reference:
            with self.reference_side():
                r.ref_timer, r.ref_batch = self.prepare_again(self.ref_sandbox, **how)
        else:
            r.new_timer, r.new_batch = self.prepare_again(self.sandbox, **how)

    def send_timing_inputs(self, trial: int) -> None:
        """The same timing inputs to each worker from its outbox; made in the reference's, so two copies, not three."""
        def made_in_outbox():
            with self.ref_sandbox.outbox.allocating():
                return self.reference.make_inputs(trial, wide=False)

        ref_inputs = self.retried_when_full(made_in_outbox)
        new_inputs = self.retried_when_full(functools.partial(self.sandbox.outbox.copies, ref_inputs))
        self.hand_over()  # a worker that maps a pool block it mapped before does not wait for our writes
        with self.reference_side():
            self.expect_ok(self.ref_sandbox.request("set_timing_inputs", self.cfg.limits.timeout, inputs=ref_inputs,
                                                    stateful=bool(self.reference.stateful)))
        # The reference's worker keeps a copy of its own: ours goes back before the candidate's worker makes its copy.
        del ref_inputs
        release_cached_memory(self.device, outboxes=[self.ref_sandbox.outbox])
        self.expect_ok(self.sandbox.request("set_timing_inputs", self.cfg.limits.timeout, inputs=new_inputs,
                                            stateful=bool(self.reference.stateful)))
        del new_inputs
        release_cached_memory(self.device, outboxes=self.workers.outboxes())

    def prepare_again(self, sandbox, allow_graph: bool = False, batched: bool = False, batch: int | None = None,
                      windows: int | None = None) -> tuple:
        """A worker's (method, batch), (re)chosen: `batched` at any length, `batch` calls, or `windows` a sample."""
        prepared = self.expect_ok(sandbox.request("prepare_timing", self.cfg.limits.timeout,
                                                  warmup=self.cfg.timing.warmup,
                                                  allow_graph=allow_graph, batched=batched, batch=batch,
                                                  windows=windows, lead_us=self.cfg.timing.launch_lead_us))
        method, batch = (prepared.get("method"), prepared.get("batch")) if isinstance(prepared, dict) else (None, None)
        return (method if methods.named(method) else "unknown"), (batch if isinstance(batch, int) else None)
