"""The Textual app (issue 7). It imports `agent`; nothing in `agent`, `policies` or `tools` imports it."""
