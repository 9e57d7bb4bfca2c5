"""Find problems and candidates without importing them; extract code from LLM responses."""
from __future__ import annotations

import ast
import difflib
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from harness.common.errors import UserError
from harness.common.places import ROOT

PROBLEMS_DIR = ROOT / "problems"
SOLUTIONS_DIR = ROOT / "solutions"
SOLUTION_SUFFIXES = (".py", ".txt", ".md")
RESPONSE_SUFFIXES = (".txt", ".md")
# Signs that a source runs CUDA code, including C++ extensions that call CUDA libraries through ATen (seen in the wild).
CUDA_MARKERS = re.compile(r"cuda_sources\s*=|__global__|<<<|\btriton\b|with_cuda\s*=\s*True|"
                          r"#include\s*[<\"](?:cuda|cublas|cudnn|ATen/cuda/|c10/cuda/)|\b(?:at|c10)::cuda::")


class DiscoveryError(UserError):
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
    overrides: dict = field(default_factory=dict, compare=False, hash=False)  # a manifest entry's `set`


# Candidates named the KernelBench way pair with levelL/P_<name>.py under a problems root.
KERNELBENCH_CANDIDATE = re.compile(r"^level_(\d+)_problem_(\d+)_sample_(\d+)(?:_kernel)?$")


def resolve_problem(name_or_path: str, roots: tuple = ()) -> list[Path]:
    """A problem name, file or directory -> problem files; a name is looked up under the roots and problems/."""
    path = Path(name_or_path)
    if path.is_dir():
        files = sorted(p for p in path.rglob("*.py") if not p.name.startswith("_"))
        if not files:
            raise DiscoveryError(f"No problem files (*.py) under directory '{name_or_path}'")
        return files
    if path.is_file():
        return [path]
    if path.suffix:
        raise DiscoveryError(f"Problem file not found: '{name_or_path}'")
    roots = (*roots, PROBLEMS_DIR)
    for root in roots:
        if (Path(root) / f"{name_or_path}.py").is_file():
            return [Path(root) / f"{name_or_path}.py"]
    found = sorted({p for root in roots for p in Path(root).rglob(f"{Path(name_or_path).name}.py")
                    if p.as_posix().endswith(f"{name_or_path}.py")})
    if len(found) == 1:
        return found
    if len(found) > 1:
        raise DiscoveryError(f"Problem '{name_or_path}' is ambiguous: {', '.join(map(str, found))}; give a path")
    if "/" in name_or_path:
        raise DiscoveryError(f"Problem file not found: '{name_or_path}'")
    known = sorted({p.stem for root in roots for p in Path(root).rglob("*.py") if not p.name.startswith("_")})
    close = difflib.get_close_matches(Path(name_or_path).name, known, n=1)
    hint = f" Did you mean '{close[0]}'?" if close else f" Known problems: {', '.join(known[:20])}."
    raise DiscoveryError(f"Unknown problem '{name_or_path}'.{hint}")


def solutions_for(problem_name: str) -> list[Path]:
    """The candidates in solutions/<problem>/, sorted; an error when none."""
    folder = SOLUTIONS_DIR / problem_name
    files = candidate_files(folder)
    if not files:
        raise DiscoveryError(
            f"No candidates for problem '{problem_name}': {folder.relative_to(ROOT)}/ is missing or empty "
            "(add a file there, or pass --solution PATH)"
        )
    return files


def candidate_files(folder: Path) -> list[Path]:
    """The candidate files directly in a folder, sorted."""
    return sorted(p for p in Path(folder).glob("*") if p.suffix in SOLUTION_SUFFIXES and not p.name.startswith("_"))


def expand_solutions(solutions: Optional[list[str]]) -> list[Path]:
    """--solution arguments (files or folders) -> candidate files."""
    files = []
    for given in solutions or []:
        path = Path(given)
        if path.is_dir():
            found = candidate_files(path)
            if not found:
                raise DiscoveryError(f"No candidate files (.py, .txt, .md) in folder '{given}'")
            files += found
        elif path.is_file():
            files.append(path)
        else:
            raise DiscoveryError(f"Solution file not found: '{given}'")
    return files


def find_pairs(problems: list[str], solutions: Optional[list[str]] = None, problems_root: Optional[str] = None,
               manifest: Optional[str] = None) -> list[Pair]:
    """Every (problem, candidate) pair the CLI arguments name, in a stable order (docs/cli.md)."""
    roots = (Path(problems_root),) if problems_root else ()
    if problems_root and not Path(problems_root).is_dir():
        raise DiscoveryError(f"--problems-root {problems_root}: no such folder")
    if manifest:
        pairs = manifest_pairs(Path(manifest), roots)
    elif not problems:
        if not (roots and solutions):
            raise DiscoveryError("name a --problem, or give --problems-root with --solution, or a --manifest")
        pairs = []
        for path in expand_solutions(solutions):
            problem = kernelbench_problem(path, roots[0])
            pairs.append(Pair(problem.stem, problem, path.stem, path))
    else:
        explicit = expand_solutions(solutions)
        pairs = []
        for problem_path in [p for name in problems for p in resolve_problem(name, roots)]:
            candidates = explicit or solutions_for(problem_path.stem)
            pairs += [Pair(problem_path.stem, problem_path, c.stem, c) for c in candidates]
    check_unique_names(pairs)
    return pairs


def kernelbench_problem(candidate: Path, root: Path) -> Path:
    """The problem of a candidate named level_L_problem_P_sample_S[_kernel]: <root>/levelL/P_*.py."""
    match = KERNELBENCH_CANDIDATE.match(candidate.stem)
    if not match:
        raise DiscoveryError(f"'{candidate.name}' is not named level_L_problem_P_sample_S_kernel: "
                             "name its --problem, or list it in a --manifest")
    level, number = match.group(1), int(match.group(2))
    found = [p for p in sorted((root / f"level{level}").glob("*.py"))
             if re.match(r"^(\d+)_", p.name) and int(p.name.split("_", 1)[0]) == number]
    if len(found) != 1:
        raise DiscoveryError(f"'{candidate.name}': {'no' if not found else 'more than one'} problem {number} "
                             f"in {root / f'level{level}'}")
    return found[0]


def manifest_pairs(manifest: Path, roots: tuple) -> list[Pair]:
    """Pairs from a CSV or YAML manifest (problem, candidate[, set]; docs/cli.md), paths relative to it."""
    if not manifest.is_file():
        raise DiscoveryError(f"--manifest {manifest}: no such file")
    if manifest.suffix in (".yaml", ".yml"):
        import yaml

        rows = yaml.safe_load(manifest.read_text()) or []
    else:
        import csv

        rows = list(csv.DictReader(manifest.read_text().splitlines()))
    pairs = []
    for number, row in enumerate(rows, 1):
        if not isinstance(row, dict) or not row.get("problem") or not row.get("candidate"):
            raise DiscoveryError(f"--manifest {manifest}: entry {number} needs a problem and a candidate")
        problem_arg = manifest.parent / row["problem"]
        problems = resolve_problem(str(problem_arg) if problem_arg.exists() else row["problem"], roots)
        candidate = manifest.parent / row["candidate"]
        if not candidate.is_file():
            raise DiscoveryError(f"--manifest {manifest}: entry {number}: no file '{row['candidate']}'")
        try:
            given = row.get("set") or ""
            if isinstance(given, dict):  # YAML mapping
                overrides = parse_set([f"{name}={value!r}" for name, value in given.items()])
            else:
                overrides = parse_set(str(given).split())
            check_overrides(problems, overrides)
        except DiscoveryError as exc:
            raise DiscoveryError(f"--manifest {manifest}: entry {number}: {exc}") from None
        pairs += [Pair(p.stem, p, candidate.stem, candidate, overrides) for p in problems]
    return pairs


def check_unique_names(pairs: list[Pair]) -> None:
    """Refuse two candidates of one name for a problem: results are keyed by names."""
    seen: dict = {}
    for pair in pairs:
        other = seen.setdefault((pair.problem, pair.solution), pair)
        if other != pair:
            raise DiscoveryError(f"Two files named '{pair.solution}' for problem '{pair.problem}': "
                                 f"{other.solution_path} and {pair.solution_path}; rename one")


def extract_code(text: str) -> str:
    """The last fenced code block of an LLM response that defines ModelNew."""
    blocks: list[str] = []
    current: Optional[list[str]] = None
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            # A fence line with trailing prose still closes a block.
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
    """A candidate's Python source (extracted from a response file)."""
    text = Path(path).read_text(encoding="utf-8", errors="replace")
    return extract_code(text) if Path(path).suffix in RESPONSE_SUFFIXES else text


def module_constants(source: str) -> dict[str, Any]:
    """Top-level `NAME = value`: literals and integer arithmetic over earlier constants (`8192 * 2`); else None."""
    constants: dict[str, Any] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                constants[node.targets[0].id] = ast.literal_eval(node.value)
            except (ValueError, TypeError, SyntaxError, RecursionError):  # not a literal ({[1]: 2}: TypeError)
                constants[node.targets[0].id] = integer_arithmetic(node.value, constants)
    return constants


_INTEGER_OPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
                ast.FloorDiv: lambda a, b: a // b, ast.Pow: lambda a, b: a ** b if 0 <= b <= 64 else None}


def integer_arithmetic(node: ast.AST, constants: dict) -> Optional[int | tuple]:
    """+ - * // ** over integer literals and known constants (or a tuple of such); None for anything else."""
    if isinstance(node, ast.Tuple):
        values = tuple(integer_arithmetic(element, constants) for element in node.elts)
        return None if None in values else values
    if isinstance(node, ast.Constant):
        return node.value if type(node.value) is int else None
    if isinstance(node, ast.Name):
        return constants.get(node.id) if type(constants.get(node.id)) is int else None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        value = integer_arithmetic(node.operand, constants)
        return -value if isinstance(value, int) else None
    if isinstance(node, ast.BinOp) and type(node.op) in _INTEGER_OPS:
        left, right = integer_arithmetic(node.left, constants), integer_arithmetic(node.right, constants)
        if left is None or right is None or (isinstance(node.op, ast.FloorDiv) and right == 0):
            return None
        return _INTEGER_OPS[type(node.op)](left, right)
    return None


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
            raise DiscoveryError(f"Bad --set '{item}': '{raw}' is not a Python literal (a number, bool, "
                                 f"tuple)") from None
    return overrides


def check_overrides(problem_paths: list[Path], overrides: dict[str, Any]) -> None:
    """Every --set name must be a module constant of at least one problem."""
    constants = {}
    for path in problem_paths:
        try:
            constants[path] = module_constants(path.read_text())
        except SyntaxError as exc:
            raise DiscoveryError(f"Problem file {path} does not parse: {exc}") from None
    for name in overrides:
        if not any(name in found for found in constants.values()):
            listed = ", ".join(sorted({c for found in constants.values() for c in found})) or "none"
            which = f"problem '{problem_paths[0].stem}' has no" if len(problem_paths) == 1 else "no problem has a"
            raise DiscoveryError(f"--set {name}: {which} module constant '{name}' (constants: {listed})")


def backend_of(source: str) -> str:
    """A candidate's backend from its source: triton, cuda, cpp or torch."""
    if re.search(r"@triton\.jit|^\s*(import triton|from triton)", source, re.M):
        return "triton"
    if re.search(r"cuda_sources\s*=|__global__|<<<", source):
        return "cuda"
    if "load_inline" in source or "cpp_extension" in source:
        return "cpp"
    return "torch"


def builds_extension(source: str) -> bool:
    """Does the candidate compile with torch.utils.cpp_extension?"""
    return "load_inline" in source or "cpp_extension" in source


def cpu_only(source: str) -> Optional[str]:
    """Why a candidate cannot run on a GPU (a C++-only load_inline extension), or None."""
    if re.search(r"\bload_inline\s*\(", source) and not CUDA_MARKERS.search(source):  # called, not only imported
        return "builds a C++ (CPU) extension only, with no CUDA sources"
    return None


def needs_cuda(source: str) -> Optional[str]:
    """Why a candidate cannot run without a CUDA GPU, or None."""
    match = CUDA_MARKERS.search(source)
    return f"needs a CUDA GPU ('{match.group(0).strip(' =')}' in its source)" if match else None


def sha256_text(text: str) -> str:
    """Hex sha256 of a string."""
    return hashlib.sha256(text.encode("utf-8", errors="replace")).hexdigest()
