"""A caption says what it shows first; the paper's numbering comes last, as a pointer for readers who know the
paper: "… Run R. (The TUPLE paper's Table 2.)", a title "Robustness checks (the TUPLE paper's Tables 29 and 30)".

The scan reads the same user-facing strings as ``test_vocabulary`` (every page, ``qlb.present``, ``dashboard``;
docstrings left out) and flags a string that opens with a paper's table or figure, a bare "paper Table 2", or a
pointer that is not in the one form or not the last thing the string says."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.present.test_vocabulary import SOURCES, ROOT, shown_strings

NUMBERED = r"(?:Tables?|Figures?|Appendix|Section) [A-Z]?\d"
LEADING = re.compile(rf"^\s*(?:[Pp]aper )?{NUMBERED}")                  # "Paper Table 2. Each rate ..."
BARE = re.compile(rf"\b[Pp]aper {NUMBERED}")                             # "(paper Appendix I.8)"
POINTER = re.compile(rf"\((?:the|The) (?:TUPLE|QuasiLeak) paper's {NUMBERED}[^()]*\)")
LAST = re.compile(r"^\.?(?:</p>|</h\d>)?$")                              # what may follow the pointer


def misplaced(strings: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """(line, text) of each string whose paper reference breaks the pattern of the module docstring."""
    hits = []
    for line, text in strings:
        pointers = list(POINTER.finditer(text))
        loose = len(re.findall(rf"paper's {NUMBERED}", text)) > len(pointers)
        early = [p for p in pointers if not LAST.match(text[p.end():]) and
                 not text[:p.start()].endswith("such as ")]              # the Glossary's example of the pattern
        if LEADING.match(text) or BARE.search(text) or loose or early:
            hits.append((line, text))
    return hits


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_a_paper_reference_is_a_pointer_at_the_end(path):
    hits = misplaced(shown_strings(path))
    assert not hits, "\n".join(f"{path.relative_to(ROOT)}:{line}: {text!r}" for line, text in hits)


def test_the_scan_flags_a_leading_or_bare_reference_and_spares_the_pointer(tmp_path):
    """The scan is not vacuous: it flags the old openings and a pointer mid-caption, and passes the new form."""
    source = tmp_path / "page.py"
    source.write_text(
        'import streamlit as st\n'
        'st.caption(f"Paper Table 2. Each rate with its interval. Run {run}.")\n'
        'st.caption("Robustness checks (paper Tables 29 and 30)")\n'
        'st.caption("Recovery (the TUPLE paper\'s Figure 4) per view. Run r.")\n'
        'st.caption("Figure 10: recovery per defense.")\n'
        'st.caption(f"Recovery per model with its interval. Run {run}. (The TUPLE paper\'s Table 2.)")\n'
        'st.expander("Robustness checks (the TUPLE paper\'s Tables 29 and 30)")\n'
        'st.markdown("Ends with a pointer such as (the TUPLE paper\'s Table 2): the table it matches.")\n')
    assert [line for line, _ in misplaced(shown_strings(source))] == [2, 3, 4, 5]
