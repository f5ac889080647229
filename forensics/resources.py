"""Locates the shipped parsers/ and rules/ folders, installed or in a checkout."""
from __future__ import annotations

from pathlib import Path

_PKG = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """Path of a shipped data folder (`parsers` or `rules`).

    In a wheel they live under `forensics/_data/`; in a source checkout or an editable
    install they are the top-level folders beside the package.
    """
    installed = _PKG / "_data" / name
    if installed.is_dir():
        return installed
    return _PKG.parent / name
