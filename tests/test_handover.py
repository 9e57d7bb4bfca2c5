"""What crosses to another process (harness/handover.py): a copy of its own, which the receiver may write without
touching the sender's."""
import torch

from harness import handover


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
