"""No import cycles inside amutheory, at any level: the package's floors (families and spec at the
bottom; symbolic, measure -> laws -> api; probe/training -> campaign/protocol; CLI on top) are read off
its imports, so a cycle is a layer that sits both above and below another.  An import inside a
function only defers a cycle, so it counts: a family finds its model, theory and laws by
registration (:mod:`amutheory.families.services`), not by importing upward.

Read with ``ast`` (nothing is imported): every module's imports of amutheory modules, resolved so
that ``from amutheory.x import y`` counts as importing ``amutheory.x`` and, where it is a module,
``amutheory.x.y``; relative imports are resolved against the importing package.

* at any level (imports inside functions too): no strongly connected component of more than one
  module, hence none at module level (top-level statements, inside top-level ``if``/``try`` too;
  ``if TYPE_CHECKING:`` blocks excluded, they never run) and no two modules importing each other;
* the families reach none of the layers above them.

A package's ``__init__`` that a submodule's import runs first is not counted as imported by it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import amutheory

PACKAGE = Path(amutheory.__file__).resolve().parent



def _modules() -> dict[str, tuple[Path, bool]]:
    """``{dotted name: (path, is_package)}`` of every module under amutheory/."""
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts = parts[:-1]
        out[".".join(parts)] = (path, is_package)
    return out


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _module_level(body):
    """The import statements a module runs when it is imported."""
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, ast.If) and not _is_type_checking(node):
            yield from _module_level(node.body)
            yield from _module_level(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, *(h.body for h in node.handlers), node.orelse, node.finalbody):
                yield from _module_level(block)


def _every_level(tree):
    return (n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)))


def _targets(node, package: str, modules) -> set[str]:
    """The amutheory modules one import statement imports."""
    if isinstance(node, ast.Import):
        return {a.name for a in node.names if a.name in modules}
    if node.level:
        base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
        source = ".".join(base + ([node.module] if node.module else []))
    else:
        source = node.module
    found = {source} if source in modules else set()
    return found | {f"{source}.{a.name}" for a in node.names if f"{source}.{a.name}" in modules}


def import_graph(module_level: bool = True) -> dict[str, set[str]]:
    """``{module: modules it imports}`` over amutheory (self-imports dropped)."""
    modules = _modules()
    graph = {}
    for name, (path, is_package) in modules.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        package = name if is_package else name.rpartition(".")[0]
        nodes = _module_level(tree.body) if module_level else _every_level(tree)
        graph[name] = set().union(*(_targets(n, package, modules) for n in nodes)) - {name}
    return graph


def strongly_connected(graph: dict[str, set[str]]) -> list[frozenset]:
    """Tarjan's components of more than one module (iterative: no recursion limit)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = set()
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.add(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(frozenset(comp))
    return out


def test_the_cycle_finder_finds_cycles():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a", "e"}, "e": {"d"}, "f": set()}
    assert set(strongly_connected(graph)) == {frozenset("abc"), frozenset("de")}
    assert strongly_connected({"a": {"b"}, "b": set()}) == []


def test_imports_resolve_to_modules():
    graph = import_graph()
    assert "amutheory.families" in graph["amutheory.spec"]            # from amutheory.families import ...
    assert "amutheory.measure.layers" in graph["amutheory.measure.resnet"]
    assert "amutheory.symbolic.resnet.block" in graph["amutheory.symbolic.resnet.preact"]
    deferred = import_graph(module_level=False)
    assert "amutheory.activations" in deferred["amutheory.spec"]       # inside ArchSpec.c
    assert "amutheory.activations" not in graph["amutheory.spec"]
    assert "amutheory.graph" in deferred["amutheory.families.base"]    # inside Family.depth_report
    assert "amutheory.families" in graph["amutheory.measure.family_models"]   # registers the models
    assert "amutheory.families" in graph["amutheory.symbolic.family_theory"]  # registers the theory


def _cycles_message(cycles) -> str:
    return "; ".join(f"{len(c)} modules: " + " <-> ".join(sorted(c)) for c in cycles)


def test_no_import_cycles_at_any_level():
    cycles = strongly_connected(import_graph(module_level=False))
    assert not cycles, "import cycles counting imports inside functions: " + _cycles_message(cycles)


#: the layers above the families (each imports ``amutheory.spec``, which imports the families)
ABOVE_THE_FAMILIES = ("amutheory.spec", "amutheory.measure", "amutheory.symbolic", "amutheory.laws", "amutheory.api",
                      "amutheory.train", "amutheory.campaign", "amutheory.protocol", "amutheory.cli")


def test_the_families_point_down_only():
    graph = import_graph(module_level=False)
    start = [m for m in graph if m == "amutheory.families" or m.startswith("amutheory.families.")]
    reached, todo = set(start), list(start)
    while todo:
        for m in graph[todo.pop()] - reached:
            reached.add(m)
            todo.append(m)
    above = sorted(m for m in reached if m.startswith(ABOVE_THE_FAMILIES))
    assert not above, ("the families reach layers above them (register what they need instead: "
                       "amutheory.families.services): " + ", ".join(above))


def test_no_module_level_import_cycles():
    cycles = strongly_connected(import_graph())
    assert not cycles, "module-level import cycles: " + "; ".join(" <-> ".join(sorted(c)) for c in cycles)


def test_no_two_modules_import_each_other():
    graph = import_graph(module_level=False)
    pairs = {frozenset({a, b}) for a in graph for b in graph[a] if a in graph.get(b, ())}
    assert not pairs, "mutual imports: " + "; ".join(" <-> ".join(sorted(p)) for p in sorted(pairs, key=sorted))


def test_activation_names_agree():
    # activations.py checked this at import time by reading the spec, which asks it for constants
    from amutheory.activations import _REGISTRY
    from amutheory.measure.layers import _ACTIVATIONS
    from amutheory.spec import ACTIVATIONS

    assert set(_REGISTRY) == set(ACTIVATIONS) == set(_ACTIVATIONS)
