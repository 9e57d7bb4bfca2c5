"""The harness's import graph (every `import harness.x` / `from harness import x`, at module level or inside a
function): no module reaches itself. `python tests/test_imports.py` prints the graph in Graphviz's dot format."""
import ast
from pathlib import Path

HARNESS = Path(__file__).resolve().parents[1] / "harness"


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


def test_a_cycle_is_found():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]


if __name__ == "__main__":
    print("digraph harness {")
    for module, imported in import_graph().items():
        for target in sorted(imported):
            print(f'  "{module}" -> "{target}";')
    print("}")
