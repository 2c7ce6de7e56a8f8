"""Several processes open the same embedded database at once and all their writes land."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

from rippl_core import Rippl


def _write_one(args: tuple[str, int]) -> int:
    path, i = args
    with Rippl.open(path, graph="shared") as rippl:
        rippl.add_claim(f"CLM-{i}", f"claim written by process {i}")
        return rippl.stats().nodes.get("Claim", 0)


def test_processes_share_one_embedded_database(tmp_path: Path) -> None:
    path = str(tmp_path / "db" / "rippl.db")
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        seen = pool.map(_write_one, [(path, i) for i in range(8)])
    assert all(1 <= n <= 8 for n in seen)
    with Rippl.open(path, graph="shared") as rippl:
        assert rippl.stats().nodes == {"Claim": 8}
        assert {rippl.get(f"CLM-{i}").text for i in range(8)} == {
            f"claim written by process {i}" for i in range(8)}
