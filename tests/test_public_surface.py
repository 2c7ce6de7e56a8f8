"""The public surface: `Rippl` and `AsyncRippl` are twins (same methods, same signatures), every
public method says what it does, and every type that appears in a public signature can be
imported from `rippl_core`."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import subprocess
import sys
import types
import typing
from collections.abc import Iterator
from pathlib import Path

import pydantic
import pytest

import rippl_core
from rippl_core import (
    AsyncEventStream,
    AsyncRecordStore,
    AsyncRippl,
    EventStream,
    RecordStore,
    Rippl,
)

TWINS = [(Rippl, AsyncRippl), (RecordStore, AsyncRecordStore), (EventStream, AsyncEventStream)]
# An asyncio subscription is started by awaiting it; a sync one subscribes when created.
ASYNC_ONLY = {"start"}


def public_methods(cls: type) -> dict[str, object]:
    return {name: member for name, member in vars(cls).items()
            if not name.startswith("_") and (callable(member) or isinstance(member, classmethod | property))}


def normalised(signature: inspect.Signature) -> str:
    """A signature with the sync/async naming differences taken out (AsyncRippl -> Rippl...)."""
    return str(signature).replace("Async", "").replace("redis.asyncio.Redis", "redis.Redis")


@pytest.mark.parametrize(("sync", "asynchronous"), TWINS, ids=lambda c: c.__name__)
def test_the_twins_have_the_same_methods_and_signatures(sync: type, asynchronous: type) -> None:
    mine = public_methods(sync)
    theirs = {k: v for k, v in public_methods(asynchronous).items() if k not in ASYNC_ONLY}
    assert set(mine) == set(theirs), (f"only on {sync.__name__}: {sorted(set(mine) - set(theirs))}; "
                                      f"only on {asynchronous.__name__}: "
                                      f"{sorted(set(theirs) - set(mine))}")
    for name in mine:
        left, right = getattr(sync, name), getattr(asynchronous, name)
        if isinstance(left, property):
            continue
        assert normalised(inspect.signature(left)) == normalised(inspect.signature(right)), name
        assert inspect.iscoroutinefunction(right) or name in ("records",) or \
            not inspect.iscoroutinefunction(left), name


@pytest.mark.parametrize("cls", [c for pair in TWINS for c in pair], ids=lambda c: c.__name__)
def test_every_public_method_has_a_docstring(cls: type) -> None:
    missing = [name for name, member in public_methods(cls).items()
               if not inspect.getdoc(member.fget if isinstance(member, property) else member)]
    assert not missing, f"{cls.__name__} methods without a docstring: {missing}"


def _types(hint: object) -> Iterator[object]:
    """Every class and type alias inside a type hint."""
    if isinstance(hint, typing.TypeAliasType):
        yield hint
        yield from _types(hint.__value__)
        return
    origin = typing.get_origin(hint)
    if origin is not None:
        if origin is not typing.Literal:
            yield from _types(origin)
            for arg in typing.get_args(hint):
                yield from _types(arg)
        return
    if isinstance(hint, types.UnionType):
        for arg in typing.get_args(hint):
            yield from _types(arg)
        return
    if isinstance(hint, type):
        yield hint


def _from_rippl(thing: object) -> bool:
    module = getattr(thing, "__module__", "") or ""
    return module.split(".")[0] == "rippl_core"


def signature_types() -> set[object]:
    """The rippl_core types in the public signatures of the exported classes and functions, and
    in the fields of the exported models, followed to a fixpoint."""
    exported = [getattr(rippl_core, name) for name in rippl_core.__all__]
    todo = [thing for thing in exported if isinstance(thing, type)]
    seen: set[object] = set()
    while todo:
        cls = todo.pop()
        if cls in seen:
            continue
        seen.add(cls)
        hints: list[object] = []
        if isinstance(cls, type) and issubclass(cls, pydantic.BaseModel):
            hints += [f.annotation for f in cls.model_fields.values()]
        elif dataclasses.is_dataclass(cls):
            hints += typing.get_type_hints(cls).values()
        for name, member in vars(cls).items() if isinstance(cls, type) else ():
            if name.startswith("_"):  # constructors of handles and stores are internal
                continue
            function = member.fget if isinstance(member, property) else \
                member.__func__ if isinstance(member, classmethod | staticmethod) else member
            if callable(function) and _from_rippl(function):
                hints += typing.get_type_hints(function).values()
        for hint in hints:
            for found in _types(hint):
                if _from_rippl(found) and found not in seen:
                    if isinstance(found, type):
                        todo.append(found)
                    else:
                        seen.add(found)
    return {t for t in seen if _from_rippl(t)}


def test_every_type_in_a_public_signature_is_exported() -> None:
    exported = {id(getattr(rippl_core, name)) for name in rippl_core.__all__}
    missing = sorted(getattr(t, "__name__", str(t)) for t in signature_types()
                     if id(t) not in exported and not getattr(t, "__name__", "").startswith("_"))
    assert not missing, f"types in public signatures that rippl_core does not export: {missing}"


def test_the_surface_check_sees_a_missing_export(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rippl_core, "__all__", [n for n in rippl_core.__all__ if n != "Blocker"])
    with pytest.raises(AssertionError, match="Blocker"):
        test_every_type_in_a_public_signature_is_exported()


# ------------------------------------------------------------------------------ the lazy surface


def _type_checking_imports() -> dict[str, str]:
    """Each name the `if TYPE_CHECKING:` block of rippl_core/__init__.py imports, and its module."""
    tree = ast.parse(Path(rippl_core.__file__).read_text(encoding="utf-8"))
    block = next(node for node in tree.body if isinstance(node, ast.If)
                 and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
    return {alias.name: node.module for node in block.body
            if isinstance(node, ast.ImportFrom) and node.module for alias in node.names}


def test_the_lazy_table_the_type_checking_imports_and_all_agree() -> None:
    """Type checkers read the `if TYPE_CHECKING:` imports, `import` reads the lazy table: both
    name the same module for every name, and together they are exactly `__all__`."""
    assert _type_checking_imports() == rippl_core._MODULE_OF
    assert set(rippl_core._MODULE_OF) == set(rippl_core.__all__)
    for name in rippl_core.__all__:  # each resolves to the object its module defines
        assert getattr(rippl_core, name) is getattr(
            importlib.import_module(rippl_core._MODULE_OF[name]), name)
    assert "Rippl" in dir(rippl_core) and "__version__" in dir(rippl_core)
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        rippl_core.Nope  # noqa: B018


HEAVY = ["redis", "falkordb", "pydantic", "yaml", "cryptography", "psutil"]


def _modules_after(statement: str) -> set[str]:
    probe = f"import sys\n{statement}\nprint(' '.join(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True, timeout=120)
    return set(done.stdout.split())


@pytest.mark.parametrize(("statement", "not_imported", "framework"), [
    ("import rippl_core", [*HEAVY, "typer", "rich", "rippl_core.client"], None),
    ("import rippl_core.cli", [*HEAVY, "rippl_core.client", "rippl_core.models", "rich.table"],
     "import typer"),
    ("from rippl_core import PremiseRetractedError, State", [*HEAVY, "rippl_core.client"], None),
])
def test_importing_defers_what_is_not_used(statement: str, not_imported: list[str],
                                           framework: str | None) -> None:
    """A cold start imports only what it uses: `import rippl_core` none of the public names'
    modules, the CLI not the client, the models or the database driver (a command imports them
    when it runs). What the CLI's framework imports by itself (older typers import rich's
    tables) is the framework's, not ours."""
    loaded = _modules_after(statement)
    theirs = _modules_after(framework) if framework else set()
    assert not [m for m in not_imported if m in loaded and m not in theirs]
    assert "rippl_core" in loaded


def test_a_public_name_imports_its_module_on_first_use() -> None:
    probe = ("import sys, rippl_core\nbefore = 'rippl_core.client' in sys.modules\n"
             "rippl_core.Rippl\nprint(before, 'rippl_core.client' in sys.modules, "
             "rippl_core.Rippl.__module__, rippl_core.__version__ != '')")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True, timeout=120)
    assert done.stdout.split() == ["False", "True", "rippl_core.client", "True"]
