"""Input validation shared by every entry point: identifiers, texts, tool arguments."""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Iterable, Mapping
from typing import Any

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


def check_ids(values: Iterable[object] | None, *, what: str) -> list[str]:
    """Validate a list of ids, keeping order and dropping repeats."""
    if values is None:
        return []
    if isinstance(values, str):
        raise InvalidInputError(f"{what} must be a list of ids, not a single string")
    seen: dict[str, None] = {}
    for value in values:
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
    """Canonical JSON of tool arguments (sorted keys, no spaces), or None for no arguments."""
    if args is None:
        return None
    if not isinstance(args, Mapping):
        raise InvalidInputError(f"args must be a JSON object (a dict), got {type(args).__name__}")
    try:
        text = _CANONICAL.encode(args)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"args must be JSON-serialisable: {exc}") from None
    if not text.isascii() and not _is_utf8(text):
        raise InvalidInputError("args are not valid Unicode text (a string holds a lone surrogate)")
    if len(text) > MAX_ARGS_BYTES // 4 and len(text.encode()) > MAX_ARGS_BYTES:
        raise InvalidInputError(f"args are {len(text)} bytes of JSON; the limit is {MAX_ARGS_BYTES}")
    return text


def call_key(tool: str, args_json: str | None) -> str:
    """The lookup key of a tool call: tool name and canonical args; '*' matches any args."""
    return f"{tool}\x1f{'*' if args_json is None else args_json}"


def normalise_text(text: str) -> str:
    """Normalised text for semantic ids: NFKC, case-folded, single-spaced, no trailing period."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return re.sub(r"\s+", " ", folded).strip().rstrip(".")


def semantic_id(kind: Kind, text: str) -> str:
    """A deterministic id from a node's kind and normalised text: same statement, same id."""
    digest = hashlib.sha256(f"{kind}\x1f{normalise_text(text)}".encode()).hexdigest()
    return f"{ID_PREFIX[kind]}-{digest[:12]}"
