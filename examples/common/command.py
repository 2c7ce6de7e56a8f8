"""How a story runs from the command line, in every framework: `--help` prints its docstring (what
it shows, how to run it); a story with a live mode takes `--live [MODEL]`; then the story is told
on a throwaway embedded database, deleted afterwards (`rippl_core.adapters.throwaway_database`).
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rippl_core import AsyncRippl, Rippl
from rippl_core.adapters import throwaway_database


def options(doc: str | None, argv: Sequence[str] | None = None, *,
            live: str | None = None) -> argparse.Namespace:
    """The story's command line; `live`: the model `--live` alone picks (None: no live mode)."""
    parser = argparse.ArgumentParser(description=doc,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    if live is not None:
        parser.add_argument("--live", nargs="?", const=live, metavar="MODEL",
                            help=f"a real model instead of the scripted one (default: {live})")
    return parser.parse_args(argv)


def main(story: Callable[..., Any], doc: str | None, argv: Sequence[str] | None = None, *,
         live: str | None = None, model: Callable[[str], object] | None = None) -> None:
    """Tell `story(rippl)`, or with a live mode `story(rippl, model)` (None: the scripted one),
    on a throwaway database; an async story gets an `AsyncRippl` handle."""
    args = options(doc, argv, live=live)
    chosen = model(args.live) if model is not None and getattr(args, "live", None) else None
    extra = () if live is None else (chosen,)
    logging.basicConfig(level=logging.ERROR)  # the story prints itself: no library chatter
    with throwaway_database(prefix="rippl-example-") as db:
        if inspect.iscoroutinefunction(story):
            asyncio.run(_tell(story, db, extra))
        else:
            with Rippl.open(db) as rippl:
                story(rippl, *extra)


async def _tell(story: Callable[..., Any], db: Path, extra: tuple[object, ...]) -> None:
    rippl = await AsyncRippl.open(db)
    try:
        await story(rippl, *extra)
    finally:
        await rippl.close()
