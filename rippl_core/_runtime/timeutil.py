"""Time handling: aware datetimes or ISO-8601 strings in, integer UTC epoch milliseconds stored."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import overload

from rippl_core.errors import DatabaseError, InvalidInputError

type TimeLike = datetime | str | int

# 10000-01-01T00:00:00Z in epoch ms: after every time a datetime can express (an open end).
END_OF_TIME = 253_402_300_800_000
# Python's earliest datetime (0001-01-01T00:00:00Z) in epoch ms.
EARLIEST = -62_135_596_800_000


_clock: Callable[[], int] | None = None  # a clock set for tests and demos (`set_clock`)


def now_ms() -> int:
    """The current UTC time in epoch milliseconds (the clock set with `set_clock`, if any)."""
    if _clock is not None:
        return _clock()
    return time.time_ns() // 1_000_000


def set_clock(clock: Callable[[], int] | None) -> Callable[[], int] | None:
    """Make `now_ms` answer from `clock` (epoch ms; None: the system clock again), process-wide;
    returns the clock set before. For tests and demos that let time pass (`rippl_core.testing.Clock`)."""
    global _clock
    previous, _clock = _clock, clock
    return previous


def to_ms(value: TimeLike | None, *, name: str = "time", default: int | None = None) -> int:
    """The one parser of every time Rippl is given: an aware datetime, an ISO-8601 string with an
    offset, or epoch milliseconds, to epoch milliseconds within the years 1 to 9999 (None: the
    default, else now). Naive, malformed and out-of-range times are refused with
    InvalidInputError, so an operation parses its times before it writes anything, and every
    stored time can be read back as a datetime."""
    if value is None:
        return now_ms() if default is None else default
    if isinstance(value, bool) or not isinstance(value, int | str | datetime):
        raise InvalidInputError(f"{name} must be a datetime, an ISO-8601 string or epoch "
                                f"milliseconds (an int), not {type(value).__name__}")
    value_ms = value if isinstance(value, int) else _parsed(value, name)
    if not EARLIEST <= value_ms < END_OF_TIME:
        raise InvalidInputError(f"{name}={value!r} is out of range; give a time between the years "
                                "1 and 9999",
                                cli=f"{value!r} is out of range; give a time between the years 1 "
                                    "and 9999")
    return value_ms


def _parsed(value: str | datetime, name: str) -> int:
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
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidInputError(
            f"{name}={value.isoformat()} has no time zone; pass an aware datetime "
            "(datetime.now(UTC)) or a string with an offset (…+00:00 or …Z)",
            cli=f"{value.isoformat()} has no time zone; write it with an offset, e.g. "
                "2026-10-09T14:00:00Z or …+02:00",
        )
    try:  # exact (a float timestamp loses a millisecond now and then)
        return (value - _EPOCH) // timedelta(milliseconds=1)
    except OverflowError:  # e.g. year 1 with a positive offset
        return EARLIEST - 1


@overload
def from_ms(value: None) -> None: ...
@overload
def from_ms(value: int | float | str) -> datetime: ...
@overload
def from_ms(value: object) -> datetime | None: ...
def from_ms(value: object) -> datetime | None:
    """A stored time (epoch milliseconds) as an aware UTC datetime, whatever was stored: a value
    outside the years 1 to 9999 (written before Rippl checked, or by hand) reads as the nearest
    end of that range, never as an error. None stays None."""
    if type(value) is int and EARLIEST <= value < END_OF_TIME:  # what is stored: the fast path
        return _EPOCH + timedelta(milliseconds=value)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise DatabaseError(f"a stored time is {value!r}, not epoch milliseconds")
    try:
        number = float(value)
    except ValueError:
        raise DatabaseError(f"a stored time is {value!r}, not epoch milliseconds") from None
    if number != number:  # NaN
        raise DatabaseError("a stored time is NaN, not epoch milliseconds")
    clamped = min(max(number, EARLIEST), END_OF_TIME - 1)
    return _EPOCH + timedelta(milliseconds=clamped)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def required_ms(value: TimeLike | None, *, name: str) -> int:
    """Like `to_ms`, for a time the caller must give."""
    if value is None:
        raise InvalidInputError(f"{name} is required: give an aware datetime or an ISO-8601 string "
                                "such as 2026-10-09T14:00:00+00:00")
    return to_ms(value, name=name)


def read_times(as_of: TimeLike | None, known_at: TimeLike | None) -> tuple[int, int]:
    """The (valid time, transaction time) of a read: `as_of` and `known_at`, both default now."""
    now = now_ms()
    return to_ms(as_of, name="as_of", default=now), to_ms(known_at, name="known_at", default=now)


def iso(value: int) -> str:
    """Epoch ms as an ISO-8601 UTC string (any stored value, see `from_ms`)."""
    moment = from_ms(value)
    return moment.isoformat() if moment is not None else "-"
