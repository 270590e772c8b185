"""Notes the Defenses page puts around its tables and figures, computed from a run's stored results (pure: frames in,
text out; model names as they are, escaped where the page shows them)."""
from __future__ import annotations

from typing import Callable

import pandas as pd
import plotly.graph_objects as go
from scipy.stats import binomtest

from qlb.present.figures import wrapped
from qlb.present.names import FAMILY_NAMES, listing, name, pct, text_range
from qlb.tuple.learned_wcpq import LEARNED_PREFIX

SYSTEMATIC = 0.05        # one-sided sign test: adapted temperature cheaper in more cells than chance gives the reason


def temperature_note(costs: pd.DataFrame) -> str:
    """Why adapted recipients pay less on the temperature release than the frozen native ones, counted over every
    model, task and cost profile of ``costs``: not by chance and not from more information (the release is
    invertible) but because recipients read the released scores as they are (paper H.3), and a logistic recipient
    fits the square-rooted scores better than the raw ones. That reason is given only when the cells are cheaper more
    often than chance (one-sided sign test, p < ``SYSTEMATIC``) and on average; else the count alone. Empty when
    ``costs`` has no adapted temperature row."""
    keys = ["model", "task", "profile"]
    native = costs[(costs["defense"] == "native") & (costs["recipient"] == "frozen")].set_index(keys)["mean_cost"]
    smooth = costs[(costs["defense"] == "temperature") & (costs["recipient"] == "adapted")].set_index(keys)["mean_cost"]
    both = native.to_frame("native").join(smooth.rename("temperature"), how="inner").dropna()
    if both.empty:
        return ""
    cheaper = int((both["temperature"] < both["native"]).sum())
    mean = both["temperature"].sub(both["native"]).mean()
    text = (f" Temperature τ = 2 carries the same information as the native release (it is invertible); its adapted "
            f"recipients pay less than the native ones in {cheaper:,} of {len(both):,} model–task–profile cells of the "
            f"models shown (mean {mean:+z.3f})")
    if mean >= 0 or binomtest(cheaper, len(both), 0.5, alternative="greater").pvalue >= SYSTEMATIC:
        return text + ", within what refitting and reselecting moves."
    return (text + ": recipients read the released scores as they are, and a logistic recipient fits "
            "square-rooted scores better than raw ones. The gain comes from how the scores are written, not from the "
            "release: read through its public inverse, the release gives exactly the native recipients' costs. "
            "(The TUPLE paper's Appendix H.3.)")


# --- the page's plain-language framing (board review: intro, the two native figures, codewords, costs) ---------------

NATIVE_ATTACKED = "native (defense-aware attacker)"      # the native control's label wherever it is a recovery figure
SHOWN_PAIRS = 4          # up to this many models the control callout gives both figures per model, else their range


def method_points(policies: int, workflows: int) -> list[str]:
    """How the defenses are evaluated, one plain point each, for the page's "How the defenses are evaluated"
    expander. ``policies``: the frozen recipient policies of one domain (``policy_count`` of the dataset's decision
    task), ``workflows`` of them (one per task) per cost profile; both computed, never TUPLE's 3 x 6 typed in."""
    profiles = policies // workflows if workflows else 0
    return [
        "Every defense starts from the same native response and changes only the released probabilities: the "
        "chosen class and the stated confidence stay (WCPQ sets the confidence to its codeword's largest value).",
        "For each release, fresh attackers of the protected mechanism are fitted and chosen on the defended "
        "training and validation worlds, frozen, and scored on the test worlds.",
        "Every attacker, the one on the unchanged native release too, also sees what the recipient does with the "
        "release (its public workflow signatures); the temperature attacker first undoes the flattening, which is "
        "public and invertible.",
        f"WCPQ (the workflow-constrained quantizer) replaces each response by the first codeword (a fixed vector) "
        f"on which all {policies} frozen recipient policies act exactly as on the original ({workflows} tasks "
        f"× {profiles} cost profiles of this dataset's decision task, each fitted on native releases and then "
        f"frozen); where no codeword does, it releases the response unchanged.",
        "WCPQ's main codebook is the 0.1 grid, then the model's own training responses, then midpoints of its "
        "training pairs; the 0.1 grid alone is shown as a control.",
        "Intervals are 95% pair-clustered bootstrap intervals; the noise defense averages its three seeds' "
        "per-world outcomes.",
    ]


def control_sentence(recovery: pd.DataFrame, main: pd.DataFrame, policies: int,
                     escape: Callable[[str], str] = str, report: bool = False) -> str:
    """Why this page's native figure (``NATIVE_ATTACKED``) is not the full-native recovery of the Release-view
    recovery page, with both figures from the run: per model for up to ``SHOWN_PAIRS`` models, else the range of
    their difference and the largest gap; ``escape`` (the page's ``md_text``) is applied to each model name. Empty
    when no model has both figures. ``report``: worded for the report's defenses section, whose full-native figure
    is in its release-view section."""
    pooled = recovery[(recovery["scope"] == "pooled") & (recovery["view"] == "full_native")] \
        .drop_duplicates("model").set_index("model")["accuracy"]
    native = main[main["defense"] == "native"].drop_duplicates("model").set_index("model")["accuracy"]
    both = sorted(m for m in native.index if m in pooled.index)
    if not both:
        return ""
    if len(both) <= SHOWN_PAIRS:
        detail = "; ".join(f"{escape(m)}: {pct(native[m])} here, {pct(pooled[m])} there" for m in both)
    else:
        gap = (native[both] - pooled[both]).sort_index()
        far = gap.abs().idxmax()
        spread = text_range(f"{100 * gap.min():+z.1f}", f"{100 * gap.max():+z.1f}")
        detail = (f"here minus there: {spread} points over {len(both)} models; the largest gap: {escape(far)}, "
                  f"{pct(native[far])} here, {pct(pooled[far])} there")
    this, that = (("This section's", "The full-native figure of “What each release view reveals”") if report
                  else ("This page's", "The Release-view recovery page's full-native figure"))
    return (f"{this} {NATIVE_ATTACKED} figure attacks the model's unchanged release the way every defended "
            f"release is attacked: the attacker also reads the {policies} public workflow signatures and is chosen "
            f"from this audit's attacker families. {that} comes from the recovery audit's attacker, which does not "
            f"read them, so the two differ ({detail}). Compare each defense with {this.lower()} figure, not with that "
            "one.")


def restricted_sentence(families: list[str] | None, decoding: list[str], escape: Callable[[str], str] = str) -> str:
    """When the defense-aware attacker uses fewer attacker families than the recovery audit's (``decoding``): which
    ones, which not (``escape``d, as a run's parameters name them), and that a stronger attacker could recover
    more. Empty otherwise."""
    missing = [f for f in decoding if f not in (families or [])]
    if not families or not missing:
        return ""
    order = list(FAMILY_NAMES)                          # the library's order, as the Glossary lists them
    used = sorted(families, key=lambda f: order.index(f) if f in order else len(order))
    return (f"This run's defense-aware attacker is restricted to {escape(listing([name('family', f) for f in used]))} "
            f"(qlb audit --defense-families): the recovery audit's other families "
            f"({escape(listing([name('family', f) for f in missing]))}) do not attack the defended releases, so a "
            f"stronger attacker could recover more from them.")


def relabel_native(fig: go.Figure) -> go.Figure:
    """Figure 10 with its native category named ``NATIVE_ATTACKED`` (points, hover and tick label), ``fig`` itself."""
    old = name("defense", "native")
    for trace in fig.data:
        if trace.x is not None:
            trace.x = [NATIVE_ATTACKED if v == old else v for v in trace.x]
    axis = fig.layout.xaxis
    if axis.tickvals is not None:
        vals = list(axis.tickvals)
        text = list(axis.ticktext) if axis.ticktext is not None else list(vals)
        if old in vals:
            i = vals.index(old)
            vals[i], text[i] = NATIVE_ATTACKED, wrapped(NATIVE_ATTACKED, 11)
        fig.update_xaxes(tickvals=vals, ticktext=text)
    return fig


def recovery_label(defense: str) -> str:
    """A release's label where it is a recovery figure: ``NATIVE_ATTACKED`` for the native control, else its id
    (which the tables show by its display name)."""
    return NATIVE_ATTACKED if defense == "native" else defense


def is_codeword(defense: str) -> bool:
    """A release made of codewords: WCPQ strict, its grid-only control, or a learned variant."""
    return defense in ("wcpq", "wcpq grid") or defense.startswith(LEARNED_PREFIX)


def release_column(defense: str) -> str:
    """A release's column in the world inspector: a codeword release is named a codeword (short enough for the
    table to fit a 1,024 px screen; the note above the table says that a codeword is not a probability)."""
    if defense == "wcpq":
        return "WCPQ codeword"
    if defense == "wcpq grid":
        return "WCPQ grid-only codeword"
    if is_codeword(defense):
        return f"{name('defense', defense)}: codeword"
    return name("defense", defense)


def codeword_note(defenses: list[str]) -> str:
    """The warning above the world inspector's table when it shows a codeword release (else empty): a codeword is not
    a probability, why its numbers can look wrong, and what it drops."""
    shown = [d for d in defenses if is_codeword(d)]
    if not shown:
        return ""
    learned = any(d.startswith(LEARNED_PREFIX) for d in shown)
    return ("The WCPQ columns hold codewords, not probabilities. A WCPQ strict codeword is a fixed vector from its codebook "
            "on which every frozen recipient policy acts exactly as on this response, so its numbers can differ a lot "
            "from the native ones (even in which class scores highest) while no recipient decision changes; its "
            "confidence row is the codeword's largest value. What the codeword drops is what those policies never "
            "used, and that is what an attacker loses."
            + (" A learned variant's codeword keeps every policy's chosen class and may cost up to its budget more."
               if learned else ""))


COST_WHY = ("The native control and WCPQ rows are the frozen full-native policies (WCPQ is built so that they act "
            "unchanged). Those frozen policies are themselves the adapted ones for the native release: the utility "
            "audit fits and selects them on native validation worlds exactly as an adapted recipient is fitted on a "
            "defended release, so an adapted row and the native row compare like with like. A defended row can "
            "still read cheaper or dearer by chance, because its recipient is refitted and reselected on validation "
            "worlds: compare the intervals, not the point estimates.")
