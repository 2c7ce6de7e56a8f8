"""The contradiction benchmark: the labelled set's shape, the heuristic stand-in going through
`ChatModelDetector` for real, and a run of a few pairs on embedded FalkorDB."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from rippl_bench.contradictions import HeuristicJudge, judge_text, load_pairs, markdown, run

from rippl_core.models import ClaimEvidence
from rippl_core.review.detectors import ChatModelDetector


def test_the_labelled_set_has_sixty_pairs_of_three_labels() -> None:
    pairs = load_pairs()
    counts = Counter(p["label"] for p in pairs)
    assert len(pairs) >= 60 and set(counts) == {"contradicting", "compatible", "unrelated"}
    assert min(counts.values()) >= 15
    assert len({p["id"] for p in pairs}) == len(pairs)


def test_the_stand_in_answers_through_the_detector() -> None:
    assert judge_text("Shard 07 is not healthy", "Shard 07 is healthy")[0]
    assert not judge_text("The cafeteria opens at nine", "Shard 07 is healthy")[0]
    detector = ChatModelDetector(HeuristicJudge())
    new = ClaimEvidence(id="CLM-b", text="Redis memory usage decreased overnight")
    old = [ClaimEvidence(id="CLM-a", text="Redis memory usage increased overnight"),
           ClaimEvidence(id="CLM-c", text="The Q3 roadmap was approved")]
    verdicts = {v.claim: v.contradicts for v in detector.judge(new, old)}
    assert verdicts == {"CLM-a": True, "CLM-c": False}


def test_a_run_scores_both_detectors(tmp_path: Path) -> None:
    pairs = [p for p in load_pairs() if p["id"] in ("P01", "P16", "P25", "P47")]
    result = run(pairs, db=tmp_path / "rippl.db")
    by_id = {r["id"]: r for r in result["pairs"]}
    assert by_id["P01"]["key"] and not by_id["P16"]["key"] and by_id["P16"]["model"]
    assert not any(by_id["P25"][d] or by_id["P47"][d] for d in ("key", "model"))
    assert result["scores"]["either"]["recall"] == 1.0
    assert "| either (what a user with both gets) |" in markdown(result)
