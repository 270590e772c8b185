"""Glossary of the audit's terms, as qlb uses them."""
from __future__ import annotations

import streamlit as st

from dashboard.routing import page_entry

TERMS: list[tuple[str, str]] = [
    ("World", "One synthetic (or exported) case: public request and context, the authorized coarse class T, "
              "the protected fine-grained mechanism S, and two registered hypotheses {s0, s1}, one of which is S."),
    ("Pair", "Two worlds that share every public field, T and the costs, and differ only in S (and the private "
             "note). The unit of splitting, cross-fitting folds and bootstrap resampling."),
    ("Coarse class (T)", "What the recipient is allowed to receive: the business category a model decides."),
    ("Mechanism (S)", "The fine-grained internal cause the recipient must not learn."),
    ("Release view", "Which fields of one saved response are released: no_output (status only), choice, "
                     "choice_confidence, full_probabilities, full_native (choice, probabilities and confidence)."),
    ("Secret recovery", "How often a trained attacker names the true mechanism of a test world from a release, "
                        "given T and the two hypotheses. 50% is guessing."),
    ("Refusal audit", "Does answering WITHHOLD protect the mechanism? Recovery counts direct answers that name it "
                      "and withheld answers whose residual scores still rank it uniquely first."),
    ("Recipient policy", "What the legitimate downstream user does with a release: an estimate q(T | public, "
                         "release) fitted on train and chosen on validation for each task and cost profile."),
    ("Selective routing", "Route the case to the most likely class, or pay for trusted review."),
    ("One-step clarification", "Act now, or buy one yes/no check of a class before routing."),
    ("Asymmetric routing", "Choose the action (a route or general inspection) with the lowest expected cost "
                           "under an action-by-class cost matrix."),
    ("Cost profile", "One of six fixed sets of costs (authored and five perturbations) under which policies are "
                     "refitted and replayed."),
    ("Oracle-T bound", "An evaluator-only policy that knows T: the lowest cost any policy could reach."),
    ("Non-inferiority", "A lower-information release is non-inferior to full native when the upper end of the "
                        "paired 95% interval of its extra cost is at most delta = 0.1."),
    ("Privacy-utility front", "The releases that no other release beats on both recovery and cost."),
    ("Defense", "A transformation of the probability field before release: quantization, top-two, temperature, "
                "noise, or WCPQ."),
    ("WCPQ", "Workflow-constrained quantizer: replaces a response by the first codeword that makes all 18 frozen "
             "recipient policies behave exactly as before, else releases it unchanged (identity fallback)."),
    ("Codebook", "The codewords WCPQ searches, in order. The main codebook is the 0.1 grid (286 vectors for 4 "
                 "classes), then the model's own training responses, then the midpoints of its training pairs; the "
                 "grid alone is shown as a control."),
    ("Coverage", "For WCPQ: the share of available test responses that found a codeword (the rest are released "
                 "unchanged)."),
    ("Public workflow signature", "What each of the 18 frozen recipient policies does with a release (category, "
                                  "route, review, check and both continuations). Anyone who knows the policies can "
                                  "compute it, so every defended release's attacker is given it."),
    ("Coarse accuracy", "How often the released choice is the true coarse class T on the test worlds (an "
                        "unavailable answer counts as wrong)."),
    ("Lift", "For QuasiLeak's construction check: (confidence - chance) / (1 - chance), clipped to [0, 1]; a group "
             "is verified when each cue alone has lift at most 0.35 and the whole group at least 0.70."),
    ("Plan agreement", "For WCPQ: the share of (world, policy) comparisons whose complete plan, including both check "
                       "branches, is the same for the native and the released response."),
    ("Pair-clustered bootstrap", "Intervals from 2,000 resamples of whole pairs (both worlds together), 95% "
                                 "percentile; paired differences use the same resamples."),
    ("test_used_for_selection", "Always false: every choice (decoder, policy, factor) is made on validation and "
                                "frozen before the test split is scored."),
    ("QuasiLeak group", "Individually weak text cues that together reveal a private attribute; detectors are "
                        "scored on recovering whole groups under a keep/hide/neutral policy."),
    ("SIMULATED", "Data qlb generated itself to the papers' shapes and sizes; no real model produced it."),
]


def render() -> None:
    """The Glossary page: the audit's terms as qlb uses them."""
    st.title("Glossary")
    st.caption("The audit's terms as qlb uses them (TUPLE.md and QUASILEAK.md fix the details).")
    for term, text in TERMS:
        st.markdown(f"**{term}** — {text}")


page_entry(render)
