"""What the scanner yields: one pattern match on one line."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from forensics.parsing.spec import Pattern

RAW_LIMIT = 4000          # characters of a raw line kept as evidence


@dataclass(slots=True)
class Hit:
    """One pattern match on one line."""

    pattern: Pattern
    values: dict[str, Any]
    line: int
    raw: str
    message: str
    rank: str | None
    level: str | None
    time: str | None
