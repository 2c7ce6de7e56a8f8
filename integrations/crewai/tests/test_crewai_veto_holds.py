"""A veto holds in real CrewAI crews (scripted models that try to get the call through, embedded
FalkorDB): the agent repeats the vetoed call (identical, keys reordered, a float for an int), its
history is folded into CrewAI's context-window summary, or a researcher's report carries the
reading into the operator's task. Only a person lifts a veto: a reinstatement, or an approved
one-call override. Readings age (`fresh_for`) and another agent's differing re-read supersedes a
pending plan."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from crewai import Agent, Crew, Task
from crewai.core.providers.human_input import SyncHumanInputProvider, reset_provider, set_provider
from crewai.hooks import InterceptionPoint
from crewai.hooks.dispatch import register, unregister
from crewai.tools.tool_failure import ToolFailure
from crewai.utilities.i18n import I18N_DEFAULT
from crewai_helpers import (
    H07,
    H09,
    HealthTool,
    MigrateTool,
    NotifyTool,
    Step,
    crew_of,
    model,
    reading,
    retract,
    then,
    verdicts_of,
    vetoes_shown,
)
from rippl_crewai import GuardedTool, RipplHooks, guard_tools, register_rippl_hooks, rippl_guard
from rippl_crewai.testing import ScriptedLLM

from rippl_core import Rippl
from rippl_core.testing import Clock

PATHS = ["native", "react"]


@pytest.mark.parametrize("path", PATHS)
def test_the_agent_cannot_repeat_its_way_past_a_veto(rippl: Rippl, path: str) -> None:
    migrate = MigrateTool()
    hooks_box: list[RipplHooks] = []

    def reinstate() -> None:
        rippl.reinstate(reading(hooks_box[0]), reason="the replica was right", by="oncall")

    steps: list[Step] = [
        H09,
        then(lambda: retract(rippl, hooks_box[0])(), ("migrate_tables", {"shard": "09", "batch": 100})),
        ("migrate_tables", {"shard": "09", "batch": 100}),    # identical
        ("migrate_tables", {"batch": 100, "shard": "09"}),    # keys reordered
        ("migrate_tables", {"shard": "09", "batch": 100.0}),  # a float for the int
        ("migrate_tables", {"shard": "07", "batch": 100}),    # another shard: a new plan
        then(reinstate, ("migrate_tables", {"shard": "09", "batch": 100})),  # reinstated
    ]
    llm = model(path, *steps)
    with rippl_guard(rippl) as hooks:
        hooks_box.append(hooks)
        crew_of(llm, [HealthTool(), migrate]).kickoff()
    assert migrate.ran == ["07", "09"]  # the new plan, then once the premise was reinstated
    allowed = [v.allowed for v in verdicts_of(hooks)]
    assert allowed == [False, False, False, False, True, True]
    _, *repeats = [v for v in verdicts_of(hooks) if not v.allowed]
    assert all("repeats the call vetoed at turn" in v.reason for v in repeats)
    assert all(v.blockers and v.blockers[0].premise == reading(hooks) for v in repeats)
    shown = vetoes_shown(llm)
    assert len(shown) == 4 and all("repeats the call vetoed" in text for text in shown[1:])


def test_only_an_approved_override_lets_exactly_that_call_run_once(rippl: Rippl) -> None:
    migrate = MigrateTool()
    box: list[RipplHooks] = []

    def override() -> None:
        [vetoed] = [v for v in verdicts_of(box[0]) if not v.allowed]
        assert vetoed.target is not None
        proposal = rippl.override(vetoed.target, reason="checked shard 09 by hand", by="agent:ops")
        rippl.approve(proposal.id, by="oncall")

    llm = model("native", H09,
                then(lambda: retract(rippl, box[0])(), ("migrate_tables", {"shard": "09"})),
                then(override, ("migrate_tables", {"shard": "09"})),  # the vetoed call: runs, once
                ("migrate_tables", {"shard": "09"}))  # vetoed again
    with rippl_guard(rippl) as hooks:
        box.append(hooks)
        crew_of(llm, [HealthTool(), migrate]).kickoff()
    assert migrate.ran == ["09"]
    assert [v.allowed for v in verdicts_of(hooks)] == [False, True, False]
    assert rippl.compensations() == []  # it ran under the override
    [granted] = rippl.overrides()
    assert granted.approved_by == "oncall" and granted.proposed_by == "agent:ops"
    assert granted.executed_at is not None


@pytest.mark.parametrize("where", ["metadata", "tool_settings"])
def test_repeat_scope_tool_makes_any_later_call_of_the_tool_a_repeat(rippl: Rippl,
                                                                     where: str) -> None:
    migrate = MigrateTool(metadata={"rippl": {"repeat_scope": "tool"}} if where == "metadata"
                          else {})
    settings = {"migrate_tables": {"repeat_scope": "tool"}} if where == "tool_settings" else None
    box: list[RipplHooks] = []
    llm = model("native", H09,
                then(lambda: retract(rippl, box[0])(), ("migrate_tables", {"shard": "09"})),
                ("migrate_tables", {"shard": "07"}))  # any migration now repeats the vetoed one
    with rippl_guard(rippl, tool_settings=settings) as hooks:
        box.append(hooks)
        crew_of(llm, [HealthTool(), migrate]).kickoff()
    assert migrate.ran == []
    assert "repeats the call vetoed" in verdicts_of(hooks)[-1].reason


# ------------------------------------------------------------------------------ summaries


class SummarisingLLM(ScriptedLLM):
    """A scripted model whose context window overflows before the model calls numbered in
    `overflow_at` (CrewAI then folds the history into a summary, `respect_context_window`), and
    which answers CrewAI's summarisation requests with `summary` (not a step of the script)."""

    summary: str = "get_shard_health(09) said healthy, so shard 09 is a safe target."
    overflow_at: frozenset[int] = frozenset()

    def is_context_window_overflowing_threshold(self, messages: Any, tools: Any = None,
                                                response_model: Any = None) -> bool:
        return not _summarising(messages) and len(self.received) in self.overflow_at

    def call(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
        if _summarising(messages):
            return f"<summary>{self.summary}</summary>"
        return super().call(messages, *args, **kwargs)


def _summarising(messages: Any) -> bool:
    return isinstance(messages, list) and bool(messages) and \
        messages[0].get("content") == I18N_DEFAULT.slice("summarizer_system_message")


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("kept", [True, False])
def test_a_context_window_summary_carries_the_reading_it_folded_away(rippl: Rippl, path: str,
                                                                     kept: bool) -> None:
    """The history is folded into CrewAI's summary before the third model call; the model reads
    another shard, the health reading of 09 is retracted, and the model migrates to 09 on the
    summary alone: vetoed. When a history editor trimmed the 09 reading away before the summary
    was written (no message carries it any more), the same call is allowed."""
    migrate = MigrateTool()
    box: list[RipplHooks] = []

    def trim_the_read(ctx: Any) -> None:
        if not kept:
            ctx.messages[:] = [m for m in ctx.messages if "shard 09: healthy" not in
                               str(m.get("content") or "") and not any(
                call.get("id") == "c0" for call in m.get("tool_calls") or [])]

    llm = model(path, H09, H07, ("get_shard_health", {"shard": "08"}),
                then(lambda: retract(rippl, box[0])(), ("migrate_tables", {"shard": "09"})),
                kind=SummarisingLLM, overflow_at=frozenset({2}))
    register(InterceptionPoint.PRE_MODEL_CALL, trim_the_read)
    try:
        with rippl_guard(rippl) as hooks:
            box.append(hooks)
            crew_of(llm, [HealthTool(), migrate], agent={"respect_context_window": True}).kickoff()
    finally:
        unregister(InterceptionPoint.PRE_MODEL_CALL, trim_the_read)
    shown = llm.received[3]  # the model's input when it migrates: the summary, then the 08 read
    assert "<summary>" in str(shown[1].get("content"))
    assert not any("shard 09: healthy" in str(m.get("content")) for m in shown)
    if kept:
        assert migrate.ran == []
        [vetoed] = verdicts_of(hooks)
        assert not vetoed.allowed and vetoed.blockers[0].premise == reading(hooks)
    else:
        assert migrate.ran == ["09"]


# ------------------------------------------------------------------------------ hand-overs


def two_tasks(path: str, health: HealthTool, migrate: MigrateTool, *,
              callback: Callable[[Any], None] | None = None) -> Crew:
    """A researcher reads shard 09's health and reports; the operator migrates on the report
    (its task's `context`)."""
    researcher = Agent(role="researcher", goal="Find a safe shard", backstory="You read dashboards.",
                       llm=model(path, H09, final="Shard 09 is healthy: a safe target."),
                       tools=[health], max_iter=4, verbose=False, allow_delegation=False)
    operator = Agent(role="operator", goal="Move billing", backstory="You run migrations.",
                     llm=model(path, ("migrate_tables", {"shard": "09"})), tools=[migrate],
                     max_iter=4, verbose=False, allow_delegation=False)
    research = Task(description="Is shard 09 a safe target for billing?", agent=researcher,
                    expected_output="a report", callback=callback)
    operate = Task(description="Move billing to the shard the research found safe.",
                   agent=operator, expected_output="a summary", context=[research])
    return Crew(agents=[researcher, operator], tasks=[research, operate], verbose=False)


@pytest.mark.parametrize("path", PATHS)
def test_the_operator_acting_on_a_retracted_report_is_vetoed(rippl: Rippl, path: str) -> None:
    migrate = MigrateTool()
    box: list[RipplHooks] = []

    def retract_when_done(_: Any) -> None:  # the research task's callback
        retract(rippl, box[0])()

    crew = two_tasks(path, HealthTool(), migrate, callback=retract_when_done)
    with rippl_guard(rippl) as hooks:
        box.append(hooks)
        crew.kickoff()
    assert migrate.ran == []
    research, operate = (f"crewai/{crew._kickoff_event_id}/{t.id}" for t in crew.tasks)
    [vetoed] = verdicts_of(hooks)
    assert not vetoed.allowed
    trail = vetoed.blockers[0].trail
    assert trail[0] == reading(hooks) and trail[1].startswith("HND-")
    assert f"into run {operate} from run {research}" in vetoed.reason
    assert rippl.get(trail[1]).text.startswith(f"run {research} carried it")
    [shown] = vetoes_shown(crew.agents[1].llm)  # type: ignore[arg-type]
    assert f"from run {research}" in shown


@pytest.mark.parametrize("path", PATHS)
def test_what_the_operator_ran_on_the_report_is_a_compensation(rippl: Rippl, path: str) -> None:
    migrate = MigrateTool()
    crew = two_tasks(path, HealthTool(), migrate)
    with rippl_guard(rippl) as hooks:
        crew.kickoff()
    assert migrate.ran == ["09"]
    review = rippl.propose_retraction(reading(hooks), reason="stale replica", by="monitor")
    rippl.approve(review.id, by="oncall")
    research, operate = (f"crewai/{crew._kickoff_event_id}/{t.id}" for t in crew.tasks)
    [owed] = rippl.compensations()
    assert owed.run == operate and owed.tool == "migrate_tables"
    handed = next(n for n in owed.blockers[0].trail if n.startswith("HND-"))
    assert rippl.get(handed).text.startswith(f"run {research} carried it")


def test_a_task_without_the_report_does_not_rest_on_it(rippl: Rippl) -> None:
    """Precision: the operator's task takes no context (`context=[]`): its call does not rest on
    the researcher's reading, retracted or not."""
    migrate = MigrateTool()
    crew = two_tasks("native", HealthTool(), migrate)
    crew.tasks[1].context = []
    with rippl_guard(rippl) as hooks:
        crew.kickoff()
    rippl.retract(reading(hooks), reason="stale replica", by="monitor")
    assert migrate.ran == ["09"] and rippl.compensations() == []


@pytest.mark.parametrize("path", PATHS)
def test_an_agent_acting_on_what_a_coworker_answered_is_vetoed(rippl: Rippl, path: str) -> None:
    """An agent called as a tool: the lead delegates "is shard 09 safe?" to the researcher
    (CrewAI's delegation tool), whose answer comes back as the tool's result; the reading under
    it is retracted; the lead's migration is vetoed, the reason naming both runs."""
    migrate = MigrateTool()
    box: list[RipplHooks] = []
    researcher = Agent(role="researcher", goal="Find a safe shard", backstory="You read dashboards.",
                       llm=model(path, H09, final="Shard 09 is healthy: a safe target."),
                       tools=[HealthTool()], max_iter=4, verbose=False, allow_delegation=False)
    ask = {"task": "Is shard 09 a safe target?", "context": "the billing migration",
           "coworker": "researcher"}
    lead = Agent(role="lead", goal="Move billing", backstory="You lead the migration.",
                 llm=model(path, ("delegate_work_to_coworker", ask),
                           then(lambda: retract(rippl, box[0])(), ("migrate_tables", {"shard": "09"}))),
                 tools=[migrate], max_iter=6, verbose=False, allow_delegation=True)
    task = Task(description="Move billing to a safe shard.", expected_output="a summary", agent=lead)
    crew = Crew(agents=[lead, researcher], tasks=[task], verbose=False)
    with rippl_guard(rippl) as hooks:
        box.append(hooks)
        crew.kickoff()
    assert migrate.ran == []
    [vetoed] = verdicts_of(hooks)
    [asked] = [e.run for e in hooks.executions if e.tool == "get_shard_health"]
    leading = f"crewai/{crew._kickoff_event_id}/{task.id}"
    assert asked != leading and f"into run {leading} from run {asked}" in vetoed.reason


# ------------------------------------------------------------------------------ Rippl notices


@pytest.mark.parametrize("path", PATHS)
def test_a_stale_reading_is_denied_until_the_agent_reads_again(rippl: Rippl, path: str) -> None:
    """Freshness from the tool's settings: after 12 minutes the migration is denied as stale
    (nothing to review, no compensation); the agent reads again and migrates."""
    migrate = MigrateTool()
    with Clock("2026-12-01T10:00:00Z") as clock:
        def later(_: list[dict[str, Any]]) -> Step:
            clock.advance(minutes=12)
            return ("migrate_tables", {"shard": "09"})

        # (CrewAI's ReAct loop never re-runs the call it made last: it reads 07 in between)
        llm = model(path, H09, later, H07, H09, ("migrate_tables", {"shard": "09"}))
        with rippl_guard(rippl, tool_settings={"get_shard_health": {"fresh_for": 300}}) as hooks:
            crew_of(llm, [HealthTool(), migrate]).kickoff()
    assert migrate.ran == ["09"]  # the second, on the fresh reading
    stale, fresh = verdicts_of(hooks)
    assert not stale.allowed and stale.expired and fresh.allowed
    [said] = vetoes_shown(llm)
    assert "stale" in said.lower() and "read it again" in said.lower()
    assert rippl.reviews(None) == [] and rippl.compensations() == []


def test_another_agents_differing_read_supersedes_a_pending_plan(rippl: Rippl) -> None:
    """The planner's turn posts to the ops channel, then migrates; while it posts, a checker crew
    reads shard 09 again and sees "degraded": the pending migration is denied as superseded,
    naming the newer reading and the run that read it."""
    migrate = MigrateTool()
    checker = crew_of(model("native", H09, final="09 is degraded"),
                      [HealthTool(readings={"09": "shard 09: degraded (primary)"})])

    def check_meanwhile() -> None:  # another agent, on a thread of its own (a run of its own)
        thread = threading.Thread(target=checker.kickoff)
        thread.start()
        thread.join(timeout=120)

    planner = crew_of(model("native", H09, [("notify_ops", {"text": "moving billing to 09"}),
                                            ("migrate_tables", {"shard": "09"})],
                            final="stopped"),
                      # a tool with a usage limit makes CrewAI run the turn's calls in order
                      [HealthTool(), NotifyTool(meanwhile=check_meanwhile, max_usage_count=5),
                       migrate])
    hooks = register_rippl_hooks(rippl, tool_settings={"get_shard_health": {"reads": True}})
    try:
        planner.kickoff()
    finally:
        hooks.unregister()
    assert migrate.ran == []
    [denied] = verdicts_of(hooks)
    checked = f"crewai/{checker._kickoff_event_id}/{checker.tasks[0].id}"
    assert not denied.allowed and "superseded" in denied.reason
    assert "shard 09: degraded" in denied.reason and f"run {checked}" in denied.reason
    assert rippl.reviews(None) == []  # stale is not false: nothing to review


# ------------------------------------------------------------------------- an edited tool result


def test_a_tool_result_edited_in_the_history_is_denied(rippl: Rippl) -> None:
    """A history editor rewrites the health result the model reads ("degraded" becomes
    "healthy"): Rippl never recorded that result, so the call resting on it is denied, naming
    the message."""
    migrate = MigrateTool()

    def forge(ctx: Any) -> None:
        for message in ctx.messages:
            if message.get("role") == "tool" and "degraded" in str(message.get("content")):
                message["content"] = "shard 09: healthy (primary)"

    llm = model("native", H09, ("migrate_tables", {"shard": "09"}))
    register(InterceptionPoint.PRE_MODEL_CALL, forge)
    try:
        with rippl_guard(rippl) as hooks:
            crew_of(llm, [HealthTool(readings={"09": "shard 09: degraded"}), migrate]).kickoff()
    finally:
        unregister(InterceptionPoint.PRE_MODEL_CALL, forge)
    assert "shard 09: healthy (primary)" in llm.shown(1)  # the model read the forged result
    assert migrate.ran == []
    [denied] = verdicts_of(hooks)
    assert not denied.allowed and denied.blockers[0].premise.startswith("UNR-")
    [said] = vetoes_shown(llm)
    assert "never recorded" in said and "c0" in said


def test_guarded_tools_take_their_settings_too(rippl: Rippl) -> None:
    """On the paths hooks never see (a script calling `tool.run()`), a `GuardedTool` records and
    judges by the same settings: given to `guard_tools`, or carried by the wrapped tool."""
    migrate = MigrateTool(metadata={"rippl": {"repeat_scope": "tool"}})
    health, moving = guard_tools([HealthTool(), migrate], rippl,
                                 tool_settings={"get_shard_health": {"fresh_for": 300}})
    assert isinstance(health, GuardedTool) and isinstance(moving, GuardedTool)
    health.capture_run = moving.capture_run = "script-1"
    assert moving._guard.settings("migrate_tables").repeat_scope == "tool"
    with Clock("2026-12-01T10:00:00Z") as clock:
        health.run(shard="09")
        clock.advance(minutes=12)
        stale = moving.run(shard="09")
        assert isinstance(stale, ToolFailure) and "stale" in stale.message
        health.run(shard="09")  # read again
        assert moving.run(shard="09") == "migrated billing to shard 09"
    assert migrate.ran == ["09"]


# ------------------------------------------------------------------------- the model's own text


class Approver(SyncHumanInputProvider):
    """The human at the task's review: says go ahead once, then accepts the next answer."""

    def __init__(self) -> None:
        self.answers = iter(["Go ahead: migrate billing to the shard you found healthy."])

    def _prompt_input(self, crew: Any) -> str:
        return next(self.answers, "")


@pytest.mark.parametrize("trimmed", ["the read", "every carrier", "the read, before the reply"])
def test_the_models_own_reply_carries_what_it_was_written_from(rippl: Rippl, trimmed: str) -> None:
    """The model reads shard 09's health and answers "09 is healthy"; a human says go ahead; the
    reading is retracted and the model migrates to 09. A history editor trims the health read
    away: after the answer, keeping it (the answer carries the reading: vetoed); with the answer
    (no message carries it: allowed); or before the model wrote the answer (the answer was written
    from an input without the reading, so it carries nothing of it: allowed). Native function
    calling: CrewAI's ReAct loop does not keep the answer in the history after a human's
    feedback."""
    migrate = MigrateTool()
    box: list[RipplHooks] = []

    def trim(ctx: Any) -> None:
        now = trimmed.endswith("before the reply") or any(
            "Go ahead" in str(m.get("content") or "") for m in ctx.messages)
        if not now or len(ctx.messages) < 4:  # the read is in the input from the second call on
            return
        ctx.messages[:] = [m for m in ctx.messages if "shard 09: healthy" not in
                           str(m.get("content") or "") and not any(
            call.get("id") == "c0" for call in m.get("tool_calls") or []) and (
            trimmed != "every carrier" or "a safe target" not in str(m.get("content") or ""))]

    llm = model("native", H09, "Shard 09 is healthy: a safe target.",
                then(lambda: retract(rippl, box[0])(), ("migrate_tables", {"shard": "09"})))
    ops = Agent(role="ops engineer", goal="Move billing", backstory="You run the fleet.", llm=llm,
                tools=[HealthTool(), migrate], max_iter=8, verbose=False, allow_delegation=False)
    task = Task(description="Find a healthy shard and move billing there.", agent=ops,
                expected_output="a summary", human_input=True)
    register(InterceptionPoint.PRE_MODEL_CALL, trim)
    token = set_provider(Approver())
    try:
        with rippl_guard(rippl) as hooks:
            box.append(hooks)
            Crew(agents=[ops], tasks=[task], verbose=False).kickoff()
    finally:
        reset_provider(token)
        unregister(InterceptionPoint.PRE_MODEL_CALL, trim)
    shown = llm.shown(2)
    assert "Go ahead" in shown and "shard 09: healthy" not in shown
    assert ("a safe target" in shown) is (trimmed != "every carrier")
    assert migrate.ran == ([] if trimmed == "the read" else ["09"])
