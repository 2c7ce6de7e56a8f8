"""DOT and Mermaid output is valid for any id and text: DOT is rendered by Graphviz and every label
read back from the SVG; Mermaid is parsed by Mermaid's own parser (offline, under jsdom) and every
label read back with its entity codes decoded. The strict Mermaid escaping rule is also checked on
its own, without Node."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from rippl_core import InvalidInputError, Kind, State
from rippl_core._runtime.validation import check_id
from rippl_core.beliefs.models import Belief
from rippl_core.cli import render
from rippl_core.cli.beliefs import mermaid_timeline
from rippl_core.models import Node, Reached

MERMAID_TOOL = Path(__file__).parents[1] / "tools" / "mermaid"
NASTY = ["back\\slash", "ends\\", '"quoted"', "\\N and \\G", "[/dim]", "list[int]", "a#35;b",
         "x: y; #z", "<b>bold</b>", "`tick`", "{curly}", "pipe|d", "é ü 中文 😀", "a&amp;b", "%%c",
         "-->", "end", "graph", "A[\"x\"]", "'single'"]


def valid_id(text: str) -> bool:
    try:
        check_id(text)
    except InvalidInputError:
        return False
    return True


ids = (st.text(st.characters(exclude_categories=("C", "Zl", "Zp", "Zs")) | st.just(" "),
               min_size=1, max_size=24).map(str.strip).filter(valid_id))
texts = st.text(min_size=1, max_size=60).filter(lambda t: t.strip() and "\x00" not in t)


def picture(node_ids: list[str]) -> tuple[Node, list[Reached]]:
    """A blast radius: the first id the root, each other one reached from the one before."""
    root = Node(id=node_ids[0], kind=Kind.CLAIM, state=State.OUT, text="t", justifications=[])
    reached = [Reached(id=n, kind=[Kind.CLAIM, Kind.DECISION, Kind.ACTION][i % 3],
                       state=[State.IN, State.AT_RISK, State.OUT][i % 3], depth=i + 1,
                       trail=node_ids[: i + 2]) for i, n in enumerate(node_ids[1:])]
    return root, reached


# ---------------------------------------------------------------------------------- Graphviz

needs_dot = pytest.mark.skipif(shutil.which("dot") is None,
                               reason="Graphviz is not installed (apt-get install graphviz)")


def svg_labels(dot_text: str) -> list[list[str]]:
    """Render with Graphviz; each node's label lines, read back from the SVG (where Graphviz writes
    each space after the first of a run as a no-break space, so that SVG keeps the run)."""
    done = subprocess.run(["dot", "-Tsvg"], input=dot_text.encode(), capture_output=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr.decode()
    assert not done.stderr.strip(), done.stderr.decode()  # no warning either
    svg = ET.fromstring(done.stdout)
    ns = {"svg": "http://www.w3.org/2000/svg"}
    return [[re.sub(" \xa0+", lambda run: " " * len(run[0]), "".join(t.itertext()))
             for t in g.findall("svg:text", ns)]
            for g in svg.iter("{http://www.w3.org/2000/svg}g") if g.get("class") == "node"]


@needs_dot
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(ids, min_size=1, max_size=6, unique=True))
@example(["0  0", "a   b"])  # runs of spaces: Graphviz's SVG keeps them with no-break spaces
def test_dot_is_valid_and_shows_every_id_as_it_is(node_ids: list[str]) -> None:
    root, reached = picture(node_ids)
    labels = svg_labels(render.dot(root, reached))
    assert sorted(lines[0] for lines in labels) == sorted(node_ids)
    assert all(len(lines) == 2 for lines in labels)  # id, then kind: status


@needs_dot
def test_dot_handles_the_ids_that_broke_it() -> None:
    root, reached = picture(NASTY)
    text = render.dot(root, reached)
    assert sorted(lines[0] for lines in svg_labels(text)) == sorted(NASTY)
    assert text.count(" -> ") == len(NASTY) - 1


# ----------------------------------------------------------------------------------- Mermaid

SAFE = re.compile(r"(?:[A-Za-z0-9 \-_.,/]|#\d+;)*")


def decode(text: str) -> str:
    return re.sub(r"#(\d+);", lambda m: chr(int(m.group(1))), text)


@settings(max_examples=500)
@given(st.text())
def test_mermaid_text_is_made_only_of_safe_characters_and_entity_codes(text: str) -> None:
    escaped = render.mermaid_text(text)
    assert SAFE.fullmatch(escaped), escaped
    assert decode(escaped) == text.replace("\r", " ").replace("\n", " ")


def mermaid_parse(diagrams: list[str]) -> list[dict[str, object]]:
    if shutil.which("node") is None or not (MERMAID_TOOL / "node_modules" / "mermaid").is_dir():
        pytest.skip(f"Mermaid's parser is not installed: npm ci --prefix {MERMAID_TOOL}")
    done = subprocess.run(["node", str(MERMAID_TOOL / "parse.mjs")], input=json.dumps(diagrams),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def belief(claim: str, text: str, start: int) -> Belief:
    day = datetime(2026, 10, 1, tzinfo=UTC) + timedelta(days=start)
    return Belief(agent="a", topic="t", claim=claim, text=text, valid_from=day,
                  valid_to=day + timedelta(days=1), recorded_at=day, claim_state=State.IN,
                  claim_status="Verified")


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.lists(ids, min_size=1, max_size=4, unique=True), ids, texts),
                min_size=15, max_size=15))
def test_mermaid_parses_and_shows_every_id_and_text_as_it_is(
        cases: list[tuple[list[str], str, str]]) -> None:
    diagrams, expected = [], []
    for node_ids, agent, text in cases:
        root, reached = picture(node_ids)
        diagrams.append(render.mermaid(root, reached))
        expected.append(sorted(node_ids))
        diagrams.append(mermaid_timeline(agent, text, [belief(node_ids[0], text, 0)],
                                         now=datetime(2026, 11, 1, tzinfo=UTC)))
        expected.append([f"{agent} on {text}", f"{node_ids[0]} {text}"])
    for diagram, want, got in zip(diagrams, expected, mermaid_parse(diagrams), strict=True):
        assert got["ok"], (diagram, got)
        labels = [str(label) for label in got["labels"]]  # type: ignore[attr-defined]
        if got["type"] == "gantt":
            clean = [" ".join(w.replace("\r", " ").replace("\n", " ").split()) for w in want]
            assert [" ".join(label.split()) for label in labels] == clean, diagram
        else:
            assert sorted(label.split("<br>")[0] for label in labels) == want, diagram


def test_mermaid_handles_the_ids_that_broke_it() -> None:
    root, reached = picture(NASTY)
    timeline = [belief(claim, claim, i) for i, claim in enumerate(NASTY)]
    parsed = mermaid_parse([render.mermaid(root, reached),
                            mermaid_timeline("agent: x", "topic; #1", timeline,
                                             now=datetime(2026, 11, 1, tzinfo=UTC))])
    assert all(p["ok"] for p in parsed), parsed
    assert sorted(str(x).split("<br>")[0] for x in parsed[0]["labels"]) == sorted(NASTY)  # type: ignore[attr-defined]
    assert [str(x).strip() for x in parsed[1]["labels"]] == [  # type: ignore[attr-defined]
        "agent: x on topic; #1", *[f"{c} {c}" for c in NASTY]]
