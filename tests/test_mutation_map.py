"""bench/mutation_map.py: a mutant is tried against the test files that run any line of its statement."""

from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path

_PATH = Path(__file__).resolve().parent.parent / "bench" / "mutation_map.py"
_spec = importlib.util.spec_from_file_location("mutation_map", _PATH)
assert _spec is not None and _spec.loader is not None
mutation_map = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mutation_map)

SOURCE = textwrap.dedent(
    """\
    def f(a, b):
        if (a and
                b):
            return call(
                a,
                b,
            )
        return 0
    """
)


def test_a_continuation_line_belongs_to_its_statement_and_a_header_to_its_compound() -> None:
    spans = mutation_map.statement_lines(SOURCE)
    assert spans[3] == range(2, 4)  # the `if` header's second line: the header, not the body
    assert spans[6] == range(4, 8)  # inside the `return`'s call: the whole return statement
    assert spans[8] == range(8, 9)


def test_test_files_are_found_through_any_line_of_the_statement(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(SOURCE, "utf-8")
    data = {
        "lines": {"tests/test_a.py": {"m.py": [2, 4]}, "tests/test_b.py": {"m.py": [8]}},
        "seconds": {"tests/test_a.py": 1.0, "tests/test_b.py": 2.0},
    }
    cmap = mutation_map.CoverageMap(data, tmp_path)
    assert cmap.tests_running("m.py", 3) == {"tests/test_a.py"}  # line 2 of the same `if` header ran
    assert cmap.tests_running("m.py", 5) == {"tests/test_a.py"}  # the return started on line 4
    assert cmap.tests_running("m.py", 8) == {"tests/test_b.py"}
    assert cmap.tests_running("other.py", 1) == set()


def test_engine_and_sdk_tests_are_left_out_of_the_map() -> None:
    files = mutation_map.test_files()
    assert "tests/test_value_flow.py" in files
    assert not [f for f in files if f.startswith(("tests/test_engine", "tests/test_sdk"))]


def test_added_test_files_are_merged_into_a_copy_of_the_map() -> None:
    base = {
        "lines": {"tests/test_a.py": {"m.py": [1]}, "tests/test_b.py": {"m.py": [2]}},
        "seconds": {"tests/test_a.py": 1.0, "tests/test_b.py": 2.0},
        "failed": ["tests/test_c.py"],
    }
    added = {
        "lines": {"tests/test_b.py": {"m.py": [3]}, "tests/test_c.py": {"m.py": [4]}},
        "seconds": {"tests/test_b.py": 5.0, "tests/test_c.py": 6.0},
        "failed": ["tests/test_a.py"],
    }
    merged = mutation_map.merge(base, added)
    assert merged["lines"] == {"tests/test_b.py": {"m.py": [3]}, "tests/test_c.py": {"m.py": [4]}}
    assert merged["seconds"] == {"tests/test_b.py": 5.0, "tests/test_c.py": 6.0}
    assert merged["failed"] == ["tests/test_a.py"]  # it fails now; test_c passes now
    assert base["lines"]["tests/test_a.py"] == {"m.py": [1]}  # the base map is left as it was
