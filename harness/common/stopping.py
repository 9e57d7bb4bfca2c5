"""Ctrl-C and SIGTERM in the runner: the first stops the run (no pair starts any more, the processes of the pairs in
flight are killed and those pairs record nothing, so that --resume runs them), the second ends the runner at once.
Judges, workers and builds are the runner's descendants: a stop kills them all."""
from __future__ import annotations

import os
import signal
import threading
from typing import Optional

from harness.common import procs

STOP = threading.Event()
SIGNAL: list = []  # the signal that stopped the run


class Interrupted(Exception):
    """The run was stopped while this pair was judged or built: it records nothing."""


def requested() -> bool:
    """Has a signal stopped the run?"""
    return STOP.is_set()


def check() -> None:
    """Raise Interrupted when the run has been stopped (before a pair starts, or when its processes vanish)."""
    if STOP.is_set():
        raise Interrupted()


def install() -> None:
    """Handle SIGINT and SIGTERM in this (the runner's main) thread from now on."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, on_signal)


def on_signal(signum: int, frame) -> None:
    """First signal: stop, and kill every process the run started. Second: kill them again and exit now."""
    if STOP.is_set():
        kill_descendants()
        os._exit(exit_code())
    SIGNAL.append(signum)
    STOP.set()
    kill_descendants()


def exit_code() -> int:
    """128 + the signal's number, as a shell reports a process a signal ended (130 for Ctrl-C, 143 for SIGTERM)."""
    return 128 + (SIGNAL[0] if SIGNAL else signal.SIGINT)


def signal_name() -> Optional[str]:
    return signal.Signals(SIGNAL[0]).name if SIGNAL else None


def kill_descendants() -> None:
    """SIGKILL every process below this one (judge factory, judges, workers, builds)."""
    for pid in procs.tree([os.getpid()])[1:]:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def ignore_interrupts() -> None:
    """In a judge or the judge factory: Ctrl-C reaches the terminal's whole process group, but only the runner decides
    what a stop means (it kills us)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
