"""Every story of examples/<framework>/ runs, in this process, and shows what it says it shows.

Each story file of each framework's folder is picked up by itself (`helpers.py`, the folder's
shared part, is not a story) and told with its scripted models against a fresh graph of the
session's embedded database. Then the graph's own record of the story (each run's calls, with
their verdicts and executions; the compensations, reviews and overrides) and what the story
printed, which is what its models were shown, are checked against what the story promises. A
story is checked by its name, the same in every framework (the three tell the same stories); a
story with no check here fails, asking for one. Each story's command line is checked too, run as
`__main__`; the quickstarts run as scripts in the READMEs' blocks (tests/test_docs.py).
"""

from __future__ import annotations

import asyncio
import importlib.util
import inspect
import os
import re
import runpy
import sys
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any
from unittest import mock

import pytest

from rippl_core import AsyncRippl, Rippl
from rippl_core.testing import drop_graph

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
FRAMEWORKS = ("langgraph", "autogen", "crewai")
STORIES = [pytest.param(framework, path.stem, id=f"{framework}/{path.stem}")
           for framework in FRAMEWORKS for path in sorted((EXAMPLES / framework).glob("*.py"))
           if path.stem != "helpers"]

pytestmark = [pytest.mark.filterwarnings("ignore::DeprecationWarning"),
              # a CrewAI task's callback is a closure in the stories: nothing is checkpointed
              pytest.mark.filterwarnings("ignore:.* callbacks cannot be serialized")]


def module(name: str, path: Path) -> ModuleType:
    """The module at `path`, loaded once per process under `name`."""
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        loaded = importlib.util.module_from_spec(spec)
        sys.modules[name] = loaded
        spec.loader.exec_module(loaded)
    return sys.modules[name]


def story_module(framework: str, name: str) -> ModuleType:
    """A story, importing its folder's `helpers` as it does when run as a script (each folder's
    under a name of its own here, since the three are loaded in one process)."""
    helpers = module(f"examples_{framework}_helpers", EXAMPLES / framework / "helpers.py")
    with shadowing("helpers", helpers):
        return module(f"examples_{framework}_{name}", EXAMPLES / framework / f"{name}.py")


@contextmanager
def shadowing(name: str, found: ModuleType | None) -> Iterator[None]:
    """`import name` finds `found` (None: imports it afresh) inside the block, and what it found
    before after it; every other module imported meanwhile stays imported."""
    before = sys.modules.pop(name, None)
    if found is not None:
        sys.modules[name] = found
    try:
        yield
    finally:
        sys.modules.pop(name, None)
        if before is not None:
            sys.modules[name] = before


type Call = tuple[str, dict[str, Any], str, bool]  # tool, args, verdict, executed


class Told:
    """What a story did, as the graph recorded it and as it printed it."""

    def __init__(self, framework: str, rippl: Rippl, out: str) -> None:
        self.framework, self.rippl, self.out = framework, rippl, out
        runs = sorted(rippl.runs(), key=lambda run: (run.started or EPOCH, run.id))
        self.runs = {run.id: rippl.run_trace(run.id).calls for run in runs}

    def calls(self, *tools: str) -> list[Call]:
        """Every call of these tools, run after run (in the order the runs started)."""
        return [(c.tool or "", c.args or {}, c.verdict, c.executed_at is not None)
                for calls in self.runs.values() for c in calls if c.tool in tools]

    def calls_by_run(self, *tools: str) -> list[list[Call]]:
        return [[(c.tool or "", c.args or {}, c.verdict, c.executed_at is not None)
                 for c in calls if c.tool in tools] for calls in self.runs.values()]

    def veto_of(self, tool: str, n: int = 0) -> tuple[str, str]:
        """The action of the `n`-th vetoed call of `tool`, and the veto the model read (printed:
        the line that denies the action and the trails under it)."""
        vetoed = [c.action for calls in self.runs.values() for c in calls
                  if c.tool == tool and c.verdict == "vetoed"]
        action, lines = vetoed[n], self.out.splitlines()
        start = next((i for i, line in enumerate(lines) if action in line and " denied" in line),
                     None)
        assert start is not None, f"the veto of {action} was not shown:\n{self.out}"
        end = next((i for i in range(start + 1, len(lines))
                    if len(lines[i]) - len(lines[i].lstrip()) <= 2), len(lines))
        return action, "\n".join(lines[start:end])


def trail_to(action: str, veto: str) -> list[str]:
    """The trail a veto names down to `action` (premise -> ... -> action)."""
    trail = re.search(rf": ((?:\S+ -> )+{re.escape(action)})", veto)
    assert trail, veto
    return trail.group(1).split(" -> ")


# ------------------------------------------------------------------------------ the stories

Q09 = {"shard": "09"}
TO_09 = {"shard": "09", "table": "billing"}
TO_07 = {"shard": "07", "table": "billing"}


def quickstart(told: Told) -> None:
    """The reading ran, the migration resting on it did not: vetoed, the model shown why, with
    the trail from the retracted reading to the call."""
    assert told.calls("get_shard_health", "migrate_tables") == [
        ("get_shard_health", Q09, "allowed", True), ("migrate_tables", TO_09, "vetoed", False)]
    action, veto = told.veto_of("migrate_tables")
    premise, *_ = trail_to(action, veto)
    assert told.rippl.get(premise).status == "Retracted"
    assert f"{premise} is Retracted (replica r3 lags its primary by 6 h)" in veto
    [review] = told.rippl.reviews("approved")
    assert review.decided_by == "alice@oncall"


def capture(told: Told) -> None:
    """Nothing declared: the migration resting on the retracted reading is vetoed, asking again
    is vetoed naming the first veto, the re-plan runs, the announcement is owed."""
    window = {"at": "02:00Z", "shard": "09"}
    assert told.calls("get_shard_health", "announce_window", "migrate_tables") == [
        ("get_shard_health", Q09, "allowed", True), ("announce_window", window, "blocked", True),
        ("migrate_tables", TO_09, "vetoed", False), ("migrate_tables", TO_09, "vetoed", False),
        ("get_shard_health", {"shard": "07"}, "allowed", True),
        ("migrate_tables", TO_07, "allowed", True)]
    action, veto = told.veto_of("migrate_tables")
    reading, *rest = trail_to(action, veto)
    assert told.rippl.get(reading).status == "Retracted" and "stale cache" in veto
    assert rest[-2].startswith("DEC-")  # reading -> ... -> the turn -> the call
    again, repeat = told.veto_of("migrate_tables", 1)
    assert again != action and "repeats the call vetoed at turn" in repeat
    [owed] = told.rippl.compensations()
    assert (owed.tool, owed.args) == ("announce_window", window)
    assert owed.blockers[0].premise == reading


def premises(told: Told) -> None:
    """The declared plan: the migration to shard 09 vetoed with the trail CLM-001 -> DEC-001 ->
    ACT-001, the fallback to 07 runs; what was believed, then and now."""
    assert told.calls("migrate_tables") == [("migrate_tables", TO_09, "vetoed", False),
                                            ("migrate_tables", TO_07, "allowed", True)]
    veto = re.search(r"ACT-001 (?:\(and \S+\) )?denied: Premise Retracted.*\n.*"
                     r"CLM-001 is Retracted \(.*\): CLM-001 -> DEC-001 -> ACT-001", told.out)
    assert veto, told.out  # the declared action's trail, as the model read it
    assert told.rippl.get("CLM-001").status == "Retracted"
    assert told.rippl.verify_receipts().ok
    if told.framework == "langgraph":  # time travel over the thread's checkpoints
        steps = re.findall(r"step +(-?\d+) .*? (-|shards/.*)$", told.out, re.M)
        held = [belief for _, belief in steps]
        assert held[0] == "-" and "shards/09-health=CLM-001 [Verified]" in held
        assert "shards/09-health=CLM-001 [Retracted]" in held
        assert held[-1] == "shards/07-health=CLM-003 [Verified]"
    else:  # the belief (AutoGen) or the memory (CrewAI) as of before the retraction
        assert re.search(r"Shard 09 is healthy.*Verified then, Retracted now", told.out)


def handover(told: Told) -> None:
    """The supervisor's resize rests on the researcher's report: vetoed, naming both runs; one
    approved override lets exactly one call run; asking again is vetoed."""
    resize = {"replicas": 3, "shard": "09"}
    runs = dict(zip(told.runs, told.calls_by_run("get_shard_health", "resize_replicas"),
                    strict=True))
    [research] = [run for run, calls in runs.items() if calls[:1] == [
        ("get_shard_health", Q09, "allowed", True)]]
    [supervise] = [run for run, calls in runs.items() if calls == [
        ("resize_replicas", resize, "vetoed", False), ("resize_replicas", resize, "overridden", True),
        ("resize_replicas", resize, "vetoed", False)]]
    action, veto = told.veto_of("resize_replicas")
    assert f"handed over into run {supervise} from run {research}" in veto
    assert any(node.startswith("HND-") for node in trail_to(action, veto))
    _, again = told.veto_of("resize_replicas", 1)
    assert "repeats the call vetoed at turn" in again
    [granted] = told.rippl.overrides()
    assert (granted.proposed_by, granted.approved_by) == ("supervisor", "oncall-engineer")
    assert granted.used_by is not None and told.rippl.compensations() == []


def notices(told: Told) -> None:
    """Stale, then superseded, with no review; then one review by provenance retracts the three
    pages' readings: the waiting call is vetoed, what ran on them is owed."""
    health, migrate, resize = "get_shard_health", "migrate_tables", "resize_replicas"
    acts = ("post_summary", "send_email", "open_ticket")
    runs = told.calls_by_run(health, migrate, resize, "fetch_url", *acts)
    assert [(health, Q09, "allowed", True), (resize, {"replicas": 5, "shard": "09"}, "stale", False)] \
        in runs
    assert [(health, Q09, "allowed", True), (migrate, TO_09, "stale", False),
            (health, Q09, "allowed", True)] in runs
    pages = [[c[:2] for c in run] for run in runs if run and run[0][0] == "fetch_url"]
    assert pages == [[("fetch_url", {"url": f"https://evil.example/notes-{n}"}), (act, args)]
                     for n, (act, args) in enumerate([("post_summary", {"channel": "#ops"}),
                                                      ("send_email", {"to": "cfo@corp.example"}),
                                                      ("open_ticket", {"queue": "capacity"})])]
    assert told.calls(*acts) == [("post_summary", {"channel": "#ops"}, "blocked", True),
                                 ("send_email", {"to": "cfo@corp.example"}, "blocked", True),
                                 ("open_ticket", {"queue": "capacity"}, "vetoed", False)]
    stale = re.search(r"denied as stale.*\n.*fresh for 5 min", told.out)
    assert stale and "shard 09: healthy" in stale.group(0) and "12 min ago" in told.out
    superseded = re.search(r"denied as superseded.*\n.*superseded by a newer reading in run (\S+)",
                           told.out)
    assert superseded and "shard 09: degraded" in told.out
    assert superseded.group(1) in {run for run, calls in told.runs.items()
                                   if [c.tool for c in calls if c.tool == migrate]}
    assert "New reviews: 0; compensations: 0" in told.out  # stale is not false
    [review] = told.rippl.reviews(None)
    assert review.status == "approved" and len(review.claims) == 3
    assert {c.tool for c in told.rippl.compensations()} >= {"post_summary", "send_email"}
    assert "open_ticket" not in {c.tool for c in told.rippl.compensations()}


def checkpoints(told: Told) -> None:
    """An edited stored state: the graph does not resume on it (LangGraph), or the call resting
    on the forged result is vetoed (AutoGen); nothing ran after the edit."""
    assert "What ran after the edit: nothing" in told.out
    assert not [c for c in told.calls("migrate_tables") if c[3]]
    if told.framework == "langgraph":
        assert "Refused to resume: thread inc-4474" in told.out
        assert re.search(r"the blob of channel 'messages' .* was edited", told.out)
        assert "saver.verify(): ok=False" in told.out
    else:
        action, veto = told.veto_of("migrate_tables")
        premise = trail_to(action, veto)[0]
        assert premise.startswith("UNR-") and told.rippl.get(premise).status == "Retracted"
        assert "never recorded the tool result" in veto


def memory(told: Told) -> None:
    """A memory written from a reading goes out with it: the migration resting on the recall is
    vetoed, the trail running reading -> the run that wrote it -> the memory -> the call; nobody
    dropped the memory."""
    [(_, args, verdict, ran)] = told.calls("migrate_tables")
    assert (args, verdict, ran) == (TO_09, "vetoed", False)
    action, veto = told.veto_of("migrate_tables")
    trail = trail_to(action, veto)
    writer = next(node for node in trail if node.startswith("WRT-"))
    memory = trail[trail.index(writer) + 1]
    assert told.rippl.get(memory).text == "Shard 09 is healthy"
    assert told.rippl.get(memory).status == "Retracted" and not told.rippl.get(memory).retracted
    assert " wrote it" in told.rippl.get(writer).text
    assert any(told.rippl.get(node).status == "Retracted" and told.rippl.get(node).retracted
               for node in trail[:trail.index(writer)])  # the reading, retracted itself


def delegation(told: Told) -> None:
    """The lead's migration vetoed; handed to the operator, the same act stays vetoed, naming the
    lead's veto; the operator's different plan runs."""
    runs = told.calls_by_run("migrate_tables")
    lead = next(run for run, calls in zip(told.runs, runs, strict=True)
                if calls == [("migrate_tables", TO_09, "vetoed", False)])
    [operator] = [calls for calls in runs if ("migrate_tables", TO_07, "allowed", True) in calls]
    assert operator == [("migrate_tables", TO_09, "vetoed", False),
                        ("migrate_tables", TO_07, "allowed", True)]
    first, _ = told.veto_of("migrate_tables")
    _, held = told.veto_of("migrate_tables", 1)
    assert "vetoed at turn" in held and f"of run {lead} ({first})" in held


SHOWS: dict[str, Callable[[Told], None]] = {
    story.__name__: story for story in (quickstart, capture, premises, handover, notices, checkpoints,
                                        memory, delegation)}


# ------------------------------------------------------------------------------ the tests


@pytest.fixture
def graph(embedded_db: Path) -> Iterator[Rippl]:
    """A fresh graph of the session's embedded database, dropped afterwards."""
    with Rippl.open(embedded_db, graph=f"example-{uuid.uuid4().hex[:10]}") as rippl:
        yield rippl
        drop_graph(rippl)


async def tell_async(story: Callable[..., Any], db: Path, name: str) -> None:
    rippl = await AsyncRippl.open(db, graph=name)
    try:
        await story(rippl)
    finally:
        await rippl.close()


@pytest.mark.parametrize(("framework", "name"), STORIES)
def test_a_story_shows_what_it_says(framework: str, name: str, graph: Rippl, embedded_db: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    shows = SHOWS.get(name)
    if shows is None:
        pytest.fail(f"examples/{framework}/{name}.py has no check: add to tests/test_examples.py "
                    "what its story must show")
    story = story_module(framework, name).story
    if inspect.iscoroutinefunction(story):
        asyncio.run(tell_async(story, embedded_db, graph.graph))
    else:
        story(graph)
    shows(Told(framework, graph, capsys.readouterr().out))


@pytest.mark.parametrize(("framework", "name"), STORIES)
def test_a_story_says_what_it_shows_and_how_to_run_it(framework: str, name: str,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """`--help` prints the story's docstring (what it shows, how to run it); `--live` is offered
    where the docstring says so."""
    path = EXAMPLES / framework / f"{name}.py"
    doc = story_module(framework, name).__doc__ or ""
    assert f"uv run python examples/{framework}/{name}.py" in doc
    with pytest.raises(SystemExit) as done:
        run_as_script(path, "--help")
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert doc.splitlines()[0] in out
    assert ("--live" in out) == ("--live" in doc)


def run_as_script(path: Path, *argv: str) -> None:
    """Run a story file as `uv run python <path> ARGV` would, in this process: its folder first
    on the path, so that `helpers` is its folder's."""
    with shadowing("helpers", None), mock.patch.object(sys, "argv", [str(path), *argv]), \
            mock.patch.object(sys, "path", [str(path.parent), *sys.path]):
        runpy.run_path(str(path), run_name="__main__")


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_live_takes_a_model_name_and_says_what_it_lacks(framework: str,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """`--live` alone picks the default model, `--live NAME` that one; without what the model
    needs (its provider's package, or its key) the story exits saying so, before any database
    is opened or any network is touched."""
    helpers = module(f"examples_{framework}_helpers", EXAMPLES / framework / "helpers.py")
    assert helpers.options(None, [], live=helpers.LIVE).live is None
    assert helpers.options(None, ["--live"], live=helpers.LIVE).live == helpers.LIVE
    assert helpers.options(None, ["--live", "some-model"], live=helpers.LIVE).live == "some-model"
    with pytest.raises(SystemExit):  # a story without a live mode refuses the option
        helpers.options(None, ["--live"])
    monkeypatch.delenv("GROQ_API_KEY", raising=False)
    opened: list[object] = []
    monkeypatch.setattr(helpers.command, "throwaway_database", lambda **_: opened.append(1))
    with pytest.raises(SystemExit) as done:
        helpers.main(lambda *_: None, None, ["--live"], live=True)
    said = str(done.value.code)
    assert said.startswith(f"--live {helpers.LIVE}:") and opened == []
    assert "GROQ_API_KEY" in said or "langchain-groq" in said or "langchain_groq" in said


TELEMETRY = ("CREWAI_DISABLE_TELEMETRY", "OTEL_SDK_DISABLED", "CREWAI_TRACING_ENABLED")


def test_a_crewai_story_turns_crewai_telemetry_off_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run without the variables a user would not know to set: the CrewAI stories set them
    themselves before a crew runs (without network, CrewAI's telemetry made a script exit late)."""
    from crewai.events.listeners.tracing.utils import is_tracing_enabled
    from crewai.telemetry.telemetry import Telemetry

    for name in TELEMETRY:
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(SystemExit):
        run_as_script(EXAMPLES / "crewai" / "quickstart.py", "--help")
    assert Telemetry._is_telemetry_disabled() and not is_tracing_enabled()


def test_every_folder_tells_the_same_stories() -> None:
    """The three folders read side by side: the same story names (checkpoints where Rippl keeps
    or checks the framework's saved state: not CrewAI's, which resumes by its own means)."""
    told = {framework: {p.stem for p in (EXAMPLES / framework).glob("*.py")} - {"helpers"}
            for framework in FRAMEWORKS}
    assert told["langgraph"] == told["autogen"] == told["crewai"] | {"checkpoints"}
    assert {"quickstart", "premises", "capture", "handover", "notices", "memory",
            "delegation"} <= told["crewai"]
    assert os.path.exists(EXAMPLES / "incident.yaml")
