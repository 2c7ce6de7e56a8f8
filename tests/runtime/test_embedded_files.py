"""Two embedded database files in one folder are independent databases."""

from __future__ import annotations

from pathlib import Path

from rippl_core import NotFoundError, Rippl


def test_two_database_files_in_one_folder_do_not_share_data(tmp_path: Path) -> None:
    with Rippl.open(tmp_path / "a.db") as a:
        a.add_claim("CLM-A", "written to a.db only")
    with Rippl.open(tmp_path / "b.db") as b:
        try:
            b.get("CLM-A")
            raise AssertionError("b.db sees a write made to a.db")
        except NotFoundError:
            pass
        b.add_claim("CLM-B", "written to b.db only")
    with Rippl.open(tmp_path / "a.db") as a:  # reopened: its data came back from its own files
        assert a.get("CLM-A").text == "written to a.db only"
        assert a.stats().nodes == {"Claim": 1}
    assert (tmp_path / "a.db.aof").is_dir() and (tmp_path / "b.db.aof").is_dir()
