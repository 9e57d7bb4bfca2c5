#!/usr/bin/env python3
"""Rebuild the corpus of public LLM/agent-written KernelBench candidates from bench/realgen/manifest.csv.

The manifest holds pointers only (repository, commit, path, how to extract the code); no candidate code is
committed here. This script reads each pointer from local git mirrors of the public repositories and writes:

  OUT/candidates/<id>.py                            the extracted candidate (checked: parses, defines ModelNew)
  OUT/problems/<kb_commit[:7]>/level<L>/<file>      the KernelBench problem file the candidate was written for,
                                                    from MIRROR/ScalingIntelligence+KernelBench/repo at kb_commit
  OUT/pairs.csv                                     problem,candidate,id,level,problem_id (paths relative to OUT)
  OUT/harness_manifest.csv                          problem,candidate only (for `run.py --manifest`)
  OUT/report.txt                                    what was written, skipped and why, and the arity check

Mirrors are bare git directories at MIRROR/<owner>+<name>/repo (what the `fetch` tool produces for
github:<owner>/<name>). Missing mirrors are listed with the repositories to fetch; their rows are skipped.
A row that cannot be extracted or does not parse is reported and skipped, not fatal.
Arity check (reported, not fatal): ModelNew.__init__ must accept len(get_init_inputs()) positional arguments and
ModelNew.forward len(get_inputs()), both read from the problem's AST; a misfit usually means a mispaired row.

Extract specs (manifest column `extract`):
  file                      the file at PATH is the candidate
  json:K1.K2.K3             PATH is a JSON document; follow keys (integers index lists) to a string
  jsonl:FIELD?K=V&K2=V2     PATH is JSON lines; the one record whose fields K, K2 equal V, V2 (compared as
                            strings); take its FIELD
  markdown                  PATH is text; the last fenced code block that defines class ModelNew

Run (standard library and git only):
  python3 bench/realgen_corpus.py --mirror /work/.mirror --out .corpus/realgen
  python run.py --manifest .corpus/realgen/harness_manifest.csv     (the harness, on a GPU machine)
Exit status: 0 when every row was written, 1 when any row was skipped (missing mirror, bad extract, no parse).
"""
import argparse
import ast
import collections
import csv
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

KB_REPO = "ScalingIntelligence/KernelBench"
HERE = Path(__file__).resolve().parent
DEFAULT_MANIFEST = HERE / "realgen" / "manifest.csv"


def mirror_dir(mirror: Path, repo: str) -> Path:
    """The bare git directory that `fetch github:OWNER/NAME` leaves for a repository."""
    return mirror / repo.replace("/", "+") / "repo"


_BLOBS: dict = {}


def git_show(gitdir: Path, commit: str, path: str) -> str:
    """The text of PATH at COMMIT in a bare repository (cached); raises LookupError when absent."""
    key = (str(gitdir), commit, path)
    if key not in _BLOBS:
        done = subprocess.run(["git", "--git-dir", str(gitdir), "show", f"{commit}:{path}"],
                              capture_output=True)
        if done.returncode != 0:
            raise LookupError(f"git show {commit[:10]}:{path}: {done.stderr.decode(errors='replace').strip()[:200]}")
        _BLOBS[key] = done.stdout.decode("utf-8", errors="replace")
    return _BLOBS[key]


def extract_json(text: str, keypath: str) -> str:
    """Follow a dotted key path (integers index lists) through a JSON document to a string."""
    node = json.loads(text)
    for key in keypath.split("."):
        node = node[int(key)] if isinstance(node, list) else node[key]
    if not isinstance(node, str):
        raise ValueError(f"json:{keypath} is a {type(node).__name__}, not code")
    return node


def extract_jsonl(text: str, spec: str) -> str:
    """FIELD of the single JSON-lines record whose fields match K=V&K2=V2 (values compared as strings)."""
    field, _, query = spec.partition("?")
    wanted = dict(item.split("=", 1) for item in query.split("&") if item)
    hits = []
    for line in text.splitlines():
        if line.strip():
            record = json.loads(line)
            if all(str(record.get(k)) == v for k, v in wanted.items()):
                hits.append(record)
    if len(hits) != 1:
        raise ValueError(f"jsonl:{spec} matches {len(hits)} records, not 1")
    code = hits[0].get(field)
    if not isinstance(code, str) or code.strip() in ("", "None"):
        raise ValueError(f"jsonl:{spec}: field {field} holds no code")
    return code


def extract_markdown(text: str) -> str:
    """The last fenced code block that defines class ModelNew."""
    blocks = re.findall(r"```[ \t]*(?:python|py)?[^\n]*\n(.*?)```", text, re.S)
    blocks = [b for b in blocks if re.search(r"^\s*class\s+ModelNew\b", b, re.M)]
    if not blocks:
        raise ValueError("markdown: no fenced block defines ModelNew")
    return blocks[-1]


def extract(text: str, spec: str) -> str:
    """Apply a manifest extract spec to a file's text."""
    if spec == "file":
        return text
    if spec.startswith("json:"):
        return extract_json(text, spec[len("json:"):])
    if spec.startswith("jsonl:"):
        return extract_jsonl(text, spec[len("jsonl:"):])
    if spec == "markdown":
        return extract_markdown(text)
    raise ValueError(f"unknown extract spec {spec!r}")


def check_candidate(code: str) -> None:
    """Raise ValueError unless the code parses and defines a class ModelNew."""
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        raise ValueError(f"does not parse: {exc.msg} (line {exc.lineno})") from None
    if not any(isinstance(node, ast.ClassDef) and node.name == "ModelNew" for node in ast.walk(tree)):
        raise ValueError("defines no class ModelNew")


def read_manifest(path: Path) -> list:
    """The manifest's rows as dicts."""
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def missing_mirrors(rows: list, mirror: Path) -> list:
    """Repositories (the KernelBench one included) whose mirror directory is absent."""
    repos = sorted({row["repo"] for row in rows} | {KB_REPO})
    return [repo for repo in repos if not mirror_dir(mirror, repo).is_dir()]


def write_problem(row: dict, mirror: Path, out: Path) -> str:
    """Write the row's KernelBench problem file; return its path relative to OUT."""
    rel = Path("problems") / row["kb_commit"][:7] / f"level{row['level']}" / row["problem_file"]
    target = out / rel
    if not target.exists():
        text = git_show(mirror_dir(mirror, KB_REPO), row["kb_commit"],
                        f"KernelBench/level{row['level']}/{row['problem_file']}")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return rel.as_posix()


def write_candidate(row: dict, mirror: Path, out: Path) -> str:
    """Extract, check and write the row's candidate; return its path relative to OUT."""
    text = git_show(mirror_dir(mirror, row["repo"]), row["commit"], row["path"])
    code = extract(text, row["extract"])
    check_candidate(code)
    rel = Path("candidates") / f"{row['id']}.py"
    (out / rel).write_text(code if code.endswith("\n") else code + "\n")
    return rel.as_posix()


def top_function(tree: ast.Module, name: str):
    """The module-level function NAME, or None."""
    found = [node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == name]
    return found[-1] if found else None


def returned_count(tree: ast.Module, name: str):
    """How many items the module-level function NAME returns (a list/tuple literal); None when unknown."""
    func = top_function(tree, name)
    if func is None:
        return None
    returns = [node.value for node in ast.walk(func) if isinstance(node, ast.Return)]
    if not returns or not all(isinstance(value, (ast.List, ast.Tuple)) for value in returns):
        return None
    if any(isinstance(item, ast.Starred) for value in returns for item in value.elts):
        return None
    sizes = {len(value.elts) for value in returns}
    return sizes.pop() if len(sizes) == 1 else None


def find_method(tree: ast.Module, class_name: str, method: str, seen=()):
    """METHOD of the module-level class CLASS_NAME or of a base class defined in the same file; None if absent."""
    classes = [node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == class_name]
    if not classes or class_name in seen:
        return None
    for node in classes[-1].body:
        if isinstance(node, ast.FunctionDef) and node.name == method:
            return node
    for base in classes[-1].bases:
        if isinstance(base, ast.Name):
            found = find_method(tree, base.id, method, seen + (class_name,))
            if found is not None:
                return found
    return None


def positional_range(func: ast.FunctionDef) -> tuple:
    """(fewest, most) positional arguments a method accepts besides self; most is None with *args."""
    params = (func.args.posonlyargs + func.args.args)[1:]
    return len(params) - len(func.args.defaults), None if func.args.vararg else len(params)


def arity_mismatches(problem_code: str, candidate_code: str) -> list:
    """Where ModelNew cannot take the problem's get_init_inputs() / get_inputs() positionally ([] when fine)."""
    try:
        problem, candidate = ast.parse(problem_code), ast.parse(candidate_code)
    except SyntaxError as exc:
        return [f"does not parse ({exc.msg}, line {exc.lineno}): unchecked"]
    found = []
    for method, getter in (("__init__", "get_init_inputs"), ("forward", "get_inputs")):
        count = returned_count(problem, getter)
        func = find_method(candidate, "ModelNew", method)
        if count is None:
            found.append(f"{getter}() of the problem does not return a list literal (unchecked)")
        elif func is None:
            if method == "forward" or count:
                found.append(f"ModelNew.{method} not found in the file (unchecked; problem passes {count})")
        else:
            low, high = positional_range(func)
            if count < low or (high is not None and count > high):
                span = f"{low}" if low == high else f"{low}..{'any' if high is None else high}"
                found.append(f"ModelNew.{method} takes {span} positional argument(s), {getter}() gives {count}")
    return found


def arity_check(pairs: list, out: Path) -> list:
    """[(id, message)] for every written pair whose ModelNew signatures do not fit its problem's inputs."""
    return [(pair["id"], message) for pair in pairs
            for message in arity_mismatches((out / pair["problem"]).read_text(), (out / pair["candidate"]).read_text())]


def write_csv(path: Path, header: list, rows: list) -> None:
    """Write rows (dicts) under a header."""
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=header, extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def fresh_out(out: Path) -> None:
    """Empty the folders this script owns under OUT, so no stale candidate survives."""
    for sub in ("candidates", "problems"):
        shutil.rmtree(out / sub, ignore_errors=True)
        (out / sub).mkdir(parents=True)


def counts_table(rows: list, key) -> str:
    """Counts of rows per source and per key(row), as text lines."""
    table = collections.Counter((row["source"], key(row)) for row in rows)
    lines = []
    for source in sorted({row["source"] for row in rows}):
        parts = [f"{k}={table[(source, k)]}" for k in sorted({k for s, k in table if s == source})]
        lines.append(f"  {source:8s} {sum(table[(source, k)] for s, k in table if s == source):4d}  " + " ".join(parts))
    return "\n".join(lines)


def build(rows: list, mirror: Path, out: Path) -> tuple:
    """Write every row it can; return (pairs written, [(id, reason) skipped])."""
    fresh_out(out)
    absent = set(missing_mirrors(rows, mirror))
    pairs, skipped = [], []
    for row in rows:
        if KB_REPO in absent or row["repo"] in absent:
            skipped.append((row["id"], f"mirror missing for {KB_REPO if KB_REPO in absent else row['repo']}"))
            continue
        try:
            problem = write_problem(row, mirror, out)
            candidate = write_candidate(row, mirror, out)
        except (LookupError, ValueError, KeyError, IndexError, json.JSONDecodeError) as exc:
            skipped.append((row["id"], f"{type(exc).__name__}: {exc}"))
            continue
        pairs.append(dict(row, problem=problem, candidate=candidate))
    return pairs, skipped


def arity_lines(mismatches: list) -> list:
    """The arity check's part of the report."""
    if not mismatches:
        return ["arity check: every ModelNew accepts its problem's get_init_inputs() and get_inputs()"]
    rows = sorted({ident for ident, _ in mismatches})
    return ([f"arity check: {len(rows)} pair(s) do not fit their problem (mispaired?), not fatal:"]
            + [f"  {ident}: {message}" for ident, message in mismatches])


def report(rows: list, pairs: list, skipped: list, absent: list, mirror: Path, mismatches: list = ()) -> str:
    """The run's summary: missing mirrors, skipped rows, arity check, counts per source by level, backend, verdict."""
    lines = [f"manifest rows: {len(rows)}; pairs written: {len(pairs)}; skipped: {len(skipped)}"]
    if absent:
        lines.append("missing mirrors (fetch them first: the fetch tool with github:OWNER/NAME):")
        lines += [f"  {repo}  (expected at {mirror_dir(mirror, repo)})" for repo in absent]
    by_mirror = collections.Counter(reason for _, reason in skipped if reason.startswith("mirror missing"))
    lines += [f"  skipped {n} row(s): {reason}" for reason, n in sorted(by_mirror.items())]
    lines += [f"  skipped {ident}: {reason}" for ident, reason in skipped if not reason.startswith("mirror missing")]
    lines += arity_lines(list(mismatches))
    lines.append("written, per source and level:\n" + counts_table(pairs, lambda r: f"L{r['level']}"))
    lines.append("written, per source and backend:\n" + counts_table(pairs, lambda r: r["backend"]))
    lines.append("written, per source and source verdict:\n"
                 + counts_table(pairs, lambda r: r["source_correct"] or "unknown"))
    lines.append("written, per source and KernelBench commit:\n" + counts_table(pairs, lambda r: r["kb_commit"][:7]))
    levels = collections.Counter(f"L{p['level']}" for p in pairs)
    lines.append("written, per level: " + " ".join(f"{k}={levels[k]}" for k in sorted(levels)))
    return "\n".join(lines)


def main(argv=None) -> int:
    """Parse arguments, rebuild the corpus, print and save the report."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mirror", type=Path, default=Path("/work/.mirror"), help="folder of OWNER+NAME/repo mirrors")
    parser.add_argument("--out", type=Path, default=Path(".corpus/realgen"), help="output folder")
    parser.add_argument("--manifest", type=Path, default=DEFAULT_MANIFEST, help="the manifest CSV")
    args = parser.parse_args(argv)
    rows = read_manifest(args.manifest)
    args.out.mkdir(parents=True, exist_ok=True)
    absent = missing_mirrors(rows, args.mirror)
    pairs, skipped = build(rows, args.mirror, args.out)
    write_csv(args.out / "pairs.csv", ["problem", "candidate", "id", "level", "problem_id"], pairs)
    write_csv(args.out / "harness_manifest.csv", ["problem", "candidate"], pairs)
    text = report(rows, pairs, skipped, absent, args.mirror, arity_check(pairs, args.out))
    (args.out / "report.txt").write_text(text + "\n")
    print(text)
    return 1 if skipped else 0


if __name__ == "__main__":
    sys.exit(main())
