"""Budget (issue 8): each page's first render on the demo warehouse <= 2 s, measured in a real
headless Chromium.

Serves `streamlit run app.py` on a warehouse (``--warehouse PATH``, e.g. the one `qlb demo`
built; default: a fresh demo without the decoding audit, on which the fronts and defenses pages
only say what to run), warms the server with one visit, then for every page opens a new
browser session on the page's URL and times until its key content is on screen (median of 3).
In the same run it times a trivial two-metric Streamlit page with the same navigation, the
floor this machine sets for any Streamlit page. For context it also times what a user sees after
the dashboard is open: moving to each page with the sidebar navigation in one session (the
browser already has Streamlit's code; the budget is about the new-session figure)."""
from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_overview import ARGS, BASELINE_APP, ROOT, _serve  # noqa: E402

from demo_warehouse import warehouse_or_demo  # noqa: E402

PAGES = {"": "QuasiLeak documents", "data": "Quarantine", "refusal": "Withholding and recovery per model",
         "recovery": "Recovery per release view", "fronts": "On the front:", "sensitivity": "comparisons of",
         "defenses": "WCPQ verification", "quasileak": "Leaderboard", "compare": "Run A", "glossary": "Plan agreement"}
FALLBACK = {"recovery": "No decoding audit", "fronts": "No fronts yet", "defenses": "No defense audit",
            "compare": "fewer than two audit runs"}


def _time(browser, url: str, texts: list[str]) -> float:
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    t0 = time.perf_counter()
    page.goto(url)
    target = page.get_by_text(texts[0])
    for t in texts[1:]:
        target = target.or_(page.get_by_text(t))
    target.first.wait_for(timeout=60000)
    elapsed = time.perf_counter() - t0
    page.close()
    return elapsed


TITLES = {"": "Overview", "data": "Data", "refusal": "Refusal audit", "recovery": "Release-view recovery",
          "fronts": "Privacy-utility fronts", "sensitivity": "Cost-profile sensitivity",
          "defenses": "Defenses and WCPQ", "quasileak": "QuasiLeak detectors", "compare": "Compare runs",
          "glossary": "Glossary"}


HEADINGS = {"defenses": "Defenses and WCPQ verification"}


def _in_app(browser, url: str) -> dict[str, float]:
    """Seconds from a click on the page's sidebar link to its key content, one session, each page
    in turn (median of 3 rounds)."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(f"{url}glossary?dataset=simulated-reference")
    page.get_by_text(PAGES["glossary"]).first.wait_for(timeout=60000)
    times: dict[str, list[float]] = {}
    nav = page.locator('[data-testid="stSidebarNav"]')
    for _ in range(3):
        for name, text in PAGES.items():
            texts = [text] + ([FALLBACK[name]] if name in FALLBACK else [])
            t0 = time.perf_counter()
            nav.get_by_text(TITLES[name], exact=True).click()
            heading = HEADINGS.get(name, TITLES[name])
            page.get_by_role("heading", name=heading, exact=True).first.wait_for(timeout=60000)
            main = page.locator('[data-testid="stMain"]')
            target = main.get_by_text(texts[0])
            for t in texts[1:]:
                target = target.or_(main.get_by_text(t))
            target.first.wait_for(timeout=60000)
            times.setdefault(name or "overview", []).append(time.perf_counter() - t0)
    page.close()
    return {k: sorted(v)[1] for k, v in times.items()}


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        wh = warehouse_or_demo(__doc__.splitlines()[0], tmp)
        (Path(tmp) / "baseline.py").write_text(BASELINE_APP)
        proc, url = _serve(ROOT / "app.py", ROOT, {**os.environ, "QLB_WAREHOUSE": str(wh)})
        base_proc, base_url = _serve(Path(tmp) / "baseline.py", Path(tmp), dict(os.environ))
        results = {}
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
                _time(browser, url, [PAGES[""]])                      # the server's one-time imports
                time.sleep(15)                                         # and its background warm-up
                _time(browser, base_url, ["QuasiLeak documents"])
                base = sorted(_time(browser, base_url, ["QuasiLeak documents"]) for _ in range(3))[1]
                runs: dict[str, list[float]] = {}
                for _ in range(3):        # round robin: machine noise spreads over every page alike
                    for page, text in PAGES.items():
                        texts = [text] + ([FALLBACK[page]] if page in FALLBACK else [])
                        runs.setdefault(page or "overview", []).append(
                            _time(browser, f"{url}{page}?dataset=simulated-reference", texts))
                results = {k: sorted(v)[1] for k, v in runs.items()}
                in_app = _in_app(browser, url)
                browser.close()
        finally:
            for p_ in (proc, base_proc):
                p_.terminate()
                p_.wait(timeout=10)
    for page, s in results.items():
        print(f"{page:12s} first render, new session: median {s:.2f} s {'PASS' if s <= 2 else 'FAIL'}")
    print(f"baseline (trivial Streamlit page, same run): median {base:.2f} s")
    print("after the dashboard is open, sidebar navigation to the page (one session, median of 3): " +
          ", ".join(f"{k} {v:.2f} s" for k, v in in_app.items()))
    ok = all(s <= 2 for s in results.values())
    print(f"budget <= 2 s per page: {'PASS' if ok else 'FAIL'} ({sum(s <= 2 for s in results.values())} of "
          f"{len(results)} pages)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
