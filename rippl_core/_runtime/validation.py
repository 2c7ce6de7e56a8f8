"""Input validation shared by every entry point: identifiers, texts, tool arguments."""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Protocol, overload

from rippl_core.errors import InvalidInputError
from rippl_core.vocabulary import ID_PREFIX, Kind

MAX_ID_LENGTH = 128
MAX_TEXT_LENGTH = 10_000
MAX_ARGS_BYTES = 64_000


def check_id(value: object, *, what: str = "id") -> str:
    """Return `value` if it is a usable identifier, else raise InvalidInputError.

    An identifier is a non-empty string of at most 128 printable characters with no surrounding
    white space. Any printable character is allowed (quotes and backticks too): ids are data.
    """
    if (type(value) is str and 0 < len(value) <= MAX_ID_LENGTH and value.isprintable()
            and not value[0].isspace() and not value[-1].isspace()):
        return value  # the common case, in one test; the checks below say what is wrong
    if not isinstance(value, str):
        raise InvalidInputError(f"{what} must be a string, got {type(value).__name__}")
    if not value:
        raise InvalidInputError(f"{what} is empty; give a non-empty id such as 'CLM-001'")
    if len(value) > MAX_ID_LENGTH:
        raise InvalidInputError(f"{what} is {len(value)} characters; the limit is {MAX_ID_LENGTH}")
    if value != value.strip():
        raise InvalidInputError(f"{what}={value!r} has leading or trailing white space")
    if not value.isprintable():
        raise InvalidInputError(f"{what}={value!r} contains control or non-printable characters")
    return value


def plain_errors(errors: Iterable[Mapping[str, Any]]) -> str:
    """Pydantic validation errors (`exc.errors()`) in plain words, one per line: where, what was
    expected, what was given; no URLs, no internal type names."""
    lines = []
    for error in errors:
        where = ".".join(str(part) for part in error.get("loc", ())) or "value"
        expected = str(error.get("msg", "is not valid"))
        expected = expected[:1].lower() + expected[1:]
        given = error.get("input")
        shown = f" (got {given!r:.60})" if not isinstance(given, Mapping | list) else ""
        lines.append(f"{where}: {expected}{shown}")
    return "\n".join(lines)


class SequenceNotStr[T](Protocol):
    """A sequence that is not a string, for the type checker: `SequenceNotStr[str]` takes a list or
    tuple of ids (any `Sequence[str]`), but not one id given alone, whose characters would be taken
    as ids (`check_collection` refuses it at run time). A `str` does not fit because its
    `__contains__` takes only strings."""

    @overload
    def __getitem__(self, index: int, /) -> T: ...
    @overload
    def __getitem__(self, index: slice, /) -> Sequence[T]: ...
    def __contains__(self, value: object, /) -> bool: ...
    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[T]: ...
    def __reversed__(self) -> Iterator[T]: ...
    def index(self, value: Any, start: int = 0, stop: int = ..., /) -> int: ...
    def count(self, value: Any, /) -> int: ...


class CollectionNotStr[T](Protocol):
    """A collection that is not a string (a list, tuple, set, frozenset...), for the type checker:
    see `SequenceNotStr`; for parameters whose order does not matter (tool names)."""

    def __contains__(self, value: object, /) -> bool: ...
    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[T]: ...


def check_collection(values: object, *, what: str, item: str = "id") -> list[object]:
    """The items of a parameter that takes several values (a list, tuple, set or other iterable).
    A single string, bytes, a mapping or a scalar is refused: iterating them would silently take
    their characters, keys or fail with a TypeError."""
    if isinstance(values, str | bytes | bytearray | Mapping) or not isinstance(values, Iterable):
        raise InvalidInputError(f"{what} must be a list of {item}s, not {_a(values)}")
    return list(values)


def _a(value: object) -> str:
    return "a single string" if isinstance(value, str) else f"{type(value).__name__} {value!r:.40}"


def check_ids(values: object, *, what: str) -> list[str]:
    """Validate a list of ids, keeping order and dropping repeats."""
    if values is None:
        return []
    seen: dict[str, None] = {}
    for value in check_collection(values, what=what):
        seen[check_id(value, what=what)] = None
    return list(seen)


def plain_ids(values: list[Any]) -> bool:
    """Whether `check_id` passes every one of `values` (checked for the whole list at once)."""
    return (set(map(type, values)) <= {str} and all(values)
            and max(map(len, values), default=0) <= MAX_ID_LENGTH
            and all(map(str.isprintable, values)) and values == list(map(str.strip, values)))


def plain_texts(values: list[Any]) -> bool:
    """Whether `check_text` passes every one of `values` (checked for the whole list at once)."""
    if not set(map(type, values)) <= {str}:
        return False
    joined = "".join(values)
    return (all(map(str.strip, values)) and max(map(len, values), default=0) <= MAX_TEXT_LENGTH
            and "\x00" not in joined and (joined.isascii() or _is_utf8(joined)))


def check_text(value: object, *, what: str = "text", required: bool = True) -> str:
    """Validate a human text (claim text, title, reason)."""
    if (type(value) is str and value.isascii() and len(value) <= MAX_TEXT_LENGTH
            and "\x00" not in value and not value.isspace() and value):
        return value  # plain ASCII text (no surrogate possible): the common case, in one test
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        raise InvalidInputError(f"{what} must be a string, got {type(value).__name__}")
    if required and not value.strip():
        raise InvalidInputError(f"{what} is empty; say what it is in plain words")
    if len(value) > MAX_TEXT_LENGTH:
        raise InvalidInputError(f"{what} is {len(value)} characters; the limit is {MAX_TEXT_LENGTH}")
    if "\x00" in value:
        raise InvalidInputError(f"{what} contains a NUL character")
    if not _is_utf8(value):
        raise InvalidInputError(f"{what} is not valid Unicode text (it contains a lone surrogate)")
    return value


def _is_utf8(value: str) -> bool:
    """False when `value` cannot be sent as UTF-8 (it holds a lone surrogate)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check_actor(value: object, *, what: str = "by") -> str:
    """An actor identity (who proposed, approved...): a non-empty id."""
    if isinstance(value, str) and not value.strip():
        raise InvalidInputError(f"{what} is empty; name who does this (a person or an agent id)")
    return check_id(value, what=what)


# what json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
# writes, without building an encoder on every call
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                              allow_nan=False)


def canonical_args(args: Mapping[str, Any] | None) -> str | None:
    """Canonical JSON of tool arguments, or None for no arguments: the same call however it is
    spelt. Keys sorted, no spaces, every string and key in Unicode NFC, and a number written as an
    integer whenever it is one (9, 9.0 and 9e0 are the same argument; True stays true, never 1)."""
    if args is None:
        return None
    if isinstance(args, Mapping):
        _check_json_keys(args, "args", 0)
        args = _normal(args, "args")
    return canonical_json(args, what="args", limit=MAX_ARGS_BYTES)


def _normal(value: Any, where: str) -> Any:
    """`value` with strings and keys in NFC and integral floats as integers (after
    `_check_json_keys`: keys are strings, the depth is bounded)."""
    if isinstance(value, str):
        return unicodedata.normalize("NFC", value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            nfc = unicodedata.normalize("NFC", key)
            if nfc in out:
                raise InvalidInputError(f"{where} has two keys that are the same text ({nfc!r}) once "
                                        "Unicode-normalised (NFC); give each key once")
            out[nfc] = _normal(item, f"{where}[{nfc!r}]")
        return out
    if isinstance(value, list | tuple):
        return [_normal(item, f"{where}[{index}]") for index, item in enumerate(value)]
    return value


MAX_DEPTH = 64


def canonical_json(value: object, *, what: str, limit: int,
                   default: Callable[[Any], Any] | None = None) -> str:
    """Canonical JSON (sorted keys, no spaces) of a JSON object given by a caller: a mapping whose
    keys are strings at every depth, holding only JSON values. Anything else is refused, never
    coerced (json.dumps would store {1: 2} as {"1": 2}, and 1 and "1" would then collide)."""
    if not isinstance(value, Mapping):
        raise InvalidInputError(f"{what} must be a JSON object (a dict), got {type(value).__name__}")
    _check_json_keys(value, what, 0)
    try:
        text = (_CANONICAL.encode(value) if default is None else
                json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                           allow_nan=False, default=default))
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{what} must be JSON-serialisable: {exc}") from None
    if not text.isascii() and not _is_utf8(text):
        raise InvalidInputError(f"{what} is not valid Unicode text (a string holds a lone surrogate)")
    if len(text) > limit // 4 and len(text.encode()) > limit:  # 4 bytes at most per character
        raise InvalidInputError(f"{what} is {len(text)} bytes of JSON; the limit is {limit}")
    return text


def _check_json_keys(value: object, where: str, depth: int) -> None:
    if depth > MAX_DEPTH:
        raise InvalidInputError(f"{where} is nested more than {MAX_DEPTH} levels deep (or refers "
                                "to itself)")
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                raise InvalidInputError(f"{where} has the key {key!r} ({type(key).__name__}); "
                                        "keys of a JSON object are strings")
            _check_json_keys(item, f"{where}[{key!r}]", depth + 1)
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            _check_json_keys(item, f"{where}[{index}]", depth + 1)


def call_key(tool: str, args_json: str | None) -> str:
    """The lookup key of a tool call: tool name and canonical args; '*' matches any args."""
    return f"{tool}\x1f{'*' if args_json is None else args_json}"


def repeat_key(run: str, tool: str, args_json: str) -> str:
    """The key a captured call is found by as the repeat of a vetoed call: its run, tool and
    canonical args (`canonical_args`)."""
    return f"{run}\x1f{tool}\x1f{args_json}"


def normalise_text(text: str) -> str:
    """Normalised text for semantic ids: NFKC, case-folded, single-spaced, no trailing period."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return re.sub(r"\s+", " ", folded).strip().rstrip(".")


def semantic_id(kind: Kind, text: str) -> str:
    """A deterministic id from a node's kind and normalised text: same statement, same id."""
    digest = hashlib.sha256(f"{kind}\x1f{normalise_text(text)}".encode()).hexdigest()
    return f"{ID_PREFIX[kind]}-{digest[:12]}"


MANY_HOSTS = "*"  # the host of a reading whose arguments name URLs of several hosts


def url_host(text: str) -> str | None:
    """The lower-cased authority (host, and port if given) of an http(s) URL, None for anything
    else. Every string that starts with `https://evil.example/` has the host `evil.example`."""
    scheme, sep, rest = text.partition("://")
    if not sep or scheme.lower() not in ("http", "https"):
        return None
    host = rest.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]
    return host.lower() or None


def arguments_host(args_json: str | None) -> str | None:
    """What a reading's source records as its `host` (an indexed lookup for a URL prefix): the host
    of the http(s) URLs among its top-level string arguments, `MANY_HOSTS` when they name several,
    None when none is a URL."""
    if not args_json or "://" not in args_json:
        return None
    try:
        parsed = json.loads(args_json)
    except ValueError:
        return None
    if not isinstance(parsed, dict):
        return None
    hosts = {h for v in parsed.values() if isinstance(v, str) and (h := url_host(v)) is not None}
    if not hosts:
        return None
    return hosts.pop() if len(hosts) == 1 else MANY_HOSTS
