"""A worker's process (the candidate's, untrusted; or the reference's): imports its model, runs and times it."""
