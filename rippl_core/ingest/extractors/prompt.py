"""The instructions every LLM extractor sends: the data model, the rules, the document."""

from __future__ import annotations

from rippl_core.ingest.document import Document

SYSTEM_PROMPT = """\
You extract a causal graph from an incident document (a postmortem, an RFC, an ADR, a telemetry \
audit) for Rippl, a memory that vetoes an agent's actions when a premise under them turns out false.

The graph has four kinds of item, and support flows one way: sources -> claims -> decisions -> actions.
- sources: where facts come from (a dashboard, a log, a ticket, a person, a runbook, a document). \
Give a precise title (what it is and when), kind (telemetry, document, ticket, person, runbook, log) \
and uri only if the document gives one.
- claims: statements of fact the document asserts, each one self-contained sentence ("Shard 09 is \
healthy", not "it is healthy"). List in `sources` the refs of the sources that assert it; use \
`derived_from` for claims inferred from other claims (all of them needed). When a claim states \
the value of one property of one thing, give `key` as SUBJECT/PROPERTY ("shard-09/health") and \
`value` ("degraded"), spelling the same subject and property the same way every time.
- decisions: what the authors decided. `premises` lists the claims (or decisions) it rests on: \
all of them are needed. `depends_on` lists earlier decisions it builds on. If the document gives \
another, independent reason that would justify the decision on its own, put that set of refs in \
`alternatives`.
- actions: what was done or is to be done because of decisions (`decisions`), and the actions \
that must run before it (`triggers`). Fill `tool` and `args` only when the document names the \
command or tool call and its arguments; never invent them.

Rules:
- Give every item a short `ref` (s1, c1, d1, a1...), unique across the whole extraction, and \
refer to items only by these refs. Never refer to something you did not define.
- Only extract what the document states. No item may support itself, directly or through others.
- For each item give `section` (the heading it is under) and `quote`: a short excerpt copied \
verbatim from the document that states it.
- Answer with JSON only, matching the schema.
"""


def user_prompt(document: Document) -> str:
    return (f"Document: {document.name}\n\n<document>\n{document.text}\n</document>\n\n"
            "Extract its sources, claims, decisions and actions.")


def messages(document: Document) -> list[dict[str, str]]:
    """OpenAI-style chat messages (Groq's API takes them as they are)."""
    return [{"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": user_prompt(document)}]
