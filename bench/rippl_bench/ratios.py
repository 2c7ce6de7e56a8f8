"""Every ratio of the benchmarks in one flat JSON file, and the comparison of two such files.

A ratio is a path's time over the floor it was measured against in the same run (a bare query, a
bare round trip, a bare MULTI/EXEC), so it is comparable from one machine or one load to another
where a time is not. Every ratio here is "lower is better".

    uv run rippl-bench --quick            # also writes bench/results/quick/ratios.json
    uv run python -m rippl_bench.ratios OLD.json NEW.json   # names each ratio worse by > 20%

`gather` reads the results the benchmarks wrote (`capture.json` of scripts/bench_capture.py and
`limits.json` of scripts/bench_limits.py); `compare` is what the test of two files runs
(bench/tests/test_ratios.py), never a timed test.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

TOLERANCE = 0.2  # a ratio more than 20% above the other file's is a regression
NAME = "ratios.json"


def _capture(data: Mapping[str, Any]) -> dict[str, float]:
    out = {f"capture.{name}": float(value) for name, value in data.get("ratios", {}).items()}
    server = data.get("server_p50_ms", {})
    for path, floor in (("decide", "floor_decide"), ("executed", "floor_executed"),
                        ("check_allowed", "indexed_read")):
        if server.get(path) and server.get(floor):
            out[f"capture.server.{path}"] = round(server[path] / server[floor], 3)
    return out


def _limits(data: Mapping[str, Any]) -> dict[str, float]:
    out: dict[str, float] = {}
    for section, keys in (("load", ("ratio",)),
                          ("check", ("ratio_allowed_to_read", "ratio_denied_to_read",
                                     "ratio_denied_to_allowed")),
                          ("checkpointer", ("ratio_get_tuple", "ratio_put")),
                          ("timeline", ("ratio",)),
                          ("ask", ("ratio_ask_known_now_to_read", "ratio_ask_known_past_to_read"))):
        for row in data.get(section, []):
            for key in keys:
                if row.get(key) is not None:
                    name = key.removeprefix("ratio_").removeprefix("ratio") or "ratio"
                    out[f"limits.{section}.{row['size']}.{name}"] = float(row[key])
    if data.get("adapter", {}).get("ratio") is not None:
        out["limits.langgraph_guard"] = float(data["adapter"]["ratio"])
    for key in ("ratio_import_to_python", "ratio_help_to_typer"):
        if data.get("cold_start", {}).get(key) is not None:
            out[f"limits.cold_start.{key.removeprefix('ratio_')}"] = float(data["cold_start"][key])
    return out


SOURCES = {"capture.json": _capture, "limits.json": _limits}


def gather(folder: Path) -> dict[str, Any]:
    """The ratios of every result file in `folder` this module knows: {"ratios": {name: value},
    "sources": {file: recorded_at}}."""
    ratios: dict[str, float] = {}
    sources: dict[str, Any] = {}
    for name, read in SOURCES.items():
        path = folder / name
        if not path.is_file():
            continue
        data = json.loads(path.read_text(encoding="utf-8"))
        ratios |= read(data)
        sources[name] = data.get("recorded_at")
    return {"recorded_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "sources": sources, "ratios": dict(sorted(ratios.items()))}


def write(folder: Path, out: Path | None = None) -> Path:
    """Gather the ratios of `folder` into `out` (default `folder/ratios.json`)."""
    target = out or folder / NAME
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(gather(folder), indent=1) + "\n", encoding="utf-8")
    return target


def ratios_of(document: Mapping[str, Any]) -> dict[str, float]:
    found = document.get("ratios", document)
    return {str(k): float(v) for k, v in found.items() if isinstance(v, int | float)}


def compare(before: Mapping[str, Any], after: Mapping[str, Any],
            tolerance: float = TOLERANCE) -> list[str]:
    """Each ratio of `after` more than `tolerance` worse (higher) than in `before`, described;
    ratios only one of them has are not compared."""
    old, new = ratios_of(before), ratios_of(after)
    worse = []
    for name in sorted(old.keys() & new.keys()):
        if old[name] > 0 and new[name] > old[name] * (1 + tolerance):
            worse.append(f"{name}: {old[name]:.3f} -> {new[name]:.3f} "
                         f"(+{(new[name] / old[name] - 1) * 100:.0f}%)")
    return worse


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m rippl_bench.ratios BEFORE.json AFTER.json", file=sys.stderr)
        return 2
    before, after = (json.loads(Path(a).read_text(encoding="utf-8")) for a in args)
    worse = compare(before, after)
    for line in worse:
        print(f"worse by more than {TOLERANCE:.0%}: {line}")
    if not worse:
        print(f"no ratio is worse by more than {TOLERANCE:.0%} "
              f"({len(ratios_of(before).keys() & ratios_of(after).keys())} compared)")
    return 1 if worse else 0


if __name__ == "__main__":
    raise SystemExit(main())
