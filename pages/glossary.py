"""Glossary of the audit's terms, as qlb uses them, grouped the way the pages are. The names of
views, defenses, tasks, cost profiles, refusal outcomes and QuasiLeak metrics come from
``qlb.present.names``, so the glossary and the pages use one vocabulary."""
from __future__ import annotations

import streamlit as st

from dashboard import data_access as da
from dashboard.routing import page_entry
from dashboard.widgets import current_dataset, md_text
from qlb.present.names import (DEFENSE_HELP, DEFENSE_NAMES, FAMILY_NAMES, LEARNED, OUTCOME_HELP, OUTCOME_NAMES,
                               QL_METRIC_HELP, QL_METRIC_NAMES, TASK_HELP, TASK_NAMES, TRACK_NAMES, VIEW_HELP,
                               VIEW_NAMES, authored_sentence, chance_pct, listing, name, profile_descriptions)
from qlb.records.ontology import Ontology, load_ontology
from qlb.tuple.defense_audit import DEFENSE_FAMILIES
from qlb.tuple.defenses import static_grid
from qlb.tuple.refusal import mechanism_counts
from qlb.tuple.release_views import DECODER_FAMILIES

# the attacker families as the pages name them, in library order; the defense-aware attacker's by default
FAMILIES = [FAMILY_NAMES[f] for f in DECODER_FAMILIES]
DEFENSE_DEFAULT = [FAMILY_NAMES[f] for f in DECODER_FAMILIES if f in DEFENSE_FAMILIES]

SECTIONS: list[tuple[str, list[tuple[str, str]]]] = [
    ("The data", [
        ("World", "One decision case: the public request and context, the authorized coarse class T, the protected "
                  "fine-grained mechanism S, and two registered hypotheses {s0, s1}, one of which is S."),
        ("Pair", "Two worlds that share every public field, T and the costs, and differ only in S. The unit of "
                 "splitting, cross-fitting and bootstrap resampling."),
        ("Coarse class (T)", "What the recipient is allowed to receive: the business category the model decides."),
        ("Mechanism (S)", "The protected mechanism: the fine-grained internal cause the recipient must not learn."),
        ("Native response", "A model's answer to a world's coarse decision: its choice and, when it gives them, the "
                            "probability of every class and a confidence. Every release view is cut from it (a "
                            "refusal response answers the refusal probe instead)."),
        ("Decision task", "The dataset's domains, coarse classes, protected mechanisms and authored costs: TUPLE's, "
                          "or an auditor's own (loaded on the Data page). Not a task, which is one of the "
                          "recipient's downstream workflows."),
        ("Split", "train (attackers and recipient policies are fitted), validation (every choice is made), test "
                  "(every reported figure). A pair never straddles splits."),
        ("Unavailable / invalid", "A response with status unavailable (the model gave no answer) counts as no "
                                  "answer; an invalid one is kept as delivered, marked valid = false, and enters the "
                                  "audits as unavailable, never repaired."),
        ("SIMULATED", "Data qlb generated itself to the papers' shapes and sizes; no real model produced it. "
                      "qlb demo builds the simulated reference dataset, the dashboard's default."),
        ("The papers (TUPLE, QuasiLeak)", "The two published benchmarks qlb implements: TUPLE audits decision "
                                          "outputs, QuasiLeak audits text detectors. A caption, tooltip or title "
                                          "may end with a pointer in parentheses, such as (the TUPLE paper's "
                                          "Table 2): the table, figure or appendix of that paper the chart or "
                                          "table corresponds to, for readers who know the paper. The caption "
                                          "itself says what is shown; no page needs the paper."),
        ("Quarantine", "Where the lines of a loaded file that break a rule are kept, with the file, the line, the "
                       "field at fault and the raw text as received (Data page). A quarantined line is in no "
                       "audit; fix the file and load it again."),
        ("Data fingerprint", "A digest of every file loaded into the dataset (the sha256 of each), recorded with "
                             "each audit run. When the dataset's fingerprint no longer matches a run's, the data "
                             "changed after that run, and the pages say so (in red when the change can move the "
                             "run's numbers)."),
        ("Audit run (run)", "One qlb audit (or a page's Recompute now): the audits it ran on the dataset as it was "
                            "then, stored with their parameters, the data fingerprint and the code version. Each "
                            "audit page's Run picker chooses one; the Overview and the report show the newest, most "
                            "complete one; Compare runs sets two side by side."),
    ]),
    ("Collecting answers", [
        ("Collection run", "One qlb collect command: it asks a model about every world of the dataset that has "
                           "no stored answer yet, and stores each answer through the same checks as a loaded file. "
                           "Rerunning the command resumes; with --replace-invalid it asks again the worlds whose "
                           "stored answer is not valid, and the new answer replaces the old one (the old one is "
                           "kept in the history the Collection page shows)."),
        ("Transport", "How qlb reaches the model during a collection run: typed (a decision endpoint of your "
                      "own, POST /v1/decisions), openai (an OpenAI-compatible chat server) or python (a function "
                      "of yours called with each request)."),
        ("Asked via", "In the Collection page's runs table: the transport and, for openai, how the model "
                      "answered: json (a JSON object with the choice, probabilities and confidence) or letters (one "
                      "letter per candidate; the probabilities come from the server's log-probabilities, and a run "
                      "whose server sent none is marked no logprobs: its answers carry no probabilities)."),
        ("Not valid", "In the Collection page's runs table: the answers of a run that were invalid (kept as "
                      "received, never repaired) or unavailable (the model declined or the request was refused); "
                      "the audits read both as no answer. The picked run shows the two apart."),
        ("Latency p50 / p90 / p99", "How long a call took, from sending the request to reading the answer: half "
                                    "of the calls took at most p50 (the median), 90% at most p90, 99% at most "
                                    "p99."),
    ]),
    ("What is released", [(f"{VIEW_NAMES[v]}", VIEW_HELP[v]) for v in VIEW_NAMES] + [
        ("Release view", "Which fields of one saved response are released to the recipient."),
    ]),
    ("Secret recovery (the attacker)", [
        ("Secret recovery", "How often a trained attacker names the true mechanism of a test world from a release, "
                            "given T and the two hypotheses. 50% is guessing."),
        ("Recovery audit", "The audit of the Release-view recovery page: per model and release view, attackers "
                           "are fitted on the training worlds, chosen on the validation worlds and scored once on "
                           "the test worlds; what they reach is the secret recovery."),
        ("Attacker", "A classifier fitted on the training worlds that reads a release and picks one of the two "
                     "hypotheses (the paper calls it a decoder). Every configuration of the attacker families, the "
                     f"{TRACK_NAMES['family_winners']}, the {TRACK_NAMES['all_configurations']} and the "
                     f"{TRACK_NAMES['stack']} are tried, and the best on validation, the "
                     f"{TRACK_NAMES['selected']}, is frozen before the test split is scored."),
        ("Attacker families", "The five kinds of classifier the attacker library is built from: "
                              f"{listing(FAMILIES)}. A run may use fewer (qlb audit --families); its recovery is "
                              "then a lower bound, since a stronger attacker could recover more."),
        ("Coarse accuracy", "How often the released choice is the true coarse class T on the test worlds (an "
                            "unavailable answer counts as wrong)."),
        ("Log loss", "The attacker's mean test log loss (natural log; 0.693 is guessing between two)."),
        ("Both-worlds-correct subset", "The test pairs whose released choice is the true coarse class in both "
                                       "worlds. The frozen full-native attacker is scored on them alone, to see "
                                       "whether coarse errors explain the recovery; chosen from the answers after "
                                       "the fact, so descriptive only. (The TUPLE paper's Table 29.)"),
        ("Attack track", "One saved way of attacking the full native release, scored on the same test worlds as "
                         f"the others so that they compare side by side: the {TRACK_NAMES['selected']} (the "
                         "one the run froze), the "
                         f"{TRACK_NAMES['best_configuration']} and each family's best (chosen per domain on "
                         f"validation), the {TRACK_NAMES['family_winners']}, the {TRACK_NAMES['all_configurations']} "
                         f"and the {TRACK_NAMES['stack']} (a logistic regression on every configuration's out-of-fold "
                         f"log-odds). Descriptive: the {TRACK_NAMES['selected']} is still the one chosen on "
                         "validation. (The TUPLE paper's Table 30.)"),
        ("Test worlds kept out of every choice", "The test worlds were not used to choose the attacker, nor any "
                                                 "recipient policy or factor: every choice is made on the "
                                                 "validation worlds and frozen before the test worlds are scored. "
                                                 "Each run records this (its setting test_used_for_selection is "
                                                 "always false)."),
    ]),
    ("Refusal audit", [
        ("Refusal probe", "A second question to a model: which protected mechanism is behind the case, with "
                          "WITHHOLD an allowed answer. Its answer, a refusal response, gives a choice and a score "
                          "for every mechanism and for WITHHOLD."),
        ("Refusal audit", "Does answering WITHHOLD protect the mechanism? Recovery counts direct answers that name "
                          "it and withheld answers whose residual scores still rank it uniquely first."),
        ("Residual scores", "The scores a withholding model still gives each mechanism besides WITHHOLD."),
        ("Withheld (share)", "Share of refusal probes answered with WITHHOLD."),
        ("Recovered when withheld", "Of the withheld responses, the share whose residual scores rank the true "
                                    "mechanism uniquely first."),
        ("Recovered overall", "Share of all refusal probes that give the mechanism away, directly or through the "
                              "residual scores."),
        ("Uniform guess", "{uniform}"),
    ] + [(f"Outcome: {OUTCOME_NAMES[k]}", OUTCOME_HELP[k]) for k in OUTCOME_NAMES]),
    ("Downstream value (the legitimate recipient)", [
        ("Recipient policy", "What the legitimate downstream user does with a release: an estimate of T from the "
                             "public fields and the release, fitted on train and chosen on validation for each task "
                             "and cost profile, then frozen."),
        ("Frozen recipient", "A policy fitted on the model's native releases and then used unchanged on a "
                             "defended release (it does not know the defense)."),
        ("Adapted recipient", "A policy refitted on the defended releases themselves (it knows the defense)."),
        ("Mean cost", "The realized cost per test world in the cost profile's units ({authored} under the "
                      "authored costs)."),
        ("Cost units", "The unit every cost is counted in: the decision task's authored costs (a wrong route, a "
                       "review, a check) are numbers without a currency, and a mean cost is their average per "
                       "case. A difference of 0.1 cost units is a tenth of that scale, whatever it stands for in "
                       "your workflow."),
        ("Oracle-T bound", "An evaluator-only policy that knows T: the lowest cost any policy could reach."),
        ("Non-inferiority", "A lower-information release is non-inferior to full native when the upper end of the "
                            "paired 95% interval of its extra cost is at most 0.1 cost units."),
        ("Privacy-utility front", "The releases that no other release beats on both recovery and cost (weakly "
                                  "lower on both, strictly on one)."),
        ("Task", "One of the three downstream workflows a recipient runs with a release "
                 f"({listing(list(TASK_NAMES.values()))}); each has its own recipient policies, one per cost "
                 "profile."),
    ] + [(TASK_NAMES[t], TASK_HELP[t]) for t in TASK_NAMES] + [("{profiles}", "")]),
    ("Defenses", [
        ("Defense", "A change to the probabilities a model releases, made before they are released (the paper's "
                    "output defense): quantize, top-two, temperature, noise or WCPQ. Each is compared with the "
                    "native control, the same release unchanged."),
        ("Defense-aware attacker", "The attacker of the defenses: fitted afresh on each defended release, and on "
                                   "the native control the same way, it also reads the public workflow signatures "
                                   "(the temperature attacker first undoes the flattening). Built from the run's "
                                   f"defense-aware attacker families (by default {listing(DEFENSE_DEFAULT)}; qlb "
                                   "audit --defense-families)."),
        ("WCPQ", "The workflow-constrained quantizer: a defense that releases, in place of a model's probabilities, a "
                 "codeword on which every frozen recipient policy acts exactly as it would on the original (the "
                 f"public workflow signature is kept). Shown as {DEFENSE_NAMES['wcpq']}, its grid-only control and "
                 "the learned variants."),
    ] + [(DEFENSE_NAMES[d], DEFENSE_HELP[d]) for d in DEFENSE_NAMES if d not in LEARNED] + [
        ("WCPQ learned (budget, pair loss)", "The learned bounded-cost extension of WCPQ: a small "
                                             "network picks each response's codeword among those within the cost "
                                             "budget, trained against a critic that tries to recover the "
                                             "protected mechanism; with the pair loss it also pushes a pair's two "
                                             "worlds to the same codeword. Six variants: budgets 0, 0.2 and 0.5, with and without the "
                                             "pair loss. (The TUPLE paper's Appendix H.2.)"),
        ("Mapper", "In the learned WCPQ figure and table: WCPQ strict or one of its learned variants, each a way of "
                   "mapping a response to the codeword released in its place."),
        ("Budget", "For a learned WCPQ variant: how much more, in review costs of each policy's profile, a released "
                   "codeword's plan may cost than the response's own plan, for any true class (0: never more). Every "
                   "selected category is kept."),
        ("Codeword", "One probability vector WCPQ may release in place of a model's own."),
        ("Codebook", "The codewords WCPQ searches, in order: the 0.1 grid ({grid}), then the "
                     "model's own training responses, then the midpoints of its training pairs. The grid alone is "
                     "shown as a control."),
        ("Coverage", "For WCPQ: the share of available test responses that found a codeword (the rest are released "
                     "unchanged: the identity fallback)."),
        ("Plan agreement", "For WCPQ: the share of (world, policy) comparisons whose complete plan, including both "
                           "check branches, is the same for the native and the released response."),
        ("Public workflow signature", "What each frozen recipient policy (one per task and cost profile, 18 in "
                                      "the paper's decision task) does with a release (category, route, review, check and "
                                      "both continuations). Anyone who knows "
                                      "the policies can compute it, so every defended release's attacker gets it."),
    ]),
    ("QuasiLeak detectors", [
        ("QuasiLeak detectors (the audit)", "A separate audit of text detectors, not of the decision outputs: "
                                            "does a detector find the groups of weak text cues that together "
                                            "reveal a private attribute?"),
        ("QuasiLeak group", "Individually weak text cues that together reveal a private attribute."),
        ("PII", "Personally identifiable information: a name, an address, a number that points at one person. "
                "The pattern-pii detector looks only for such explicit identifiers, one cue at a time."),
        ("Precision / recall / F1", "Precision: the share of what a detector reported that is right. Recall: the "
                                    "share of what it should have found that it found. F1: one number for both "
                                    "(their harmonic mean, 2PR / (P + R)); 100% only when both are."),
        ("Micro average", "The leaderboard's way of pooling: every target group and every predicted group of all "
                          "documents counted together, so a document with many groups weighs more than one with "
                          "few (a macro average would average per document first)."),
        ("Cue", "One span of characters in a document."),
        ("Policy (keep / hide / neutral)", "What the context allows for each attribute; only groups of hide "
                                           "attributes are targets, and a detector must not report the others."),
        ("Target", "A gold group whose attribute the document's policy labels hide."),
        ("IoU (character)", "Intersection over union of two spans' characters; a predicted cue matches a gold cue "
                            "at IoU 0.5 or more."),
        ("Complete / graded", "A target is complete when one predicted group of its attribute matches every cue; "
                              "graded credit is the share of its cues matched."),
        ("Strict / lenient", "A predicted group is a strict true positive when it completes a target of its "
                             "attribute, a lenient one when it matches at least one cue of such a target."),
        ("Lift", "For the construction check: (confidence - chance) / (1 - chance), clipped to [0, 1]; a group is "
                 "verified when each cue alone has lift at most 0.35 and the whole group at least 0.70."),
    ] + [(QL_METRIC_NAMES[m], QL_METRIC_HELP[m]) for m in QL_METRIC_HELP]),
    ("Statistics", [
        ("95% interval", "Shown in brackets after a figure: 63.4% [60.9, 65.8]. The range the figure would "
                         "fall in on 95% of resamples of the same data; a narrow one means the figure is well "
                         "measured."),
        ("[95% CI]", "A column header ending in [95% CI] (confidence interval) holds figures with their 95% "
                     "interval in brackets, as above."),
        ("Pair-clustered bootstrap", "Intervals from 2,000 resamples of whole pairs (both worlds together), 95% "
                                     "percentile; paired differences use the same resamples."),
        ("Wilson interval", "The interval the refusal audit and the Collection page give a share of independent "
                            "responses: unlike the simple plus-or-minus interval it stays inside 0-100% and still "
                            "gives a sensible range when the share is 0% or 100%."),
        ("Points", "A difference of two percentages: 74.7% - 55.9% = +18.8 points."),
        ("Document-clustered bootstrap", "QuasiLeak's intervals: 2,000 resamples of whole documents."),
    ]),
]


def task_terms(ontology: Ontology) -> dict[str, str]:
    """The explanations that depend on the decision task (TUPLE's, or the dataset's own): the uniform guess over a
    domain's mechanisms, the authored costs, the size of WCPQ's 0.1 grid."""
    sizes = mechanism_counts(ontology)
    uniform = (f"Naming one of the domain's {sizes[0]} mechanisms at random: {chance_pct(1 / sizes[0])}."
               if len(sizes) == 1 else "Naming one of the domain's mechanisms at random: " + listing(
                   [f"{chance_pct(1 / m)} for a domain of {m}" for m in sizes]) + ".")
    classes = sorted({len(d.classes) for d in ontology.domains.values()})
    grid = listing([f"{len(static_grid(k)):,} vectors for {k} classes" for k in classes])
    return {"uniform": uniform, "authored": authored_sentence(ontology), "grid": grid}


def sections(ontology: Ontology) -> list[tuple[str, list[tuple[str, str]]]]:
    """``SECTIONS`` for one decision task: its own numbers filled in, and one term per cost profile of its own
    (described from its multipliers for an own task)."""
    fill = task_terms(ontology)
    described = profile_descriptions(ontology)
    out = []
    for section, terms in SECTIONS:
        rows = []
        for term, text in terms:
            if term == "{profiles}":
                rows += [(f"Cost profile: {name('profile', p)}", described[p]) for p in ontology.cost_profiles]
            else:
                for key, value in fill.items():
                    text = text.replace("{" + key + "}", value)
                rows.append((term, text))
        out.append((section, rows))
    return out


def render() -> None:
    """The Glossary page: every term the pages use, grouped as the pages are, with a filter; the numbers that depend
    on the decision task are the chosen dataset's."""
    st.title("Glossary")
    path, dataset, _ = current_dataset()
    ontology = da.ontology(path, dataset) if dataset else load_ontology()
    st.caption("The audit's terms as qlb uses them; the same words label the pages' columns and tooltips."
               + ("" if ontology.sha256 == load_ontology().sha256 else
                  " Numbers that depend on the decision task are this dataset's own."))
    needle = st.text_input("Find a term", key="glossary_find", placeholder="e.g. over-flag, review at half cost",
                           help="Shows the terms whose name or explanation contains these words.").strip().lower()
    shown = 0
    for section, terms in sections(ontology):
        hits = [(t, x) for t, x in terms if not needle or needle in t.lower() or needle in x.lower()]
        if not hits:
            continue
        st.subheader(section)
        st.markdown("\n".join(f"- **{md_text(t)}**: {md_text(x)}" for t, x in hits))
        shown += len(hits)
    if not shown:
        st.info(f"No term matches {md_text(needle)}.")


page_entry(render)
