"""Graph nodes, one module per family. Effect nodes act through `agent.exec.execute`; gate nodes are pure."""
