"""Process hygiene: orphans killed and reaped, never a blocking wait."""
import os
import subprocess
import sys
import time

from harness.common import procs


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


SPINNER = "import os, time\nif os.fork() == 0:\n    os.setsid()\nwhile True:\n    pass\n"


def test_a_tree_is_stopped_whole_and_continued():
    """A process and its child in a session of its own: every thread stopped, then running again."""
    root = subprocess.Popen([sys.executable, "-c", SPINNER])
    try:
        deadline = time.monotonic() + 10
        while len(procs.tree([root.pid])) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        pids = procs.tree([root.pid])
        assert len(pids) == 2
        stopped = procs.stop_all([root.pid])
        assert stopped == set(pids)
        assert all(set(procs.task_states(pid)) <= {"T"} for pid in pids)
        procs.continue_all(stopped)
        time.sleep(0.2)
        assert all("T" not in procs.task_states(pid) for pid in pids)
    finally:
        for pid in procs.tree([root.pid]):
            os.kill(pid, 9)
        root.wait()


def test_children_without_the_kernels_children_files(monkeypatch):
    """Where /proc/<pid>/task/*/children does not exist, children come from every process's parent pid."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert child.pid in procs.children(os.getpid())
        monkeypatch.setattr(procs, "task_files", lambda pid, name: None)
        assert child.pid in procs.children(os.getpid())
    finally:
        child.kill()
        child.wait()


def test_each_gpu_has_a_cpu_of_its_own_while_there_are_enough():
    cpus = os.sched_getaffinity(0)
    chosen = [procs.cpu_for_gpu(i) for i in range(len(cpus) - 1)]
    assert set(chosen) <= cpus and len(set(chosen)) == len(chosen)


def test_runs_given_different_gpus_by_cuda_visible_devices_time_on_different_cpus(monkeypatch):
    """Two runs side by side, one with CUDA_VISIBLE_DEVICES=0 and one with =1: both time on their cuda:0."""
    monkeypatch.setattr(procs.os, "sched_getaffinity", lambda pid: set(range(16)))
    monkeypatch.setattr(procs.clocks, "torch_uuid", lambda index: None)  # CUDA not started: by the variable's index
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    first = procs.cpu_for_gpu(0)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    assert procs.cpu_for_gpu(0) == 2 != first == 1


def test_the_timing_cpus_are_kept_free_where_there_are_enough():
    """Four GPUs, 64 CPUs: CPUs 1-4 kept for timing; two CPUs, one GPU: nothing kept (the CI runner)."""
    assert procs.reserved_for_timing(list(range(64)), range(4)) == {1, 2, 3, 4}
    assert procs.reserved_for_timing(list(range(16)), {3}) == {4}  # CUDA_VISIBLE_DEVICES=3, no NVML: its own CPU
    assert procs.reserved_for_timing([0, 1], {0}) == set() and procs.reserved_for_timing(list(range(16)), ()) == set()


def test_a_gpu_run_keeps_its_processes_off_the_timing_cpus_and_still_times_on_them(monkeypatch):
    """Inside, this process's threads (and what they start) run off the timing CPUs, and a judge started meanwhile
    still finds its GPU's timing CPU (from the run's CPUs, not its own narrowed ones); after, all as before."""
    affinity = {}
    monkeypatch.setattr(procs.os, "sched_getaffinity", lambda pid: set(affinity.get(pid, range(16))))
    monkeypatch.setattr(procs.os, "sched_setaffinity", lambda pid, cpus: affinity.__setitem__(pid, set(cpus)))
    monkeypatch.setattr(procs.os, "listdir", lambda path: ["101", "102"])  # two threads besides the caller
    monkeypatch.setattr(procs.clocks, "physical_index", lambda index: index)
    monkeypatch.delenv(procs.CPUS_ENV, raising=False)
    with procs.timing_cpus_kept_free({0, 1}) as kept:
        assert kept == {1, 2} and affinity[0] == affinity[101] == affinity[102] == set(range(16)) - {1, 2}
        assert (procs.cpu_for_gpu(0), procs.cpu_for_gpu(1)) == (1, 2)
    assert affinity[0] == affinity[101] == set(range(16)) and procs.CPUS_ENV not in os.environ
    affinity.clear()
    with procs.timing_cpus_kept_free(()) as kept:  # a CPU run
        assert kept == set() and affinity == {}


def test_share_one_cpu_pins_processes_to_one_cpu():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        cpu = procs.cpu_for_gpu(0)
        assert cpu in os.sched_getaffinity(0)
        assert procs.share_one_cpu([child.pid], cpu)
        assert os.sched_getaffinity(child.pid) == {cpu}
        assert not procs.share_one_cpu([2**22 + 7], cpu)  # no such process: refused, not raised
    finally:
        child.kill()
        child.wait()


def test_scheduling_changes_are_found_but_inherited_states_are_not():
    """The reference worker's check (PairTiming.check_reference_scheduling): a thread reniced, re-pinned or moved is
    a change; a new thread that starts from a state its creator had is none, nor is the judge's own pinning."""
    everywhere, cgroup = frozenset({0, 1}), "0::/\n"
    schedule = procs.Schedule(10, {10: (0, 0, everywhere, cgroup)}, {(0, 0, everywhere, cgroup)}, {})  # a fork: one thread
    schedule.pin(1)  # the judge pins its main thread (share_one_cpu), which threads it starts from then on inherit
    before, inherited = schedule.threads, schedule.inherited
    assert before[10] == (0, 0, frozenset({1}), cgroup) and (0, 0, everywhere, cgroup) in inherited
    unchanged = {10: before[10], 11: (0, 0, everywhere, cgroup), 12: (0, 0, frozenset({1}), cgroup)}
    assert procs.rescheduled(before, unchanged, inherited) == []
    assert procs.rescheduled(before, {10: (5, 0, frozenset({1}), cgroup)}, inherited) == ["thread 10: nice 0 -> 5"]
    assert procs.rescheduled(before, {10: before[10], 13: (19, 5, frozenset({0}), cgroup)}, inherited) == [
        "new thread 13: nice 0 -> 19, policy 0 -> 5, CPUs [1] -> [0]"]
    assert procs.rescheduled(before, {10: (0, 0, frozenset({1}), "0::/slow\n")}, inherited) == [
        "thread 10: cgroup 0::/ -> 0::/slow"]
    assert procs.rescheduled({}, unchanged, set()) == []  # nothing read before: nothing to compare


def test_a_process_scheduling_is_read_for_each_thread():
    states = procs.scheduling(os.getpid())
    assert os.getpid() in states
    nice, policy, cpus, _ = states[os.getpid()]
    assert nice == os.getpriority(os.PRIO_PROCESS, 0) and policy == os.sched_getscheduler(0)
    assert cpus == frozenset(os.sched_getaffinity(0))
    assert procs.Schedule.read(os.getpid()).changes() == []  # read twice, nothing changed


def test_cgroup_limits_along_a_processs_path_are_read_and_changes_named(tmp_path, monkeypatch):
    """cgroup v2 limits on the process's cgroup and its ancestors, from a fake tree: a candidate that can write them
    (a delegated cgroup) could throttle the reference's side only."""
    (tmp_path / "cgroup.controllers").write_text("cpu memory\n")
    leaf = tmp_path / "user.slice" / "run"
    leaf.mkdir(parents=True)
    (tmp_path / "user.slice" / "cpu.max").write_text("max 100000\n")
    (leaf / "cpu.max").write_text("max 100000\n")
    (leaf / "memory.high").write_text("max\n")
    real_open = open

    def fake_open(path, *args, **kwargs):  # this process's cgroup line, as v2 gives it
        if path == f"/proc/{os.getpid()}/cgroup":
            path = tmp_path / "proc-cgroup"
            path.write_text("0::/user.slice/run\n")
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr("builtins.open", fake_open)
    before = procs.cgroup_limits(os.getpid(), str(tmp_path))
    assert before == {"/user.slice/cpu.max": "max 100000", "/user.slice/run/cpu.max": "max 100000",
                      "/user.slice/run/memory.high": "max"}
    (tmp_path / "user.slice" / "cpu.max").write_text("1000 100000\n")
    assert procs.limits_changed(before, procs.cgroup_limits(os.getpid(), str(tmp_path))) == [
        "/user.slice/cpu.max max 100000 -> 1000 100000"]
    assert procs.cgroup_limits(os.getpid(), str(tmp_path / "no-such-root")) == {}


def test_a_gone_process_has_no_scheduling():
    gone = subprocess.Popen(["true"])
    gone.wait()
    assert procs.scheduling(gone.pid) == {} and procs.rescheduled({gone.pid: (0, 0, frozenset(), "")}, {}, set()) == []
