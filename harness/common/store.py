"""Append-only results (one fsynced JSON line per pair) and atomically rewritten files."""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path


# The user's umask, read once (changing it is process-wide): files written whole get the mode any new file gets.
UMASK = os.umask(0)
os.umask(UMASK)


def write_atomic(path: Path, text: str) -> None:
    """Replace `path` whole: write a temporary file beside it, fsync, then os.replace. The file gets the mode a new
    file gets (mkstemp's own is 0600, which left some of a run's files unreadable to others beside the rest)."""
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
    """Append one JSON line and fsync, so a crash loses at most the line being written.

    A line torn by an earlier crash is first ended, so that the new record starts a line of its own.
    """
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
    """The complete records of a results file, and how many torn or unreadable lines were skipped."""
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
