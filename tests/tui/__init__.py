"""The Textual app driven with Pilot, its SVG snapshots, and a smoke test in a real tmux."""
