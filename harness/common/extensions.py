"""A candidate's extension builds: where they go, and the gist of a failed one."""
from __future__ import annotations

import os
import re
from typing import Optional

BUILD_FAILURE = re.compile(r"Error building extension '[^']*'")
BUILD_STAGE = "HARNESS_BUILD_STAGE"  # "watch" or "pretend" in the build stage's CPU-only workers (runner/builds)
CUDA_ASKED = "harness: the candidate asked torch.cuda.is_available()"  # in a build-stage worker's log, once
BUILDING = "extension-build.running"  # in a worker's folder while torch builds an extension for it (Sandbox.receive)
FAILED_BUILDS = ".harness-failed-builds"  # in a candidate's build folder: its load_inline calls that failed to compile
# A compiler's error at a line of a file (gcc's file:line:col:, nvcc's file(line):): the source's fault.
SOURCE_ERROR = re.compile(r"[^\s/(]+(?::\d+(?::\d+)?:|\(\d+\):)\s*(?:fatal )?error[: ]")


def candidate_build_env(build_dir: str) -> dict:
    """Where a candidate's torch extensions and Triton cache go."""
    return {"TORCH_EXTENSIONS_DIR": build_dir, "TRITON_CACHE_DIR": os.path.join(build_dir, "triton")}


def first_compiler_error(log: str) -> str:
    """': file:line: error: ...' for the first compiler error in a build log, or ''."""
    match = (re.search(f"({SOURCE_ERROR.pattern}.*)", log) or re.search(r"((?:\S+: )?error: .*)", log))
    return f": {match.group(1).strip()}" if match else ""


def build_failure(message: str, log: str) -> Optional[str]:
    """A failed build's message cut to its first compiler error (or `log`'s); None if none failed."""
    found = BUILD_FAILURE.search(message)
    if not found:
        return None
    return message[:found.end()] + first_compiler_error(message[found.end():] + "\n" + log)
