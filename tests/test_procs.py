"""Process hygiene: orphans killed and reaped, never a blocking wait."""
import os
import subprocess
import sys
import time

from harness import procs


def test_orphans_are_killed_and_helpers_spared():
    helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    orphan = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert procs.kill_orphans(spare=frozenset({helper.pid})) >= 1
        assert orphan.poll() is not None or not os.path.exists(f"/proc/{orphan.pid}")
        assert helper.poll() is None
    finally:
        helper.kill()
        helper.wait()


def test_reaping_gives_up_at_its_deadline():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        started = time.monotonic()
        procs.reap(child.pid, time.monotonic() + 0.3)  # still running: no blocking waitpid
        assert time.monotonic() - started < 5
    finally:
        child.kill()
        child.wait()
