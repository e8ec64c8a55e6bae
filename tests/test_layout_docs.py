"""docs/development.md's package layout table says what the package holds today.

The table lists every module with the first paragraph of its docstring, by package; a
module added, moved or removed, or a docstring changed, without the table fails here.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import tomllib

import pytest_inferperf

PKG_DIR = Path(pytest_inferperf.__file__).parent
DOC = PKG_DIR.parent / "docs" / "development.md"
PYPROJECT = PKG_DIR.parent / "pyproject.toml"
BEGIN = "<!-- package layout: generated from the module docstrings -->"
END = "<!-- end of package layout (tests/test_layout_docs.py checks it) -->"


def _first_paragraph(path: Path) -> str:
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    return " ".join(doc.split("\n\n")[0].split())


def _rows() -> list[str]:
    rows = []
    for path in sorted(PKG_DIR.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        rel = path.relative_to(PKG_DIR)
        package = "/".join(rel.parts[:-1]) + "/" if len(rel.parts) > 1 else "(root)"
        text = _first_paragraph(path).replace("|", "\\|")
        rows.append(f"| `{package}` | `{rel.name}` | {text} |")
    return rows


def _documented() -> list[str]:
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index(BEGIN) : text.index(END)]
    return [line for line in section.splitlines() if line.startswith("| `")]


def test_every_module_is_in_the_table_with_its_docstring() -> None:
    assert _documented() == _rows()


def test_every_module_has_a_docstring() -> None:
    assert [row for row in _rows() if row.endswith("|  |")] == []


def test_the_layer_table_names_the_contracts_packages() -> None:
    config = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))
    contract = next(c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers")
    packages = sorted(name.strip() for layer in contract["layers"] for name in layer.split("|"))
    children = sorted(
        p.stem if p.is_file() else p.name
        for p in PKG_DIR.iterdir()
        if (p.suffix == ".py" and p.name != "__init__.py") or (p / "__init__.py").is_file()
    )
    assert packages == children
    text = DOC.read_text(encoding="utf-8")
    table = text[text.index("| layer | packages |") :].split("\n\n")[0]
    assert (
        sorted(
            name.strip("` ")
            for line in table.splitlines()[2:]
            for name in line.split("|")[2].split("(")[0].split(",")
        )
        == packages
    )


def write_table() -> None:
    """Rewrite the table in docs/development.md from the package as it is now."""
    text = DOC.read_text(encoding="utf-8")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    table = [
        "| package | module | what it holds (its docstring's first paragraph) |",
        "|---|---|---|",
        *_rows(),
    ]
    DOC.write_text(head + BEGIN + "\n\n" + "\n".join(table) + "\n\n" + END + tail, encoding="utf-8")


if __name__ == "__main__":  # python tests/test_layout_docs.py: regenerate the table
    write_table()


def test_every_test_the_docs_name_exists() -> None:
    # The README's Guarantees table and docs/ name the tests that hold each promise; a
    # renamed test must not leave a promise pointing at nothing.
    root = PKG_DIR.parent
    texts = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    named = {
        (doc.name, file, test)
        for doc in texts
        for file, test in re.findall(r"(tests/[\w/]+\.py)::(\w+)", doc.read_text(encoding="utf-8"))
    }
    assert len(named) > 50
    missing = []
    for doc, file, test in sorted(named):
        path = root / file
        tree = ast.parse(path.read_text(encoding="utf-8")) if path.exists() else None
        defined = (
            {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)} if tree else set()
        )
        if test not in defined:
            missing.append(f"{doc}: {file}::{test}")
    assert not missing
