"""Property: the sources a provenance query matches are exactly those a plain filter over what
was recorded selects, on random readings (runs of random agents and frameworks, tools, arguments,
times) and plain sources with a uri; and the review's claims are exactly the claims they support.

The reference knows nothing of the stored graph: it filters the list of readings the test made,
by the rule of docs/design.md ("Retraction by provenance") written plainly."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rippl_core import NoMatchError, Rippl, ToolCall
from rippl_core.capture import ids
from rippl_core.testing import Clock

START = 1_796_119_200_000  # 2026-12-01T10:00:00Z
MINUTE = 60_000
RUNS = {"r0": ("ann", "langgraph"), "r1": ("ann", "crewai"), "r2": ("bob", "autogen"),
        "r3": ("bob", "langgraph")}
TOOLS = ("fetch_url", "get_health", "search")
URLS = ("https://evil.example/a", "https://evil.example/b", "https://good.example/a")


@dataclass(frozen=True)
class Reading:
    source: str  # filled in once recorded
    claim: str
    run: str | None  # None: a plain source (uri, no run)
    tool: str | None
    args: dict[str, object] | None
    at: int | None
    kind: str | None
    uri: str | None


def reference(readings: list[Reading], query: dict[str, object]) -> set[str]:
    out = set()
    for r in readings:
        agent, framework = RUNS[r.run] if r.run else (None, None)
        if "source_kind" in query and r.kind != query["source_kind"]:
            continue
        if "tool" in query and r.tool != query["tool"]:
            continue
        if "args" in query and (r.args is None or any(r.args.get(k, object()) != v
                                                     for k, v in query["args"].items())):  # type: ignore[attr-defined]
            continue
        if "since" in query and (r.at is None or r.at < query["since"]):  # type: ignore[operator]
            continue
        if "until" in query and (r.at is None or r.at >= query["until"]):  # type: ignore[operator]
            continue
        if "run" in query and r.run != query["run"]:
            continue
        if "agent" in query and agent != query["agent"]:
            continue
        if "framework" in query and framework != query["framework"]:
            continue
        if "source_prefix" in query:
            p = str(query["source_prefix"])
            texts = [r.source, r.uri or "", *(v for v in (r.args or {}).values() if isinstance(v, str))]
            if not any(t.startswith(p) for t in texts):
                continue
        out.add(r.source)
    return out


plans = st.lists(st.one_of(
    st.tuples(st.just("read"), st.sampled_from(sorted(RUNS)), st.integers(0, 2), st.integers(0, 2),
              st.integers(0, 1), st.integers(0, 1)),  # run, tool, url, n, output
    st.tuples(st.just("wait"), st.integers(1, 5)),
    st.tuples(st.just("page"), st.integers(0, 2)),  # a plain source with a uri
), min_size=1, max_size=14)

queries = st.fixed_dictionaries({}, optional={
    "tool": st.sampled_from(TOOLS),
    "args": st.sampled_from([{"url": URLS[0]}, {"n": 1}, {"url": URLS[2], "n": 0}]),
    "since": st.integers(0, 12).map(lambda m: START + m * MINUTE),
    "until": st.integers(1, 14).map(lambda m: START + m * MINUTE),
    "run": st.sampled_from(sorted(RUNS)),
    "agent": st.sampled_from(["ann", "bob"]),
    "framework": st.sampled_from(["langgraph", "crewai", "autogen"]),
    "source_kind": st.sampled_from(["tool_result", "web"]),
    "source_prefix": st.sampled_from(["https://evil.example/", "https://good.", "OBS-", "page-"]),
}).filter(lambda q: bool(q) and not ("since" in q and "until" in q and q["since"] >= q["until"]))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(plan=plans, asked=st.lists(queries, min_size=1, max_size=4))
def test_matched_sources_equal_the_reference(open_rippl: Callable[..., Rippl],
                                             plan: list[tuple[object, ...]],
                                             asked: list[dict[str, object]]) -> None:
    rippl = open_rippl()
    readings: list[Reading] = []
    with Clock(START) as clock:
        for n, step in enumerate(plan):
            if step[0] == "wait":
                clock.advance(minutes=int(step[1]))  # type: ignore[call-overload]
            elif step[0] == "page":
                uri = URLS[int(step[1])]  # type: ignore[call-overload]
                source = rippl.add_source(f"page-{n}", f"a page {n}", uri=uri, kind="web")
                claim = rippl.add_claim(f"said-{n}", f"page {n} says something", sources=[source.id])
                readings.append(Reading(source.id, claim.id, None, None, None, None, "web", uri))
            else:
                _, run_id, tool, url, num, output = step
                agent, framework = RUNS[str(run_id)]
                run = rippl.run(str(run_id), agent=agent, framework=framework)
                args = {"url": URLS[int(url)], "n": num}  # type: ignore[call-overload]
                call = ToolCall(name=TOOLS[int(tool)], args=args, id=f"c{n}")  # type: ignore[call-overload]
                run.decide(f"t{n}", [call], context=[])
                at = clock.now
                claim_id = run.executed(call, f"output {output}")
                source = ids.result_source(str(run_id), call.id or "")
                readings.append(Reading(source, claim_id, str(run_id), TOOLS[int(tool)], args, at,
                                        "tool_result", None))
    for query in asked:
        expected = reference(readings, query)
        try:
            item = rippl.propose_retraction_where(reason="property", by="prop", **query)  # type: ignore[arg-type]
        except NoMatchError:
            assert expected == set(), query
            continue
        assert set(item.claims) == expected, query
        assert set(item.matched) == {r.claim for r in readings if r.source in expected}, query
        rippl.reject(item.id, by="reviewer")
