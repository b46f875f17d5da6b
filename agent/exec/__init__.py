"""The command pipeline the nodes call: a spec planned into commands on hosts (planning), checked and cleared,
handed to a transport by `dispatch.run_one` alone, its mutations keyed and settled after a crash (effects,
execute), its output spooled while it runs (live); and the two kinds of command work built on it, verification
of a host's state and the investigation subagents' tools. Below `agent.nodes`, above `agent.context`; the session
driver that runs the graph is `agent.run`."""
