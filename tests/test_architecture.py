"""The package's import graph runs one way: down the layers of docs/architecture.md, never up, never sideways
between two packages of one layer, and no module cycle.

Every ``import`` / ``from ... import`` of an ``agentstats`` module counts, also those inside functions (a lazy import
of an upper layer is still an upward dependency).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "agentstats"

#: Layer of each top-level module or package, bottom (0) to top: the pipeline, read upwards. An import goes to a lower
#: layer only; two packages of one layer never import each other. docs/architecture.md shows the same map.
LAYERS = {
    "_util": 0,  # small helpers: lazy names, escaping, option names, text
    "records": 1,  # the records every stage reads and writes
    "files": 1,  # file mechanics: atomic writes, manifests, magic bytes
    "intervals": 1,  # the interval, k and seed vocabulary
    "parallel": 1,  # where work runs: executors, chunks, results in input order
    "io": 2,  # the format registry and its readers
    "llm": 2,  # the one client of OpenAI-compatible endpoints, the prompt shelf
    "estimators": 2,  # closed-form and bootstrap estimators, the Dirichlet engine
    "store": 3,  # the run store: a format plugin of io
    "scoring": 3,  # matchers, tool-call correctness, the judge
    "metrics": 4,  # the metric catalogue (over scoring's matchers and the judge)
    "calibration": 4,  # judge calibration and the corrected pass@k / pass^k
    "models": 5,  # the statistical families, fit, Fit
    "simulate": 5,  # data with known truth
    "capture": 5,  # live capture into the store, metrics from the catalogue
    "posterior": 6,  # pass@k / pass^k draws from a Fit
    "planning": 6,  # sample sizes from a family
    "gating": 7,  # the release gate
    "optimize": 8,  # the evaluator-optimizer loop
    "compare": 8,  # runs compared on their shared tasks
    "report": 9,  # everything a person reads: tables, prose, plots, notebooks, HTML
    "cli": 10,  # one module per command: parse, one library call, render
    "__main__": 11,
}


def _module(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        deps = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "agentstats":
                deps.add(node.module)
            elif isinstance(node, ast.Import):
                deps |= {a.name for a in node.names if a.name.split(".")[0] == "agentstats"}
        graph[_module(path)] = deps
    return graph


def _top(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "agentstats"


def test_every_top_level_module_has_a_layer():
    tops = {_top(m) for m in _graph()} - {"agentstats"}
    assert tops <= set(LAYERS), f"add {sorted(tops - set(LAYERS))} to LAYERS and docs/architecture.md"


def test_imports_only_go_down_the_layers():
    upward = []
    for module, deps in _graph().items():
        src = _top(module)
        if src == "agentstats":  # the package's lazy public facade may name anything
            continue
        for dep in deps:
            dst = _top(dep)
            if dst == "agentstats":
                upward.append(f"{module} imports the package facade (import the defining module instead)")
            elif dst != src and LAYERS[dst] > LAYERS[src]:
                upward.append(f"{module} (layer {LAYERS[src]}) imports {dep} (layer {LAYERS[dst]})")
            elif dst != src and LAYERS[dst] == LAYERS[src]:
                upward.append(f"{module} imports {dep}: both in layer {LAYERS[src]}; one of them belongs lower")
    assert not upward, "\n".join(upward)


def test_no_import_cycle_between_modules():
    graph = _graph()
    known = set(graph)

    def resolve(dep: str) -> str | None:
        while dep and dep not in known:  # "from agentstats.models.fit import x" names a module; attributes drop off
            dep = dep.rpartition(".")[0]
        return dep or None

    edges = {
        m: {d for d in map(resolve, deps) if d and d != m and not m.startswith(d + ".")} for m, deps in graph.items()
    }
    # modules import their package's __init__ implicitly; an __init__ re-exporting its own modules is not a cycle
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt.startswith(node + "."):
                continue  # a package's __init__ importing its own submodules
            if state.get(nxt) == 1:
                cycle = [*stack[stack.index(nxt):], nxt]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if state.get(nxt) is None:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for module in sorted(edges):
        if state.get(module) is None:
            visit(module)


#: Third-party packages that execute or export notebooks.
NOTEBOOK_RUNNERS = ("papermill", "nbconvert", "nbclient", "nbformat", "jupyter_client")


def _all_imports() -> dict[str, set[str]]:
    """Every module each package module imports (third-party ones too), lazy imports included."""
    out: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        deps = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                deps.add(node.module)
            elif isinstance(node, ast.Import):
                deps |= {a.name for a in node.names}
        out[_module(path)] = deps
    return out


def test_optimize_never_runs_notebooks():
    """The loop returns its result and renders nothing: ``agentstats loop --out-dir`` renders the gate report after.

    Nothing ``agentstats.optimize`` imports, directly or through other modules of the package (a module's parent
    packages included, as Python imports them), is ``agentstats.report`` or a notebook runner.
    """
    graph = _all_imports()
    known = set(graph)

    def resolve(dep: str) -> list[str]:
        while dep and dep not in known:  # "from agentstats.gating import gate": the package's __init__
            dep = dep.rpartition(".")[0]
        parts = dep.split(".")
        return [".".join(parts[:i]) for i in range(2, len(parts) + 1)] if dep else []  # with its parent packages

    start = sorted(m for m in known if m == "agentstats.optimize" or m.startswith("agentstats.optimize."))
    assert "agentstats.optimize.loop" in start
    seen: dict[str, str] = {m: m for m in start}  # module -> the optimize module that reaches it
    todo = list(start)
    third_party: dict[str, str] = {}
    while todo:
        mod = todo.pop()
        for dep in graph[mod]:
            if dep.split(".")[0] != "agentstats":
                third_party.setdefault(dep.split(".")[0], mod)
                continue
            for m in resolve(dep):
                if m not in seen:
                    seen[m] = mod
                    todo.append(m)
    report = sorted(m for m in seen if m == "agentstats.report" or m.startswith("agentstats.report."))
    assert not report, f"optimize reaches {report} (through {[seen[m] for m in report]})"
    runners = {p: m for p, m in third_party.items() if p in NOTEBOOK_RUNNERS}
    assert not runners, f"optimize reaches notebook runners: {runners}"


def test_the_model_layer_reads_nothing_from_the_gate():
    """``posterior`` never imports ``gating`` (the gate's statistics are estimators: ``estimators.dirichlet``)."""
    wrong = sorted(f"{m} imports {d}" for m, deps in _graph().items() if _top(m) == "posterior"
                   for d in deps if _top(d) == "gating")
    assert not wrong, "\n".join(wrong)


def test_type_checkers_see_every_public_name_where_it_is_loaded_from():
    """The facade's ``TYPE_CHECKING`` imports name the same (name, module) pairs as its lazy ``_API`` map."""
    import agentstats

    tree = ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf-8"))
    (block,) = [n for n in tree.body if isinstance(n, ast.If) and getattr(n.test, "id", None) == "TYPE_CHECKING"]
    seen = {}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom), "only `from MODULE import NAME as NAME` in the TYPE_CHECKING block"
        for alias in node.names:
            assert alias.asname == alias.name, f"{alias.name}: re-export it as itself (`{alias.name} as {alias.name}`)"
            seen[alias.name] = node.module
    assert seen == agentstats._API
