"""The judge's side of the worker channel: the allow-list unpickler, and bounds on a peer that stalls or floods."""
import io
import os
import pickle
import time
from multiprocessing.connection import Pipe
from multiprocessing.reduction import ForkingPickler

import pytest
import torch

from harness.common import channel


def unpickle(obj) -> object:
    """Pickled as a worker's Connection.send does (torch's reductions: tensors as shared memory)."""
    return channel.RestrictedUnpickler(io.BytesIO(bytes(ForkingPickler.dumps(obj)))).load()


def test_plain_data_and_tensors_pass_the_allow_list():
    value = {"items": [torch.arange(3)], "kind": "tensor", "dtype": torch.float16, "x": (1.5, None, "s")}
    out = unpickle(value)
    assert torch.equal(out["items"][0], torch.arange(3)) and out["dtype"] is torch.float16 and out["x"] == (1.5, None, "s")


class Evil:
    def __reduce__(self):
        return (os.system, ("echo pwned",))


class TensorSubclass(torch.Tensor):
    pass


@pytest.mark.parametrize("obj", [Evil(), torch.arange(3).as_subclass(TensorSubclass), pickle.Pickler])
def test_anything_else_is_refused(obj):
    with pytest.raises(channel.UnsafeReply):
        unpickle(obj)


def test_a_reply_that_stops_mid_message_raises_instead_of_hanging():
    ours, theirs = Pipe()
    channel.bound_stalls(ours, 0.3)
    os.write(theirs.fileno(), (1000).to_bytes(4, "big") + b"only part")  # a header promising more than comes
    started = time.monotonic()
    with pytest.raises(BlockingIOError):
        channel.recv_restricted(ours)
    assert time.monotonic() - started < 5


def test_a_peer_that_stops_reading_cannot_block_our_sends():
    ours, theirs = Pipe()
    channel.bound_stalls(ours, 0.3)
    with pytest.raises(BlockingIOError):
        for _ in range(1000):  # the socket's buffer fills, then a send makes no progress
            ours.send_bytes(b"x" * 65536)


def test_an_oversized_reply_is_refused(monkeypatch):
    monkeypatch.setattr(channel, "MAX_REPLY_BYTES", 1024)
    ours, theirs = Pipe()
    theirs.send_bytes(b"x" * 4096)
    with pytest.raises(channel.OversizedReply):
        channel.recv_restricted(ours)


def test_replies_are_read_into_ok_or_failed():
    assert channel.parse_reply(channel.ok({"build_s": 1.5})) == channel.Ok({"build_s": 1.5})
    assert channel.parse_reply(channel.ok({"batch": 2**63 - 1, "ooms": -3})) == channel.Ok({"batch": 2**63 - 1, "ooms": -3})
    assert channel.parse_reply(channel.failed("runtime_error", "boom")) == channel.Failed("runtime_error", "boom")


@pytest.mark.parametrize("forged", [
    ("error", "correct", "trust me"),  # a status no worker may claim
    ("error", "harness_error", "blame the harness"),
    ("ok",), ("ok", 1, 2), ["ok", {}], "ok", None, ("fine", {}),
    ("error", "runtime_error", 10**5000),  # a message Python cannot print
    ("ok", {"method": "cuda_graph", "batch": 10**5000}), ("ok", [1.0, {"ooms": [2**64]}]), ("ok", {2**70: 1}),
])
def test_a_reply_outside_the_protocol_is_malformed(forged):
    with pytest.raises(channel.MalformedReply, match="malformed reply"):
        channel.parse_reply(forged)
