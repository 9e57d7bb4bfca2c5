"""The judge <-> worker channel: tensors cross as shared memory or CUDA IPC handles, never as bytes; replies are
unpickled from an allow-list (no candidate code is imported)."""
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
import torch.multiprocessing  # noqa: F401  (tensor reductions)

from harness.common.verdict import WORKER_STATUSES, Status

# CPU tensors as named shared-memory files: no descriptors to pass.
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


MAX_REPLY_BYTES = 64 << 20  # tensors cross as handles: a reply is a few KB
MAX_INT_BITS = 63  # a wider integer is forged (Python cannot even print 10**4300)


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
    """Make a read or write on `conn` stalled `seconds` raise BlockingIOError (no peer can hang us)."""
    value = struct.pack("ll", int(seconds), int((seconds % 1) * 1e6))
    sock = socket.socket(fileno=os.dup(conn.fileno()))  # our own descriptor of the same socket
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, value)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, value)
    finally:
        sock.close()


def recv_restricted(conn: Connection):
    """One reply from an untrusted peer (at most MAX_REPLY_BYTES)."""
    try:
        data = conn.recv_bytes(MAX_REPLY_BYTES)
    except OSError as exc:
        if "bad message length" in str(exc):
            raise OversizedReply(f"over {MAX_REPLY_BYTES} bytes") from None
        raise
    return RestrictedUnpickler(io.BytesIO(data)).load()



@dataclass(frozen=True)
class Ok:
    """A request done, and its payload."""

    payload: Any


@dataclass(frozen=True)
class Failed:
    """A request failed in the candidate's code: a status, and why."""

    status: Status
    message: str


Reply = Union[Ok, Failed]


class MalformedReply(ValueError):
    """Neither ("ok", payload) nor ("error", a worker status, message)."""


def ok(payload: Any = None) -> tuple:
    """The wire form of a successful reply."""
    return ("ok", payload)


def failed(status: str, message: str) -> tuple:
    """The wire form of a failed request (`status` in WORKER_STATUSES)."""
    assert status in WORKER_STATUSES, status
    return ("error", status, message)


def parse_reply(reply) -> Reply:
    """Ok or Failed from an untrusted reply; MalformedReply for anything a worker may not send."""
    if not narrow_ints(reply):
        raise MalformedReply(f"malformed reply from the worker: an integer wider than {MAX_INT_BITS} bits")
    if isinstance(reply, tuple) and len(reply) == 2 and reply[0] == "ok":
        return Ok(reply[1])
    if (isinstance(reply, tuple) and len(reply) == 3 and reply[0] == "error" and reply[1] in WORKER_STATUSES
            and isinstance(reply[2], str)):
        return Failed(Status(reply[1]), reply[2])
    raise MalformedReply(f"malformed reply from the worker: {str(reply)[:200]}")


def narrow_ints(value) -> bool:
    """No integer in the reply wider than MAX_INT_BITS."""
    if isinstance(value, int):
        return value.bit_length() <= MAX_INT_BITS
    if isinstance(value, (list, tuple)):
        return all(narrow_ints(v) for v in value)
    if isinstance(value, dict):
        return all(narrow_ints(k) and narrow_ints(v) for k, v in value.items())
    return True
