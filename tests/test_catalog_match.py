"""Catalog call globs: the string fast path of ``call_matches`` answers as ``fnmatch`` does."""

from __future__ import annotations

import fnmatch

from prefixlint.analysis.catalog import Catalog, call_matches, catalog_for
from prefixlint.model.layout import DynamicKind


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


def _first_match(cat: Catalog, dotted: str) -> DynamicKind | None:
    """The catalog's rule without its index: the first entry, in order, that the name matches."""
    for kind, patterns in cat.calls.items():
        for pattern in patterns:
            if call_matches(dotted, pattern):
                return kind
    return None


def test_classify_call_tries_entries_by_last_part_in_catalog_order() -> None:
    cat = Catalog(
        calls={
            DynamicKind.TIMESTAMP: ["*.now", "x.y.stamp", "np.random.*"],
            DynamicKind.RANDOM: ["now", "*stamp", "*.now_?"],
        }
    )
    cases = {
        "dt.now": DynamicKind.TIMESTAMP,  # both kinds end in ``now``: the first entry wins
        "now": DynamicKind.RANDOM,  # ``*.now`` needs a dot before it
        "z.x.y.stamp": DynamicKind.TIMESTAMP,
        "stamp": DynamicKind.RANDOM,  # only the unkeyed ``*stamp`` matches
        "mystamp": DynamicKind.RANDOM,
        "np.random.rand": DynamicKind.TIMESTAMP,  # a glob without a fixed last part
        "clock.now_x": DynamicKind.RANDOM,
        "y.stamps": None,
        "nowhere": None,
    }
    assert {name: cat.classify_call(name) for name in cases} == cases
    assert all(_first_match(cat, name) == kind for name, kind in cases.items())
    built = catalog_for(None)
    names = {p.replace("*", "x").replace("?", "q") for ps in built.calls.values() for p in ps}
    names |= {"a." + n for n in names} | {n.rsplit(".", 1)[-1] for n in names}
    assert [n for n in names if built.classify_call(n) != _first_match(built, n)] == []
