"""The HTML report printed to PDF by a local Chromium or Google Chrome (headless, its own
``--print-to-pdf``), for a privacy board that circulates documents rather than links.

The report's figures are drawn by Plotly's script when the page loads, at the width of the window
they load in; the window is as wide as an A4 page's printable width, so the charts are drawn at the
width they print at. The report's print stylesheet (``qlb.present.report.CSS``) sets the page, keeps
each chart with its caption, wraps wide tables and hides the charts' toolbars. Chromium runs with a
profile of its own in a temporary folder, fetches nothing (the report is self-contained) and
prints no header or footer (they would show the temporary file's path)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

# where a browser that prints is looked for, in order, after $QLB_CHROMIUM
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome",
            "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
            "/Applications/Chromium.app/Contents/MacOS/Chromium")
# A4's printable width at 96 px an inch within the report's 12 mm page margins (210 - 24 mm)
PRINT_WIDTH_PX = round((210 - 24) / 25.4 * 96)
PRINT_SECONDS = 120           # a report of nine models prints in a few seconds
FLAGS = ("--headless", "--disable-gpu", "--no-first-run", "--no-default-browser-check", "--disable-extensions",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--mute-audio",
         "--no-pdf-header-footer", "--virtual-time-budget=30000", f"--window-size={PRINT_WIDTH_PX},1100")


class NoBrowser(RuntimeError):
    """No Chromium or Google Chrome to print with; the message says where it was looked for."""


class PrintFailed(RuntimeError):
    """Chromium ran but wrote no PDF; the message quotes the end of what it said."""


@dataclass(frozen=True)
class Printed:
    path: Path
    pages: int
    size_bytes: int


def find_browser(env: dict[str, str] | None = None) -> str:
    """The Chromium or Chrome executable to print with: ``$QLB_CHROMIUM`` when set (it must exist),
    else the first of ``BROWSERS`` found on the PATH or at its absolute path."""
    env = os.environ if env is None else env
    chosen = env.get("QLB_CHROMIUM")
    if chosen:
        found = shutil.which(chosen)
        if found is None:
            raise NoBrowser(f"QLB_CHROMIUM={chosen}: no executable there")
        return found
    for name in BROWSERS:
        found = shutil.which(name, path=env.get("PATH"))
        if found is not None:
            return found
    raise NoBrowser("a PDF is printed by Chromium or Google Chrome, and neither was found (looked for "
                    f"{', '.join(b for b in BROWSERS if '/' not in b)} on the PATH and for the macOS applications; "
                    "set QLB_CHROMIUM to the browser's executable). Without one, write the report as HTML and "
                    "print it from any browser (its print layout is A4).")


def page_count(pdf: bytes) -> int:
    """The number of pages of a PDF written by Chromium (its page objects; not a general PDF parser)."""
    return len(re.findall(rb"/Type\s*/Page(?![A-Za-z])", pdf))


def html_to_pdf(html: str, out: Path, browser: str | None = None, timeout: float = PRINT_SECONDS) -> Printed:
    """Print the self-contained HTML page ``html`` to the PDF file ``out`` (replaced if it exists;
    written only when the print succeeded)."""
    data = pdf_bytes(html, browser, timeout)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(data)
    return Printed(out, page_count(data), len(data))


def pdf_bytes(html: str, browser: str | None = None, timeout: float = PRINT_SECONDS) -> bytes:
    """The self-contained HTML page ``html`` printed to PDF (``PrintFailed`` when no PDF came)."""
    browser = browser or find_browser()
    with tempfile.TemporaryDirectory(prefix="qlb-pdf-") as tmp:
        page, pdf = Path(tmp) / "report.html", Path(tmp) / "report.pdf"
        page.write_text(html, encoding="utf-8")
        flags = [*FLAGS, f"--user-data-dir={Path(tmp) / 'profile'}", f"--print-to-pdf={pdf}"]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            flags.append("--no-sandbox")          # Chromium refuses to start as root with its sandbox
        try:
            done = subprocess.run([browser, *flags, page.as_uri()], capture_output=True, text=True,
                                  timeout=timeout, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise PrintFailed(f"{browser} did not finish printing within {timeout:g} s") from None
        except OSError as exc:
            raise PrintFailed(f"{browser} could not be started: {exc.strerror or exc}") from None
        data = pdf.read_bytes() if pdf.exists() else b""
        if not data.startswith(b"%PDF-"):
            said = [line for line in (done.stderr or "").splitlines() if line.strip()]
            raise PrintFailed(f"{browser} wrote no PDF (exit {done.returncode})"
                              + (f": {said[-1].strip()[:300]}" if said else "")
                              + ("; a snap-packaged Chromium cannot read the temporary folder it is given: set "
                                 "QLB_CHROMIUM to a Chrome or Chromium installed otherwise" if "/snap/" in browser
                                 else ""))
    return data
