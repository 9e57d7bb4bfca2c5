"""The candidate's seccomp filter (harness/common/confine.py), with the process's capabilities kept: what it refuses is
refused by the filter, not by the kernel's capability checks (as root, those alone refuse a capability-less
candidate; as another user they refuse nothing here)."""
import ast
import os
import subprocess
import sys

import pytest

from harness.common import confine

pytestmark = pytest.mark.skipif(confine.SYSCALLS.get(os.uname().machine) is None, reason="no filter for this CPU")

ATTEMPTS = """
import os, resource, signal, sys
from harness.common import confine
other, me = int(sys.argv[1]), os.getpid()
assert confine.install_filter(me) is None
def outcome(call):
    try:
        call()
        return "ok"
    except PermissionError:
        return "refused"
print({
    "signal another": outcome(lambda: os.kill(other, signal.SIGCONT)),
    "probe another (signal 0)": outcome(lambda: os.kill(other, 0)),
    "pin another": outcome(lambda: os.sched_setaffinity(other, {0})),
    "renice another": outcome(lambda: os.setpriority(os.PRIO_PROCESS, other, 19)),
    "renice the user": outcome(lambda: os.setpriority(os.PRIO_USER, 0, 1)),
    "idle another": outcome(lambda: os.sched_setscheduler(other, os.SCHED_IDLE, os.sched_param(0))),
    "limit another": outcome(lambda: resource.prlimit(other, resource.RLIMIT_CORE, (0, 0))),
    "pin itself": outcome(lambda: os.sched_setaffinity(0, os.sched_getaffinity(0))),
    "pin itself by pid": outcome(lambda: os.sched_setaffinity(me, os.sched_getaffinity(0))),
    "renice itself": outcome(lambda: os.setpriority(os.PRIO_PROCESS, 0, 1)),
    "renice its group": outcome(lambda: os.setpriority(os.PRIO_PGRP, 0, 2)),
    "limit itself": outcome(lambda: resource.setrlimit(resource.RLIMIT_CORE, (0, 0))),
    "read its limits": outcome(lambda: resource.getrlimit(resource.RLIMIT_CORE)),
})
"""


def test_the_filter_refuses_signals_and_scheduling_of_other_processes_only():
    other = subprocess.Popen(["sleep", "60"])
    try:
        proc = subprocess.run([sys.executable, "-c", ATTEMPTS, str(other.pid)], capture_output=True, text=True,
                              timeout=60, start_new_session=True, cwd=os.path.dirname(os.path.dirname(__file__)))
        assert proc.returncode == 0, proc.stderr
        outcomes = ast.literal_eval(proc.stdout)  # a dict printed by the script above
        refused = {name for name, what in outcomes.items() if what == "refused"}
        assert refused == {"signal another", "pin another", "renice another", "renice the user", "idle another",
                           "limit another"}, outcomes
        assert other.poll() is None and os.getpriority(os.PRIO_PROCESS, other.pid) == 0
    finally:
        other.kill()
        other.wait()
