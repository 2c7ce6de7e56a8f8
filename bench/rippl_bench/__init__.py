"""Rippl's benchmark lab: generated graphs, latency and scale measurements, the invalidation-recall
ablation (causal graph vs recursive SQL vs retrieval), and the Markdown report with plots.

Run it from a clone with `uv run rippl-bench [--quick]` (an unpublished workspace member: it is not
in any wheel). Library code here never prints; progress is
reported through a callback that the command line turns into a progress bar.
"""
