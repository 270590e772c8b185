"""One name for one thing, wherever a user reads: the pages, the report, the pickers, captions, tooltips, table
headers and figure axes all use the term ``qlb.present.names`` chose, never a retired synonym.

The scan reads the source of every page, of ``qlb.present`` and of ``dashboard`` (never importing a page) and looks
at each string literal a reader can be shown: every string constant and f-string piece that holds a space (prose;
identifiers, query names, widget keys and file names hold none), docstrings left out (they are for developers; the
code keeps its ``decoder``/``decoding`` identifiers). A retired word may appear only where the Glossary gives the
paper's word once."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from qlb.present.names import AUDIT_NAMES, TRACK_NAMES, run_label

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted({*ROOT.glob("pages/*.py"), *ROOT.glob("qlb/present/*.py"), *ROOT.glob("dashboard/*.py"),
                  ROOT / "app.py"})

# retired word (a pattern, case-insensitive) -> the term that replaced it
RETIRED = {
    r"\bdecod(?:er|ers|ing)\b": "attacker, attacker families, the recovery audit",
    r"\bdefen[cs]e attacker": "defense-aware attacker",
    r"\boutput defen[cs]e": "defense",
    r"\bremaining (?:mechanism )?scores?\b": "residual scores",
    r"\brefusal-probe responses?\b": "refusal responses",
    r"\bselected strategy\b": "selected attacker",
    r"\bsimulated default\b": "simulated reference dataset",
    r"\bauthored profile\b": "authored costs",
    r"\bper workflow\b|\d+ workflows ×|\{workflows\} workflows": "task (one of the recipient's three workflows)",
    r"\brecover the secret\b": "recover the protected mechanism",
}
# where the paper's own word is named once, to tie the chosen term to it (Glossary and the track's tooltip)
PAPER_WORDS = ("the paper calls it a decoder", "the paper's selected strategy", "the paper's output defense")


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring nodes of a module, its classes and functions."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and \
                    isinstance(first.value.value, str):
                out.add(id(first.value))
    return out


def shown_strings(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every string literal of ``path`` a reader can be shown (see the module docstring)."""
    tree = ast.parse(path.read_text(), str(path))
    skip = _docstrings(tree)
    return sorted((node.lineno, node.value) for node in ast.walk(tree)
                  if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip
                  and re.search(r"\s", node.value))


def retired_uses(strings: list[tuple[int, str]]) -> list[tuple[int, str, str]]:
    """(line, retired pattern, text) of each string that uses a retired word outside ``PAPER_WORDS``."""
    hits = []
    for line, text in strings:
        rest = text
        for said in PAPER_WORDS:
            rest = rest.replace(said, "")
        hits += [(line, pattern, text) for pattern in RETIRED if re.search(pattern, rest, re.IGNORECASE)]
    return hits


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_user_facing_string_uses_a_retired_word(path):
    hits = retired_uses(shown_strings(path))
    assert not hits, "\n".join(f"{path.relative_to(ROOT)}:{line}: {pattern!r} -> say {RETIRED[pattern]}: {text!r}"
                               for line, pattern, text in hits)


def test_the_scan_finds_a_retired_word_and_spares_identifiers_docstrings_and_the_papers_word(tmp_path):
    """The scan is not vacuous: it flags the words this change retired (in a plain string and an f-string piece),
    and leaves alone what a reader never sees or the Glossary's one mention of the paper's word."""
    source = tmp_path / "page.py"
    source.write_text(
        '"""Module docstring about the decoding audit."""\n'
        'def f(n):\n'
        '    """The decoder families of a run."""\n'
        '    st.caption("With all five decoder families.")\n'
        '    st.caption(f"{n} decoder famil{\'y\' if n == 1 else \'ies\'}")\n'
        '    st.progress(0.0, text="decoding ...")\n'
        '    da.query(path, "decoder_selections", (run_id,))\n'
        '    table(df, "decoder_predictions_for")\n'
        '    glossary = "A classifier (the paper calls it a decoder) that reads a release."\n'
        '    axis = "output defense"\n')
    hits = retired_uses(shown_strings(source))
    assert [(line, text) for line, _, text in hits] == [
        (4, "With all five decoder families."), (5, " decoder famil"), (6, "decoding ..."), (10, "output defense")]


def test_every_source_a_reader_sees_is_scanned():
    scanned = {str(p.relative_to(ROOT)) for p in SOURCES}
    assert {"pages/recovery.py", "pages/glossary.py", "qlb/present/report.py", "qlb/present/names.py",
            "qlb/present/scope.py", "qlb/present/compare_text.py", "qlb/present/defense_notes.py",
            "dashboard/widgets.py", "app.py"} <= scanned


def test_the_chosen_names_are_the_ones_the_readers_see():
    """The audit is "recovery", its attacker's families "attacker families" (in a run's picker label too), and the
    attack track the run froze the "selected attacker"."""
    assert AUDIT_NAMES["decoding"] == "recovery"
    assert TRACK_NAMES["selected"] == "selected attacker"
    label = run_label("run-20260102-abcdef", "2026-01-02 03:04", {"audits": ["decoding"], "families": ["prior"]})
    assert "1 attacker family" in label and "decoder" not in label
