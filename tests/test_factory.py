"""The judge factory (harness/runner/factory.py): judges forked from a process that imported torch once, each with
descriptors of its own; judges started as processes of their own when the factory is gone."""
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

from harness.runner import factory as judge_factory, judges
from test_judges import config, wait_for

ROOT = Path(__file__).resolve().parents[1]


def factory_starter(tmp_path) -> judges.JudgeStarter:
    return judges.JudgeStarter(SimpleNamespace(config=config(), run_dir=tmp_path, device="cpu"), (), ahead=0, factory=True)


def test_a_judge_forked_from_the_factory_judges_and_its_end_is_reported(tmp_path):
    starter = factory_starter(tmp_path)
    try:
        judge = starter.take("cpu")
        assert isinstance(judge.proc, judge_factory.ForkedJudge) and judge.proc.poll() is None
        judge.dismiss()  # an empty job: it stops its workers and exits 0
        assert judge.proc.returncode == 0
        killed = starter.take("cpu")
        killed.kill()
        assert killed.proc.returncode == -9
    finally:
        starter.close()
    assert starter.factories["cpu"].proc.wait(10) == 0


def test_a_judge_from_the_factory_has_none_of_its_descriptors(tmp_path):
    """The judge's stdin is the runner's pipe and its stderr its log; the factory's socket is not open in it (a
    worker it forks could ask the factory to kill other judges)."""
    starter = factory_starter(tmp_path)
    try:
        judge = starter.take("cpu")
        factory_sockets = {t for t in open_descriptors(starter.factories["cpu"].proc.pid).values() if t.startswith("socket:")}
        assert factory_sockets

        def set_up() -> bool:  # the forked child takes a moment to swap the factory's descriptors for its own
            fds = open_descriptors(judge.proc.pid)  # (it opens sockets of its own for its workers meanwhile)
            return fds.get(2) == str(judge.log_path) and not factory_sockets & set(fds.values())

        wait_for(set_up, 10)
        assert "pipe" in open_descriptors(judge.proc.pid)[0]
        judge.dismiss()
    finally:
        starter.close()


def open_descriptors(pid: int) -> dict:
    """{fd: what it is} of a running process, from /proc (one that closes as it is read is left out)."""
    found = {}
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            found[int(fd)] = os.readlink(f"/proc/{pid}/fd/{fd}")
        except FileNotFoundError:
            pass
    return found


def test_judge_processes_are_started_as_processes_of_their_own_when_the_factory_is_gone(tmp_path):
    starter = factory_starter(tmp_path)
    try:
        starter.take("cpu").dismiss()  # the factory starts with the first judge
        starter.factories["cpu"].proc.kill()
        starter.factories["cpu"].proc.wait(10)
        judge = starter.take("cpu")
        assert isinstance(judge.proc, subprocess.Popen) and "judge factory has ended" in judge.log_path.read_text()
        judge.dismiss()
        assert judge.proc.returncode == 0
    finally:
        starter.close()


def test_a_run_that_needs_no_judge_starts_no_factory(tmp_path):
    starter = factory_starter(tmp_path)
    starter.close()
    assert starter.factories == {}


LAZY_IMPORTS = """
import os, sys, torch
from harness.runner import factory
asked = []
# As on a CUDA build: cpp_extension's import then asks is_available() (cuInit, unless through NVML).
torch.cuda._is_compiled, torch.version.cuda = (lambda: True), "12.8"
torch.cuda.is_available = lambda: asked.append(os.environ.get(factory.NVML_CHECK)) or False
os.environ["CUDA_HOME"] = sys.prefix
factory.import_lazy_modules()
print(sorted(m for m in ("numpy.ma", "setuptools", "torch.utils.cpp_extension") if m in sys.modules), asked,
      os.environ.get(factory.NVML_CHECK), torch.cuda.is_initialized())
"""


def test_the_factory_imports_what_each_judge_and_worker_would_without_starting_cuda():
    """numpy's median and each worker's instrument_builds import these lazily (tenths of a second each where bytecode is
    not cached); cpp_extension's import asks is_available(), which must go through NVML before a fork."""
    env = {k: v for k, v in os.environ.items() if k != judge_factory.NVML_CHECK}
    out = subprocess.run([sys.executable, "-c", LAZY_IMPORTS], capture_output=True, text=True, cwd=ROOT, env=env,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[-2] == "['numpy.ma', 'setuptools', 'torch.utils.cpp_extension'] ['1'] None False"
