"""Private runtime: the wire format, the sync and async drivers that run operations against FalkorDB,
connections (embedded or server), key names, schema creation, times and input validation.

Nothing here knows the causal graph, beliefs or reviews; every feature folder builds on it."""
