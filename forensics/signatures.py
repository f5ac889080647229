"""A catalogue of fatal-error signatures (rules/signatures.toml): what an error means and how to fix it."""
from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from forensics.errors import RuleSpecError
from forensics.resources import data_dir

FIELDS = ("id", "title", "regex", "explanation", "remedy", "samples")


@dataclass(frozen=True)
class Signature:
    """One known fatal error: a regex over "TYPE: MESSAGE", with its meaning, fix and samples."""

    id: str
    title: str
    regex: re.Pattern[str]
    explanation: str
    remedy: str
    samples: tuple[str, ...]


def error_text(type_: str | None, message: str | None) -> str:
    """The text signatures are matched against: "TYPE: MESSAGE" (either part may be missing)."""
    return ": ".join(p for p in (type_ or "", message or "") if p)


def load(path: str | Path | None = None) -> list[Signature]:
    """Read the signature catalogue, in file order.

    Raises:
        RuleSpecError: the TOML does not parse, a field is missing, a regex does not compile,
            or an id repeats.
    """
    p = Path(path) if path is not None else data_dir("rules") / "signatures.toml"
    try:
        doc = tomllib.loads(p.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise RuleSpecError("cannot read signatures", str(exc), str(p)) from None
    out: list[Signature] = []
    for i, item in enumerate(doc.get("signature", [])):
        where = f"{p}: signature #{i + 1} ({item.get('id', '?')})"
        missing = [f for f in FIELDS if not item.get(f)]
        if missing:
            raise RuleSpecError("signature incomplete", f"missing {', '.join(missing)}", where)
        try:
            rx = re.compile(item["regex"])
        except re.error as exc:
            raise RuleSpecError("signature regex does not compile", str(exc), where) from None
        if any(s.id == item["id"] for s in out):
            raise RuleSpecError("duplicate signature id", f"`{item['id']}` appears twice", where)
        out.append(Signature(item["id"], item["title"], rx, item["explanation"], item["remedy"], tuple(item["samples"])))
    return out


@lru_cache(maxsize=1)
def catalogue() -> tuple[Signature, ...]:
    """The shipped catalogue (loaded once)."""
    return tuple(load())


def match(type_: str | None, message: str | None, signatures: tuple[Signature, ...] | list[Signature] | None = None) -> Signature | None:
    """The first signature whose regex matches "TYPE: MESSAGE", or None."""
    text = error_text(type_, message)
    if not text:
        return None
    for sig in signatures if signatures is not None else catalogue():
        if sig.regex.search(text):
            return sig
    return None
