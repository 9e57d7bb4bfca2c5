"""The runner's process: the command line, pairs found and planned, judges started and followed, results written."""
