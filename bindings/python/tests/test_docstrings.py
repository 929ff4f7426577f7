"""Every public name of the librate package has a docstring, so ``help()`` and the IDE
document the whole API.

Public is what a user can reach without an underscore:

- the modules whose dotted name has no part starting with ``_`` (``librate``,
  ``librate.redis``, ``librate.middleware`` and its ``asgi`` and ``wsgi``), each with a
  module docstring;
- each name such a module exports: its ``__all__`` where it has one (every entry must
  exist), else each name without an underscore that the module itself defines;
- each exported class, and each public method, classmethod, staticmethod and property
  of it and of every librate class it inherits from (the private bases included, since
  their methods are the public class's);
- each exported function;
- each exported constant (``FOREVER``, ``ALGORITHMS``): a ``#:`` comment on the lines
  above its assignment, or a string right after it (the forms Sphinx reads), since a
  value holds no docstring of its own.

A docstring must be the object's own: ``inspect.getdoc`` would lend a method its base
class's. Special methods (``__init__``, ``__call__``, ...) are left out: a class's
docstring says how to build and call it. So are the fields of the decision tuples,
which the class docstring describes. ``librate.redis``, ``librate.lease``,
``librate.middleware.django``, ``librate.middleware.fastapi`` and ``librate.prometheus``
are checked where redis-py, Django, FastAPI and prometheus_client are installed (they
import them).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import pkgutil
import types
from functools import cached_property
from pathlib import Path

import pytest

import librate


def public_modules() -> list[str]:
    """The package's public modules (Python files only: librate.so is not one)."""
    names = ["librate"]
    for info in pkgutil.walk_packages(librate.__path__, "librate."):
        if any(part.startswith("_") for part in info.name.split(".")):
            continue
        spec = importlib.util.find_spec(info.name)
        if spec is not None and spec.origin is not None and spec.origin.endswith(".py"):
            names.append(info.name)
    return names


#: The public modules that import a framework or client, and the package each needs.
NEEDS = {
    "librate.redis": "redis",
    "librate.lease": "redis",
    "librate.middleware.django": "django",
    "librate.middleware.fastapi": "fastapi",
    "librate.prometheus": "prometheus_client",
}


def load(name: str) -> types.ModuleType | None:
    """The module, or None for one whose framework or client is not installed."""
    needed = NEEDS.get(name)
    if needed is not None and importlib.util.find_spec(needed) is None:
        return None
    return importlib.import_module(name)


def exported(module: types.ModuleType) -> dict[str, object]:
    """What the module exports: its __all__, else the public names it defines."""
    if hasattr(module, "__all__"):
        return {name: getattr(module, name) for name in module.__all__}
    return {
        name: value
        for name, value in vars(module).items()
        if not name.startswith("_")
        and getattr(value, "__module__", None) == module.__name__
        and (inspect.isclass(value) or inspect.isfunction(value))
    }


def own_doc(value: object) -> bool:
    """Whether the object has a non-blank docstring of its own."""
    doc = value.__dict__.get("__doc__") if inspect.isclass(value) else value.__doc__
    return isinstance(doc, str) and doc.strip() != ""


def member_problems(cls: type) -> list[str]:
    """The public methods and properties of cls and of its librate bases without one."""
    problems = []
    for klass in cls.__mro__:
        if not klass.__module__.startswith("librate"):
            continue
        for name, member in vars(klass).items():
            if name.startswith("_"):
                continue
            if isinstance(member, (classmethod, staticmethod)):
                target: object = member.__func__
            elif isinstance(member, (property, cached_property)) or inspect.isfunction(member):
                target = member
            else:
                continue
            if not own_doc(target):
                problems.append(f"{klass.__module__}.{klass.__qualname__}.{name}")
    return problems


def constant_documented(module: types.ModuleType, name: str) -> bool:
    """Whether the module-level assignment of name, in module or in the module it is
    imported from, has a ``#:`` comment above it or a string after it."""
    source_file = module.__file__
    assert source_file is not None
    source = Path(source_file).read_text()
    tree = ast.parse(source)
    lines = source.splitlines()
    for index, node in enumerate(tree.body):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign):
            targets = [node.target]
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            above = lines[node.lineno - 2].strip() if node.lineno >= 2 else ""
            after = tree.body[index + 1] if index + 1 < len(tree.body) else None
            string_after = (
                isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            )
            return above.startswith("#:") or string_after
        if isinstance(node, ast.ImportFrom) and any(
            (alias.asname or alias.name) == name for alias in node.names
        ):
            origin = importlib.import_module(
                "." * node.level + (node.module or ""), module.__package__
            )
            return constant_documented(origin, name)
    return False


def test_the_public_modules_are_found() -> None:
    # Guards the search itself: a rename must not leave a module unchecked.
    assert {"librate", "librate.middleware", *NEEDS} <= set(public_modules())


def test_librate_redis_is_checked() -> None:
    # Says so, as a skip, where redis-py is missing and librate.redis goes unchecked.
    pytest.importorskip("redis")
    assert load("librate.redis") is not None


def test_every_public_name_has_a_docstring() -> None:
    missing: list[str] = []
    classes: dict[type, None] = {}
    for module_name in public_modules():
        module = load(module_name)
        if module is None:
            continue
        if not own_doc(module):
            missing.append(f"module {module_name}")
        for name in getattr(module, "__all__", []):
            if not hasattr(module, name):
                missing.append(f"{module_name}.__all__ names {name}, which does not exist")
        for name, value in exported(module).items():
            if isinstance(value, types.ModuleType):
                continue
            if inspect.isclass(value):
                classes[value] = None
                if not own_doc(value):
                    missing.append(f"class {module_name}.{name}")
            elif callable(value):
                if not own_doc(value):
                    missing.append(f"function {module_name}.{name}")
            elif not constant_documented(module, name):
                missing.append(f"constant {module_name}.{name}")
    for cls in classes:
        missing += [f"method or property {problem}" for problem in member_problems(cls)]
    assert not missing, "without a docstring:\n" + "\n".join(sorted(set(missing)))
