"""The judge <-> worker channel: tensors cross as shared memory (CPU) or CUDA IPC handles, never as bytes.

Messages are pickled with torch's multiprocessing reductions. The judge unpickles the worker's replies
with an allow-list, so a reply can never make the judge import candidate code (a Tensor subclass, say).

A reply is plain data on the wire, ("ok", payload) or ("error", status, message), made by `ok` and `failed`
in the worker and read by `parse_reply` in the judge into Ok or Failed: the one place its format is known.
"""
from __future__ import annotations

import io
import os
import pickle
import socket
import struct
from dataclasses import dataclass
from multiprocessing.connection import Client, Connection, Listener
from typing import Any, Union

import torch
import torch.multiprocessing  # noqa: F401  (registers the tensor reductions with ForkingPickler)

from harness.common.verdict import WORKER_STATUSES, Status

# CPU tensors travel as named shared-memory files: no file descriptors to pass between unrelated processes.
torch.multiprocessing.set_sharing_strategy("file_system")

_ALLOWED = {
    "torch.multiprocessing.reductions": {
        "rebuild_tensor", "rebuild_cuda_tensor", "rebuild_typed_storage", "rebuild_storage_filename",
        "rebuild_storage_empty", "rebuild_typed_storage_child",
    },
    "torch.storage": {"UntypedStorage", "TypedStorage"},
    "torch": {"Size", "Tensor", "device"},
    "builtins": {"slice"},
    "collections": {"OrderedDict"},
}


MAX_REPLY_BYTES = 64 << 20  # replies carry tensors as handles: a few KB; more is a worker gone wrong
MAX_INT_BITS = 63  # a count, a batch, a size: a wider integer is forged (Python cannot even print one of 10**4300)


class OversizedReply(OSError):
    """The worker's reply is longer than MAX_REPLY_BYTES."""


class UnsafeReply(pickle.UnpicklingError):
    """The worker's reply named a global outside the allow-list."""


class RestrictedUnpickler(pickle.Unpickler):
    """Unpickles plain data and torch tensors only."""

    def find_class(self, module: str, name: str):
        if name in _ALLOWED.get(module, ()):
            return getattr(__import__(module, fromlist=[name]), name)
        if module == "torch" and isinstance(getattr(torch, name, None), torch.dtype):
            return getattr(torch, name)
        raise UnsafeReply(f"reply names {module}.{name}")


def listen(address: str, authkey: bytes) -> Listener:
    """A Unix-socket listener for one worker."""
    return Listener(address, family="AF_UNIX", authkey=authkey)


def connect(address: str, authkey: bytes) -> Connection:
    """The worker's end of the channel."""
    return Client(address, family="AF_UNIX", authkey=authkey)


def bound_stalls(conn: Connection, seconds: float) -> None:
    """A read or write on this connection that makes no progress for `seconds` raises BlockingIOError
    (SO_RCVTIMEO, SO_SNDTIMEO): a peer that sends half a message, or stops reading, cannot hang us."""
    value = struct.pack("ll", int(seconds), int((seconds % 1) * 1e6))
    sock = socket.socket(fileno=os.dup(conn.fileno()))  # the same socket, through a descriptor of our own
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, value)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, value)
    finally:
        sock.close()


def recv_restricted(conn: Connection):
    """Receive one reply from an untrusted peer (at most MAX_REPLY_BYTES)."""
    try:
        data = conn.recv_bytes(MAX_REPLY_BYTES)
    except OSError as exc:
        if "bad message length" in str(exc):
            raise OversizedReply(f"over {MAX_REPLY_BYTES} bytes") from None
        raise
    return RestrictedUnpickler(io.BytesIO(data)).load()



@dataclass(frozen=True)
class Ok:
    """A request done; its payload (a dict, a list of numbers, tensors)."""

    payload: Any


@dataclass(frozen=True)
class Failed:
    """A request failed in the candidate's code: one of the statuses a worker may report, and why."""

    status: Status
    message: str


Reply = Union[Ok, Failed]


class MalformedReply(ValueError):
    """A reply that is neither ("ok", payload) nor ("error", a worker status, message)."""


def ok(payload: Any = None) -> tuple:
    """The wire form of a successful reply."""
    return ("ok", payload)


def failed(status: str, message: str) -> tuple:
    """The wire form of a failed request; `status` is one of WORKER_STATUSES."""
    assert status in WORKER_STATUSES, status
    return ("error", status, message)


def parse_reply(reply) -> Reply:
    """Ok or Failed from a reply's wire form. The worker is untrusted: an error may only claim a status a
    worker can report (never `correct`), with a message; no integer in it may be wider than MAX_INT_BITS (one that
    reached the judge's record would stop it writing the record); anything else is malformed."""
    if not narrow_ints(reply):
        raise MalformedReply(f"malformed reply from the worker: an integer wider than {MAX_INT_BITS} bits")
    if isinstance(reply, tuple) and len(reply) == 2 and reply[0] == "ok":
        return Ok(reply[1])
    if (isinstance(reply, tuple) and len(reply) == 3 and reply[0] == "error" and reply[1] in WORKER_STATUSES
            and isinstance(reply[2], str)):
        return Failed(Status(reply[1]), reply[2])
    raise MalformedReply(f"malformed reply from the worker: {str(reply)[:200]}")


def narrow_ints(value) -> bool:
    """No integer in a reply's lists, tuples and dicts wider than MAX_INT_BITS (tensors are not looked into)."""
    if isinstance(value, int):
        return value.bit_length() <= MAX_INT_BITS
    if isinstance(value, (list, tuple)):
        return all(narrow_ints(v) for v in value)
    if isinstance(value, dict):
        return all(narrow_ints(k) and narrow_ints(v) for k, v in value.items())
    return True
