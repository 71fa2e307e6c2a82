"""What the catalog says about names, calls, types and objects: the kind and confidence of a name,
its granularity and cardinality, configuration and project parts, and project-added sources."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from prefixlint.analysis.catalog import builtin_catalog, catalog_for
from prefixlint.model.layout import Cardinality, DynamicKind, Granularity
from prefixlint.model.settings import DynamicSource

CAT = builtin_catalog()
K = DynamicKind


@pytest.mark.parametrize(
    ("name", "kind", "confidence"),
    [
        ("", None, 0.0),
        ("__", None, 0.0),
        ("user.name", K.USER_IDENTITY, 0.9),
        ("name", K.USER_IDENTITY, 0.9),
        ("project.name", None, 0.0),
        ("self.name", None, 0.0),
        ("session_id", K.IDENTIFIER, 0.9),
        ("_Session_ID_", K.IDENTIFIER, 0.9),
        ("current_date", K.TIMESTAMP, 0.9),
        ("date", K.TIMESTAMP, 0.9),
        ("docs", K.RETRIEVED_CONTEXT, 0.9),
        ("retrieved_docs", K.RETRIEVED_CONTEXT, 0.9),
        ("user_docs", K.RETRIEVED_CONTEXT, 0.6),
        ("current_user_id", K.USER_IDENTITY, 0.6),
        ("history_text", K.HISTORY, 0.6),
        ("chat_history_summary", K.MEMORY, 0.6),
        ("user_feedback", K.USER_INPUT, 0.6),
        ("page_user_feedback", K.USER_INPUT, 0.6),
        ("user_question_for_agent", K.USER_INPUT, 0.6),
        ("user_profile_text", K.USER_INPUT, 0.6),
        ("date_text", None, 0.0),
        ("text_date", None, 0.0),
        ("my_text", None, 0.0),
        ("unknown_thing", None, 0.0),
        ("req_7f", None, 0.0),
    ],
)
def test_kind_and_confidence_of_a_name(name: str, kind: DynamicKind | None, confidence: float) -> None:
    assert CAT.classify_name(name) == (kind, confidence)


@pytest.mark.parametrize(
    ("name", "granularity", "cardinality"),
    [
        ("", None, None),
        ("_", None, None),
        ("current_date", Granularity.DAY, None),
        ("report_month", Granularity.MONTH, None),
        ("user_id", None, Cardinality.PER_USER),
        ("tenant_name", None, Cardinality.PER_USER),
        ("is_admin", None, Cardinality.FEW),
        ("use_tools", None, Cardinality.FEW),
        ("foo", None, None),
    ],
)
def test_granularity_and_cardinality_a_name_tells(name: str, granularity, cardinality) -> None:
    assert CAT.name_traits(name) == (granularity, cardinality)


def test_configuration_project_parts_and_types() -> None:
    assert [CAT.is_fixed_part(n) for n in ("config", "_Settings_", "project", "specification", "foo")] == [
        True,
        True,
        True,
        True,
        False,
    ]
    assert [CAT.is_process_name(n) for n in ("config", "_Settings_", "project", "specification")] == [
        True,
        True,
        False,
        False,
    ]
    assert [CAT.is_process_type(t) for t in ("", "AgentConfig", "Settings", "Foo")] == [
        False,
        True,
        True,
        False,
    ]


def test_object_specs_match_makers_types_names_and_methods() -> None:
    retriever = next(o for o in CAT.objects if o.what == "retriever")
    assert retriever.made("store.as_retriever") and not retriever.made("store.as_query_engine")
    assert retriever.typed_as("VectorStoreRetriever") and not retriever.typed_as("Retrieval")
    assert retriever.named_as("My_Retriever") and not retriever.named_as("fetcher")
    assert retriever.returns_from("invoke") and not retriever.returns_from("close")
    assert retriever.kind is K.RETRIEVED_CONTEXT


def test_calls_and_sources_a_project_adds() -> None:
    assert CAT.classify_call("") is None and CAT.classify_call("datetime.now") is K.TIMESTAMP
    assert catalog_for(None) is catalog_for(SimpleNamespace(dynamic_sources=[]))  # one catalog per sources
    extra = catalog_for(
        SimpleNamespace(
            dynamic_sources=[
                DynamicSource("ourlib.fetch_*", "retrieved_context"),
                DynamicSource("acme_.*", "memory", "name"),
            ]
        )
    )
    assert extra.classify_call("ourlib.fetch_docs") is K.RETRIEVED_CONTEXT
    assert CAT.classify_call("ourlib.fetch_docs") is None
    assert extra.classify_name("ACME_blob") == (K.MEMORY, 0.8) and CAT.classify_name("acme_blob") == (
        None,
        0.0,
    )
    assert extra.classify_name("current_date") == (K.TIMESTAMP, 0.9)
    only_names = catalog_for(SimpleNamespace(dynamic_sources=[DynamicSource("zz_.*", "identifier", "name")]))
    assert (
        only_names.classify_name("zz_1") == (K.IDENTIFIER, 0.8)
        and only_names.classify_call("ourlib.fetch_x") is None
    )
