"""Documentation references point into the repository, at files that exist.

A citation is what a reader follows from the code to the reasoning behind it: a comment or a
docstring that says "see docs/design/paper_notes.md §3", a Markdown file that names a module. A
reader of a fresh clone has only the repository, so a citation of a file outside it (the notes
the project started from, `../shared/...`, `/work/shared/...`) is a dead end, and so is one of a
page that was moved or renamed.

What is checked, in src/, tests/, benchmarks/ and examples/ (Python: comments and docstrings
only; other text files, such as Markdown, SQL, Java, shell and YAML: their whole text):

- no citation of a document outside the repository: ``../shared/`` or ``/work/shared/``
  followed by anything but ``data``, and the outside notes by their old names (``PAPER_NOTES``,
  ``LAYOUT_SKETCH``, ``STYLE.md``), which now live in docs/design/;
- every ``docs/<page>.md`` path exists, and every ``docs/design/paper_notes.md §N`` names a
  section of that file.

What is not a documentation reference, and so is allowed: a data directory. The benchmarks take
``--data`` / ``PPDP_DATA`` and default to ``../shared/data`` beside the clone, and some tests
read ``/work/shared/data`` when it is there (and skip otherwise); that is where large datasets
are kept, not a document to read. String literals in code are not checked either: they are
behaviour (defaults, messages), owned by the code that uses them.

Two more rules keep the code's prose about what and why: every ``tests/<path>.py`` file cited
exists (tests move between folders), and no module under src/ cites an issue or a review
finding by number (``issue #25``, ``finding 10``): the number says nothing to a reader of the
code, so the comment says what the failure was, and the number goes into the commit body.

The docs and the README are checked the other way round: every repository path they mention
(``src/...``, ``tests/...``, ``benchmarks/...``, ``examples/...``) exists, so that they follow
the layout as it is.
"""

from __future__ import annotations

import ast
import functools
import io
import re
import tokenize
from pathlib import Path

from tests.support import paths as PATHS

ROOT = PATHS.REPO
SCANNED = ("src", "tests", "benchmarks", "examples")
TEXT_SUFFIXES = {".py", ".md", ".sql", ".java", ".sh", ".yml", ".yaml", ".toml", ".txt", ".cfg"}
SKIPPED_PARTS = {"__pycache__", "results", ".venv", "target", "dbt_packages", "logs"}

OUTSIDE = re.compile(r"(?:\.\./|/work/)shared/(?!data\b)[\w./-]*|/work/shared\b(?!/data\b)")
OLD_NAMES = re.compile(r"PAPER_NOTES|LAYOUT_SKETCH|\bSTYLE\.md")
DOCS_PATH = re.compile(r"\bdocs/[\w./-]+?\.md(?:\s*§\s*(\d+))?")
TEST_PATH = re.compile(r"(?<![\w./-])tests/[\w/*-]+\.py")
ISSUE_NUMBER = re.compile(r"\b[Ii]ssue\s+#?\d+|(?<![\w&])#\d{1,3}\b|\b[Ff]inding\s+\d+\b")
REPO_PATH = re.compile(r"(?<![\w./-])(?:src|tests|benchmarks|examples)/[\w./*-]*[\w*/]")


@functools.cache
def scanned_files() -> tuple[Path, ...]:
    files = []
    for top in SCANNED:
        for p in sorted((ROOT / top).rglob("*")):
            if p.is_file() and p.suffix in TEXT_SUFFIXES and not SKIPPED_PARTS & set(p.relative_to(ROOT).parts):
                files.append(p)
    return tuple(files)


def python_prose(source: str) -> list[tuple[int, str]]:
    """(line, text) of every comment and docstring of a Python module."""
    out: list[tuple[int, str]] = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            out.append((tok.start[0], tok.string))
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                out.append((body[0].lineno, body[0].value.value))
    return out


@functools.cache  # four tests read the same files' prose: tokenized and parsed once
def prose(path: Path) -> list[tuple[int, str]]:
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix == ".py":
        return python_prose(text)
    return [(i, line) for i, line in enumerate(text.splitlines(), 1)]


def paper_note_sections() -> set[str]:
    notes = (ROOT / "docs" / "design" / "paper_notes.md").read_text(encoding="utf-8")
    return set(re.findall(r"^## (\d+)\.", notes, flags=re.M))


def test_no_citation_outside_the_repository() -> None:
    bad = []
    for path in scanned_files():
        if path == Path(__file__):
            continue
        for line, text in prose(path):
            for m in list(OUTSIDE.finditer(text)) + list(OLD_NAMES.finditer(text)):
                bad.append(f"{path.relative_to(ROOT)}:{line}: {m.group(0)!r}")
    assert not bad, "documents cited outside the repository (move them into docs/ and cite that):\n" + "\n".join(bad)


def test_cited_docs_exist() -> None:
    sections = paper_note_sections()
    assert sections, "docs/design/paper_notes.md has no numbered sections"
    bad = []
    for path in scanned_files():
        for line, text in prose(path):
            for m in DOCS_PATH.finditer(text):
                target = m.group(0).split("§")[0].strip()
                where = f"{path.relative_to(ROOT)}:{line}"
                if not (ROOT / target).is_file():
                    bad.append(f"{where}: {target} does not exist")
                elif m.group(1) and target == "docs/design/paper_notes.md" and m.group(1) not in sections:
                    bad.append(f"{where}: {target} has no §{m.group(1)}")
    assert not bad, "\n".join(bad)


def test_cited_tests_exist() -> None:
    bad = []
    for path in scanned_files():
        for line, text in prose(path):
            for m in TEST_PATH.finditer(text):
                if not _exists(m.group(0)):
                    bad.append(f"{path.relative_to(ROOT)}:{line}: {m.group(0)}")
    assert not bad, "tests cited that do not exist (moved?):\n" + "\n".join(bad)


def test_src_cites_no_issue_numbers() -> None:
    bad = []
    for path in scanned_files():
        if path.relative_to(ROOT).parts[0] != "src":
            continue
        for line, text in prose(path):
            for m in ISSUE_NUMBER.finditer(text):
                bad.append(f"{path.relative_to(ROOT)}:{line}: {m.group(0)!r}")
    assert not bad, "issue or finding numbers in src/ (say what the failure was instead):\n" + "\n".join(bad)


def _exists(reference: str) -> bool:
    reference = reference.rstrip(".")
    if "*" in reference:
        return any(ROOT.glob(reference))
    return (ROOT / reference).exists()


def test_paths_in_the_docs_exist() -> None:
    pages = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").rglob("*.md"))]
    bad = []
    for page in pages:
        text = page.read_text(encoding="utf-8")
        for m in REPO_PATH.finditer(text):
            if not _exists(m.group(0)):
                line = text.count("\n", 0, m.start()) + 1
                bad.append(f"{page.relative_to(ROOT)}:{line}: {m.group(0)}")
    assert not bad, "paths in the documentation that do not exist:\n" + "\n".join(bad)
