"""The adapter kit: what every framework adapter (LangGraph, AutoGen, CrewAI) shares, once.

Modules: `toolguard` (mapping and fail-closed verdicts), `guard` (bound to a graph), `handles`
(either handle from asyncio), `capture` (recording a run), `search` (belief ranking), `state`
(framework state in a companion graph).

- **Guarding tool calls**: `ToolGuard` maps a framework's call to an action (`unguarded` names,
  `only`, a `resolver`, then the core's resolution by tool name and canonical arguments) and gives
  a fail-closed verdict when it cannot be mapped or checked; `Guard` binds it to a graph handle;
  `veto_text` is what a model reads instead of the tool's output. A call's arguments are a
  mapping, None, or the JSON text of an object (as AutoGen's `FunctionCall` and OpenAI-style tool
  calls carry them). A call that cannot be mapped is judged by the policy's `unknown`; a check that
  cannot be answered by its `on_error`. `judge`/`ajudge`/`check`/`acheck` never raise.
- **Either handle**: `acall` runs a method of a `Rippl` (in a worker thread) or an `AsyncRippl`
  (awaited); `ThreadedRippl` is a sync handle seen through awaitables; `run_calls`/`arun_calls`
  drive an operation written once as a generator of handle calls.
- **Belief search**: `rank` orders beliefs by the share of a query's content words they contain.
- **Framework state**: `StateGraph`/`AsyncStateGraph`, a companion graph of the tenant's graph
  (e.g. LangGraph checkpoints) with its own schema, running operations written as generators of
  `Query` and `Commit` (the same protocol as the core's); `throwaway_database`, an embedded
  database in a temporary folder deleted once its server stopped (a store's ":memory:").
- **Checkpoints that notice tampering**: `checkpoints`, the chained layout of the companion
  graph "checkpoints" (digests, signatures, what a read verifies, the migration of a store
  written before the chain); `verify_checkpoints` checks a whole store, `checkpoint_heads_digest`
  gives the digest of every thread head (for the receipt log's anchored head), `FileAnchor` keeps
  the newest heads outside the database.
- **Capture**: `Capture` records one run of a framework's agent (its turns, calls, executions,
  the messages its model wrote) and judges its calls, failing closed; `Capture.writing` marks a
  block in which memory written is the run's (`Writing` of a `RunRef`, `writing`, for an adapter
  that writes for a run it knows; `current_writing`, who writes now), so it rests on what the run
  carried.
- **Arguments as the tool receives them**: `ToolGuard.learn(name, metadata, schema)` takes a
  tool's argument schema (`schema_of` finds it on a tool object); every call is then compared on
  `received` arguments (defaults filled, values coerced, injected arguments left out).
- **Per-tool settings**: `ToolSettings` (in `rippl_core`) given per tool name to a guard
  (`tools=`), or read from a tool's own metadata under `METADATA_KEY` ("rippl") with
  `ToolGuard.learn`.
- **Tracing**: `parent_source` registers where a framework's tracing keeps its current span when
  it does not make it OpenTelemetry's current span, so that Rippl's spans nest under it.
- Input helpers the adapters validate with: `check_id`, `check_text`, `normalise_text`,
  `semantic_id`, `to_ms`, `from_ms`, `now_ms`; `text_ref`, the ref of a message known only by its
  text (frameworks that give messages no ids).
"""

from rippl_core._runtime.op import Batch, Commit, Op
from rippl_core._runtime.schema import Index, Schema
from rippl_core._runtime.telemetry import parent_source
from rippl_core._runtime.timeutil import from_ms, now_ms, to_ms
from rippl_core._runtime.validation import check_id, check_text, normalise_text, semantic_id
from rippl_core._runtime.wire import Query
from rippl_core.adapters import checkpoints
from rippl_core.adapters.capture import Capture, FrameworkCall
from rippl_core.adapters.checkpoints import (
    ChainPolicy,
    ChainReport,
    CheckpointProblem,
    FileAnchor,
    Head,
    HeadAnchor,
    acheckpoint_heads_digest,
    averify_checkpoints,
    checkpoint_heads_digest,
    verify_checkpoints,
)
from rippl_core.adapters.guard import Guard, HandleSource
from rippl_core.adapters.handles import (
    Call,
    Calls,
    Handle,
    ThreadedRippl,
    Tick,
    acall,
    arun_calls,
    require_handle,
    run_calls,
    sync_handle,
)
from rippl_core.adapters.search import content_words, rank, score
from rippl_core.adapters.state import AsyncStateGraph, StateGraph, throwaway_database
from rippl_core.adapters.toolguard import (
    METADATA_KEY,
    VETO_PREFIX,
    Arguments,
    Resolver,
    ResolverResult,
    ToolGuard,
    ToolSettingsMap,
    arguments,
    tool_settings,
    unanswered,
    unmappable,
    veto_text,
)
from rippl_core.capture.arguments import ArgumentSchema, received, schema_of
from rippl_core.capture.ids import output_digest, text_ref
from rippl_core.capture.memory import Writing, writing
from rippl_core.capture.memory import current as current_writing
from rippl_core.capture.run import RunRef, capture_policy

__all__ = [
    "METADATA_KEY",
    "VETO_PREFIX",
    "ArgumentSchema",
    "Arguments",
    "AsyncStateGraph",
    "Batch",
    "Call",
    "Calls",
    "Capture",
    "ChainPolicy",
    "ChainReport",
    "CheckpointProblem",
    "Commit",
    "FileAnchor",
    "FrameworkCall",
    "Guard",
    "Handle",
    "HandleSource",
    "Head",
    "HeadAnchor",
    "Index",
    "Op",
    "Query",
    "Resolver",
    "ResolverResult",
    "RunRef",
    "Schema",
    "StateGraph",
    "ThreadedRippl",
    "Tick",
    "ToolGuard",
    "ToolSettingsMap",
    "Writing",
    "acall",
    "acheckpoint_heads_digest",
    "arguments",
    "arun_calls",
    "averify_checkpoints",
    "capture_policy",
    "check_id",
    "check_text",
    "checkpoint_heads_digest",
    "checkpoints",
    "content_words",
    "current_writing",
    "from_ms",
    "normalise_text",
    "now_ms",
    "output_digest",
    "parent_source",
    "rank",
    "received",
    "require_handle",
    "run_calls",
    "schema_of",
    "score",
    "semantic_id",
    "sync_handle",
    "text_ref",
    "throwaway_database",
    "to_ms",
    "tool_settings",
    "unanswered",
    "unmappable",
    "verify_checkpoints",
    "veto_text",
    "writing",
]
