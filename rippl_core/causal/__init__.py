"""The causal graph: Source -> Claim -> Decision -> Action, with truth maintenance.

`spec` describes nodes to write, `write` writes them, `relabel` recomputes the states a change
affects (with `tms`, the pure labelling rule, and `walk`, linear-time walks), `nodes` reads them,
`preflight` answers allow or deny, `explain` says why, `history` reads status as of any time, and
`counterfactual` computes a retraction wave without writing it. `cypher` holds every query text.
"""
