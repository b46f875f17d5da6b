"""What a finished or running session says to a person: console output, replay, audit report."""
