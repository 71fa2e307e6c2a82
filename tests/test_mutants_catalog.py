"""The catalog's remembered answers and catalogs stay bounded, and below the bound nothing is dropped."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from prefixlint.analysis import catalog
from prefixlint.analysis.catalog import builtin_catalog, catalog_for
from prefixlint.model.layout import DynamicKind
from prefixlint.model.settings import DynamicSource


def sources(i: int) -> SimpleNamespace:
    return SimpleNamespace(dynamic_sources=[DynamicSource(f"ourlib.fetch_{i}", "retrieved_context")])


def test_catalogs_for_distinct_sources_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(catalog, "MAX_CATALOGS", 4)
    monkeypatch.setattr(catalog, "_CATALOGS", {})
    first = catalog_for(sources(0))
    for i in range(1, 4):  # below the bound: the first catalog is kept
        catalog_for(sources(i))
        assert catalog_for(sources(0)) is first
    for i in range(4, 12):
        got = catalog_for(sources(i))
        assert got.classify_call(f"ourlib.fetch_{i}") is DynamicKind.RETRIEVED_CONTEXT
        assert got.classify_call(f"ourlib.fetch_{i - 1}") is None
        assert len(catalog._CATALOGS) <= 4
    assert catalog_for(sources(0)) is not first  # dropped, built again the same
    assert catalog_for(sources(0)).classify_call("ourlib.fetch_0") is DynamicKind.RETRIEVED_CONTEXT


def test_remembered_answers_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(catalog, "MAX_ANSWERS", 4)
    cat = builtin_catalog().extended({}, [])
    names = [f"module_{i}.helper_{i}" for i in range(3)]
    for name in names:
        assert cat.classify_call(name) is None
        assert cat.is_prompt_name(name) is False
    assert set(cat._calls_seen) == set(names)
    assert set(cat._prompt_names_seen) == {"helper_0", "helper_1", "helper_2"}
    for i in range(20):
        cat.classify_call(f"other_{i}.call")
        cat.is_prompt_name(f"NAME_{i}_PROMPT")
        assert len(cat._calls_seen) <= 4 and len(cat._prompt_names_seen) <= 4
    assert cat.classify_call("datetime.now") is DynamicKind.TIMESTAMP
    assert cat.is_prompt_name("SYSTEM_PROMPT") is True


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("user.name", DynamicKind.USER_IDENTITY),  # an owner word after a person: who asks
        ("user.email", DynamicKind.USER_IDENTITY),
        ("project.name", None),  # the name of something else says nothing about who asks
        ("self.name", None),
    ],
)
def test_an_owner_word_takes_the_kind_of_what_it_belongs_to(name: str, kind: DynamicKind | None) -> None:
    assert builtin_catalog().classify_name(name)[0] is kind


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("user_docs", DynamicKind.RETRIEVED_CONTEXT),  # the head noun decides, not the first word
        ("timestamp_docs", DynamicKind.RETRIEVED_CONTEXT),
        ("user_history", DynamicKind.HISTORY),
        ("user_search_results", DynamicKind.RETRIEVED_CONTEXT),
        ("current_user_id", DynamicKind.USER_IDENTITY),
    ],
)
def test_a_compound_name_takes_the_kind_of_its_head_noun(name: str, kind: DynamicKind) -> None:
    assert builtin_catalog().classify_name(name) == (kind, 0.6)
