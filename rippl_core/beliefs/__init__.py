"""Bitemporal belief memory: what an agent believed about a topic, when (valid time), as Rippl
knew it when (transaction time), why it changed its mind, and what it would believe had some
evidence never existed. Beliefs are intervals on (:Agent)-[:BELIEVES]->(:Claim) edges."""
