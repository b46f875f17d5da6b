"""The journal: typed events, the hash chain and its head, and the one fold every reader shares."""
