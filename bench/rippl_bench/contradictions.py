"""Precision and recall of the contradiction detectors on a labelled set of claim pairs
(`bench/data/contradictions.jsonl`: contradicting, compatible, unrelated).

Each pair is written into a fresh graph of a real FalkorDB (embedded): claim A, then claim B, each
with its own source and, where the set gives them, its key and value.

- **The key detector**: positive when writing B proposed the retraction of A.
- **The model detector**: positive when the detector, shown B and its candidates (chosen as in
  production: claims sharing B's key with another value, then the nearest in full text), judges
  that B contradicts A. No hosted model is reachable here, so the chat model is `HeuristicJudge`: a
  deterministic LangChain chat model whose answers come from a small rule (shared words, negation,
  an antonym list, differing numbers), going through `ChatModelDetector` and
  `with_structured_output` for real. Its figure measures that rule and the candidate selection,
  not what a hosted model would score.
- **Either**: what a user with both detectors gets.

Positive = contradicting; compatible and unrelated pairs are the negatives.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from rippl_core import Rippl
from rippl_core.review import contradictions
from rippl_core.review.detectors import ChatModelDetector

DATA = Path(__file__).resolve().parents[1] / "data" / "contradictions.jsonl"

_WORD = re.compile(r"[a-z0-9]+(?:[.'][a-z0-9]+)*")
_STOP = frozenset((
    "a", "an", "and", "are", "as", "at", "be", "been", "but", "by", "for", "from", "has", "have",
    "in", "is", "it", "its", "of", "on", "or", "that", "the", "this", "to", "was", "were",
    "will", "with", "all", "still",
))
_NEGATION = frozenset({"not", "no", "never", "without", "cannot", "nor", "isn't", "didn't",
                       "doesn't", "don't", "won't", "wasn't", "aren't"})
# each row: words that cannot describe the same thing together (left vs right)
_ANTONYMS = [
    ({"healthy"}, {"degraded", "unhealthy"}), ({"up"}, {"down"}), ({"enabled"}, {"disabled"}),
    ({"on"}, {"off"}), ({"succeeded", "passed"}, {"failed"}), ({"open"}, {"closed", "resolved"}),
    ({"valid"}, {"expired", "invalid"}), ({"green"}, {"red"}), ({"available"}, {"unavailable"}),
    ({"increased"}, {"decreased"}), ({"online"}, {"offline"}),
    ({"finished", "completed", "complete", "done"}, {"progress", "unfinished", "incomplete"}),
    ({"read-only", "readonly"}, {"writes", "read-write"}),
]
_OPPOSED = frozenset(w for pair in _ANTONYMS for side in pair for w in side)


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower().replace("-", " ").replace("read only", "read-only"))


def judge_text(new: str, old: str) -> tuple[bool, str]:
    """The heuristic: do these two statements contradict? (verdict, reason)."""
    a, b = _words(new), _words(old)
    content_a = {w for w in a if w not in _STOP and w not in _NEGATION and w not in _OPPOSED}
    content_b = {w for w in b if w not in _STOP and w not in _NEGATION and w not in _OPPOSED}
    shared = content_a & content_b
    if not content_a or not content_b or len(shared) / min(len(content_a), len(content_b)) < 0.6:
        return False, "they are about different things"
    if any(w in _NEGATION or w.endswith("n't") for w in a) != \
            any(w in _NEGATION or w.endswith("n't") for w in b):
        return True, "one negates what the other states"
    for left, right in _ANTONYMS:
        if (left & set(a) and right & set(b)) or (right & set(a) and left & set(b)):
            return True, f"{'/'.join(sorted(left))} against {'/'.join(sorted(right))}"
    numbers_a = {w for w in a if w.replace(".", "").isdigit()} - shared
    numbers_b = {w for w in b if w.replace(".", "").isdigit()} - shared
    if numbers_a and numbers_b and numbers_a != numbers_b:
        return True, f"{', '.join(sorted(numbers_a))} against {', '.join(sorted(numbers_b))}"
    return False, "they agree or add detail"


class HeuristicJudge(GenericFakeChatModel):
    """A deterministic stand-in for a hosted chat model: it reads the detector's prompt and
    answers with the `Judgements` tool call that `judge_text` decides."""

    model_name: str = "heuristic-judge"
    messages: Any = iter(())

    def bind_tools(self, tools: Any, *, tool_choice: Any = None, **kwargs: Any) -> Any:
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        prompt = str(messages[-1].content)
        new_part, _, earlier_part = prompt.partition("EARLIER statements:")
        new = json.loads(new_part.split("NEW statement:", 1)[1].strip())
        answers = []
        for line in earlier_part.strip().splitlines():
            old = json.loads(line)
            verdict, reason = judge_text(new["text"], old["text"])
            answers.append({"claim": old["id"], "contradicts": verdict, "reason": reason})
        call = AIMessage("", tool_calls=[{"name": "Judgements", "args": {"judgements": answers},
                                          "id": "call_1", "type": "tool_call"}])
        return ChatResult(generations=[ChatGeneration(message=call)])


def load_pairs(path: Path = DATA) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _write(rippl: Rippl, claim_id: str, side: dict[str, Any]) -> None:
    source = f"SRC-{claim_id}"
    rippl.add_source(source, f"where {claim_id} was read")
    rippl.add_claim(claim_id, side["text"], sources=[source], key=side.get("key"),
                    value=side.get("value"))


def run(pairs: Iterable[dict[str, Any]], *, db: Path | None = None) -> dict[str, Any]:
    """Each pair through both detectors; the predictions and the scores."""
    detector = ChatModelDetector(HeuristicJudge())
    rows = []
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as tmp, \
            Rippl.open(db or Path(tmp) / "rippl.db", graph="contradictions-bench") as rippl:
        for pair in pairs:
            rippl.drop()
            _write(rippl, "CLM-a", pair["a"])
            _write(rippl, "CLM-b", pair["b"])
            key = any(r.claim == "CLM-a" for r in rippl.reviews())
            claim, found = rippl._driver.run(lambda: contradictions.candidates("CLM-b",
                                                                              detector.nearest))
            verdicts = detector.judge(claim, found) if claim is not None and found else []
            model = any(v.claim == "CLM-a" and v.contradicts for v in verdicts)
            rows.append({"id": pair["id"], "label": pair["label"], "key": key, "model": model,
                         "either": key or model, "candidate": any(c.id == "CLM-a" for c in found)})
        rippl.drop()
    return {"pairs": rows, "scores": {d: score(rows, d) for d in ("key", "model", "either")},
            "labels": {label: sum(r["label"] == label for r in rows)
                       for label in ("contradicting", "compatible", "unrelated")},
            "model": detector.model}


def score(rows: list[dict[str, Any]], detector: str) -> dict[str, Any]:
    tp = sum(r[detector] and r["label"] == "contradicting" for r in rows)
    fp = sum(r[detector] and r["label"] != "contradicting" for r in rows)
    fn = sum(not r[detector] and r["label"] == "contradicting" for r in rows)
    by_label = {label: sum(r[detector] for r in rows if r["label"] == label)
                for label in ("contradicting", "compatible", "unrelated")}
    return {"tp": tp, "fp": fp, "fn": fn,
            "precision": round(tp / (tp + fp), 3) if tp + fp else None,
            "recall": round(tp / (tp + fn), 3) if tp + fn else None,
            "flagged": by_label}


HEADING = "## Contradictions proposed, never applied (issue 24 part 4)"


def markdown(result: dict[str, Any]) -> str:
    """The section of docs/benchmarks.md: what was measured, the table, what the figures mean."""
    labels = result["labels"]
    candidates = {"all": sum(r["candidate"] for r in result["pairs"]),
                  "contradicting": sum(r["candidate"] for r in result["pairs"]
                                       if r["label"] == "contradicting")}
    lines = [HEADING, "",
             "`uv run python bench/scripts/bench_contradictions.py` writes this section and "
             "`bench/results/contradictions.json`.",
             "",
             f"The labelled set is {sum(labels.values())} pairs of claims "
             f"(`bench/data/contradictions.jsonl`): {labels['contradicting']} contradicting, "
             f"{labels['compatible']} compatible (agreeing, adding detail, the same value spelt "
             f"another way), {labels['unrelated']} unrelated (often the same property of another "
             "subject). Keys and values are given where an extractor would give them, and left out "
             "or spelt apart where one plausibly would not. Each pair is written into a fresh graph "
             "of embedded FalkorDB, claim A then claim B, each with its own source; a detector's "
             "answer is positive when it flags A as contradicted by B. Positives are the "
             "contradicting pairs; compatible and unrelated pairs are the negatives.",
             "",
             "| detector | precision | recall | flagged: contradicting / compatible / unrelated |",
             "|---|---|---|---|"]
    names = {"key": "key (same key, another value)",
             "model": f"model, driven by `{result['model']}` (a heuristic stand-in, see below)",
             "either": "either (what a user with both gets)"}
    for name, label in names.items():
        s = result["scores"][name]
        f = s["flagged"]
        lines.append(f"| {label} | {s['precision']} | {s['recall']} | "
                     f"{f['contradicting']} / {f['compatible']} / {f['unrelated']} |")
    lines += [
        "",
        "- **The key detector** is exact about what it sees: it flags every pair whose keys match "
        "and whose values differ. It misses contradictions whose claims carry no key or keys spelt "
        "apart (`pg16-migration/status` against `postgres-16-migration/state`), and it flags "
        "compatible pairs whose values differ without conflicting (`down` and `offline`, "
        "`eu-west` and `eu-west-1`, `12` and `twelve`). Its precision is the precision of the "
        "keys an extractor writes; normalising values (synonyms, units) would be the extractor's "
        "job, not the rule's.",
        "- **The model detector's figure is not a model's.** No hosted model is reachable from "
        "this machine, so the chat model behind `ChatModelDetector` is `HeuristicJudge` "
        "(`bench/rippl_bench/contradictions.py`): a deterministic LangChain chat model answering "
        "through `with_structured_output` for real, whose judgement is a small rule (enough "
        "shared words, then a negation on one side only, an antonym from a short list, or "
        "different numbers). The figure measures that rule and the candidate selection (in a "
        "two-claim graph, A is a candidate whenever it shares B's key or a significant word: "
        f"it was in {candidates['all']} of the {sum(labels.values())} pairs, every "
        f"contradicting one among them ({candidates['contradicting']} of "
        f"{labels['contradicting']})), and says nothing of what Groq or another hosted model "
        "would score; a hosted model run against the same file is the open item. The same author "
        "wrote the set and the rule, so the rule's figure is optimistic even as a heuristic.",
        "- **Either** is what the two give together: proposals stay proposals, so a false positive "
        "costs a reviewer's rejection, and a pair is never proposed twice.",
    ]
    return "\n".join(lines) + "\n"
