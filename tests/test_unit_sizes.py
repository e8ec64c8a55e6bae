"""No class over 250 lines, no function or method over 100 lines (issue 39).

A unit's length is ``end_lineno - lineno + 1`` of its ``ast`` node: decorators are not
counted, the docstring is. Declarative tables are exempt: a function whose body is one
``return`` of a literal (a dict, list, tuple or set display, a constant), and module-level
data (an assignment is no unit). A unit too long fails with its length and the limit.

``NOT_YET_SPLIT`` names the units other work still has to split; it only shrinks: a
unit that is back under its limit must leave it (the test says so).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import pytest_inferperf

PKG_DIR = Path(pytest_inferperf.__file__).parent
CLASS_LIMIT = 250
FUNCTION_LIMIT = 100

# Units over their limit in modules whose split belongs to other work in progress
# (issue 39, parts 2 and 3). Remove an entry when its unit is split; never add one.
NOT_YET_SPLIT: set[str] = set()


def _is_table(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A function whose body (after its docstring) is one ``return`` of a literal."""
    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    if len(body) != 1 or not isinstance(body[0], ast.Return) or body[0].value is None:
        return False
    try:
        ast.literal_eval(body[0].value)
    except ValueError:
        return False
    return True


def _units(tree: ast.AST, prefix: str = "") -> list[tuple[str, int, int]]:
    """Every class, function and method under ``tree``: (qualified name, length, limit)."""
    units = []
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.ClassDef):
            name = prefix + node.name
            assert node.end_lineno is not None
            units.append((name, node.end_lineno - node.lineno + 1, CLASS_LIMIT))
            units += _units(node, name + ".")
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            name = prefix + node.name
            assert node.end_lineno is not None
            if not _is_table(node):
                units.append((name, node.end_lineno - node.lineno + 1, FUNCTION_LIMIT))
            units += _units(node, name + ".")
        else:
            units += _units(node, prefix)
    return units


def _too_long(source: str, module: str) -> dict[str, str]:
    """``module::unit`` -> why, for each unit of ``source`` over its limit."""
    return {
        f"{module}::{name}": f"{length} lines (limit {limit})"
        for name, length, limit in _units(ast.parse(source))
        if length > limit
    }


def _package_too_long() -> dict[str, str]:
    found: dict[str, str] = {}
    for path in sorted(PKG_DIR.rglob("*.py")):
        if "__pycache__" not in path.parts:
            module = path.relative_to(PKG_DIR).as_posix()
            found.update(_too_long(path.read_text(encoding="utf-8"), module))
    return found


def test_no_class_over_250_lines_and_no_function_over_100() -> None:
    found = _package_too_long()
    new = {unit: why for unit, why in found.items() if unit not in NOT_YET_SPLIT}
    assert not new, "units over their limit; split them by responsibility:\n" + "\n".join(
        f"  {unit}: {why}" for unit, why in sorted(new.items())
    )


def test_the_not_yet_split_set_only_shrinks() -> None:
    found = _package_too_long()
    done = sorted(NOT_YET_SPLIT - set(found))
    assert not done, f"split now, remove from NOT_YET_SPLIT: {done}"


# -- the measuring itself -----------------------------------------------------------


def _lines(count: int) -> str:
    return "".join(f"    x{i} = {i}\n" for i in range(count))


@pytest.mark.parametrize(
    ("body_lines", "too_long"),
    [(99, False), (100, True)],  # the def line + body: 100 lines pass, 101 fail
)
def test_a_function_is_measured_from_def_to_its_last_line(body_lines, too_long) -> None:
    source = "def f():\n" + _lines(body_lines)
    assert _too_long(source, "m.py") == (
        {"m.py::f": f"{body_lines + 1} lines (limit 100)"} if too_long else {}
    )


def test_the_docstring_counts_and_a_method_is_named_with_its_class() -> None:
    source = 'class C:\n    def m(self):\n        """Doc.\n\n        More."""\n' + "".join(
        f"        y{i} = {i}\n"
        for i in range(97)  # def + 3 docstring lines + 97 = 101
    )
    assert _too_long(source, "m.py") == {"m.py::C.m": "101 lines (limit 100)"}


def test_a_class_over_250_lines_fails() -> None:
    source = "class C:\n" + _lines(250)
    assert _too_long(source, "m.py") == {"m.py::C": "251 lines (limit 250)"}


def test_a_returned_literal_and_module_data_are_tables() -> None:
    table = "def rows():\n    '''The rows.'''\n    return {\n" + "".join(
        f"        'k{i}': ({i}, 'text'),\n" for i in range(150)
    )
    data = "ROWS = [\n" + "".join(f"    {i},\n" for i in range(300)) + "]\n"
    assert _too_long(table + "    }\n" + data, "m.py") == {}


def test_a_long_function_returning_a_computed_value_is_no_table() -> None:
    source = "def f(a):\n    return [\n" + "".join(f"        a + {i},\n" for i in range(120))
    assert _too_long(source + "    ]\n", "m.py") == {"m.py::f": "123 lines (limit 100)"}
