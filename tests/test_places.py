"""Where the harness finds its folders (harness/common/places.py), in a checkout and installed with pip: `pip install
.` gives the `kernel-harness` command, which judges a pair from any directory."""
import shutil
import subprocess
import sys

from support import FIXTURES, ROOT


def test_in_a_checkout_its_folders_are_the_checkouts():
    from harness.common import places
    from harness.common.config import DEFAULT_PATH

    assert places.CHECKOUT == ROOT and places.ROOT == ROOT
    assert DEFAULT_PATH == ROOT / "configs" / "default.yaml"
    assert (ROOT / "harness" / "common" / "configs").resolve() == ROOT / "configs"  # the link a wheel copies


def test_installed_with_pip_the_command_judges_a_pair_from_another_directory(tmp_path):
    source = tmp_path / "source"
    for name in ("harness", "configs"):
        shutil.copytree(ROOT / name, source / name, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    site, work = tmp_path / "site", tmp_path / "work"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", ".", "-w", str(tmp_path / "dist")],
                   cwd=source, check=True, capture_output=True, timeout=300)
    wheel = next((tmp_path / "dist").glob("kernel_harness-*.whl"))
    subprocess.run([*pip, "install", "--no-deps", "--target", str(site), str(wheel)], check=True, capture_output=True,
                   timeout=300)
    work.mkdir()
    shutil.copy(FIXTURES / "problems" / "fx_relu.py", work / "relu.py")
    shutil.copy(FIXTURES / "solutions" / "fx_relu" / "correct_torch.py", work / "candidate.py")
    shutil.copy(FIXTURES / "fast.yaml", work / "fast.yaml")
    env = {"PYTHONPATH": str(site), "PATH": f"{site / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path)}
    proc = subprocess.run([sys.executable, str(site / "bin" / "kernel-harness"), "--problem", "relu.py", "--solution",
                           "candidate.py", "--device", "cpu", "--config", "fast.yaml", "--out", "run"],
                          cwd=work, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert '"status": "correct"' in (work / "run" / "results.jsonl").read_text()
    packaged = site / "harness" / "common" / "configs"
    assert not packaged.is_symlink() and (packaged / "presets" / "rl.yaml").is_file()  # the package holds the files
