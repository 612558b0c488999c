"""Shared pytest fixtures."""

import os
from pathlib import Path

import pytest

# --------------------------------------------------------------------------- #
# Data sets
# --------------------------------------------------------------------------- #


@pytest.fixture(scope="session")
def data_home():
    """Folder holding the benchmark data sets (usps/, uci/, 20newsgroups/ ...).

    ``$DKERNEL_DATA`` if set, else ``<repo>/../shared/data``; tests that use
    this fixture are skipped when neither exists.
    """
    env = os.environ.get("DKERNEL_DATA")
    if env:
        return Path(env)
    default = Path(__file__).resolve().parents[1].parent / "shared" / "data"
    if default.is_dir():
        return default
    pytest.skip(
        "dataset folder not found: set DKERNEL_DATA to the folder holding "
        "usps/, uci/, 20newsgroups/ ..."
    )
