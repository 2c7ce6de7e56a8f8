"""Record stores: text records (an agent's memories) held as claims of the causal graph, so that
retracting a claim, or the source a record came from, stops it being recalled as current."""
