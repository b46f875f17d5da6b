"""Policy-as-file: gate contracts, the condition language, the engine and one-line decisions."""
