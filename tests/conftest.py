"""Shared test fixtures: paths to the real-log corpus and a CLI runner."""
from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
CORPUS = FIXTURES / "corpus"


@pytest.fixture
def runner():
    from click.testing import CliRunner

    return CliRunner()
