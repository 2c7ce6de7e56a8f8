"""`rippl mcp` options, `python -m rippl_core.mcp`, and the core working without the MCP SDK."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from helpers_mcp import REPO
from typer.testing import CliRunner

from rippl_core.cli import app
from rippl_core.mcp.__main__ import split_args

runner = CliRunner()


@pytest.mark.parametrize(("args", "message"), [
    (["mcp", "--allow-review"], "--allow-review needs --reviewer"),
    (["mcp", "--reviewer", "alice"], "--reviewer only applies with --allow-review"),
    (["mcp", "--allow-review", "--reviewer", " "], "reviewer is empty"),
    (["mcp", "--log-level", "chatty"], "'chatty' is not one of"),
    (["mcp", "--audience", "https://rippl.example.com/mcp"], "apply with --issuer"),
    (["mcp", "--required-scope", "tenant:acme"], "apply with --issuer"),
    (["mcp", "--transport", "http", "--issuer", "https://login.example.com", "--allow-review",
      "--reviewer", "alice"], "leave out --reviewer and --reviewer-key"),
    (["mcp", "--transport", "http", "--issuer", "http://login.example.com"], "plain http"),
    (["mcp", "--transport", "http", "--issuer", "login.example.com"], "absolute URL"),
])
def test_inconsistent_options_are_refused_before_anything_starts(args: list[str], message: str) -> None:
    result = runner.invoke(app, ["--db", "/nonexistent/never/created.db", *args])
    assert result.exit_code == 2  # a usage error
    assert message in result.output
    assert not Path("/nonexistent").exists()


def test_unknown_transport_is_a_usage_error() -> None:
    result = runner.invoke(app, ["mcp", "--transport", "carrier-pigeon"])
    assert result.exit_code == 2 and "stdio" in result.output and "http" in result.output


def test_help_documents_the_options() -> None:
    result = runner.invoke(app, ["mcp", "--help"])
    assert result.exit_code == 0
    for option in ("--transport", "--port", "--host", "--allow-review", "--reviewer", "--issuer",
                   "--audience", "--required-scope", "--roles-claim", "--reviewer-group"):
        assert option in result.output


@pytest.mark.parametrize(("argv", "connection", "rest"), [
    (["--db", "x.db"], ["--db", "x.db"], []),
    (["--url=falkordb://h:1", "--graph", "g", "--transport", "http"],
     ["--url=falkordb://h:1", "--graph", "g"], ["--transport", "http"]),
    (["--allow-review", "--reviewer", "bob", "--db", "d"], ["--db", "d"],
     ["--allow-review", "--reviewer", "bob"]),
    ([], [], []),
])
def test_python_m_splits_connection_options_from_mcp_options(argv: list[str], connection: list[str],
                                                             rest: list[str]) -> None:
    assert split_args(argv) == (connection, rest)


WITHOUT_SDK = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name == "mcp" or name.startswith("mcp."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Block())
import rippl_core, rippl_core.cli, rippl_core.mcp          # the core and the CLI load without the SDK
from rippl_core import Rippl
assert rippl_core.mcp.INSTALL_HINT
from rippl_core.cli import app
app(["--db", sys.argv[1], "mcp"])
"""


def test_without_the_sdk_the_core_works_and_mcp_says_what_to_install(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-c", WITHOUT_SDK, str(tmp_path / "r.db")],
                            capture_output=True, text=True, timeout=120, cwd=REPO)
    assert result.returncode == 1, result.stderr
    assert "pip install 'rippl-core[mcp]'" in " ".join(result.stderr.split())
    assert "Traceback" not in result.stderr


WRONG_SDK = """
import sys
class Block:  # an `mcp` without the server module of either major Rippl runs on
    def find_spec(self, name, path=None, target=None):
        if name in ("mcp.server.mcpserver", "mcp.server.fastmcp"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Block())
from rippl_core.cli import app
app(["--db", sys.argv[1], "mcp"])
"""


def test_an_sdk_without_the_server_says_which_version_it_is_and_what_is_supported(tmp_path: Path) -> None:
    import importlib.metadata

    result = subprocess.run([sys.executable, "-c", WRONG_SDK, str(tmp_path / "r.db")],
                            capture_output=True, text=True, timeout=120, cwd=REPO)
    assert result.returncode == 1, result.stderr
    message = " ".join(result.stderr.split())
    assert f"mcp {importlib.metadata.version('mcp')} has no mcp.server." in message
    assert "2.x, or 1.x from 1.24" in message and "pip install --upgrade 'rippl-core[mcp]'" in message
    assert "Traceback" not in result.stderr

