"""Confinement of a process that runs candidate code: no capabilities, and a seccomp filter that lets it signal
only itself and its own process group, and never trace or read another process.

Why not a separate user: CUDA IPC, which hands tensors between judge and worker, refuses a peer of another
user ("mapping of buffer object failed", seen on the H100). So the candidate keeps the harness's user and
loses, instead, what that user could do to the harness's other processes:
- capabilities (when the harness runs as root): without CAP_SYS_PTRACE, a non-dumpable process's
  /proc/<pid>/mem, environ and fd are closed to it, as to any other process of the same user;
- kill, tgkill, tkill, rt_(tg)sigqueueinfo to any process but itself or its own group, pidfd_send_signal,
  ptrace, process_vm_readv/writev and pidfd_getfd: each fails with EPERM.
A filter cannot be removed, and every child and thread of the process inherits it. Imports nothing heavy.
"""
from __future__ import annotations

import ast
import ctypes
import errno
import os
import platform
import signal
import struct

PR_SET_NO_NEW_PRIVS, PR_CAPBSET_DROP, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 38, 24, 47, 4
SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC = 1, 1
RET_ALLOW, RET_EPERM = 0x7FFF0000, 0x00050000 | errno.EPERM
X32_BIT = 0x40000000
FILTER = "seccomp signal/trace filter"  # the protection's name in reports

# Syscall numbers per architecture: (audit arch, {name: number}).
SYSCALLS = {
    "x86_64": (0xC000003E, {"kill": 62, "tkill": 200, "tgkill": 234, "rt_sigqueueinfo": 129, "rt_tgsigqueueinfo": 297,
                            "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311,
                            "pidfd_send_signal": 424, "pidfd_getfd": 438, "seccomp": 317, "capset": 126}),
    "aarch64": (0xC00000B7, {"kill": 129, "tkill": 130, "tgkill": 131, "rt_sigqueueinfo": 138, "rt_tgsigqueueinfo": 240,
                             "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271,
                             "pidfd_send_signal": 424, "pidfd_getfd": 438, "seccomp": 277, "capset": 91}),
}
DENIED = ("ptrace", "process_vm_readv", "process_vm_writev", "pidfd_send_signal", "pidfd_getfd")
# Signal calls allowed when their target (argument 0) is this process (or, for kill, its group: 0 or -pid).
SELF_TARGETED = ("kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo")


def confine() -> dict:
    """Confine this process (call it while it has one thread, before candidate code runs): {protection: None
    where it is in force, or why it is missing}."""
    return {"capabilities dropped": drop_capabilities(), FILTER: install_filter(os.getpid())}


def drop_capabilities():
    """Empty this process's capability sets, bounding set included (so an exec cannot get them back)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return f"no_new_privs refused ({os.strerror(ctypes.get_errno())})"
    for cap in range(64):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and ctypes.get_errno() == errno.EINVAL:
            break  # past the last capability this kernel knows
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header = struct.pack("Ii", 0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = bytes(24)  # effective, permitted, inheritable: empty, both 32-bit halves
    arch = SYSCALLS.get(platform.machine())
    if arch is None:
        return f"unknown architecture {platform.machine()}"
    if libc.syscall(arch[1]["capset"], header, data) != 0:
        return f"capset refused ({os.strerror(ctypes.get_errno())})"
    return None


def install_filter(own_pid: int):
    """Install the seccomp filter for this process and all its threads; None when in force, else why not."""
    arch = SYSCALLS.get(platform.machine())
    if arch is None:
        return f"no filter for architecture {platform.machine()}"
    program = filter_program(arch[0], arch[1], own_pid, x86=platform.machine() == "x86_64")
    code = b"".join(struct.pack("HBBI", *instruction) for instruction in program)
    buffer = ctypes.create_string_buffer(code)
    prog = struct.pack("HxxxxxxQ", len(program), ctypes.addressof(buffer))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return f"no_new_privs refused ({os.strerror(ctypes.get_errno())})"
    if libc.syscall(arch[1]["seccomp"], SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, prog) != 0:
        return f"seccomp refused ({os.strerror(ctypes.get_errno())})"
    return None


# Classic BPF: (code, jump if true, jump if false, k). seccomp_data: nr at 0, arch at 4, args at 16 + 8 i.
LD_W_ABS, JEQ_K, JGE_K, RET_K = 0x20, 0x15, 0x35, 0x06


def filter_program(audit_arch: int, numbers: dict, own_pid: int, x86: bool) -> list:
    """The filter as BPF instructions: foreign architectures and x32 calls denied; the calls in DENIED denied;
    those in SELF_TARGETED allowed only on this process (kill also on its group and with signal 0)."""
    own, group = own_pid & 0xFFFFFFFF, (-own_pid) & 0xFFFFFFFF
    body = []
    emit = body.append
    emit((LD_W_ABS, 0, 0, 4))
    emit((JEQ_K, 1, 0, audit_arch))
    emit((RET_K, 0, 0, RET_EPERM))
    emit((LD_W_ABS, 0, 0, 0))
    if x86:
        emit((JGE_K, 0, 1, X32_BIT))
        emit((RET_K, 0, 0, RET_EPERM))
    for name in DENIED:
        emit((JEQ_K, 0, 1, numbers[name]))
        emit((RET_K, 0, 0, RET_EPERM))
    for name in SELF_TARGETED:
        checks = [(16, own)] + ([(16, 0), (16, group), (24, 0)] if name == "kill" else [])
        n = len(checks)  # the block: this call's test, n (load, compare) pairs, deny, allow
        emit((JEQ_K, 0, 2 * n + 2, numbers[name]))  # another call: jump past the block
        for j, (offset, value) in enumerate(checks):
            emit((LD_W_ABS, 0, 0, offset))
            emit((JEQ_K, 2 * (n - j) - 1, 0, value))  # a match: jump to allow
        emit((RET_K, 0, 0, RET_EPERM))
        emit((RET_K, 0, 0, RET_ALLOW))
        emit((LD_W_ABS, 0, 0, 0))  # the next block reads the call number again
    emit((RET_K, 0, 0, RET_ALLOW))
    return body


def probe() -> dict:
    """What confinement this machine gives a candidate: a child confines itself and tries to signal us.
    {protection: "in force" | why it is missing}."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        report = {"?": "the probe died"}
        try:
            report = {name: why or "in force" for name, why in confine().items()}
            if report[FILTER] == "in force":
                try:
                    os.kill(os.getppid(), signal.SIGCONT)  # harmless to us, and must be refused
                    report[FILTER] = "installed, but a signal to another process went through"
                except PermissionError:
                    pass
        finally:
            os.write(write_end, repr(report).encode())
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        text = pipe.read().decode()
    os.waitpid(pid, 0)
    return ast.literal_eval(text) if text else {"?": "the probe died"}
