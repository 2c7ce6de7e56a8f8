"""Rippl's benchmark lab: generated graphs, latency and scale measurements, the invalidation-recall
ablation (causal graph vs recursive SQL vs retrieval), and the Markdown report with plots.

Run it with `rippl bench` (needs the `bench` extra). Library code here never prints; progress is
reported through a callback that the command line turns into a progress bar.
"""
