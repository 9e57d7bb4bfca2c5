"""Import one source file into a fresh module, with module constants overridden (--set)."""
from __future__ import annotations

import ast
import linecache
import sys
import types
from pathlib import Path
from typing import Any, Optional


def override_constants(tree: ast.Module, overrides: dict[str, Any]) -> None:
    """Replace each overridden top-level `NAME = ...`'s value, in place."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name in overrides:  # a tuple arrives as a list once it has crossed JSON
                value = tuple(overrides[name]) if isinstance(overrides[name], list) else overrides[name]
                node.value = ast.copy_location(ast.Constant(value) if not isinstance(value, tuple)
                                               else ast.parse(repr(value), mode="eval").body, node.value)
    ast.fix_missing_locations(tree)


def load_module(source: str, path: Path | str, module_name: str, overrides: Optional[dict] = None,
                problem: Optional[tuple[str, Path | str]] = None) -> types.ModuleType:
    """`source` run as module `module_name`, after `problem` (source, path) in one namespace as KernelBench's eval."""
    module = types.ModuleType(module_name)
    module.__file__ = str(path)
    sys.modules[module_name] = module  # dataclasses and pickling look modules up by name
    try:
        for text, where in ([problem] if problem else []) + [(source, path)]:
            exec(compiled(text, where, overrides or {}), module.__dict__)
    except BaseException:
        sys.modules.pop(module_name, None)
        raise
    # a problem that sets __file__ is overruled
    module.__file__ = str(path)
    return module


def compiled(source: str, path: Path | str, overrides: dict):
    """`source` with its constants overridden, compiled, its lines registered for inspect."""
    tree = ast.parse(source, filename=str(path))
    override_constants(tree, overrides)
    # Triton's @jit reads the source through linecache, whatever `path` is.
    linecache.cache[str(path)] = (len(source), None, source.splitlines(True), str(path))
    return compile(tree, str(path), "exec")
