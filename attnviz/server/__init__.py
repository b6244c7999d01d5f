"""Server operations: the memory budget and heavy-work slots, page turns, queues, and the
process-wide runtime settings."""
