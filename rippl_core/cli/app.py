"""The typer application, its connection options, its output and the error handling every command
shares.

Output: the consoles never read markup in what they print (`markup=False`, no emoji codes), so no
user text (a claim, an id, a file name) can be taken for markup. Styled lines are built with
`styled(template, *values)`: the template is markup, the values never are.

Errors: every command runs under one handler that maps each expected exception class to a message
on stderr and an exit code; nothing reaches the user as a traceback (set RIPPL_DEBUG=1 to see one).

Exit codes: 0 ok (or allowed), 1 error (not found, unreachable, a broken receipt chain...),
2 usage (a bad option, argument, input value or input file), 3 denied (a check said no).
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.text import Text

from rippl_core.errors import InvalidInputError, RipplError

if TYPE_CHECKING:
    from rippl_core.client import Rippl

app = typer.Typer(
    name="rippl",
    help="Rippl: causal and temporal memory for agents. Vetoes actions whose premises were "
         "retracted. Exit codes: 0 ok, 1 error, 2 usage error, 3 denied.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode=None,
)


def _console(*, stderr: bool = False) -> Console:
    """A console sized when it prints. Rich reads COLUMNS and LINES once, when a console is made:
    a module-level console would keep the size of the environment that imported it (a test
    worker's COLUMNS=80) whatever the command's environment says."""
    made = Console(stderr=stderr, markup=False, emoji=False, highlight=False)
    made._width = made._height = None  # read COLUMNS/LINES (or the terminal) at each print
    return made


console = _console()
errors = _console(stderr=True)

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_DENIED = 0, 1, 2, 3


def styled(template: str, *values: object) -> Text:
    """Console markup with values: `styled("[bold]{}[/bold] is {}", node_id, status)`.

    The template's markup is parsed; each value is put in after parsing, as plain text (a `Text`
    value keeps its own styles), so no value can open, close or break a style (rich's `escape`
    misses cases such as a value ending in a backslash or holding `\\[`)."""
    marks = [chr(0xE000 + i) for i in range(len(values))]
    parsed = Text.from_markup(template.format(*marks), emoji=False)
    offsets: list[int] = []
    pieces: list[str] = []
    inserted: list[tuple[int, Text]] = []
    size = 0
    for char in parsed.plain:
        offsets.append(size)
        index = ord(char) - 0xE000
        value = values[index] if 0 <= index < len(values) else char
        piece = value.plain if isinstance(value, Text) else str(value)
        if isinstance(value, Text):
            inserted.append((size, value))
        pieces.append(piece)
        size += len(piece)
    offsets.append(size)
    text = Text("".join(pieces), style=parsed.style, justify=parsed.justify, end=parsed.end)
    for span in parsed.spans:
        text.stylize(span.style, offsets[span.start], offsets[span.end])
    for at, value in inserted:
        if value.style:
            text.stylize(value.style, at, at + len(value.plain))
        for span in value.spans:
            text.stylize(span.style, at + span.start, at + span.end)
    return text


class Output(StrEnum):
    """--format of a command that prints a table or JSON."""

    table = "table"
    json = "json"


class GraphOutput(StrEnum):
    """--format of a command that can also draw a graph."""

    table = "table"
    json = "json"
    mermaid = "mermaid"
    dot = "dot"


class ChartOutput(StrEnum):
    """--format of a command that can also draw a Mermaid chart."""

    table = "table"
    json = "json"
    mermaid = "mermaid"


def _format() -> Any:
    return typer.Option("--format", "-f", help="What to print.", case_sensitive=False)


OutputFormat = Annotated[Output, _format()]
GraphFormat = Annotated[GraphOutput, _format()]
ChartFormat = Annotated[ChartOutput, _format()]


def print_json(value: Any) -> None:
    """JSON on stdout, plain (no colour codes when piped)."""
    console.print_json(json.dumps(value))


class Connection:
    """The connection options given before the command (`rippl --db PATH show X`)."""

    def __init__(self, db: Path | None, url: str | None, graph: str) -> None:
        self.db, self.url, self.graph = db, url, graph

    def open(self, *, create: bool = False) -> Rippl:
        """A handle on the graph. Reading commands refuse a database or graph that does not
        exist (a typo in --db or --graph), writing commands create it (`create=True`)."""
        from rippl_core.client import Rippl  # the client (redis, pydantic) only when a command runs

        return Rippl.open(self.db, url=self.url, graph=self.graph, create=create)


def print_version(wanted: bool) -> None:
    if wanted:
        from importlib.metadata import version

        console.print(f"rippl-core {version('rippl-core')}", highlight=False)
        raise typer.Exit()


@app.callback()
def options(
    ctx: typer.Context,
    db: Annotated[Path | None, typer.Option(help="Embedded database file (default ./.rippl/rippl.db "
                                                 "or RIPPL_DB).")] = None,
    url: Annotated[str | None, typer.Option(help="FalkorDB server, e.g. falkordb://localhost:6379, "
                                                 "a replica set falkordb+sentinel://h:26379,h2:26379/"
                                                 "service or a cluster falkordb+cluster://h:7000,"
                                                 "h2:7001 (or RIPPL_FALKORDB_URL).")] = None,
    graph: Annotated[str, typer.Option(help="Graph (tenant) name.")] = "rippl",
    version: Annotated[bool, typer.Option("--version", callback=print_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    ctx.obj = Connection(db, url, graph)


def fail(message: str | Text, code: int) -> typer.Exit:
    errors.print(styled("[red]error:[/red] {}", message) if isinstance(message, str) else message)
    return typer.Exit(code)


def _file_problem(exc: OSError | UnicodeDecodeError) -> str:
    if isinstance(exc, UnicodeDecodeError):
        return f"a file given is not UTF-8 text ({exc.reason} at byte {exc.start})"
    name = f" {exc.filename}" if exc.filename else ""
    return f"cannot use{name}: {exc.strerror or exc}"


# click's base exception (a usage error, a bad parameter...), wherever this typer takes click from:
# older typers use the click package, newer ones vendor it as typer._click (a core-only install
# then has no click at all, and click.ClickException is not what typer raises). Either way
# typer.BadParameter derives from it.
_CLICK_ERROR: type[Exception] = next(
    c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")


def handle_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Run a command under the one error handler: each expected exception class becomes a
    message on stderr and its exit code; an unexpected one, a one-line report."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kw: Any) -> Any:
        try:
            return fn(*args, **kw)
        except (typer.Exit, typer.Abort, _CLICK_ERROR):
            raise
        except InvalidInputError as exc:
            raise fail(exc.for_cli(), EXIT_USAGE) from None
        except RipplError as exc:
            raise fail(exc.for_cli(), EXIT_ERROR) from None
        except (OSError, UnicodeDecodeError) as exc:
            raise fail(_file_problem(exc), EXIT_USAGE) from None
        except KeyboardInterrupt:
            raise fail("interrupted", 130) from None
        except Exception as exc:
            if os.environ.get("RIPPL_DEBUG"):
                raise
            raise fail(f"unexpected {type(exc).__name__}: {exc}. This is a bug in rippl; run "
                       "again with RIPPL_DEBUG=1 to see where, and report it", EXIT_ERROR) from None

    return wrapper


def command(name: str | None = None, *, on: typer.Typer | None = None,
            **kwargs: Any) -> Callable[[Callable[..., Any]], Any]:
    """Register a command (on the root app, or on a sub-app) under the error handler."""

    def decorate(fn: Callable[..., Any]) -> Any:
        return (on or app).command(name, **kwargs)(handle_errors(fn))

    return decorate


def connection(ctx: typer.Context) -> Connection:
    conn = ctx.obj if isinstance(ctx.obj, Connection) else ctx.find_root().obj
    assert isinstance(conn, Connection)
    return conn


# ----------------------------------------------------------------------------- input values


def time_option(value: str | None) -> str | None:
    """A time given on the command line: checked here, so a bad one is a usage error that names
    the option."""
    if value is None:
        return None
    from rippl_core._runtime.timeutil import to_ms

    try:
        to_ms(value)
    except InvalidInputError as exc:
        raise typer.BadParameter(exc.for_cli()) from None
    return value


def signing_key_file(path: Path | None) -> bytes | None:
    """A --key file: a raw 32-byte Ed25519 private key, as 64 hex characters."""
    if path is None:
        return None
    usage = f"--key {path} must hold an Ed25519 private key as 64 hex characters"
    try:
        text = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"{usage}; {_file_problem(exc)}") from None
    try:
        key = bytes.fromhex(text)
    except ValueError:
        raise InvalidInputError(f"{usage}; it holds something else") from None
    if len(key) != 32:
        raise InvalidInputError(f"{usage}; it holds {len(key)} bytes")
    return key


def public_keys_file(path: Path | None) -> dict[str, str] | None:
    """A --keys file: a JSON object mapping each actor to its Ed25519 public key (hex)."""
    if path is None:
        return None
    usage = (f"--keys {path} must be a JSON object mapping each actor to its Ed25519 public key "
             '(64 hex characters), e.g. {"alice": "3b6a27bc…"}')
    try:
        keys = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"{usage}; {_file_problem(exc)}") from None
    except ValueError as exc:
        raise InvalidInputError(f"{usage}; it is not JSON ({exc})") from None
    if not isinstance(keys, dict) or not all(isinstance(v, str) for v in keys.values()):
        raise InvalidInputError(usage)
    return keys
