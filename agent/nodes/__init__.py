"""Graph nodes, one module per family. Effect nodes act through `agent.execute`; gate nodes are pure."""
