"""Sphinx extension for nnkit's API pages: each public object documented exactly once.

nnkit exports many objects under several names (``nnkit.relu`` is
``nnkit.nn.functional.relu``, ``nnkit.nn.Sequential`` is ``nnkit.Sequential``). The
directive below documents an object only under its *home* name and lists the other
names as cross-references, so the reference has one entry per object and no
duplicate-object warnings::

    .. nnkit-autoall:: nnkit
       :defined-in: nnkit.autograd.ops.elementwise   (select by the defining module)
       :names: relu gelu                             (select and claim by name)
       :exclude: float32                             (leave out; documented by hand)
       :rest:                                        (what no other directive selected)
       :claim:                                       (make this the home of the selection)
       :group-by-module:                             (a section per defining module)

(``:order:`` lists the defining modules whose sections come first.) A module's public
names are its ``__all__`` (submodules left out). An object's home is, first, the name
given to an explicit ``autoclass``/``autofunction``/... directive, a ``:names:``
option or a ``:claim:`` directive's selection anywhere in the sources, else the first
public name found while walking ``nnkit_api_priority`` (then the other modules,
sorted). ``:rest:`` is decided
from every directive in the sources, so the result does not depend on reading order.
The build fails (a warning, with ``-W``) when a public name of a module that has a
directive is selected by none of them.
"""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx.ext.autodoc.mock import mock
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles

logger = logging.getLogger(__name__)

_AUTO = re.compile(
    r"^\.\. (?:auto(?:class|function|exception|data)|py:(?:class|function|exception))"
    r"::\s+(\S+)\s*$",
    re.M,
)
_BLOCK = re.compile(r"^\.\. nnkit-autoall::\s+(\S+)\s*\n((?:[ \t]+:.*\n?)*)", re.M)
_OPTION = re.compile(r"^\s+:([\w-]+):\s*(.*)$", re.M)


def _resolve(path: str):
    """The object ``pkg.mod.attr`` names, as autodoc finds it: an attribute of the longest
    importable module prefix (``nnkit.autograd.checkpoint`` is the function the package
    exports, not the submodule of that name); the module itself only if nothing else."""
    parts = path.split(".")
    for i in range(len(parts) - 1, 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr)
        return obj
    return importlib.import_module(path)


def _claimable(obj) -> bool:
    """Functions and classes are claimed by identity; constants are always local."""
    return inspect.isclass(obj) or inspect.isroutine(obj) or callable(obj)


def _public(module_name: str) -> list[str]:
    module = importlib.import_module(module_name)
    names = getattr(module, "__all__", None) or []
    return [n for n in names if not inspect.ismodule(getattr(module, n, None))]


class _Index:
    """Homes of all public objects and the selection of every directive, from the sources."""

    def __init__(self, srcdir: Path, priority: list[str], mocked: list[str]) -> None:
        self.blocks: list[tuple[str, dict[str, str]]] = []
        explicit: list[str] = []
        for path in sorted(srcdir.rglob("*.rst")):
            if "_build" in path.parts:
                continue
            text = path.read_text(encoding="utf-8")
            explicit += _AUTO.findall(text)
            for module, opts in _BLOCK.findall(text):
                options = dict(_OPTION.findall(opts))
                self.blocks.append((module, options))
                explicit += [f"{module}.{n}" for n in options.get("names", "").split()]
        # An explicit autoclass/autofunction of ``module.name`` takes that name from ``:rest:``.
        for full in explicit:
            module, _, name = full.rpartition(".")
            self.blocks.append((module, {"names": name, "explicit": ""}))
        self.home: dict[int, str] = {}
        self.conflicts: list[str] = []
        self.errors: list[str] = []
        self.failed: set[str] = set()
        with mock(mocked):
            for full in explicit:
                try:
                    self._claim(_resolve(full), full, explicit=True)
                except Exception as exc:  # reported as a warning: the build goes on
                    self.errors.append(f"cannot import {full}: {exc!r}")
            for m, o in self.blocks:
                if "claim" in o:
                    try:
                        mod = importlib.import_module(m)
                        for name in self.selection(m, o, set()):
                            self._claim(getattr(mod, name), f"{m}.{name}", explicit=True)
                    except Exception as exc:
                        self.errors.append(f"cannot import {m}: {exc!r}")
            modules = list(priority) + sorted({m for m, _ in self.blocks} - set(priority))
            self.public = {}
            for m in modules:
                try:
                    mod = importlib.import_module(m)
                    self.public[m] = _public(m)
                except Exception as exc:
                    self.errors.append(f"cannot import {m}: {exc!r}")
                    self.public[m] = []
                    self.failed.add(m)
                    continue
                for name in self.public[m]:
                    self._claim(getattr(mod, name), f"{m}.{name}")
            self.selected = self._select_all()

    def _claim(self, obj, full: str, explicit: bool = False) -> None:
        if not _claimable(obj):
            return
        home = self.home.setdefault(id(obj), full)
        if explicit and home != full:
            self.conflicts.append(f"{full} is also documented as {home}")

    def selection(self, module: str, options: dict[str, str], taken: set[str]) -> list[str]:
        if module in self.failed:
            return []
        mod = importlib.import_module(module)
        names = options.get("names", "").split()
        prefixes = tuple(options.get("defined-in", "").split())
        excluded = set(options.get("exclude", "").split())
        public = _public(module)
        if prefixes:
            names += [
                n
                for n in public
                if getattr(getattr(mod, n), "__module__", "").startswith(prefixes)
                and n not in names
            ]
        if "rest" in options:
            names += [n for n in public if n not in taken and n not in names]
        return [n for n in names if n not in excluded]

    def _select_all(self) -> dict[str, set[str]]:
        taken: dict[str, set[str]] = {}
        for module, options in self.blocks:
            if "rest" not in options:
                taken.setdefault(module, set()).update(self.selection(module, options, set()))
                taken[module].update(options.get("exclude", "").split())
        for module, options in self.blocks:
            if "rest" in options:
                taken.setdefault(module, set()).update(
                    self.selection(module, options, taken.get(module, set()))
                )
                taken[module].update(options.get("exclude", "").split())
        return taken


def _kind(obj) -> str:
    if inspect.isclass(obj):
        return "exception" if issubclass(obj, BaseException) else "class"
    if callable(obj):
        return "function"
    return "data"


class AutoAll(SphinxDirective):
    """``.. nnkit-autoall:: MODULE``: see the module docstring."""

    required_arguments = 1
    option_spec = {
        "names": directives.unchanged,
        "defined-in": directives.unchanged,
        "exclude": directives.unchanged,
        "rest": directives.flag,
        "group-by-module": directives.flag,
        "claim": directives.flag,
        "order": directives.unchanged,
    }

    def run(self) -> list[nodes.Node]:
        index: _Index = self.env.app.nnkit_api_index
        module = self.arguments[0]
        options = {k: ("" if v is None else v) for k, v in self.options.items()}
        if module in index.failed:
            return []  # reported once, when the index was built
        mod = importlib.import_module(module)
        taken = set()
        if "rest" in options:
            taken = set().union(
                *(
                    index.selection(m, o, set())
                    for m, o in index.blocks
                    if m == module and "rest" not in o
                ),
                *(o.get("exclude", "").split() for m, o in index.blocks if m == module),
            )
        names = index.selection(module, options, taken)
        if "group-by-module" not in options:
            return self._parse(self._entries(module, mod, names))
        groups: dict[str, list[str]] = {}
        for name in names:
            groups.setdefault(getattr(getattr(mod, name), "__module__", module), []).append(name)
        order = options.get("order", "").split()
        titles = self.config.nnkit_api_family_titles
        lines: list[str] = []
        for where in sorted(
            groups, key=lambda m: (order.index(m) if m in order else len(order), m)
        ):
            stem = where.rpartition(".")[2]
            title = titles.get(stem) or stem.strip("_").replace("_", " ").capitalize()
            path = where.replace(".", "/") + ".py"
            lines += [title, "-" * len(title), "", f"Defined in ``{path}``.", ""]
            lines += self._entries(module, mod, groups[where])
        return self._parse(lines)

    def _entries(self, module: str, mod, names: list[str]) -> list[str]:
        """Autodoc directives for the names whose home is here, links for the others."""
        index: _Index = self.env.app.nnkit_api_index
        lines: list[str] = []
        aliases: list[str] = []
        for name in names:
            obj = getattr(mod, name)
            full = f"{module}.{name}"
            home = index.home.get(id(obj), full) if _claimable(obj) else full
            if home != full:
                aliases.append(f"``{name}`` (:py:obj:`{home}`)")
                continue
            kind = _kind(obj)
            lines.append(f".. auto{kind}:: {full}")
            if kind in ("class", "exception"):
                lines += ["   :members:", "   :show-inheritance:"]
            lines.append("")
        if aliases:
            lines += ["Also exported here, documented under their home name: "]
            lines[-1] += ", ".join(aliases) + "."
            lines.append("")
        return lines

    def _parse(self, lines: list[str]) -> list[nodes.Node]:
        body = nodes.container()
        content = StringList(lines, source=self.get_source_info()[0])
        nested_parse_with_titles(self.state, content, body)
        return body.children


class TensorMethods(SphinxDirective):
    """``.. nnkit-tensor-methods::``: the ops that are also Tensor methods, as links."""

    def run(self) -> list[nodes.Node]:
        import nnkit
        from nnkit.autograd import ops

        index: _Index = self.env.app.nnkit_api_index
        linked = [n for n in ops.TENSOR_METHODS if getattr(nnkit, n, None) is getattr(ops, n)]
        homes = {n: index.home.get(id(getattr(nnkit, n)), f"nnkit.{n}") for n in linked}
        text = ", ".join(f":py:func:`{n} <{homes[n]}>`" for n in linked)
        body = nodes.container()
        self.state.nested_parse(StringList([text], source=self.get_source_info()[0]), 0, body)
        return body.children


def _build_index(app) -> None:
    index = _Index(Path(app.srcdir), app.config.nnkit_api_priority, app.config.autodoc_mock_imports)
    for error in index.errors:
        logger.warning("nnkit-autoall: %s", error)
    for conflict in index.conflicts:
        logger.warning("nnkit-autoall: %s", conflict)
    listed = {m for m, o in index.blocks if "explicit" not in o}
    for module, names in index.selected.items():
        if module not in listed:
            continue
        missing = [n for n in index.public[module] if n not in names]
        if missing:
            logger.warning(
                "nnkit-autoall: public names of %s on no API page: %s", module, ", ".join(missing)
            )
    app.nnkit_api_index = index


def _skip_tensor_op_methods(app, what, name, obj, skip, options):
    """Leave out the Tensor methods that are the ``nnkit.<op>`` functions (listed apart)."""
    if what == "class":
        import nnkit
        from nnkit.autograd import ops

        if name in ops.TENSOR_METHODS and getattr(nnkit, name, None) is obj:
            return True
    return None


def setup(app):
    app.add_config_value("nnkit_api_priority", [], "env")
    app.add_config_value("nnkit_api_family_titles", {}, "env")
    app.add_directive("nnkit-autoall", AutoAll)
    app.add_directive("nnkit-tensor-methods", TensorMethods)
    app.connect("builder-inited", _build_index)
    app.connect("autodoc-skip-member", _skip_tensor_op_methods)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
