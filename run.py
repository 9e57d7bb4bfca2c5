#!/usr/bin/env python3
"""Entry point: python run.py --problem sigmoid (see --help)."""
import sys

from harness.runner.cli import main

if __name__ == "__main__":
    sys.exit(main())
