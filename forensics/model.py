"""Plain typed records shared by every layer: evidence, facts, errors, findings."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Evidence:
    """Where a value was read: the file, the 1-based line number and the raw line."""

    file: str
    line: int
    raw: str

    def as_dict(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "raw": self.raw}


@dataclass(slots=True)
class Fact:
    """One named value read from an input, with its unit, rank and evidence."""

    name: str
    value: Any
    unit: str | None
    evidence: Evidence
    rank: str | None = None
    pattern: str | None = None
    observations: list["Fact"] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "value": self.value,
            "unit": self.unit,
            "file": self.evidence.file,
            "line": self.evidence.line,
            "raw": self.evidence.raw,
            "rank": self.rank,
        }
        if self.observations:
            out["observations"] = [
                {"value": o.value, "rank": o.rank, "line": o.evidence.line} for o in self.observations
            ]
        return out


@dataclass(slots=True)
class FatalError:
    """A fatal error seen in a log: the exception or marker, with its rank and line."""

    type: str | None
    message: str | None
    evidence: Evidence
    rank: str | None = None
    kind: str = "exception"  # exception | marker
    consequence: bool = False  # a wrapper such as EngineDeadError, never the root cause
    time: str | None = None  # the timestamp the line carried, as printed

    def as_dict(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "message": self.message,
            "file": self.evidence.file,
            "line": self.evidence.line,
            "rank": self.rank,
            "raw": self.evidence.raw,
        }


@dataclass(slots=True)
class Finding:
    """A rule's verdict on one run, with the evidence rows that prove it."""

    rule: str
    severity: str
    title: str
    message: str
    run: str | None = None
    evidence: list[Evidence] = field(default_factory=list)
    rule_file: str | None = None
    # the extra result columns the rule header's `evidence:` declares, by name (JSON values);
    # as_dict adds a "details" key only when there are some, so other findings keep their shape
    details: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "rule": self.rule,
            "severity": self.severity,
            "run": self.run,
            "title": self.title,
            "message": self.message,
            "evidence": [e.as_dict() for e in self.evidence],
        }
        if self.details:
            out["details"] = dict(self.details)
        return out


SEVERITIES = ("info", "warning", "error", "critical")


def severity_rank(severity: str) -> int:
    """Order of a severity name, info lowest; unknown names rank as warning."""
    try:
        return SEVERITIES.index(severity)
    except ValueError:
        return 1


# Requested argument (vLLM and SGLang spellings) -> the effective fact it should become;
# the scan table and the report put each pair side by side and mark a mismatch.
REQUESTED_TO_EFFECTIVE = (
    ("max_num_seqs", "max_running_requests"),
    ("max_running_requests", "max_running_requests"),
    ("max_model_len", "context_len"),
    ("context_length", "context_len"),
    ("max_num_batched_tokens", "max_num_batched_tokens"),
    ("chunked_prefill_size", "chunked_prefill_size"),
    ("max_total_tokens", "kv_cache_tokens"),
    ("kv_cache_dtype", "kv_cache_dtype"),
    ("attention_backend", "attention_backend"),
    ("block_size", "block_size"),
    ("enforce_eager", "enforce_eager"),
    ("cuda_graph_max_bs", "cuda_graph_max_bs"),
    ("max_mamba_cache_size", "state_slots"),
)
