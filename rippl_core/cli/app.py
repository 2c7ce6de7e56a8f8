"""The typer application, its connection options and the error handling every command shares."""

from __future__ import annotations

import functools
import importlib.metadata
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from rippl_core.client import Rippl
from rippl_core.errors import RipplError

app = typer.Typer(
    name="rippl",
    help="Rippl: causal and temporal memory for agents. Vetoes actions whose premises were "
         "retracted.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
console = Console()
errors = Console(stderr=True)

EXIT_OK, EXIT_ERROR, EXIT_DENIED = 0, 1, 2


class Connection:
    """The connection options given before the command (`rippl --db PATH show X`)."""

    def __init__(self, db: Path | None, url: str | None, graph: str) -> None:
        self.db, self.url, self.graph = db, url, graph

    def open(self) -> Rippl:
        return Rippl.open(self.db, url=self.url, graph=self.graph)


def print_version(wanted: bool) -> None:
    if wanted:
        console.print(f"rippl-core {importlib.metadata.version('rippl-core')}", highlight=False)
        raise typer.Exit()


@app.callback()
def options(
    ctx: typer.Context,
    db: Annotated[Path | None, typer.Option(help="Embedded database file (default ./.rippl/rippl.db "
                                                 "or RIPPL_DB).")] = None,
    url: Annotated[str | None, typer.Option(help="FalkorDB server, e.g. falkordb://localhost:6379 "
                                                 "(or RIPPL_FALKORDB_URL).")] = None,
    graph: Annotated[str, typer.Option(help="Graph (tenant) name.")] = "rippl",
    version: Annotated[bool, typer.Option("--version", callback=print_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    ctx.obj = Connection(db, url, graph)


def rippl_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn a Rippl error into its message on stderr and exit code 1."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kw: Any) -> Any:
        try:
            return fn(*args, **kw)
        except RipplError as exc:
            errors.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False)
            raise typer.Exit(EXIT_ERROR) from None

    return wrapper


def command(name: str | None = None, *, on: typer.Typer | None = None,
            **kwargs: Any) -> Callable[[Callable[..., Any]], Any]:
    """Register a command (on the root app, or on a sub-app) with Rippl's error handling."""

    def decorate(fn: Callable[..., Any]) -> Any:
        return (on or app).command(name, **kwargs)(rippl_errors(fn))

    return decorate


def connection(ctx: typer.Context) -> Connection:
    conn = ctx.obj if isinstance(ctx.obj, Connection) else ctx.find_root().obj
    assert isinstance(conn, Connection)
    return conn
