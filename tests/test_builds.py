"""The build stage: extensions built ahead in CPU-only workers; a failed build ends the pair before any judge."""
import json
import subprocess
import sys

from support import FAST_CONFIG, FIXTURES, ROOT
from harness.runner import builds
from harness.common import discover
from harness.common.config import build_config


BUILD_FIXTURES = ("broken_cpp", "broken_in_init_cpp", "relu_cpp", "gated_cpp", "gated_broken_cpp", "lazy_cpp",
                  "lazy_moved_cpp", "lazy_real_cpp", "caught_broken_cpp")


def test_build_stage_builds_ahead_and_fails_early(tmp_path):
    config = tmp_path / "prebuild.yaml"
    config.write_text(FAST_CONFIG.read_text() + "prebuild: on\nbuild_workers: 5\ncompile_timeout: 300\ntimeout: 30\n"
                      f"build_cache_dir: {tmp_path / 'builds'}\n")  # empty: the stage must really build (5 at once)
    out = tmp_path / "run"
    args = [sys.executable, "run.py", "--problem", str(FIXTURES / "problems" / "fx_relu.py"), "--device", "cpu",
            "--config", str(config), "--out", str(out),
            *(arg for name in BUILD_FIXTURES for arg in ("--solution", str(FIXTURES / "builds" / f"{name}.py")))]
    proc = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-2000:]
    results = {r["solution"]: r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())}
    broken = results["broken_cpp"]
    assert broken["status"] == "compile_error" and "build stage" in broken["error"]
    assert "no_such_method" in broken["error"]
    assert not (out / "logs" / "fx_relu__broken_cpp.judge.log").exists()  # no judge, so no device, was used
    in_init = results["broken_in_init_cpp"]
    assert in_init["status"] == "compile_error" and in_init["error"].startswith("build stage: extension build in ModelNew")
    assert "-fno-such-flag-in-init" in in_init["error"]
    assert not (out / "logs" / "fx_relu__broken_in_init_cpp.judge.log").exists()
    built = results["relu_cpp"]
    assert built["status"] == "correct"
    phases = built["phases_s"]
    # The stage built it (a C++ build takes seconds, counted in compile_s); the evaluation found it built.
    assert phases["build_stage"] >= built["compile_s"] > 2
    assert phases["build"] + phases["workers"] < built["compile_s"]
    gated = results["gated_cpp"]  # builds only `if torch.cuda.is_available()`: a second worker of the stage says so
    assert gated["status"] == "correct" and gated["phases_s"]["build_stage"] >= gated["compile_s"] > 2
    # Its build failed on that pretence: the judge decides (no GPU there: correct without its extension).
    assert "build stage" not in (results["gated_broken_cpp"]["error"] or "")
    assert (out / "logs" / "fx_relu__gated_broken_cpp.judge.log").exists()
    lazy = results["lazy_cpp"]  # builds in its first forward call: the stage's call on meta tensors built it
    assert lazy["status"] == "correct" and lazy["phases_s"]["build_stage"] >= lazy["compile_s"] > 2
    assert lazy["phases_s"]["correctness.candidate"] < lazy["compile_s"] / 4
    moved = results["lazy_moved_cpp"]  # moves its input first (.to): the stage kept it on meta, and built it
    assert moved["status"] == "correct" and moved["phases_s"]["build_stage"] >= moved["compile_s"] > 2
    assert moved["phases_s"]["correctness.candidate"] < moved["compile_s"] / 4
    real = results["lazy_real_cpp"]  # builds only on real tensors: by its judge, counted in compile_s all the same
    assert real["status"] == "correct" and real["phases_s"]["correctness.candidate"] >= real["compile_s"] > 2
    caught = results["caught_broken_cpp"]  # its build failed in the stage, and the candidate caught that
    assert caught["status"] == "correct" and caught["compile_s"] > 2
    # The judge's worker was told of the failure, not compiling it again (that would take as long as the stage's).
    assert caught["phases_s"]["build"] < caught["compile_s"] / 4
    assert "not compiled again" in (out / "logs" / "fx_relu__caught_broken_cpp.worker.log").read_text()


def test_pool_size_follows_cores_and_memory(monkeypatch):
    assert builds.pool_size(build_config().replace(build_workers=3)) == 3

    def machine(cores, gib):
        monkeypatch.setattr(builds.os, "cpu_count", lambda: cores)
        page = 4096
        monkeypatch.setattr(builds.os, "sysconf", lambda name: page if name == "SC_PAGE_SIZE" else gib * 2**30 // page)
        return builds.pool_size(build_config().replace(build_workers=0))

    assert machine(16, 64) == 8  # half the cores
    assert machine(16, 12) == 3  # one per 4 GiB available
    assert machine(64, 512) == 8  # at most 8
    assert machine(2, 1) == 1  # never none


def test_build_stage_switch_and_sniffing():
    auto, on, off = (build_config().replace(prebuild=value) for value in ("auto", "on", "off"))
    assert builds.enabled(auto, "cuda:0") and not builds.enabled(auto, "cpu")
    assert builds.enabled(on, "cpu") and not builds.enabled(off, "cuda:1")
    assert discover.builds_extension("from torch.utils.cpp_extension import load_inline")


def test_a_killed_build_does_not_block_the_next(tmp_path, monkeypatch):
    from harness.worker import worker

    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))
    (tmp_path / "some_ext").mkdir()
    (tmp_path / "some_ext" / "lock").write_text("")  # what torch leaves when its builder is killed
    assert worker.lock_build_dir() and not (tmp_path / "some_ext" / "lock").exists()
    assert not worker.lock_build_dir()  # held already: a build in __init__ runs under import's lock
    worker.release_build_dir()
    assert worker.BUILD_LOCK["fd"] is None


def test_a_candidate_that_hangs_on_meta_tensors_is_left_to_its_judge(tmp_path):
    """The stage's call on meta tensors is for builds only: its hang or failure decides nothing (the judge will)."""
    source = "import torch.nn as nn  # load_inline: never called\n\n\nclass ModelNew(nn.Module):\n" \
             "    def forward(self, x):\n        while True:\n            pass\n"
    path = tmp_path / "hangs.py"
    path.write_text(source)
    cfg = build_config(str(FAST_CONFIG), {"device": "cpu"}).replace(timeout=1.0)
    job = builds.BuildJob(str(path), source, {}, str(tmp_path / "builds"), None, cfg.to_dict(),
                          str(FIXTURES / "problems" / "fx_relu.py"))
    assert builds.build(job) == {"build_s": 0.0}


def test_a_meta_tensor_moved_to_a_device_stays_on_meta_in_the_stages_call():
    """A generation that calls .cuda() on its inputs before building (KernelBench level 1's p10 of CUDA-L1, 78 s of
    the GPU's time in its judge) reaches its build on meta tensors; without the mode, .cuda() raises here (no CUDA)."""
    import torch
    from harness.worker.worker import StaysOnMeta

    x = torch.empty(2, 3, device="meta")
    with StaysOnMeta():
        moved = [x.cuda(), x.cpu(), x.to("cuda:0"), x.to(device="cuda", dtype=torch.float16), x.to("cpu", torch.int8)]
        real = torch.ones(2).to(torch.float64)  # real tensors move as ever
    assert all(t.is_meta and t.shape == (2, 3) for t in moved)
    assert [t.dtype for t in moved[3:]] == [torch.float16, torch.int8]
    assert real.device.type == "cpu" and real.dtype == torch.float64
