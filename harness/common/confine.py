"""Confinement of a process that runs candidate code: no capabilities, and a seccomp filter (inherited, irremovable)
that lets it signal only itself and its group, and trace, read or reschedule no other process. It keeps the
harness's user, as CUDA IPC refuses another's: docs/threat-model.md, "Confinement". Imports nothing heavy."""
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
FILTER = "seccomp filter (signals, tracing, scheduling of other processes)"  # the protection's name in reports

# (audit arch, {name: syscall number}) per architecture.
SYSCALLS = {
    "x86_64": (0xC000003E, {"kill": 62, "tkill": 200, "tgkill": 234, "rt_sigqueueinfo": 129, "rt_tgsigqueueinfo": 297,
                            "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311,
                            "pidfd_send_signal": 424, "pidfd_getfd": 438, "seccomp": 317, "capset": 126,
                            "setpriority": 141, "sched_setparam": 142, "sched_setscheduler": 144,
                            "sched_setaffinity": 203, "ioprio_set": 251, "migrate_pages": 256, "move_pages": 279,
                            "prlimit64": 302, "sched_setattr": 314}),
    "aarch64": (0xC00000B7, {"kill": 129, "tkill": 130, "tgkill": 131, "rt_sigqueueinfo": 138, "rt_tgsigqueueinfo": 240,
                             "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271,
                             "pidfd_send_signal": 424, "pidfd_getfd": 438, "seccomp": 277, "capset": 91,
                             "setpriority": 140, "sched_setparam": 118, "sched_setscheduler": 119,
                             "sched_setaffinity": 122, "ioprio_set": 30, "migrate_pages": 238, "move_pages": 239,
                             "prlimit64": 261, "sched_setattr": 274}),
}
DENIED = ("ptrace", "process_vm_readv", "process_vm_writev", "pidfd_send_signal", "pidfd_getfd")
# Allowed when argument 0 is this process (kill: also its group, 0 or -pid).
SELF_TARGETED = ("kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo")
# Allowed on this process only (argument 0: 0 or our pid); our other threads are refused too (a tid looks foreign).
OWN_PROCESS_ONLY = ("sched_setparam", "sched_setscheduler", "sched_setaffinity", "sched_setattr", "prlimit64",
                    "migrate_pages", "move_pages")
# setpriority and ioprio_set: `which` a process or group (the worker leads its own), `who` 0 or us; never the user.
PRIO_PROCESS, PRIO_PGRP, IOPRIO_WHO_PROCESS, IOPRIO_WHO_PGRP = 0, 1, 1, 2


def confine() -> dict:
    """Confine this process (one thread, no candidate code yet): {protection: None if in force, else why not}."""
    return {"capabilities dropped": drop_capabilities(), FILTER: install_filter(os.getpid())}


def drop_capabilities():
    """Empty this process's capability sets, the bounding set too (an exec cannot get them back)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return f"no_new_privs refused ({os.strerror(ctypes.get_errno())})"
    for cap in range(64):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and ctypes.get_errno() == errno.EINVAL:
            break  # past this kernel's last capability
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header = struct.pack("Ii", 0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = bytes(24)  # effective, permitted, inheritable: empty
    arch = SYSCALLS.get(platform.machine())
    if arch is None:
        return f"unknown architecture {platform.machine()}"
    if libc.syscall(arch[1]["capset"], header, data) != 0:
        return f"capset refused ({os.strerror(ctypes.get_errno())})"
    return None


def install_filter(own_pid: int):
    """Install the seccomp filter on all this process's threads; None when in force, else why not."""
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


# Classic BPF: (code, jump if true, jump if false, k); seccomp_data: nr at 0, arch at 4, args' low 32 bits at 16 + 8i.
LD_W_ABS, JEQ_K, JGE_K, RET_K = 0x20, 0x15, 0x35, 0x06
ARG = [16 + 8 * i for i in range(3)]


def filter_program(audit_arch: int, numbers: dict, own_pid: int, x86: bool) -> list:
    """The filter as BPF: foreign architectures, x32 and DENIED refused; the rest as the tables above say."""
    own, group = own_pid & 0xFFFFFFFF, (-own_pid) & 0xFFFFFFFF
    body = [(LD_W_ABS, 0, 0, 4), (JEQ_K, 1, 0, audit_arch), (RET_K, 0, 0, RET_EPERM), (LD_W_ABS, 0, 0, 0)]
    if x86:
        body += [(JGE_K, 0, 1, X32_BIT), (RET_K, 0, 0, RET_EPERM)]
    for name in DENIED:
        body += [(JEQ_K, 0, 1, numbers[name]), (RET_K, 0, 0, RET_EPERM)]
    for name in SELF_TARGETED:
        if name == "kill":
            body += allow_only_if(numbers[name], [(ARG[0], [own, 0, group])], [(ARG[1], [0])])
        else:
            body += allow_only_if(numbers[name], [(ARG[0], [own])])
    for name in OWN_PROCESS_ONLY:
        body += allow_only_if(numbers[name], [(ARG[0], [0, own])])
    body += allow_only_if(numbers["setpriority"], [(ARG[0], [PRIO_PROCESS, PRIO_PGRP]), (ARG[1], [0, own])])
    body += allow_only_if(numbers["ioprio_set"], [(ARG[0], [IOPRIO_WHO_PROCESS, IOPRIO_WHO_PGRP]), (ARG[1], [0, own])])
    return assemble(body + [(RET_K, 0, 0, RET_ALLOW)])


def allow_only_if(number: int, *alternatives: list) -> list:
    """One call's block: allowed if all (arg offset, values) of an alternative hold, else denied; labeled jumps."""
    tag = f"call{number}"
    block: list = [(JEQ_K, 0, f"{tag}.next", number)]
    for a, conditions in enumerate(alternatives):
        failed = f"{tag}.alternative{a + 1}" if a + 1 < len(alternatives) else f"{tag}.deny"
        for c, (offset, values) in enumerate(conditions):
            passed = f"{tag}.alternative{a}.condition{c + 1}" if c + 1 < len(conditions) else f"{tag}.allow"
            block.append((LD_W_ABS, 0, 0, offset))
            block += [(JEQ_K, passed, failed if v == len(values) - 1 else 0, value) for v, value in enumerate(values)]
            if c + 1 < len(conditions):
                block.append(passed)
        if a + 1 < len(alternatives):
            block.append(failed)
    return block + [f"{tag}.deny", (RET_K, 0, 0, RET_EPERM), f"{tag}.allow", (RET_K, 0, 0, RET_ALLOW),
                    f"{tag}.next", (LD_W_ABS, 0, 0, 0)]  # reload the call number


def assemble(items: list) -> list:
    """BPF from instructions and labels (strings marking the next instruction); a label jump becomes a skip count."""
    where, index = {}, 0
    for item in items:
        if isinstance(item, str):
            where[item] = index
        else:
            index += 1
    program: list[tuple[int, int, int, int]] = []
    for item in (i for i in items if not isinstance(i, str)):
        here = len(program) + 1  # jumps count from the next instruction
        code, true, false, k = item
        true, false = (where[j] - here if isinstance(j, str) else j for j in (true, false))
        assert 0 <= true < 256 and 0 <= false < 256, item
        program.append((code, true, false, k))
    return program


def probe() -> dict:
    """What a child that confines itself and signals us finds: {protection: "in force" or why not}."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child never returns
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
