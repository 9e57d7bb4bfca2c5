"""The harness's import graph (every `import harness.x` / `from harness import x`, at module level or inside a
function): no module reaches itself, and no arrow goes up the processes' layers (LAYERS). `python tests/test_imports.py`
prints the graph in Graphviz's dot format, each layer a cluster."""
import ast
from pathlib import Path

HARNESS = Path(__file__).resolve().parents[1] / "harness"


# Each harness module by the process whose job it does, top to bottom: the runner (with the judge factory and the build
# stage's processes, which it starts), a judge, a worker; and what any of them may use. A module imports from its own
# layer or those below it, never above: a worker knows nothing of judges, a judge nothing of the runner.
LAYERS = {
    "runner": {"cli", "runner", "blocks", "schedulers", "judge_processes", "judge_factory", "builds", "environment", "report",
               "boards", "gate"},
    "judge": {"judge", "judge_trials", "judge_timing", "judge_timing_setup", "judge_memory", "sandbox", "footprint",
              "roofline", "gpu_probe", "lint"},
    "worker": {"worker", "timing"},
    "shared": {"channel", "check", "clocks", "config", "confine", "devices", "discover", "errors", "extensions",
               "handover", "inputs", "judge_protocol", "load", "problem_info", "procs", "records", "semantics", "stages",
               "stats", "stopping", "store", "verdict"},
}
ORDER = list(LAYERS)


def layer_of(module: str) -> str:
    return next(name for name, members in LAYERS.items() if module in members)


def upward_arrows(graph: dict) -> list:
    """(importer, imported) pairs where the imported module's layer is above the importer's."""
    return [(m, t) for m, targets in sorted(graph.items()) for t in sorted(targets)
            if ORDER.index(layer_of(t)) < ORDER.index(layer_of(m))]


def import_graph() -> dict:
    """{module: set of harness modules it imports}."""
    modules = {p.stem for p in HARNESS.glob("*.py")} - {"__init__"}
    graph = {}
    for name in sorted(modules):
        found = set()
        for node in ast.walk(ast.parse((HARNESS / f"{name}.py").read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "harness":
                found |= {alias.name for alias in node.names if alias.name in modules}
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("harness."):
                found.add(node.module.split(".")[1])
            elif isinstance(node, ast.Import):
                found |= {a.name.split(".")[1] for a in node.names if a.name.startswith("harness.")}
        graph[name] = found - {name}
    return graph


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


def test_every_module_has_one_layer_and_no_arrow_goes_up():
    graph = import_graph()
    placed = [m for members in LAYERS.values() for m in members]
    assert sorted(placed) == sorted(graph), "each harness module in exactly one of LAYERS"
    assert upward_arrows(graph) == []


def test_no_function_of_the_harness_is_over_50_lines():
    """A function a newcomer reads whole (the house rule of issue 39): split one that grows past it."""
    long = [f"{path.name}:{node.name} ({node.end_lineno - node.lineno + 1} lines)"
            for path in sorted(HARNESS.glob("*.py")) for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno >= 50]
    assert long == []


def test_an_upward_arrow_is_found():
    assert upward_arrows({"worker": {"judge", "check"}, "judge": {"worker"}, "check": set()}) == [("worker", "judge")]


def test_a_cycle_is_found():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]


if __name__ == "__main__":
    print("digraph harness {")
    for layer, members in LAYERS.items():
        print(f'  subgraph "cluster_{layer}" {{ label="{layer}"; ' + " ".join(f'"{m}";' for m in sorted(members)) + " }")
    for module, imported in import_graph().items():
        for target in sorted(imported):
            print(f'  "{module}" -> "{target}";')
    print("}")
