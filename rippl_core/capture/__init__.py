"""Provenance capture: the causal graph built from an agent's own run, as it happens.

What enters the agent's context through Rippl or a tool result is an observation (a claim the run
saw); each model turn that emits tool calls is a decision resting on the observations still in
the model's context that it was not told are false; each tool call is an action driven by that
decision, matched only by its own run's calls; each execution is recorded, and its output becomes
a new observation. A retraction of anything the run saw then vetoes every later call that rested
on it, and lists every call already executed on it (`compensations`).

`context` is the pure rule of what a turn rests on; `ids` names what capture writes; `run` holds
the operations (observe, decide, judge, executed, compensations, prune); `handle` the `Run` and
`AsyncRun` objects that `Rippl.run(...)` returns; `cypher` every query.
"""
