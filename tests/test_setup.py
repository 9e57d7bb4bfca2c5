"""The README's set-up as typed: the CPU build of torch installed apart and first, a torch range the CI's build meets,
and a test command that runs one file as it runs the suite."""
import re
import subprocess
import sys
from pathlib import Path

from support import ROOT


def readme_block(after: str) -> list:
    """The lines of the first ```bash block after `after` in the README."""
    text = (ROOT / "README.md").read_text()
    block = text[text.index(after):].split("```bash\n", 1)[1].split("```", 1)[0]
    return [line.strip() for line in block.splitlines() if line.strip()]


def test_the_cpu_set_up_installs_torchs_cpu_build_first_on_a_line_of_its_own():
    lines = readme_block("## Set-up")
    assert lines[0].startswith("pip install torch==") and "download.pytorch.org/whl/cpu" in lines[0]
    assert lines[1:] == ["pip install -r requirements.txt", "pytest"]


def test_the_torch_requirement_admits_the_build_ci_installs_first():
    from packaging.specifiers import SpecifierSet

    spec = next(line for line in (ROOT / "requirements.txt").read_text().splitlines() if line.startswith("torch"))
    ci = (ROOT / ".ci" / "run").read_text()
    pinned = re.search(r"pip install --quiet torch==([\d.]+)", ci).group(1)
    assert pinned in SpecifierSet(spec.removeprefix("torch").split("#")[0].strip())
    assert ci.index(f"torch=={pinned}") < ci.index("-r requirements.txt") < ci.index("pytest")


def test_one_test_file_runs_alone_as_typed():
    pytest = Path(sys.executable).parent / "pytest"  # the command, not `python -m pytest` (which adds the cwd)
    proc = subprocess.run([str(pytest), "-q", "-p", "no:cacheprovider", "tests/test_config.py"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:]
