"""Running a session: the runner that drives the graph, its creation and wiring, checkpoints, the answers it takes
at gates, its outcome and the dry run. The commands the nodes run on hosts go through `agent.exec`."""
