"""The judge <-> worker channel: tensors cross as shared memory (CPU) or CUDA IPC handles, never as bytes.

Messages are pickled with torch's multiprocessing reductions. The judge unpickles the worker's replies
with an allow-list, so a reply can never make the judge import candidate code (a Tensor subclass, say).
"""
from __future__ import annotations

import io
import os
import pickle
import socket
import struct
from multiprocessing.connection import Client, Connection, Listener

import torch
import torch.multiprocessing  # noqa: F401  (registers the tensor reductions with ForkingPickler)

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

