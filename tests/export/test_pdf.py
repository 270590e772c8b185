"""The report printed to PDF (qlb.export.pdf and `qlb report --out FILE.pdf`): which browser prints
it, what is said when none is there or it fails, and a real print by Debian's chromium of the
decoded warehouse's report (A4 pages, the whole report)."""
from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import pytest

from qlb.cli import main
from qlb.export.pdf import NoBrowser, PrintFailed, find_browser, html_to_pdf, page_count

CHROMIUM = os.environ.get("QLB_CHROMIUM", "/usr/bin/chromium")


A4 = (0, 0, 595, 842)             # points


def page_boxes(pdf: bytes) -> set[tuple[int, ...]]:
    """The distinct page sizes (MediaBox, rounded to points) of a PDF."""
    return {tuple(round(float(v)) for v in box.split()) for box in re.findall(rb"/MediaBox\s*\[([^\]]+)\]", pdf)}


def _script(folder: Path, name: str, body: str) -> Path:
    path = folder / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_qlb_chromium_names_the_browser_and_a_wrong_one_is_said(tmp_path):
    fake = _script(tmp_path, "my-chrome", "exit 0")
    assert find_browser({"QLB_CHROMIUM": str(fake), "PATH": ""}) == str(fake)
    with pytest.raises(NoBrowser, match=r"QLB_CHROMIUM=/nowhere/chrome: no executable there"):
        find_browser({"QLB_CHROMIUM": "/nowhere/chrome"})


def test_no_browser_says_where_it_looked_and_what_to_do_instead(tmp_path, monkeypatch):
    monkeypatch.setattr("qlb.export.pdf.BROWSERS", ("chromium", "google-chrome", str(tmp_path / "Chrome.app")))
    with pytest.raises(NoBrowser) as err:
        find_browser({"PATH": str(tmp_path)})          # an empty folder: no browser on that PATH
    assert "looked for chromium, google-chrome on the PATH" in str(err.value)
    _script(tmp_path, "google-chrome", "exit 0")
    assert find_browser({"PATH": str(tmp_path)}) == str(tmp_path / "google-chrome")   # the PATH it is given
    assert "set QLB_CHROMIUM" in str(err.value) and "print it from any browser" in str(err.value)


def test_a_browser_that_writes_no_pdf_is_quoted_and_nothing_is_written(tmp_path):
    broken = _script(tmp_path, "chrome", 'echo "[0101/ERROR:zygote] cannot start" >&2; exit 3')
    out = tmp_path / "board.pdf"
    with pytest.raises(PrintFailed, match=r"wrote no PDF \(exit 3\): \[0101/ERROR:zygote\] cannot start"):
        html_to_pdf("<p>x</p>", out, str(broken))
    assert not out.exists()
    slow = _script(tmp_path, "slow-chrome", "sleep 5")
    with pytest.raises(PrintFailed, match="did not finish printing within 0.5 s"):
        html_to_pdf("<p>x</p>", out, str(slow), timeout=0.5)


def test_the_pdf_is_written_from_what_the_browser_printed(tmp_path):
    """The browser gets the page as a file URL and the --print-to-pdf path; what it writes there is the PDF."""
    fake = _script(tmp_path, "chrome", 'for a in "$@"; do case "$a" in --print-to-pdf=*) '
                                       'printf "%%PDF-1.4\\n/Type /Page\\n/Type /Page\\n/Type /Pages\\n" '
                                       '> "${a#--print-to-pdf=}";; esac; done')
    printed = html_to_pdf("<p>x</p>", tmp_path / "out" / "board.pdf", str(fake))
    assert printed.pages == 2 and (tmp_path / "out" / "board.pdf").read_bytes().startswith(b"%PDF-1.4")


def test_page_count_counts_page_objects_not_the_page_tree():
    assert page_count(b"%PDF-1.4 /Type /Pages /Type /Page\n /Type/Page>> /Type /Page /Parent") == 3


def test_no_browser_stops_before_the_report_is_built(decoded_warehouse, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("QLB_CHROMIUM", str(tmp_path / "missing-chrome"))
    out = tmp_path / "board.pdf"
    assert main(["report", "--warehouse", str(decoded_warehouse), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert f"--out {out}: QLB_CHROMIUM={tmp_path / 'missing-chrome'}: no executable there" in err
    assert not out.exists()
    assert main(["report", "--warehouse", str(decoded_warehouse), "--out", str(tmp_path / "board.docx")]) == 2
    assert "the report is HTML or PDF; name the file *.html or *.pdf" in capsys.readouterr().err


def test_qlb_report_writes_what_the_browser_printed_and_counts_its_pages(decoded_warehouse, tmp_path, capsys,
                                                                         monkeypatch):
    """The command's wiring, with a stand-in browser that prints three pages (the sidebar's browser test prints
    the same report with Debian's chromium, and the one below prints on A4 for real)."""
    fake = _script(tmp_path, "chrome", 'for a in "$@"; do case "$a" in --print-to-pdf=*) '
                                       'printf "%%PDF-1.4\\n/Type /Page\\n/Type /Page\\n/Type /Page\\n" '
                                       '> "${a#--print-to-pdf=}";; esac; done')
    monkeypatch.setenv("QLB_CHROMIUM", str(fake))
    out = tmp_path / "board" / "report.pdf"
    assert main(["report", "--warehouse", str(decoded_warehouse), "--out", str(out)]) == 0
    assert f"written to {out} (3 A4 pages, " in capsys.readouterr().out
    assert out.read_bytes().startswith(b"%PDF-1.4")


@pytest.mark.browser
def test_chromium_prints_a_long_page_on_a4_pages(tmp_path):
    if os.environ.get("QLB_SKIP_BROWSER") == "1":
        pytest.skip("QLB_SKIP_BROWSER=1")
    assert Path(CHROMIUM).exists(), f"{CHROMIUM} missing: install Debian's chromium (bash scripts/test.sh does)"
    from qlb.present.report import CSS
    html = f"<html><head><style>{CSS}</style></head><body>" + "<p>line</p>" * 400 + "</body></html>"
    printed = html_to_pdf(html, tmp_path / "long.pdf", CHROMIUM)
    data = printed.path.read_bytes()
    assert printed.pages >= 3 and page_count(data) == printed.pages and page_boxes(data) == {A4}
