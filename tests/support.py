"""Paths and probes the tests share (imported as `support`; conftest.py holds only pytest hooks)."""
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
FAST_CONFIG = FIXTURES / "fast.yaml"


def cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


class NoJudges:
    """Stands in for judges.JudgeStarter where no judge may start (no GPU to start it on, nothing to judge)."""

    def close(self):
        pass
