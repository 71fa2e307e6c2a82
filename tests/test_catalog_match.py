"""Catalog call globs: the string fast path of ``call_matches`` answers as ``fnmatch`` does."""

from __future__ import annotations

import fnmatch

from prefixlint.analysis.catalog import call_matches, catalog_for


def reference(dotted: str, pattern: str) -> bool:
    """The rule as documented: the glob, or the pattern as the tail of a longer dotted name."""
    if fnmatch.fnmatchcase(dotted, pattern):
        return True
    return "." in pattern and not pattern.startswith("*") and dotted.endswith("." + pattern)


def test_every_catalog_pattern_matches_as_fnmatch_does() -> None:
    cat = catalog_for(None)
    patterns = {p for ps in cat.calls.values() for p in ps}
    patterns |= set(cat.process_calls) | {p for ps in cat.call_granularity.values() for p in ps}
    patterns |= {p for ps in cat.call_cardinality.values() for p in ps}
    patterns |= {p for o in cat.objects for p in o.made_by}
    patterns |= {"retriever.*", "*.get_relevant_*", "client.?uery", "store.[as]search"}
    names = {p.replace("*", "x").replace("?", "q").replace("[as]", "a") for p in patterns}
    names |= {"dt." + n for n in names} | {n + "_more" for n in names}
    names |= {"datetime.now", "dt.datetime.now", "mydatetime.now", "now", "os.getenv", "self.get_settings"}
    assert len(patterns) > 50
    wrong = [(n, p) for p in patterns for n in names if call_matches(n, p) != reference(n, p)]
    assert wrong == []
    # the behaviour itself: a tail of a dotted name matches, a longer identifier does not
    assert call_matches("dt.datetime.now", "datetime.now")
    assert not call_matches("mydatetime.now", "datetime.now")
    assert call_matches("app.get_settings", "*.get_settings")
