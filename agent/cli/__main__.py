"""`python -m agent.cli`: the command line without the terminal UI (the installed `signoff` is `tui.cli`)."""

from agent.cli import main

main()
