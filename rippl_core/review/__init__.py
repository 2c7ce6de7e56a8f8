"""The human gate: proposed retractions, approval or rejection, direct retraction and
reinstatement, the tamper-evident receipt chain, and the live events every commit publishes."""
