"""Both workers of a pair as the judge drives them (harness/judge/workers.py): the reference's worker's first call,
and a Failed reply turned into the pair's verdict."""
import contextlib
from types import SimpleNamespace

import pytest
import torch

from harness.common.config import build_config

from harness.common import channel
from harness.common.verdict import Status, Verdict
from harness.judge.workers import PairWorkers


def test_the_reference_workers_first_call_finds_the_room_the_candidates_will():
    """PairWorkers.reference_worker_first_call: the candidate's worker emptied first (what its __init__ cached), the
    reference's worker called on the trial's inputs and seed, its freed memory poisoned for outputs of the reference's
    sizes as the candidate's is before its call (an A/A pair leaned 1.2% on an H100 while only one side's first call
    was poisoned), then emptied of its outputs, cache and workspaces before the candidate's first call; once per pair
    (once made: not where the judge ran out of memory before it)."""
    requests = []

    def worker(name):
        def request(op, timeout, **args):
            requests.append((name, op, args.get("seed"), args.get("workspaces"), args.get("poison_sizes")))
            return channel.Ok({})
        return SimpleNamespace(request=request, outbox=SimpleNamespace(copies=lambda xs: [x.clone() for x in xs]))

    judge = SimpleNamespace(reference_worker_called=False, device=torch.device("cpu"), cfg=build_config().replace(timeout=5),
                            sandbox=worker("candidate"), ref_sandbox=worker("reference"), outboxes=lambda: [],
                            hand_over=lambda: None, expect_ok=lambda reply, sandbox=None: reply.payload,
                            reference_side=contextlib.nullcontext)  # stands in for a PairWorkers
    ref_out = (torch.ones(3), torch.ones(5, dtype=torch.float64))
    PairWorkers.reference_worker_first_call(judge, [torch.ones(2)], ref_out, 7)
    PairWorkers.reference_worker_first_call(judge, [torch.ones(2)], ref_out, 8)  # a second attempt: no second first call
    assert requests == [("candidate", "release_memory", None, True, None), ("reference", "run", 7, None, [12, 40]),
                        ("reference", "release_outputs", None, None, None),
                        ("reference", "release_memory", None, True, None)]

    def out_of_memory(tensors):
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 6.00 GiB")

    judge.reference_worker_called, judge.ref_sandbox.outbox.copies = False, out_of_memory
    with pytest.raises(torch.cuda.OutOfMemoryError):
        PairWorkers.reference_worker_first_call(judge, [torch.ones(2)], ref_out, 7)
    assert not judge.reference_worker_called  # the trial, run again (Trials.trial_retried_when_full), makes it again


def workers_on(device: str, memory=None):
    """PairWorkers on `device` with stand-in sandboxes, whose candidate's log reads `build log`."""
    from support import pair_job

    reference = SimpleNamespace(memory=memory)
    log = SimpleNamespace(text=lambda: "build log")
    sandboxes = (SimpleNamespace(log=log, proc=SimpleNamespace(pid=1)), SimpleNamespace(log=log, proc=SimpleNamespace(pid=2)))
    job = pair_job()
    return PairWorkers(job, job.config, torch.device(device), None, reference, sandboxes)


def test_an_ok_reply_gives_its_payload_and_a_failed_one_ends_the_pair_with_its_status():
    workers = workers_on("cpu")
    assert workers.expect_ok(channel.Ok({"x": 1})) == {"x": 1}
    with pytest.raises(Verdict) as raised:
        workers.expect_ok(channel.Failed(Status.INCORRECT, "wrong shape"))
    assert (raised.value.status, raised.value.error) == (Status.INCORRECT, "wrong shape")


def test_a_candidate_that_needs_cuda_is_skipped_on_the_cpu():
    with pytest.raises(Verdict) as raised:
        workers_on("cpu").expect_ok(channel.Failed(Status.RUNTIME_ERROR, "Torch not compiled with CUDA enabled"))
    assert raised.value.status == Status.SKIPPED and "needs a CUDA GPU" in raised.value.error


def test_the_reference_workers_failure_is_the_harnesss():
    workers = workers_on("cpu", memory=SimpleNamespace(blame=lambda message, *pids: None))
    with pytest.raises(Verdict) as raised:
        with workers.reference_side():
            workers.expect_ok(channel.Failed(Status.RUNTIME_ERROR, "boom"))
    assert raised.value.status == Status.HARNESS_ERROR and "reference's timing worker failed" in raised.value.error
    assert not workers.on_reference_side
