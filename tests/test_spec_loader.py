"""The pattern loader refuses broken specs with a one-line error; the shipped specs pass."""
from __future__ import annotations

from pathlib import Path

import pytest

from forensics.errors import ParserSpecError
from forensics.parsing.spec import check, load_all, load_file

from .conftest import FIXTURES, ROOT

BAD = sorted(p for p in (FIXTURES / "bad").iterdir() if (p / "spec.toml").exists())


@pytest.mark.parametrize("case", BAD, ids=[p.name for p in BAD])
def test_broken_spec_is_refused_with_golden_error(case: Path) -> None:
    with pytest.raises(ParserSpecError) as info:
        check(load_file(case / "spec.toml"))
    got = info.value.one_line().replace(str(ROOT) + "/", "")
    golden = case / "expected.err"
    assert golden.exists(), f"write {golden} with: {got}"
    assert got == golden.read_text().strip()


def test_shipped_specs_pass_every_sample() -> None:
    patterns = load_all().patterns
    check(patterns)
    assert len(patterns) > 3


def test_every_shipped_pattern_has_a_real_sample() -> None:
    for p in load_all().patterns:
        assert p.samples, p.id
        for s in p.samples:
            assert s["line"].strip(), p.id
