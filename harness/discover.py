"""Find problems and candidates without importing them; extract code from LLM responses."""
from __future__ import annotations

import ast
import difflib
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

ROOT = Path(__file__).resolve().parent.parent
PROBLEMS_DIR = ROOT / "problems"
SOLUTIONS_DIR = ROOT / "solutions"
SOLUTION_SUFFIXES = (".py", ".txt", ".md")
RESPONSE_SUFFIXES = (".txt", ".md")
# Source markers of code that cannot run without a CUDA GPU.
CUDA_MARKERS = re.compile(r"cuda_sources\s*=|__global__|<<<|\btriton\b")


class DiscoveryError(ValueError):
    """A usage error found while resolving problems or candidates (the CLI exits 2)."""


class ExtractError(ValueError):
    """An LLM response holds no fenced code block that defines ModelNew."""


@dataclass(frozen=True)
class Pair:
    """One problem file and one candidate file to judge together."""

    problem: str
    problem_path: Path
    solution: str
    solution_path: Path


def resolve_problem(name_or_path: str) -> list[Path]:
    """A problem name, file or directory -> problem files (a directory recursively, sorted)."""
    path = Path(name_or_path)
    if path.is_dir():
        files = sorted(p for p in path.rglob("*.py") if not p.name.startswith("_"))
        if not files:
            raise DiscoveryError(f"No problem files (*.py) under directory '{name_or_path}'")
        return files
    if path.is_file():
        return [path]
    if path.suffix or "/" in name_or_path:
        raise DiscoveryError(f"Problem file not found: '{name_or_path}'")
    candidate = PROBLEMS_DIR / f"{name_or_path}.py"
    if candidate.is_file():
        return [candidate]
    known = sorted(p.stem for p in PROBLEMS_DIR.glob("*.py"))
    close = difflib.get_close_matches(name_or_path, known, n=1)
    hint = f" Did you mean '{close[0]}'?" if close else f" Known problems: {', '.join(known)}."
    raise DiscoveryError(f"Unknown problem '{name_or_path}'.{hint}")


def solutions_for(problem_name: str) -> list[Path]:
    """The candidates in solutions/<problem>/, sorted; an error when there are none."""
    folder = SOLUTIONS_DIR / problem_name
    files = sorted(p for p in folder.glob("*") if p.suffix in SOLUTION_SUFFIXES and not p.name.startswith("_"))
    if not files:
        raise DiscoveryError(
            f"No candidates for problem '{problem_name}': {folder.relative_to(ROOT)}/ is missing or empty "
            "(add a file there, or pass --solution PATH)"
        )
    return files


def find_pairs(problems: list[str], solutions: Optional[list[str]] = None) -> list[Pair]:
    """Every (problem, candidate) pair the CLI arguments name, in a stable order."""
    problem_paths = [p for name in problems for p in resolve_problem(name)]
    explicit = [Path(s) for s in solutions or []]
    for path in explicit:
        if not path.is_file():
            raise DiscoveryError(f"Solution file not found: '{path}'")
    pairs = []
    for problem_path in problem_paths:
        candidates = explicit or solutions_for(problem_path.stem)
        pairs += [Pair(problem_path.stem, problem_path, c.stem, c) for c in candidates]
    check_unique_names(pairs)
    return pairs


def check_unique_names(pairs: list[Pair]) -> None:
    """Results are keyed by names in tables and logs: two files with one name would be confused."""
    seen = {}
    for pair in pairs:
        other = seen.setdefault((pair.problem, pair.solution), pair)
        if other != pair:
            raise DiscoveryError(f"Two files named '{pair.solution}' for problem '{pair.problem}': "
                                 f"{other.solution_path} and {pair.solution_path}; rename one")


def extract_code(text: str) -> str:
    """The last fenced code block of an LLM response that defines ModelNew."""
    blocks, current = [], None
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            # Tolerant of LLM habits: a fence line with trailing prose still closes a block.
            if current is None:
                current = []
            else:
                blocks.append("\n".join(current) + "\n")
                current = None
        elif current is not None:
            current.append(line)
    if current is not None:
        blocks.append("\n".join(current) + "\n")  # an unclosed last block
    defining = [b for b in blocks if re.search(r"^\s*class\s+ModelNew\b", b, re.M)]
    if not defining:
        raise ExtractError("no fenced code block that defines ModelNew in the response")
    return defining[-1]


def read_source(path: Path) -> str:
    """A candidate's Python source: the file itself, or the code extracted from a response."""
    text = Path(path).read_text(encoding="utf-8", errors="replace")
    return extract_code(text) if Path(path).suffix in RESPONSE_SUFFIXES else text


def module_constants(source: str) -> dict[str, Any]:
    """Top-level `NAME = literal` assignments of a module (non-literals map to None)."""
    constants = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                constants[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                constants[node.targets[0].id] = None
    return constants


def parse_set(items: list[str]) -> dict[str, Any]:
    """--set NAME=VALUE items -> {NAME: literal value}."""
    overrides = {}
    for item in items or []:
        name, sep, raw = item.partition("=")
        if not sep or not name.isidentifier():
            raise DiscoveryError(f"Bad --set '{item}': expected NAME=VALUE, e.g. --set batch_size=32")
        try:
            overrides[name] = ast.literal_eval(raw)
        except (ValueError, SyntaxError):
            raise DiscoveryError(f"Bad --set '{item}': '{raw}' is not a Python literal (a number, bool, tuple)") from None
    return overrides


def check_overrides(problem_path: Path, overrides: dict[str, Any]) -> None:
    """Every --set name must be a module constant of the problem."""
    try:
        constants = module_constants(problem_path.read_text())
    except SyntaxError as exc:
        raise DiscoveryError(f"Problem file {problem_path} does not parse: {exc}") from None
    for name in overrides:
        if name not in constants:
            listed = ", ".join(sorted(constants)) or "none"
            raise DiscoveryError(
                f"--set {name}: problem '{problem_path.stem}' has no module constant '{name}' (constants: {listed})"
            )


def cpu_only(source: str) -> Optional[str]:
    """Why a candidate cannot run on a GPU: a load_inline extension with C++ sources and no CUDA ones."""
    if "load_inline" in source and not CUDA_MARKERS.search(source):
        return "builds a C++ (CPU) extension only, with no CUDA sources"
    return None


def needs_cuda(source: str) -> Optional[str]:
    """Why a candidate cannot run without a CUDA GPU, or None when it may."""
    match = CUDA_MARKERS.search(source)
    return f"needs a CUDA GPU ('{match.group(0).strip(' =')}' in its source)" if match else None


def sha256_text(text: str) -> str:
    """Hex sha256 of a string."""
    return hashlib.sha256(text.encode("utf-8", errors="replace")).hexdigest()
