"""Append-only results (one fsynced JSON line per pair) and atomically rewritten files
(docs/decisions/result-files.md)."""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path


# read once: setting it is process-wide
UMASK = os.umask(0)
os.umask(UMASK)


def write_atomic(path: Path, text: str) -> None:
    """Replace `path` whole (temp file, fsync, os.replace) with a new file's mode, not mkstemp's 0600."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~UMASK)
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def append_jsonl(path: Path, record: dict) -> None:
    """Append one JSON line and fsync, first ending a torn line."""
    with open(path, "a+b") as handle:
        handle.seek(0, os.SEEK_END)
        if handle.tell():
            handle.seek(-1, os.SEEK_END)
            if handle.read(1) != b"\n":
                handle.write(b"\n")
        handle.write((json.dumps(record, sort_keys=True) + "\n").encode())
        handle.flush()
        os.fsync(handle.fileno())


def read_jsonl(path: Path) -> tuple[list[dict], int]:
    """A results file's complete records, and how many torn lines were skipped."""
    records: list = []
    torn = 0
    if not Path(path).exists():
        return records, torn
    for line in Path(path).read_text().splitlines():
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            torn += 1
    return records, torn
