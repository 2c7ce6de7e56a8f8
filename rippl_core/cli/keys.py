"""Reviewer keys: keys new|register|revoke|list."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from rippl_core.cli.app import (
    Output,
    OutputFormat,
    app,
    command,
    connection,
    console,
    print_json,
    signing_key_file,
    styled,
)
from rippl_core.errors import InvalidInputError

keys_app: typer.Typer = typer.Typer(help="Reviewer keys: each reviewer signs their decisions with their own "
                            "Ed25519 key.", no_args_is_help=True)
app.add_typer(keys_app, name="keys")

KEY_FILE = Annotated[Path, typer.Option("--key", help="The reviewer's private key file (hex), as "
                                                      "`rippl keys new` wrote it.")]


@command("new", on=keys_app)
def keys_new(out: Annotated[Path, typer.Option("--out", help="Where to write the private key "
                                                             "(created with mode 0600).")]) -> None:
    """Make a reviewer key: the private key goes to --out (keep it; only you should read it), the
    public key is printed (put it in the reviewers file: `name: TOKEN ed25519:PUBLIC`)."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from rippl_core.review.keys import public_hex

    key = Ed25519PrivateKey.generate()
    try:
        fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise InvalidInputError(f"{out} exists; a key file is never overwritten") from None
    with os.fdopen(fd, "w", encoding="utf-8") as file:
        file.write(key.private_bytes_raw().hex() + "\n")
    console.print(f"ed25519:{public_hex(key)}")


@command("register", on=keys_app)
def keys_register(ctx: typer.Context, reviewer: str, key: KEY_FILE,
                  current_key: Annotated[Path | None, typer.Option(
                      help="To rotate: the key registered now, which seals the change.")] = None
                  ) -> None:
    """Register (or rotate to) a reviewer's key in the log (receipted, signed with that key)."""
    signing_key = signing_key_file(key)
    current = signing_key_file(current_key)
    with connection(ctx).open(create=True) as rippl:
        receipt = rippl.register_key(reviewer, signing_key=signing_key, current_key=current)
    console.print(styled("[bold]{}[/bold]: {} registered key {}", receipt.id, reviewer,
                         receipt.body["public_key"]))


@command("revoke", on=keys_app)
def keys_revoke(ctx: typer.Context, reviewer: str,
                by: Annotated[str, typer.Option(help="Who revokes it.")],
                reason: Annotated[str, typer.Option(help="Why (lost, compromised, left).")],
                key: Annotated[Path | None, typer.Option(
                    help="The revoker's own key file, if they have a registered key.")] = None
                ) -> None:
    """Revoke a reviewer's registered key (receipted): nothing it signs later is accepted."""
    signing_key = signing_key_file(key)
    with connection(ctx).open() as rippl:
        receipt = rippl.revoke_key(reviewer, by=by, reason=reason, signing_key=signing_key)
    console.print(styled("[bold]{}[/bold]: {}'s key {} revoked by {}", receipt.id, reviewer,
                         receipt.body["public_key"], by))


@command("list", on=keys_app)
def keys_list(ctx: typer.Context, format: OutputFormat = Output.table) -> None:
    """Each reviewer's registered key, as the log records it."""
    with connection(ctx).open() as rippl:
        keys = rippl.reviewer_keys()
    if format is Output.json:
        print_json(keys)
        return
    for reviewer, public in keys.items():
        console.print(f"{reviewer}: ed25519:{public}")
    console.print(f"{len(keys)} registered keys")
