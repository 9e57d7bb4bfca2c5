"""What crosses to another process (harness/common/handover.py): a copy of its own, which the receiver may write without
touching the sender's."""
import contextlib

import torch

from harness.common import handover


def test_what_crosses_to_a_peer_is_a_copy_of_its_own():
    mine = [torch.ones(3), 5]
    outbox = handover.Outbox(torch.device("cpu"))
    sent = outbox.copies(mine)
    assert sent[1] == 5 and torch.equal(sent[0], mine[0])
    assert sent[0].untyped_storage().data_ptr() != mine[0].untyped_storage().data_ptr()
    sent[0].zero_()
    assert mine[0].sum() == 3  # a peer writing into what it got cannot touch ours
    state = outbox.state_copy({"w": mine[0]})
    assert state["w"].untyped_storage().data_ptr() != mine[0].untyped_storage().data_ptr()


def test_a_gpu_outbox_makes_its_pools_on_its_own_device(monkeypatch):
    """A MemPool belongs to the device current when it is made; one made on cuda:0 and used on cuda:1 failed
    PyTorch's allocator assertion on its second use (every pair on an H200 machine's second GPU)."""
    current, made_on = [0], []

    @contextlib.contextmanager
    def device(d):
        before, current[0] = current[0], torch.device(d).index
        try:
            yield
        finally:
            current[0] = before

    monkeypatch.setattr(torch.cuda, "device", device)
    monkeypatch.setattr(torch.cuda, "MemPool", lambda: made_on.append(current[0]) or object())
    outbox = handover.Outbox(torch.device("cuda", 1))
    outbox.release()  # the next copies go to a new pool: on cuda:1 too
    assert made_on == [1, 1] and current[0] == 0
