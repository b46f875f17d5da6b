"""Graph nodes, one module per family. Effect nodes act through `agent.run.execute`; gate nodes are pure."""
