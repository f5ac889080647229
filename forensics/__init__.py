"""forensics: evidence-backed facts and rules for LLM-serving benchmark campaigns."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["scan_file", "ForensicsError", "__version__"]

if TYPE_CHECKING:
    from forensics.errors import ForensicsError
    from forensics.scan import scan_file


def __getattr__(name: str) -> Any:  # lazy: `forensics --help` must stay fast
    if name == "scan_file":
        from forensics.scan import scan_file

        return scan_file
    if name == "ForensicsError":
        from forensics.errors import ForensicsError

        return ForensicsError
    raise AttributeError(name)
