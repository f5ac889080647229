"""Error types of the library; only the CLI renders them."""
from __future__ import annotations


class ForensicsError(Exception):
    """Base of every error the library raises on purpose.

    Attributes:
        what: what failed, one short clause.
        why: why it failed.
        where: file:line and the offending text, when known.
        hint: how to fix it, a command to paste where one exists.
    """

    exit_code = 2

    def __init__(self, what: str, why: str = "", where: str = "", hint: str = "") -> None:
        self.what, self.why, self.where, self.hint = what, why, where, hint
        super().__init__(self.one_line())

    def one_line(self) -> str:
        parts = [self.what]
        if self.where:
            parts.append(f"({self.where})")
        text = " ".join(parts)
        if self.why:
            text += f": {self.why}"
        if self.hint:
            text += f"; {self.hint}"
        return text


class InputError(ForensicsError):
    """An input file cannot be read as what it claims to be."""


class ParserSpecError(ForensicsError):
    """A pattern file under parsers/ is broken (bad regex, sample mismatch, missing sample)."""


class RuleSpecError(ForensicsError):
    """A rule file under rules/ is broken (header, SQL, declared columns)."""


class ArchiveError(ForensicsError):
    """The DuckDB archive cannot be opened, written or queried."""


class GpuUnavailable(ForensicsError):
    """NVML cannot be used on this machine (no driver, no GPU, no library)."""
