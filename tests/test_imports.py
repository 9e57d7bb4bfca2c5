"""The harness's import graph (every `import harness.p.x` / `from harness.p import x`, at module level or inside a
function): no module reaches itself, and no arrow goes up the processes' layers, one package each (LAYERS).
`python tests/test_imports.py` prints the graph in Graphviz's dot format, each package a cluster."""
import ast
from pathlib import Path

HARNESS = Path(__file__).resolve().parents[1] / "harness"

# The packages by the process whose job they do, top to bottom: the runner (with the judge factory and the build
# stage's processes, which it starts), a judge, a worker; and what any of them may use. A module imports from its own
# package or those below it, never above: a worker knows nothing of judges, a judge nothing of the runner.
LAYERS = ["runner", "judge", "worker", "common"]
# Beside them, the names a user imports: `from harness.kernelbench import eval_kernel_against_ref` (a facade over the
# runner's code; `harness.evaluate` is the package's own, loaded when asked for).
FACADES = ["kernelbench.py"]


def modules() -> list:
    """Every harness module as 'package.module' or 'package.sub.module' (an __init__ holds a docstring, or, for a
    package inside a layer such as common.methods, the list of its modules)."""
    return sorted(".".join(p.relative_to(HARNESS).with_suffix("").parts) for p in HARNESS.glob("*/**/*.py")
                  if p.stem != "__init__")


def layer_of(module: str) -> str:
    return module.split(".")[0]


def upward_arrows(graph: dict) -> list:
    """(importer, imported) pairs where the imported module's package is above the importer's."""
    return [(m, t) for m, targets in sorted(graph.items()) for t in sorted(targets)
            if LAYERS.index(layer_of(t)) < LAYERS.index(layer_of(m))]


def imported_by(path: Path, known: set) -> set:
    """The harness modules one file imports."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("harness."):
            package = node.module.removeprefix("harness.")
            found |= {f"{package}.{a.name}" for a in node.names if f"{package}.{a.name}" in known}
            if package in known:
                found.add(package)
        elif isinstance(node, ast.Import):
            found |= {a.name.removeprefix("harness.") for a in node.names if a.name.removeprefix("harness.") in known}
    return found


def import_graph() -> dict:
    """{module: set of harness modules it imports}."""
    known = set(modules())
    return {m: imported_by(HARNESS / f"{m.replace('.', '/')}.py", known) - {m} for m in sorted(known)}


def cycles(graph: dict) -> list:
    """Each cycle's path, found by a depth-first search (one per back edge)."""
    found, state = [], {}

    def visit(node, path):
        state[node] = "open"
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                found.append(path[path.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    return found


def test_the_import_graph_has_no_cycle():
    assert cycles(import_graph()) == []


def test_the_harness_is_its_packages_and_no_arrow_goes_up():
    top = sorted(p.name for p in HARNESS.iterdir() if p.suffix == ".py" or (p.is_dir() and p.name != "__pycache__"))
    assert top == sorted(["__init__.py", *FACADES, *LAYERS])
    assert {layer_of(m) for m in import_graph()} == set(LAYERS)
    assert upward_arrows(import_graph()) == []


def test_every_module_has_a_test_file_of_its_name():
    """tests/test_MODULE.py, or tests/test_PACKAGE_MODULE.py where two packages share the module's name."""
    tests = HARNESS.parent / "tests"
    untested = [m for m in modules() if not (tests / f"test_{m.split('.')[-1]}.py").exists()
                and not (tests / f"test_{m.replace('.', '_')}.py").exists()]
    assert untested == []


def test_no_function_of_the_harness_is_over_50_lines():
    """A function a newcomer reads whole (the house rule of issue 39): split one that grows past it."""
    long = [f"{path.name}:{node.name} ({node.end_lineno - node.lineno + 1} lines)"
            for path in sorted(HARNESS.rglob("*.py")) for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno >= 50]
    assert long == []


def test_an_upward_arrow_is_found():
    graph = {"worker.worker": {"judge.judge", "common.check"}, "judge.judge": {"worker.worker"}, "common.check": set()}
    assert upward_arrows(graph) == [("worker.worker", "judge.judge")]


def test_a_cycle_is_found():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]


if __name__ == "__main__":
    print("digraph harness {")
    graph = import_graph()
    for layer in LAYERS:
        members = [m for m in graph if layer_of(m) == layer]
        print(f'  subgraph "cluster_{layer}" {{ label="{layer}"; ' + " ".join(f'"{m}";' for m in members) + " }")
    for module, imported in graph.items():
        for target in sorted(imported):
            print(f'  "{module}" -> "{target}";')
    print("}")
