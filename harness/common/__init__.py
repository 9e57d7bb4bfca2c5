"""What every process of a run uses: config, records, verdicts, the wires between processes, checks and statistics."""
