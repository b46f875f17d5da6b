"""Running a session: the runner, the commands it executes on hosts, and the answers it takes."""
