"""Ctrl-C and SIGTERM in the runner: the first stops the run (pairs in flight record nothing: --resume runs them),
the second ends it at once."""
from __future__ import annotations

import os
import signal
import threading
from typing import Optional

from harness.common import procs

STOP = threading.Event()
SIGNAL: list = []  # the signal that stopped the run


class Interrupted(Exception):
    """The run was stopped during this pair: it records nothing."""


def requested() -> bool:
    """Has a signal stopped the run?"""
    return STOP.is_set()


def check() -> None:
    """Raise Interrupted when the run has been stopped."""
    if STOP.is_set():
        raise Interrupted()


def install() -> None:
    """Handle SIGINT and SIGTERM in the runner's main thread."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, on_signal)


def on_signal(signum: int, frame) -> None:
    """First signal: stop, killing the run's processes; second: kill them and exit."""
    if STOP.is_set():
        kill_descendants()
        os._exit(exit_code())
    SIGNAL.append(signum)
    STOP.set()
    kill_descendants()


def exit_code() -> int:
    """128 + the signal, as a shell reports it."""
    return 128 + (SIGNAL[0] if SIGNAL else signal.SIGINT)


def signal_name() -> Optional[str]:
    return signal.Signals(SIGNAL[0]).name if SIGNAL else None


def kill_descendants() -> None:
    """SIGKILL every process below this one."""
    for pid in procs.tree([os.getpid()])[1:]:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def ignore_interrupts() -> None:
    """Ignore Ctrl-C in a judge or the judge factory: the runner decides what a stop means."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
