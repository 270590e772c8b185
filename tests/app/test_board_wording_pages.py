"""The board review's wording on the pages (one render each): the Overview's plain model descriptions and its paper
comparison as a list, the Release-view recovery page's selection score said not to be the result, the Cost-profile
sensitivity page's explanation of a richer release that is non-inferior less often, and the Fronts page's caveat,
price of full privacy and members table title."""
from __future__ import annotations

import html

from streamlit.testing.v1 import AppTest

from dashboard import data_access as da
from dashboard.widgets import md_text
from qlb.present.fronts import MEMBERSHIP_NOTE, front_of, members_heading, review_cost
from qlb.present.sensitivity_text import richer_worse_sentence
from qlb.tuple.costs import profile_order
from qlb.tuple.release_views import VIEWS
from qlb.tuple.utility import DELTA
from tests.app.test_pages import opened

DATASET = "simulated-reference"


def texts(at: AppTest) -> str:
    parts = [m.value for m in at.markdown] + [m.value for m in at.caption] + [str(m.value) for m in at.warning]
    parts += [h.value for h in at.title] + [h.value for h in at.subheader]
    return "\n".join(parts)


def _findings(at) -> dict[str, str]:
    """Each finding's bold lead -> its sentence (unescaped)."""
    out = {}
    for m in at.markdown:
        if "qlb-finding" in m.value:
            lead, _, rest = m.value.partition("</b>")
            out[html.unescape(lead.split("<b>")[-1])] = html.unescape(rest.split("</div>")[0]).strip()
    return out


def test_overview_describes_models_plainly_and_lists_the_paper_comparison(decoded_warehouse, monkeypatch):
    with opened(decoded_warehouse, "pages/overview.py", monkeypatch, 120) as at:
        assert not at.exception, [e.value for e in at.exception]
        described = next(e for e in at.expander if e.label.startswith("What each of the 9 models is"))
        said = described.markdown[0].value
        assert "second most likely class" in said and "just its top probability" in said
        assert not [w for w in ("max p", "argmax", "!=", "runner-up") if w in said]
        fold = next(e for e in at.expander if e.label.startswith("Compared with the TUPLE paper"))
        assert not fold.dataframe                                 # a list: nothing cut at 1,024 px
        lines = next(m.value for m in fold.markdown if m.value.startswith("- **")).split("\n")
        held, known = (int(x) for x in fold.label.split(": ")[1].split(" of its")[0].split(" of "))
        assert len(lines) == known and sum(x.startswith("- **Holds**: ") for x in lines) == held
        assert all("This run: " in x and "; band: " in x and "; paper: " in x for x in lines)


def test_recovery_page_says_the_validation_score_is_not_the_result(decoded_warehouse, monkeypatch):
    with opened(decoded_warehouse, "pages/recovery.py", monkeypatch, 120) as at:
        assert not at.exception, [e.value for e in at.exception]
        assert "The result is the test recovery shown above" in texts(at)
        chosen = next(m.value for m in at.markdown if "Validation score" in m.value)
        assert "Validation recovery" not in texts(at)
        assert all("Validation score (chose the attacker; not the result): " in line for line in chosen.split("\n"))


def test_sensitivity_page_explains_a_richer_release_counting_lower_only_then(demo_warehouse, monkeypatch):
    with opened(demo_warehouse, "pages/sensitivity.py", monkeypatch, 120) as at:
        assert not at.exception, [e.value for e in at.exception]
        run_id = da.utility_runs(str(demo_warehouse), DATASET)["run_id"].iloc[0]
        diff = da.query(str(demo_warehouse), "utility_differences", (run_id,))
        lower = [v for v in VIEWS if v != "full_native" and v in set(diff["view_a"])]
        expected = richer_worse_sentence(diff[diff["profile"] == "authored"], lower, DELTA)
        said = _findings(at)                  # the demo's nine models: choice + confidence counts below choice
        lead = "More information, less often good enough."
        assert said.get(lead) == expected if expected else lead not in said


def test_fronts_page_caveat_price_of_privacy_and_members_title(decoded_warehouse, monkeypatch):
    with opened(decoded_warehouse, "pages/fronts.py", monkeypatch, 120) as at:
        assert not at.exception, [e.value for e in at.exception]
        said = _findings(at)
        assert said["Who is on the front."].endswith(MEMBERSHIP_NOTE)
        assert texts(at).count("not a significance claim") == 1           # in the first finding, not the intro
        path = str(decoded_warehouse)
        run_id = da.front_runs(path, DATASET)["run_id"].iloc[0]
        points = da.query(path, "front_points", (run_id,))
        review = review_cost("authored", da.ontology(path, DATASET))
        front = points[(points["task"] == "selective") & (points["profile"] == "authored") & points["nondominated_all"]]
        private = front.loc[front["recovery"] == front["recovery"].min(), "mean_cost"].min()   # the most private end
        trusted = f"{private:.3f}" == f"{review:.3f}"
        priced = "per case is the price of sending every case to trusted review" in said["What full privacy costs."]
        assert priced == trusted
        profiles = profile_order(points["profile"])
        heading = members_heading(front_of(points), profiles)
        assert heading.startswith(f"Across the {len(profiles)} cost profiles: ")
        assert md_text(heading) in [h.value for h in at.subheader]
