"""The user's errors (harness/errors.py): every kind the stages raise is a UserError, the one kind the CLI turns into a
single line and exit 2; and it does so, with no traceback."""
import subprocess
import sys

from support import ROOT
from harness.config import ConfigError
from harness.discover import DiscoveryError
from harness.environment import UsageError
from harness.errors import UserError
from harness.records import SchemaError


def test_each_stages_user_error_is_one_the_cli_catches():
    for kind in (ConfigError, DiscoveryError, UsageError, SchemaError):
        assert issubclass(kind, UserError), kind


def test_a_user_error_is_one_line_and_exit_2():
    proc = subprocess.run([sys.executable, "run.py", "--problem", "sigmod", "--device", "cpu"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "Did you mean 'sigmoid'?" in proc.stderr + proc.stdout
    assert "Traceback" not in proc.stderr
