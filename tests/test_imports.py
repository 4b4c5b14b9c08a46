"""The package layering of nnkit (DESIGN §2): imports flow downward only.

Every module of ``nnkit/`` is parsed (not imported) and each of its imports is mapped to
the package it reaches: imports at module level and inside functions alike, ``from .
import x`` resolved against the importing module, ``importlib.import_module("nnkit.x")``
with a literal name counted as an import, and imports under ``if TYPE_CHECKING:`` counted
too (a type is a dependency). A module may import from its own package and from packages
at its level of :data:`LAYERS` or below; the packages must not import each other in a
cycle, nor the modules (those of one package included: the autograd core and the op
families form a module-level DAG, ``tensor.py`` at its bottom); and no module but the
re-exporters (``nnkit/__init__.py`` and ``nnkit.nn``) imports the ``nnkit`` package
itself (``import nnkit``, ``from nnkit import x``, or ``import nnkit.x`` without ``as``,
which binds the whole package to the name ``nnkit``): a module names what it depends on.

An import belongs at module top: one inside a function must say why on its line (or on
the ``try:`` around it), ``# optional: <package>`` for an optional dependency or
``# start-up: ...`` for a measured start-up cost. And every module stays within
:data:`MAX_LINES` lines.
"""

from __future__ import annotations

import ast
import inspect
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from nnkit.autograd.tensor import Tensor

ROOT = Path(__file__).resolve().parent.parent / "nnkit"

#: The level of each package of ``nnkit`` (a subpackage, or a top-level module such as
#: ``nnkit/random.py``), lowest first. An import may go to the same level or a lower one;
#: packages on one level must still not import each other in a cycle. A new package
#: must be added here.
LAYERS: dict[str, int] = {
    # the array backends, and the version string every package may record
    "backends": 0,
    "_version": 0,
    # nnkit's random state, the CUDA queries
    "random": 1,
    "cuda": 1,
    # Tensor, Function, the engine, every op
    "autograd": 2,
    # built on Tensors alone
    "layers": 3,
    "optim": 3,
    "data": 3,
    "io": 3,
    # stateful metrics: Tensor ops (and layer naming)
    "metrics": 4,
    # nnkit.compile: records and replays steps (autograd, layers, optimizers)
    "jit": 4,
    # serialize/deserialize and load_model: checkpoints (io), torch-style optimizers (optim)
    "saving": 5,
    # Keras-style optimizers: optim's protocol, saving's serialization
    "optimizers": 6,
    # Keras callbacks: checkpoints (io), lr schedulers (optim)
    "callbacks": 7,
    # communicators, DistributedDataParallel, SyncBatchNorm (layers)
    "distributed": 8,
    # compile/fit/evaluate/predict: everything above
    "training": 9,
    # Model (a Module and a Trainer), Sequential, functional models
    "models": 10,
    # ONNX export of any Module
    "onnx": 11,
    # the command line
    "cli": 12,
    # the re-exporters: the public surface (nnkit.linalg and nnkit.special re-export ops)
    "nn": 13,
    "linalg": 13,
    "special": 13,
    "signal": 13,
    "nnkit": 13,
}

#: Packages whose modules may import the ``nnkit`` package itself (they re-export it).
REEXPORTERS = {"nnkit", "nn"}

MAX_LINES = 600

#: What a comment on an import inside a function (or on the ``try:`` around it) must
#: start with: the reason it is not at module top.
INNER_IMPORT_REASONS = ("# optional:", "# start-up:")

#: What ``nnkit/autograd/tensor.py`` may import: it is the bottom of the autograd core,
#: and the modules above it attach the Tensor methods that need them (see its docstring).
TENSOR_MODULE_IMPORTS = {"nnkit.autograd.handles", "nnkit.backends", "nnkit.backends.dtypes"}


@dataclass(frozen=True)
class Import:
    """One import of an nnkit module: who imports what, and where."""

    source: str  # the importing module, e.g. "nnkit.training.trainer"
    target: str  # the imported module (or package), e.g. "nnkit.callbacks"
    line: int
    binds_nnkit: bool  # ``import nnkit``, ``from nnkit import x``, ``import nnkit.x``


def module_name(path: Path, root: Path = ROOT) -> str:
    """``nnkit.layers.module`` for ``nnkit/layers/module.py`` (a package is its
    ``__init__``)."""
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def package_of(module: str) -> str:
    """The :data:`LAYERS` key a module belongs to: ``nnkit.layers.module`` → ``layers``,
    ``nnkit.random`` → ``random``, ``nnkit`` → ``nnkit``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "nnkit"


def imports_of(module: str, source: str, is_package: bool) -> Iterator[Import]:
    """Every import of an nnkit module in ``source`` (the text of ``module``)."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "nnkit" or alias.name.startswith("nnkit."):
                    yield Import(module, alias.name, node.lineno, alias.asname is None)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: from the importing package, up level - 1
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target == "nnkit":  # from nnkit import x: x is a package, or a name of nnkit
                for alias in node.names:
                    name = alias.name
                    is_module = (ROOT / name).is_dir() or (ROOT / f"{name}.py").is_file()
                    yield Import(
                        module, f"nnkit.{name}" if is_module else "nnkit", node.lineno, True
                    )
            elif target.startswith("nnkit."):  # a submodule, or names of the module
                submodules = [f"{target}.{a.name}" for a in node.names]
                submodules = [name for name in submodules if _is_module(name)]
                for name in submodules:
                    yield Import(module, name, node.lineno, False)
                if len(submodules) < len(node.names):
                    yield Import(module, target, node.lineno, False)
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", None))
            in ("import_module", "__import__")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
            and node.args[0].value.startswith("nnkit")
        ):
            yield Import(module, node.args[0].value, node.lineno, node.args[0].value == "nnkit")


def _is_module(name: str) -> bool:
    """Whether ``nnkit.x.y`` is a module (or package) of nnkit."""
    path = ROOT.parent / name.replace(".", "/")
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def all_imports(root: Path = ROOT) -> list[tuple[Path, Import]]:
    """``(file, import)`` for every nnkit import of every module under ``root``."""
    found = []
    for path in sorted(root.rglob("*.py")):
        module = module_name(path, root)
        for imp in imports_of(module, path.read_text(encoding="utf-8"), path.name == "__init__.py"):
            found.append((path, imp))
    return found


def layering_violations(imports: Iterable[tuple[Path, Import]]) -> list[str]:
    """Imports of a higher level, imports of the ``nnkit`` package outside the
    re-exporters, and packages missing from :data:`LAYERS`."""
    problems = []
    for path, imp in imports:
        source, target = package_of(imp.source), package_of(imp.target)
        where = f"{path.relative_to(ROOT.parent)}:{imp.line}"
        for package in (source, target):
            if package not in LAYERS:
                problems.append(f"{where}: package {package!r} has no level in LAYERS")
        if source not in LAYERS or target not in LAYERS:
            continue
        if imp.binds_nnkit and source not in REEXPORTERS:
            problems.append(
                f"{where}: {imp.source} imports the nnkit package itself ({imp.target}); "
                "import the names it needs from the modules that define them"
            )
        elif source != target and LAYERS[target] > LAYERS[source]:
            problems.append(
                f"{where}: {imp.source} (level {LAYERS[source]}, {source}) imports "
                f"{imp.target} (level {LAYERS[target]}, {target}), a higher level"
            )
    return problems


def package_cycles(imports: Iterable[tuple[Path, Import]]) -> list[list[str]]:
    """The groups of packages that import each other in a cycle, each sorted."""
    graph: dict[str, set[str]] = {}
    for _, imp in imports:
        source, target = package_of(imp.source), package_of(imp.target)
        graph.setdefault(source, set())
        graph.setdefault(target, set())
        if source != target:
            graph[source].add(target)
    return cycles_of(graph)


def module_cycles(imports: Iterable[tuple[Path, Import]], modules: set[str]) -> list[list[str]]:
    """The groups of ``modules`` that import each other in a cycle (at module level or
    inside functions), each sorted. ``from package import name`` reaches the package's
    ``__init__`` (unless ``name`` is a submodule); the parent packages Python runs
    before a module are not counted."""
    graph: dict[str, set[str]] = {module: set() for module in modules}
    for _, imp in imports:
        if imp.source in graph and imp.target in graph and imp.source != imp.target:
            graph[imp.source].add(imp.target)
    return cycles_of(graph)


def cycles_of(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of more than one node, each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                cycles.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return cycles


def unexplained_inner_imports(path: Path, source: str) -> list[str]:
    """Imports inside a function (or class) body without a reason comment: each must be
    on a line, or under a ``try:`` line, that ends with one of
    :data:`INNER_IMPORT_REASONS` (an optional dependency, a measured start-up cost)."""
    lines = source.splitlines()
    tree = ast.parse(source)
    top_level = set()
    stack = list(tree.body)
    while stack:  # module-level statements, those inside if/try blocks included
        node = stack.pop()
        top_level.add(id(node))
        if isinstance(node, (ast.If, ast.Try)):
            stack.extend(node.body + node.orelse + getattr(node, "finalbody", []))
            for handler in getattr(node, "handlers", []):
                stack.extend(handler.body)
    tries = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Try):
            for child in node.body:
                tries[id(child)] = node.lineno
    problems = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Import, ast.ImportFrom)) or id(node) in top_level:
            continue
        candidates = [lines[node.lineno - 1]]
        if id(node) in tries:
            candidates.append(lines[tries[id(node)] - 1])
        if not any(
            "#" in c and c[c.index("#") :].startswith(INNER_IMPORT_REASONS) for c in candidates
        ):
            problems.append(f"{path}:{node.lineno}: {lines[node.lineno - 1].strip()}")
    return problems


# ------------------------------------------------------------------------ the tests
def test_imports_go_to_the_same_or_a_lower_level():
    problems = layering_violations(all_imports())
    assert not problems, "\n".join(problems)


def test_no_two_packages_import_each_other_in_a_cycle():
    assert package_cycles(all_imports()) == []


def test_no_two_modules_import_each_other_in_a_cycle():
    modules = {module_name(p) for p in ROOT.rglob("*.py")}
    assert module_cycles(all_imports(), modules) == []


def test_tensor_is_the_bottom_of_the_autograd_core():
    targets = {imp.target for _, imp in all_imports() if imp.source == "nnkit.autograd.tensor"}
    assert targets <= TENSOR_MODULE_IMPORTS, sorted(targets - TENSOR_MODULE_IMPORTS)


def test_the_methods_attached_from_above_keep_their_docs_and_signatures():
    backward = Tensor.backward
    assert backward.__qualname__ == "Tensor.backward"
    assert backward.__doc__.startswith("Accumulate the gradient of this tensor")
    assert list(inspect.signature(backward).parameters) == [
        "self",
        "gradient",
        "retain_graph",
        "create_graph",
        "inputs",
    ]
    x = Tensor([1.0, 2.0])  # __init__ from the factories, __repr__ from the printer
    assert repr(x) == "tensor([1.0, 2.0])" and "Tensor(shape=[2]" in str(x)
    assert Tensor.__init__.__doc__ and Tensor.__repr__.__qualname__ == "Tensor.__repr__"
    assert (x + x).tolist() == [2.0, 4.0] and Tensor.add.__module__.endswith("arithmetic")


def test_every_package_has_a_level():
    packages = {package_of(module_name(p)) for p in ROOT.rglob("*.py")}
    assert packages <= set(LAYERS), sorted(packages - set(LAYERS))


def test_imports_inside_functions_say_why():
    problems = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT.parent)
        problems += unexplained_inner_imports(rel, path.read_text(encoding="utf-8"))
    assert not problems, "imports inside functions without a reason:\n" + "\n".join(problems)


def test_modules_are_at_most_600_lines():
    long = {
        str(p.relative_to(ROOT.parent)): n
        for p in sorted(ROOT.rglob("*.py"))
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert not long, f"modules over {MAX_LINES} lines: {long}"


# ------------------------------------------------- the checker finds what it must
def _fake(modules: dict[str, str]) -> list[tuple[Path, Import]]:
    """The imports of made-up modules ``{"nnkit.layers.x": source}``."""
    found = []
    for module, source in modules.items():
        path = ROOT.parent / (module.replace(".", "/") + ".py")
        for imp in imports_of(module, source, is_package=False):
            found.append((path, imp))
    return found


def test_the_checker_reports_an_upward_import_at_any_depth():
    imports = _fake(
        {
            "nnkit.layers.a": "import os\n\ndef f():\n    from nnkit.training import fit\n",
            "nnkit.layers.b": "from ..models import Model\n",
            "nnkit.optim.c": "import importlib\nimportlib.import_module('nnkit.cli.app')\n",
            "nnkit.layers.d": (
                "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                "    from nnkit.models.model import Model\n"
            ),
        }
    )
    problems = layering_violations(imports)
    assert len(problems) == 4, problems
    assert "nnkit.layers.a (level 3, layers) imports nnkit.training" in problems[0]
    assert ":4:" in problems[0]
    assert "imports nnkit.models (level 10, models)" in problems[1]  # relative, resolved
    assert "imports nnkit.cli.app" in problems[2]
    assert "imports nnkit.models.model" in problems[3]


def test_the_checker_reports_imports_of_the_nnkit_package():
    imports = _fake(
        {
            "nnkit.metrics.a": "import nnkit\n",
            "nnkit.metrics.b": "def f():\n    from nnkit import io\n",
            "nnkit.metrics.c": "import nnkit.autograd\n",
            "nnkit.metrics.d": "import nnkit.autograd as autograd\nfrom nnkit.io import x\n",
            "nnkit.nn.e": "import nnkit\nfrom nnkit import optim\n",  # a re-exporter
        }
    )
    problems = layering_violations(imports)
    assert [p.split(":")[0] for p in problems] == [
        "nnkit/metrics/a.py",
        "nnkit/metrics/b.py",
        "nnkit/metrics/c.py",
    ], problems
    assert all("imports the nnkit package itself" in p for p in problems)


def test_the_checker_reports_cycles_and_unknown_packages():
    imports = _fake(
        {
            "nnkit.data.a": "from nnkit.io import x\n",
            "nnkit.io.b": "from nnkit.data import y\n",  # same level: allowed, but a cycle
            "nnkit.optim.c": "from nnkit.autograd import z\n",
            "nnkit.newpkg.d": "from nnkit.layers import w\n",
        }
    )
    assert package_cycles(imports) == [["data", "io"]]
    problems = layering_violations(imports)
    assert problems == ["nnkit/newpkg/d.py:1: package 'newpkg' has no level in LAYERS"], problems


def test_the_checker_wants_a_reason_for_an_import_inside_a_function():
    source = (
        "import os\n"
        "try:\n    import yaml\nexcept ImportError:\n    yaml = None\n"
        "def a():\n    import json\n"
        "def b():\n    import onnx  # optional: onnx\n"
        "def c():\n    try:  # optional: matplotlib\n        import matplotlib\n"
        "    except ImportError:\n        pass\n"
        "def d():\n    from nnkit.cli import commands  # start-up: the whole library\n"
        "def e():\n    import numpy  # numpy is slow\n"
    )
    assert unexplained_inner_imports(Path("m.py"), source) == [
        "m.py:7: import json",
        "m.py:18: import numpy  # numpy is slow",
    ]


def test_the_checker_reports_cycles_between_modules():
    imports = _fake(
        {
            "nnkit.layers.a": "from nnkit.layers.b import x\n",
            "nnkit.layers.b": "def f():\n    import nnkit.layers.a as a\n",
            "nnkit.layers.c": "from nnkit.layers.a import y\nfrom nnkit.layers import z\n",
            "nnkit.layers": "from nnkit.layers.c import w\n",
        }
    )
    modules = {"nnkit.layers", "nnkit.layers.a", "nnkit.layers.b", "nnkit.layers.c"}
    assert module_cycles(imports, modules) == [
        ["nnkit.layers.a", "nnkit.layers.b"],
        ["nnkit.layers", "nnkit.layers.c"],  # c takes z from the package that imports c
    ]


def test_the_checker_reports_cycles_inside_the_autograd_core():
    # tensor.py reaching up to the engine from a method: a cycle, and unexplained
    method = "def backward(self):\n    from nnkit.autograd.engine import r\n"
    imports = _fake(
        {
            "nnkit.autograd.tensor": method,
            "nnkit.autograd.engine": "from nnkit.autograd.tensor import Tensor\n",
            "nnkit.autograd.ops.a": "from nnkit.autograd.ops.b import x\n",
            "nnkit.autograd.ops.b": "from nnkit.autograd.tensor import Tensor\n"
            "def f():\n    from nnkit.autograd.ops.a import y  # start-up: measured\n",
        }
    )
    modules = {imp.source for _, imp in imports}
    assert module_cycles(imports, modules) == [
        ["nnkit.autograd.engine", "nnkit.autograd.tensor"],
        ["nnkit.autograd.ops.a", "nnkit.autograd.ops.b"],  # a reason does not excuse a cycle
    ]
    assert unexplained_inner_imports(Path("t.py"), method) == [
        "t.py:2: from nnkit.autograd.engine import r"
    ]


def test_autograd_never_reads_a_mats_array():
    """Array maths stays in the backends: autograd code uses the Mat interface (kernels
    that need the array live in ``nnkit/backends/*_kernels.py``)."""
    pattern = re.compile(r"(?<![nx]p)\.array\b(?!\s*\()")
    bad = []
    for path in sorted((ROOT / "autograd").rglob("*.py")):
        for i, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#")[0]
            if ">>>" not in code and pattern.search(code):
                bad.append(f"{path.relative_to(ROOT.parent)}:{i}: {line.strip()}")
    assert not bad, "\n".join(bad)
