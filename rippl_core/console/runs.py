"""The console's runs API: every captured run (filtered), and one run's trace. Reads only,
through `reader` like the console's other read views (open on loopback unless reads are closed)."""

from __future__ import annotations

from fastapi import APIRouter, Request

from rippl_core.capture.trace import RunSummary, RunTrace
from rippl_core.console.access import Read, console

router: APIRouter = APIRouter(prefix="/api")


@router.get("/runs", response_model=list[RunSummary], dependencies=[Read], tags=["runs"])
async def runs(request: Request, agent: str | None = None, framework: str | None = None,
               since: str | None = None, until: str | None = None,
               open_compensations: bool = False) -> list[RunSummary]:
    """Every captured run, most recently active first: by agent, framework, active since,
    started until, and with open compensations only."""
    return await console(request).rippl.runs(agent=agent or None, framework=framework or None,
                                             since=since or None, until=until or None,
                                             open_compensations=open_compensations)


@router.get("/runs/{run_id:path}", response_model=RunTrace, dependencies=[Read], tags=["runs"])
async def run_trace(request: Request, run_id: str) -> RunTrace:
    """A run's turns in order, what each rested on, its calls with verdicts and executions."""
    return await console(request).rippl.run_trace(run_id)
