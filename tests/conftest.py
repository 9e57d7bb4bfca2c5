"""pytest hooks: GPU tests carry @pytest.mark.gpu and are skipped where no CUDA GPU is visible."""
import pytest

from support import cuda_available


def pytest_collection_modifyitems(config, items):
    if cuda_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
