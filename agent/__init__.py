"""The orchestrator: what happens in which order (graph, nodes, sessions, journal, CLI)."""
