"""What agents act with: transports, command checks, benchmark parsing, statistics, stress.

Nothing here imports LangGraph, the agent or the policies.
"""
