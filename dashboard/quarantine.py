"""Words for the Data page, kept apart from the page so that they are tested without Streamlit: each kind
of file in plain words, the quarantine's counts, and an own ontology's notes worded for an auditor."""
from __future__ import annotations

import re
from typing import Mapping

import pandas as pd

from qlb.present.names import KIND_NOUNS, count_of, listing

# What each kind of file holds, in plain words first and its fields after; TUPLE is named only where it
# is explained (``tuple_sentence``), so a dataset with its own decision task reads no foreign name.
KIND_HELP = {
    "worlds": "Decision cases (worlds), one per line: each a request your model decides, with its allowed "
              "decision class and its protected cause (world_id, pair_id, domain, split, coarse, mechanism, "
              "hypotheses, ...).",
    "responses": "Your model's decisions on those cases, one per line (model, world_id, status, choice, "
                 "probabilities, confidence). Load the worlds first.",
    "refusal": "Your model's answers to the refusal probe (model, world_id, status, choice, scores over the "
               "domain's mechanisms + WITHHOLD).",
    "corpus": "Texts for the QuasiLeak detector audit (doc_id, split, context_id, text, profile, policy, groups, "
              "distractors).",
    "predictions": "What a text detector found in those texts (doc_id, detector, groups). Load the corpus first.",
}


def tuple_sentence(domain_titles: list[str]) -> str:
    """TUPLE explained once, for a dataset that uses it (``domain_titles``: its domains as titled)."""
    titles = [t[0].lower() + t[1:] if t[:2] != "IT" else t for t in domain_titles]
    return ("TUPLE is qlb's built-in decision task, the one of the benchmark's paper: "
            f"{count_of(len(titles), 'domain')} ({listing(titles)}), each with the decision classes a model may "
            "release and the protected causes (mechanisms) behind them")


def lines_by_kind(counts: Mapping[str, int]) -> str:
    """``1 world, 5 native responses``: rejected lines counted per kind of file, singular for one."""
    return ", ".join(count_of(n, *KIND_NOUNS.get(kind, (kind, kind))) for kind, n in counts.items())


def lines(n: int, what: str = "line") -> str:
    """``1 rejected line``, ``2,000 rejected lines``: a count of lines (``count_of``)."""
    return count_of(n, what)


_COLUMN_CLASS = re.compile(r"^(?:.*?: )?cost_profiles\.(?P<profile>[^:]+): class '(?P<cls>[^']+)' is not a class of "
                           r"domains? (?P<domains>.+); there the profile scales no asymmetric column$")
_TUPLE_NAME = re.compile(r"^(?:.*?: )?cost_profiles\.(?P<profile>[^:]+): TUPLE has a profile of this name")


def ontology_note(note: str) -> str:
    """One of an own ontology's notes (``Ontology.notes``: allowed, but worth saying) in an auditor's words:
    what it means for the cost figures of their audit. A note of another form keeps its words, without the
    file name in front."""
    found = _COLUMN_CLASS.match(note)
    if found:
        domains = [d.strip().strip("'") for d in found["domains"].split(",")]
        where = domains[0] if len(domains) == 1 else ", ".join(domains)
        return (f"The cost profile {found['profile']} scales the cost of mistakes whose true class is "
                f"{found['cls']}, but {'domain' if len(domains) == 1 else 'domains'} {where} "
                f"{'has' if len(domains) == 1 else 'have'} no class {found['cls']}: there it scales nothing of that "
                f"kind, so its cost figures for {where} match the authored costs except for any other multiplier "
                "the profile sets. If you meant it to apply there too, name one of that domain's classes in it.")
    found = _TUPLE_NAME.match(note)
    if found:
        return (f"The cost profile {found['profile']} has the name of one of TUPLE's profiles (TUPLE: qlb's "
                "built-in decision task) but other multipliers. The pages say what yours changes; a name of your "
                "own keeps a reader from taking it for TUPLE's.")
    return note.split(": ", 1)[1] if ": " in note else note


def ontology_file_name(source: object) -> str:
    """The file name of an ontology's stored source: ``tenancy.json`` for ``../own/tenancy.json`` (the path was
    typed relative to the shell of whoever ran ``qlb ingest ontology``, so it means nothing on a page); either
    separator, so a Windows path too."""
    text = str(source).strip()
    return re.split(r"[\\/]", text)[-1] or text


def ontology_target(known: pd.DataFrame | None, dataset: str | None, simulated: bool,
                    own: str) -> tuple[str, str | None]:
    """The dataset the "Load an ontology" form proposes, and why when it is not the current one: a dataset with
    worlds keeps its ontology (they were validated against it), so the current dataset (or, when it is simulated
    or there is none, ``own``: a dataset of the user's own) is proposed only while it has no worlds; otherwise the
    first unused ``NAME-2``, ``NAME-3``, ... (the name ``qlb ingest ontology`` suggests). ``known``: the
    ``datasets`` rows (None without a warehouse). The reason is plain text."""
    worlds = {} if known is None else {d: int(n) for d, n in zip(known["dataset_id"], known["worlds"])}
    base = dataset if dataset is not None and not simulated else own
    if not worlds.get(base, 0):
        return base, None
    n = 2
    while f"{base}-{n}" in worlds:
        n += 1
    name = f"{base}-{n}"
    return name, (f"Proposed: {name}, a new dataset. {base} already has {count_of(worlds[base], 'world')}, "
                  "validated against the ontology it uses, so that ontology stays and an upload for it would be "
                  "refused; a new ontology goes into a dataset without worlds, and the worlds written for it are then "
                  "loaded there. Type any name.")


def ontology_notes_title(n: int) -> str:
    """The title of the folded notes on a dataset's own ontology."""
    return f"Notes on your ontology ({count_of(n, 'note')}): what they mean for your cost figures"


def invalid_by_source(shown: pd.DataFrame) -> pd.DataFrame:
    """The invalid responses (``model`` and ``source`` as the page shows them: ``collected (RUN)`` or ``line N
    of FILE``) counted per model and where they came from (the run, or the file without the line), so long
    model names and run ids are read whole on a 1,024 px screen."""
    where = [s if s.startswith("collected") or " of " not in s else s.split(" of ", 1)[1] for s in shown["source"]]
    counted = shown.assign(**{"from": where}).groupby(["model", "from"], sort=True).size()
    return counted.reset_index(name="responses")
