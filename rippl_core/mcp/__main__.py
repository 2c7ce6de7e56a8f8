"""`python -m rippl_core.mcp [--db PATH | --url URL] [--graph NAME] [mcp options]`: the same as
`rippl [connection options] mcp [mcp options]`, for clients that start a Python interpreter rather
than the `rippl` script."""

from __future__ import annotations

import sys

CONNECTION_OPTIONS = ("--db", "--url", "--graph")


def split_args(argv: list[str]) -> tuple[list[str], list[str]]:
    """Separate the connection options (which the `rippl` command takes before `mcp`) from the rest."""
    connection: list[str] = []
    rest: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        name = arg.split("=", 1)[0]
        if name in CONNECTION_OPTIONS:
            take = 1 if "=" in arg else 2
            connection.extend(argv[i:i + take])
            i += take
        else:
            rest.append(arg)
            i += 1
    return connection, rest


def main(argv: list[str] | None = None) -> None:
    from rippl_core.cli import app

    connection, rest = split_args(sys.argv[1:] if argv is None else argv)
    app(args=[*connection, "mcp", *rest], prog_name="python -m rippl_core.mcp")


if __name__ == "__main__":
    main()
