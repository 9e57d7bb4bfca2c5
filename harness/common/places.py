"""Where the harness finds problems/, solutions/ and its relative paths: the checkout it runs from (run.py beside
harness/), or, installed with pip, the directory it was started in."""
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]  # harness/
CHECKOUT = PACKAGE.parent if (PACKAGE.parent / "run.py").is_file() else None
ROOT = CHECKOUT or Path.cwd()
