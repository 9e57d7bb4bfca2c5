"""The per-GPU lock that keeps the harness's start-ups out of a pair's timing windows (harness.gpu_lock)."""
import subprocess
import sys
import time

from support import ROOT
from harness import gpu_lock

HOLD = "import sys, time\nfrom harness import gpu_lock\nwith gpu_lock.exclusive(sys.argv[1], 0) as held:\n" \
       "    print(held, flush=True)\n    time.sleep(float(sys.argv[2]))\n"


def holder(device: str, seconds: float) -> subprocess.Popen:
    """Another process holding the device's lock for a while (it prints True once it holds it)."""
    proc = subprocess.Popen([sys.executable, "-c", HOLD, device, str(seconds)], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "True"
    return proc


def test_a_start_up_waits_for_the_pair_being_timed():
    proc = holder("cuda:7", 1.0)
    started = time.monotonic()
    with gpu_lock.exclusive("cuda:7", 30) as held:
        waited = time.monotonic() - started
    proc.wait()
    assert held and 0.5 < waited < 20


def test_a_lock_held_for_ever_delays_by_the_limit_only():
    proc = holder("cuda:6", 30)
    try:
        started = time.monotonic()
        with gpu_lock.exclusive("cuda:6", 0.3) as held:
            waited = time.monotonic() - started
        assert not held and 0.3 <= waited < 10
        with gpu_lock.exclusive("cuda:5", 0) as other:  # another GPU's lock is its own
            assert other
    finally:
        proc.kill()
