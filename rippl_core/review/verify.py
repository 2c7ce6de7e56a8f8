"""The offline verifier: check an exported receipt log without a database.

    python -m rippl_core.review.verify export.jsonl [--anchor WITNESS] [--keys keys.json]
                                       [--log NAME] [--distinct-approver] [--json]

It re-walks the hash chain and the export's head, the reviewer keys the log registers (who signed
what, rotations, revocations), and, with `--anchor` (a witness file, a git repository or an HTTP
witness, see `rippl_core.review.anchor`), that the log extends every head anchored there: a cut
tail, a re-sealed history or a stripped signature fails even for a verifier that trusts no key.
Exit status 0 when the log verifies, 1 when it does not, 2 for unusable input.

Dependency-light: it loads neither a database client nor the CLI, only the receipt functions
(`cryptography`, `rfc8785`, `pydantic` for the result, and the standard library).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rippl_core.errors import InvalidInputError
from rippl_core.models import ReceiptCheck
from rippl_core.review.anchor import anchored_heads
from rippl_core.review.heads import anchored_problems
from rippl_core.review.receipts import leaf_hash, read_jsonl, verify_export


def log_name(records: Sequence[Mapping[str, Any]], given: str | None) -> str | None:
    """The log an export is of: as its head records it, else as given (an export made before
    heads named their log)."""
    head = records[0].get("head") if records else None
    if isinstance(head, dict) and isinstance(head.get("log"), str):
        return str(head["log"])
    return given


def verify_file(path: Path, *, anchor: str | None = None, log: str | None = None,
                public_keys: Mapping[str, str] | None = None,
                distinct_approver: bool = False) -> ReceiptCheck:
    """Verify an exported log (JSON Lines, its head first), and against a witness's heads."""
    records = read_jsonl(path)
    check = verify_export(records, public_keys=public_keys, distinct_approver=distinct_approver)
    if anchor is None:
        return check
    name = log_name(records, log)
    if name is None:
        raise InvalidInputError(f"{path} does not say which log it is; name it (--log NAME, the "
                                "graph it was exported from)")
    heads = anchored_heads(anchor, name)
    receipts = [record for record in records if "head" not in record]
    problems = anchored_problems([leaf_hash(r) for r in receipts], heads, name)
    update: dict[str, Any] = {"anchored": heads[-1].size}
    if problems:
        update |= {"ok": False, "problems": [*check.problems, *problems]}
    return check.model_copy(update=update)


def read_keys(path: Path) -> dict[str, str]:
    try:
        keys = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise InvalidInputError(f"--keys {path}: {exc}") from None
    if not isinstance(keys, dict) or not all(isinstance(v, str) for v in keys.values()):
        raise InvalidInputError(f"--keys {path} must be a JSON object mapping each actor to its "
                                "Ed25519 public key (64 hex characters)")
    return keys


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rippl_core.review.verify",
                                     description="Verify an exported Rippl receipt log offline.")
    parser.add_argument("file", type=Path, help="the export (rippl receipts export FILE)")
    parser.add_argument("--anchor", help="a witness: file:PATH, git:PATH or an http(s) URL")
    parser.add_argument("--log", help="the log's name (the graph), if the export does not say")
    parser.add_argument("--keys", type=Path, help="JSON file: actor -> trusted public key (hex)")
    parser.add_argument("--distinct-approver", action="store_true",
                        help="report approvals by the identity that proposed them")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args(argv)
    try:
        keys = read_keys(args.keys) if args.keys is not None else None
        check = verify_file(args.file, anchor=args.anchor, log=args.log, public_keys=keys,
                            distinct_approver=args.distinct_approver)
    except InvalidInputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # a witness that cannot be reached
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(check.model_dump(mode="json")))
    elif check.ok:
        anchored = f", consistent with the head anchored at {check.anchored} receipts" \
            if check.anchored is not None else ""
        print(f"log intact: {check.count} receipts verified, root {check.root}{anchored}")
    else:
        print(f"log broken: {len(check.problems)} problems in {check.count} receipts")
        for problem in check.problems:
            print(f"  {problem}")
    return 0 if check.ok else 1


if __name__ == "__main__":
    sys.exit(main())
