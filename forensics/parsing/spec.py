"""Loads and checks pattern specs: `parsers/<engine>/<topic>.toml`.

Each file holds ``[[pattern]]`` tables. A pattern has an ``id``, a literal ``keyword``
that every line it matches contains (the scanner's prefilter), a ``regex`` with named
groups searched in the message (the line with its envelope peeled off), a ``section``
(effective, requested, meta, runtime, event, error) and a ``fields`` table that types each
group. Every pattern carries ``[[pattern.samples]]``: real lines and what they must yield.
The loader refuses a pattern without samples, a sample that matches nothing, a sample from
which two patterns read the same fact, and a sample whose yield differs from the one it states.
"""
from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from forensics.errors import ParserSpecError
from forensics.resources import data_dir

SECTIONS = ("effective", "requested", "meta", "runtime", "event", "error", "config")
TYPES = ("int", "float", "str", "bool", "list")


@dataclass(frozen=True)
class FieldSpec:
    group: str
    name: str
    type: str = "str"
    unit: str | None = None
    scale: float | None = None
    map: tuple[tuple[str, Any], ...] = ()  # printed text -> canonical value (`XFormers` -> `XFORMERS`)


@dataclass(frozen=True)
class Pattern:
    id: str
    engine: str
    keyword: str
    regex: re.Pattern[str]
    section: str
    fields: tuple[FieldSpec, ...]
    event: str | None
    file: str
    samples: tuple[dict[str, Any], ...] = field(default=(), compare=False)
    consequence: bool = False
    priority: int = 0  # a higher priority pattern overrides an earlier value of the same fact and rank

    def extract(self, message: str) -> dict[str, Any] | None:
        """Typed values of the named groups, or None if the pattern does not match.

        A group that did not take part in the match, or whose text does not convert, is
        left out: the parser never invents a value.
        """
        m = self.regex.search(message)
        if m is None:
            return None
        out: dict[str, Any] = {}
        for f in self.fields:
            raw = m.group(f.group)
            if raw is None:
                continue
            if f.map:
                mapped = dict(f.map).get(raw.strip())
                if mapped is not None:
                    out[f.name] = mapped
                    continue
            value = convert(raw, f.type)
            if value is None:
                continue
            if f.scale is not None and isinstance(value, (int, float)):
                value = round(value * f.scale, 6)
            out[f.name] = value
        return out


def convert(raw: str, kind: str) -> Any:
    raw = raw.strip()
    try:
        if kind == "int":
            return int(raw.replace(",", "").replace("_", ""))
        if kind == "float":
            return float(raw.replace(",", ""))
        if kind == "bool":
            low = raw.lower()
            if low in ("true", "1", "yes", "on"):
                return True
            if low in ("false", "0", "no", "off"):
                return False
            return None
    except ValueError:
        return None
    return raw.strip("'\"") if raw else None


@dataclass
class PatternSet:
    patterns: list[Pattern]

    def by_keyword(self) -> dict[str, list[Pattern]]:
        out: dict[str, list[Pattern]] = {}
        for p in self.patterns:
            out.setdefault(p.keyword, []).append(p)
        return out


def _fail(path: Path, what: str, why: str, hint: str = "") -> ParserSpecError:
    return ParserSpecError(f"bad pattern spec {what}", why, str(path), hint)


def load_file(path: Path) -> list[Pattern]:
    """Read one TOML spec file into patterns (samples are checked by `check`)."""
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise _fail(path, "file", str(exc), "fix the TOML syntax") from None
    engine = doc.get("engine", "any")
    out = []
    for i, p in enumerate(doc.get("pattern", [])):
        pid = p.get("id") or f"#{i + 1}"
        for key in ("id", "keyword", "regex"):
            if not p.get(key):
                raise _fail(path, f"{pid}", f"missing `{key}`")
        section = p.get("section", doc.get("section", "effective"))
        if section not in SECTIONS:
            raise _fail(path, pid, f"section {section!r} is not one of {', '.join(SECTIONS)}")
        try:
            rx = re.compile(p["regex"], re.I if p.get("ignore_case") else 0)
        except re.error as exc:
            raise _fail(path, pid, f"regex does not compile: {exc}") from None
        fields = []
        for group, spec in (p.get("fields") or {}).items():
            if isinstance(spec, str):
                spec = {"type": spec}
            if group not in rx.groupindex:
                raise _fail(path, pid, f"field {group!r} is not a named group of the regex")
            ftype = spec.get("type", "str")
            if ftype not in TYPES:
                raise _fail(path, pid, f"field {group!r} has unknown type {ftype!r}")
            fmap = spec.get("map") or {}
            if not isinstance(fmap, dict):
                raise _fail(path, pid, f"field {group!r}: `map` must be a table of printed text -> value")
            fields.append(FieldSpec(group, spec.get("name", group), ftype, spec.get("unit"), spec.get("scale"),
                                    tuple(fmap.items())))
        missing = set(rx.groupindex) - {f.group for f in fields}
        if missing:
            raise _fail(path, pid, f"named groups without a field entry: {', '.join(sorted(missing))}")
        if not p.get("samples"):
            raise _fail(path, pid, "pattern has no samples", "add [[pattern.samples]] with a real log line")
        out.append(
            Pattern(
                id=pid,
                engine=p.get("engine", engine),
                keyword=p["keyword"],
                regex=rx,
                section=section,
                fields=tuple(fields),
                event=p.get("event"),
                file=str(path),
                samples=tuple(p["samples"]),
                consequence=bool(p.get("consequence", False)),
                priority=int(p.get("priority", 0)),
            )
        )
    return out


def check(patterns: list[Pattern]) -> None:
    """Check every sample against every pattern; raise on the first problem.

    Raises:
        ParserSpecError: a sample that matches nothing (with how far each pattern of the
            same keyword got), one matched by two patterns of the same section, a sample
            whose keyword is missing, or a yield different from the stated one.
    """
    from forensics.parsing.envelope import split

    ids: dict[str, Pattern] = {}
    for p in patterns:
        if p.id in ids:
            raise _fail(Path(p.file), p.id, f"id also used in {ids[p.id].file}")
        ids[p.id] = p
    for p in patterns:
        for n, sample in enumerate(p.samples, 1):
            line = sample.get("line")
            if not isinstance(line, str):
                raise _fail(Path(p.file), p.id, f"sample {n} has no `line`")
            if p.keyword not in line:
                raise _fail(Path(p.file), p.id, f"sample {n} does not contain the keyword {p.keyword!r}",
                            "the keyword must be a literal part of every line the pattern matches")
            msg = split(line).message
            got = p.extract(msg)
            if got is None:
                raise _fail(Path(p.file), p.id, f"sample {n} does not match its pattern",
                            f"only the first {_progress(p.regex, msg)} characters of the regex match {msg[:120]!r}")
            want = sample.get("yields", {})
            if want != got:
                raise _fail(Path(p.file), p.id, f"sample {n} yields {got} but states {want}")
            # Two patterns may read different facts off one line; reading the same fact twice
            # means one of them is redundant or they disagree.
            others = [o.id for o in patterns if o is not p and o.section == p.section and o.engine in (p.engine, "any")
                      and o.keyword in line and not sample.get("also")
                      and (o.extract(msg) is not None and (set(o.extract(msg) or {}) & set(got) or (not got and not o.extract(msg))))]
            if others:
                raise _fail(Path(p.file), p.id, f"sample {n} is also matched by {', '.join(others)}",
                            "make the regexes disjoint, or list the other ids in the sample's `also`")


def _progress(rx: re.Pattern[str], text: str) -> int:
    """How many characters of the regex source still match somewhere in text (a hint)."""
    src = rx.pattern
    best = 0
    for cut in range(len(src), 0, -1):
        try:
            if re.search(src[:cut], text):
                best = cut
                break
        except re.error:
            continue
    return best


def spec_files(root: Path | None = None) -> list[Path]:
    root = root or data_dir("parsers")
    return sorted(root.rglob("*.toml"))


@lru_cache(maxsize=4)
def load_all(root: str | None = None, checked: bool = False) -> PatternSet:
    """All patterns under the parsers folder (the shipped one by default)."""
    pats: list[Pattern] = []
    for path in spec_files(Path(root) if root else None):
        pats.extend(load_file(path))
    if checked:
        check(pats)
    return PatternSet(pats)
