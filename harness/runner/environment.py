"""The machine a run is on: torch and GPU facts (probed in a child process), the device to use, and provenance
(meta.json, versions, the harness's commit). Never imports torch."""
from __future__ import annotations

import importlib.util
import json
import platform
import runpy
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional

from harness.common import confine, store
from harness.common.config import Config
from harness.common.devices import is_gpu, gpu_index
from harness.common.discover import sha256_text
from harness.common.errors import UserError
from harness.common.places import ROOT

PROBE = """
import json, torch
cuda = torch.cuda.is_available()
print(json.dumps({"torch": torch.__version__, "cuda_version": torch.version.cuda, "cuda_available": cuda,
                  "gpus": [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())] if cuda else [],
                  "capabilities": ["%d.%d" % torch.cuda.get_device_capability(i)
                                   for i in range(torch.cuda.device_count())] if cuda else []}))
"""


class UsageError(UserError):
    """A request this machine cannot serve, such as --device cuda without a GPU (the CLI exits 2)."""


def probe_environment(device: str = "auto") -> dict:
    """torch and GPU facts from a child process (never CUDA here); a CPU run skips the child's seconds-long import."""
    if device == "cpu" and (facts := cpu_facts()) is not None:  # ("auto" may be a GPU: probed)
        return facts
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        raise UsageError(f"could not import torch: {out.stderr.strip()[-500:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def cpu_facts() -> Optional[dict]:
    """torch's version and CUDA version from torch/version.py, without importing torch (None if unreadable)."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.origin:
        return None
    try:
        version = runpy.run_path(str(Path(spec.origin).parent / "version.py"))
        return {"torch": str(version["__version__"]), "cuda_version": version.get("cuda"), "cuda_available": False,
                "gpus": [], "capabilities": []}
    except Exception:  # an unusual install: the child process's probe will tell
        return None


def resolve_device(requested: str, env: dict) -> str:
    """auto -> cuda:0 or cpu; cuda -> cuda:0; always indexed (for torch.cuda.set_device); no GPU: UsageError."""
    if requested == "auto":
        requested = "cuda" if env["cuda_available"] else "cpu"
    if is_gpu(requested):
        if not env["cuda_available"]:
            raise UsageError(f"--device {requested}: no CUDA GPU is visible here (torch {env['torch']}); use --device "
                             f"cpu")
        index = gpu_index(requested)
        if index >= len(env["gpus"]):
            raise UsageError(f"--device {requested}: only {len(env['gpus'])} GPU(s) visible")
        return f"cuda:{index}"
    return requested


def resolve_devices(spec: str, env: dict) -> list[str]:
    """--devices: "all", or indices / cuda:N names separated by commas; every one must be visible."""
    if not env["cuda_available"]:
        raise UsageError(f"--devices {spec}: no CUDA GPU is visible here (torch {env['torch']})")
    names = [f"cuda:{i}" for i in range(len(env["gpus"]))] if spec == "all" else \
        [resolve_device(d if is_gpu(d) else f"cuda:{d}", env) for d in spec.split(",") if d.strip()]
    if not names or len(set(names)) != len(names):
        raise UsageError(f"--devices {spec}: name each GPU once, e.g. --devices 0,1")
    models = {env["gpus"][gpu_index(n)] for n in names}
    if len(models) > 1:  # builds and timings are per GPU model: one run, one model
        raise UsageError(f"--devices {spec}: the GPUs differ ({', '.join(sorted(models))}); run each model separately")
    return names


def gpu_of(device: str, env: dict) -> Optional[str]:
    """The GPU model behind a cuda:N device (None on the CPU)."""
    return env["gpus"][gpu_index(device)] if is_gpu(device) else None


def capability_of(device: str, env: dict) -> Optional[str]:
    """The compute capability ("9.0") behind a cuda:N device, for builds made ahead of evaluation."""
    if not is_gpu(device):
        return None
    return env.get("capabilities", [None] * len(env["gpus"]))[gpu_index(device)]


def git_commit() -> Optional[str]:
    """The checkout's commit, or None outside a git repository."""
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def harness_version() -> str:
    """The git commit when harness/ is as committed there, else sha:<hash of harness/*.py> (a copy, or edits)."""
    commit = git_commit()
    if commit:
        try:
            clean = subprocess.run(["git", "diff", "--quiet", "HEAD", "--", "harness"], cwd=ROOT,
                                   timeout=10).returncode == 0
        except (OSError, subprocess.SubprocessError):
            clean = False
        if clean:
            return commit
    return f"sha:{harness_sha()}"


def harness_sha() -> str:
    """A hash of the harness's own source: provenance that survives a copy without .git."""
    root = ROOT / "harness"
    files = sorted(root.rglob("*.py"))
    return sha256_text("".join(f.relative_to(root).as_posix() + f.read_text() for f in files))[:12]


def provenance(env: dict) -> dict:
    """torch, CUDA and harness versions and the GPUs: stamped on every Result of the run."""
    return {"torch": env["torch"], "cuda_version": env["cuda_version"], "harness": harness_version(),
            "gpus": env["gpus"]}


def isolation(config: Config, device: str) -> dict:
    """meta.json's `isolation`: each protection of the harness's processes, "in force" or why it is missing."""
    facts = confine.probe()
    facts["one side at a time"] = "in force: a worker's processes are stopped between its requests"
    if is_gpu(device):
        probe_ms = config.timing.gpu_probe_ms
        facts["gpu probe"] = (f"in force: {probe_ms:g} ms probe before each window and after each round"
                              if probe_ms else "off (gpu_probe_ms: 0): other processes' GPU work unseen")
        facts["private handover memory"] = "in force: each worker's tensors in a GPU memory pool of its own"
    return facts


def missing_isolation(facts: dict) -> list:
    """The protections of an isolation() report that are not in force."""
    return [f"{name}: {state}" for name, state in facts.items() if not state.startswith("in force")]


def write_meta(run_dir: Path, facts: dict, env: dict, argv: list) -> None:
    """meta.json: `facts` (config, devices), machine, versions and commit; written once, atomically."""
    path = run_dir / "meta.json"
    if path.exists():
        return
    meta = {**facts, "argv": argv, "gpus": env["gpus"], "torch": env["torch"], "cuda_version": env["cuda_version"],
            "python": platform.python_version(), "platform": platform.platform(), "git_commit": git_commit(),
            "harness_sha": harness_sha(), "started": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    store.write_atomic(path, json.dumps(meta, indent=2, sort_keys=True, default=str) + "\n")
