"""A judge's process (trusted, one per pair): the reference, the workers, correctness and timing."""
