"""The user's errors (harness/common/errors.py): every kind the stages raise is a UserError, the one kind the CLI turns into a
single line and exit 2; and it does so, with no traceback."""
import subprocess
import sys

from support import ROOT
from harness.common.config import ConfigError
from harness.common.discover import DiscoveryError
from harness.runner.environment import UsageError
from harness.common.errors import UserError
from harness.common.records import SchemaError


def test_each_stages_user_error_is_one_the_cli_catches():
    for kind in (ConfigError, DiscoveryError, UsageError, SchemaError):
        assert issubclass(kind, UserError), kind


def test_a_user_error_is_one_line_and_exit_2():
    proc = subprocess.run([sys.executable, "run.py", "--problem", "sigmod", "--device", "cpu"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "Did you mean 'sigmoid'?" in proc.stderr + proc.stdout
    assert "Traceback" not in proc.stderr


def test_a_long_reason_is_cut_at_a_words_end_and_says_so():
    from harness.common.records import one_line

    reason = "skipped: the pair needs 44.0 GiB of GPU memory, 23.5 GiB is free; shrink it, e.g. --set batch_size=2048"
    cut = one_line(reason, 60)
    assert cut.endswith("...") and len(cut) <= 60 and reason.startswith(cut[:-3]) and cut[-4] != " "
    assert reason[len(cut) - 3] == " "  # not mid-word
    assert one_line(reason, 500) == reason
