"""Running TF1 scripts: ``run-legacy``, and ``verify`` (run the legacy and the
migrated program in child processes, capture their numbers, compare them)."""
