"""Time handling: aware datetimes or ISO-8601 strings in, integer UTC epoch milliseconds stored."""

from __future__ import annotations

import time
from datetime import UTC, datetime

from rippl_core.errors import InvalidInputError

type TimeLike = datetime | str | int

# 10000-01-01T00:00:00Z in epoch ms: after every time a datetime can express (an open end).
END_OF_TIME = 253_402_300_800_000
# Python's earliest datetime (0001-01-01T00:00:00Z) in epoch ms.
EARLIEST = -62_135_596_800_000


def now_ms() -> int:
    """The current UTC time in epoch milliseconds."""
    return time.time_ns() // 1_000_000


def to_ms(value: TimeLike | None, *, name: str = "time", default: int | None = None) -> int:
    """Convert an aware datetime, an ISO-8601 string with an offset, or epoch ms to epoch ms.

    Naive datetimes and strings without an offset are refused: Rippl never guesses a time zone.
    """
    if value is None:
        if default is None:
            return now_ms()
        return default
    if isinstance(value, bool):
        raise InvalidInputError(f"{name} must be a datetime or ISO-8601 string, not a bool")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            value = datetime.fromisoformat(text)
        except ValueError:
            raise InvalidInputError(
                f"{name}={value!r} is not an ISO-8601 timestamp; "
                "write it like 2026-10-09T14:00:00+00:00",
                cli=f"{value!r} is not an ISO-8601 timestamp; write it like 2026-10-09T14:00:00Z",
            ) from None
    if not isinstance(value, datetime):
        raise InvalidInputError(f"{name} must be a datetime or ISO-8601 string, got {type(value)}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidInputError(
            f"{name}={value.isoformat()} has no time zone; pass an aware datetime "
            "(datetime.now(UTC)) or a string with an offset (…+00:00 or …Z)",
            cli=f"{value.isoformat()} has no time zone; write it with an offset, e.g. "
                "2026-10-09T14:00:00Z or …+02:00",
        )
    return int(value.timestamp() * 1000)


def from_ms(ms: int | None) -> datetime | None:
    """Epoch milliseconds to an aware UTC datetime."""
    if ms is None:
        return None
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


def ms(value: TimeLike | None, *, name: str, default: int | None = None) -> int:
    """Epoch ms of an aware datetime, an ISO-8601 string with an offset, or epoch ms (None: the
    default, else now), within the years 1 to 9999. Naive and malformed times are refused."""
    value_ms = to_ms(value, name=name, default=default)
    if not EARLIEST <= value_ms < END_OF_TIME:
        raise InvalidInputError(f"{name}={value!r} is out of range; give a time between the years "
                                "1 and 9999")
    return value_ms


def required_ms(value: TimeLike | None, *, name: str) -> int:
    """Like `ms`, for a time the caller must give."""
    if value is None:
        raise InvalidInputError(f"{name} is required: give an aware datetime or an ISO-8601 string "
                                "such as 2026-10-09T14:00:00+00:00")
    return ms(value, name=name)


def read_times(as_of: TimeLike | None, known_at: TimeLike | None) -> tuple[int, int]:
    """The (valid time, transaction time) of a read: `as_of` and `known_at`, both default now."""
    now = now_ms()
    return ms(as_of, name="as_of", default=now), ms(known_at, name="known_at", default=now)


def iso(value: int) -> str:
    """Epoch ms as an ISO-8601 UTC string."""
    return datetime.fromtimestamp(value / 1000, tz=UTC).isoformat()
