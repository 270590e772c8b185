"""The ``qlb`` command line (CONTRACT.md section 2).

Exit codes: 0 success, 2 bad usage, 3 input had rejected lines, 1 any other failure. Errors are
one line on stderr, never a traceback; ``--json`` prints one JSON document on stdout.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import shlex
import sys
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, Iterator, Sequence

EXIT_OK, EXIT_FAILURE, EXIT_USAGE, EXIT_REJECTED, EXIT_STOPPED = 0, 1, 2, 3, 4


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")

    def parse_known_args(self, args=None, namespace=None):
        # an option the command does not have is its error ("qlb report: error: ..."), with its usage
        # a line above, not the top-level parser's
        namespace, extras = super().parse_known_args(args, namespace)
        if extras:
            self.print_usage(sys.stderr)
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return namespace, extras


def _progress(desc: str, total: int | None):
    from tqdm import tqdm
    return tqdm(total=total, desc=desc, unit="line", file=sys.stderr, disable=None, leave=False,
                dynamic_ncols=True)


def _positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1 (``--jobs``)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not at least 1")
    return value


def _warehouse_arg(p: argparse.ArgumentParser) -> None:
    from warehouse.db import DEFAULT_PATH, ENV_VAR
    p.add_argument("--warehouse", metavar="PATH", default=None,
                   help=f"warehouse file (default: ${ENV_VAR} or {DEFAULT_PATH})")


def build_parser() -> argparse.ArgumentParser:
    """The `qlb` argument parser: every command with its options and help text."""
    from qlb.simulate import DEFAULT_SEED
    from qlb.records.ontology import SPLITS
    from qlb.tuple.learned_wcpq import LEARNED_VARIANTS
    from qlb.tuple.release_views import DECODER_FAMILIES, VIEWS
    from warehouse.ingest import KINDS

    parser = _Parser(prog="qlb", description="qlb: privacy-utility audits of AI decision outputs "
                                             "and privacy detectors.")
    parser.add_argument("-v", "--verbose", action="store_true", help=VERBOSE_HELP)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    demo = sub.add_parser("demo", help="build the simulated reference datasets into the warehouse",
                          description="Generate the SIMULATED reference datasets (TUPLE worlds with nine "
                                      "simulated models; a QuasiLeak corpus), write them as JSON Lines "
                                      "next to the warehouse and ingest them, then run every audit into the "
                                      "warehouse (refusal, QuasiLeak scores, recovery, utility and fronts, defenses: "
                                      "about 5 minutes with --jobs 2 on 2 cores; --no-decoding skips the recovery audit, the "
                                      "fronts and the defenses; --background leaves the audits to a background "
                                      "process). "
                                      "Rerunning with the same seed changes nothing.")
    _warehouse_arg(demo)
    demo.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"simulation seed (default {DEFAULT_SEED})")
    demo.add_argument("--json", action="store_true", help="print a JSON summary on stdout")
    demo.add_argument("--jobs", type=_positive_int, default=2,
                      help="parallel processes for the audits' (model, domain) tasks (at least 1; default 2)")
    demo.add_argument("--no-decoding", action="store_true",
                      help="skip the recovery audit (minutes of work), and so the fronts and defenses")
    demo.add_argument("--ontology", metavar="FILE", type=Path, default=None,
                      help="your own decision task (an ontology file, OWN_TASK.md): generate a SIMULATED "
                           "dataset for it instead (worlds, the nine simulated models' native and refusal "
                           "responses; no QuasiLeak corpus), store it with that ontology and run every audit, "
                           "so the dashboard can be tried on your task before collecting")
    demo.add_argument("--dataset", metavar="NAME", default=None,
                      help="dataset name (default simulated-reference; with --ontology "
                           "simulated-<file stem>); must be new or simulated")
    demo.add_argument("--background", action="store_true",
                      help="store the data (seconds), then run the audits in a detached background process "
                           "(`qlb audit --in-stages`, output in <warehouse>.build.log) that stores each audit as "
                           "it finishes: the dashboard can open at once and fills in; nothing is recomputed "
                           "once a run is complete (scripts/dashboard.sh uses this)")

    from warehouse.ingest import REJECTS_LOCATED
    ingest_kinds = KINDS + tuple(k for k in ("ontology",) if k not in KINDS)
    ing = sub.add_parser("ingest", help="validate and load one file into the warehouse",
                         description="Validate FILE (JSON Lines, CSV or Parquet) as KIND and store it in "
                                     "one transaction. Rejected lines are kept in quarantine and listed "
                                     "on stderr as FILE:LINE: field: reason (exit 3; a reason shared by more "
                                     "than five lines once, at its first line, with how many more and which). "
                                     "The last line names the dataset and the warehouse written ('(new "
                                     "warehouse)' when this command created it). Ingesting the same "
                                     "file twice changes nothing. A file without lines stores nothing "
                                     "(a warning, exit 0); into a dataset that does not exist it is an "
                                     "error (exit 1: it creates no dataset). KIND ontology: FILE is a JSON ontology "
                                     "(your own decision task, shared/spec/OWN_TASK.md) for the dataset; a "
                                     "file that breaks a rule is rejected whole, one line per problem on "
                                     "stderr as FILE: path: problem (exit 3), and nothing is stored. A "
                                     "dataset's ontology can be replaced only while it has no worlds (else "
                                     "exit 2: load it into a new dataset with --dataset NAME); a "
                                     "dataset without one uses the TUPLE ontology.")
    ing.add_argument("kind", choices=ingest_kinds, metavar="KIND", help="one of: " + ", ".join(ingest_kinds))
    ing.add_argument("file", type=Path, metavar="FILE",
                     help="the file to validate and load: JSON Lines (.jsonl), CSV (.csv) or Parquet (.parquet); "
                          "KIND ontology: a JSON file")
    ing.add_argument("--dataset", required=True, metavar="NAME",
                     help="dataset to load into: worlds, corpus and ontology create it if new; responses, refusal "
                          "and predictions need it to exist already (else exit 2)")
    ing.add_argument("--model", metavar="NAME", help="model name for response lines that omit it; "
                                                     "lines naming another model are rejected")
    ing.add_argument("--dry-run", action="store_true", help="validate and report only; write nothing")
    ing.add_argument("--json", action="store_true",
                     help="print the ingest report as JSON on stdout: the counts, invalid_lines (line, field, "
                          "reason of the first invalid responses of each reason) and rejected_lines (file, line, "
                          f"field, reason of the first {REJECTS_LOCATED} rejected lines, in line order; "
                          "rejected_lines_not_listed counts the others)")
    _warehouse_arg(ing)

    aud = sub.add_parser("audit", help="run the audits the dataset's data allows and store them as a run",
                         description="Run every audit the dataset's data allows (refusal, QuasiLeak scores, "
                                     "secret recovery, downstream utility, privacy-utility fronts, and "
                                     "the defense audit, the longest stage, on by default: --no-defenses "
                                     "skips it, --defense-models narrows it) "
                                     "and store the results as one run in the warehouse. Says what it "
                                     "skipped. An earlier run over the same data and parameters is "
                                     "reused unless --force.")
    aud.add_argument("--dataset", metavar="NAME", help="dataset (default: the only one, or simulated-reference)")
    aud.add_argument("--models", nargs="+", metavar="MODEL", help="only these models")
    aud.add_argument("--force", action="store_true", help="always compute a new run")
    aud.add_argument("--views", nargs="+", metavar="VIEW", choices=list(VIEWS),
                     help=f"release views the recovery audit attacks, of {', '.join(VIEWS)} (default: all five)")
    aud.add_argument("--jobs", type=_positive_int, default=None,
                     help="local parallel processes for the (model, domain) tasks (joblib; at least 1; default 1)")
    aud.add_argument("--scheduler", metavar="ADDRESS", default=None,
                     help="run the (model, domain) tasks of the recovery, utility and defense audits on a Dask "
                          "scheduler: its address (HOST:PORT or tcp://HOST:PORT, port 8786 by default; tls://HOST:PORT "
                          "with Dask's TLS settings) or local:N for N worker processes on this machine; connected "
                          "only when there are tasks to run (never for a reused run); only this process reads and "
                          "writes the warehouse; the numbers are those of a local run, and every task checks that "
                          "its worker runs the same qlb (default: $QLB_SCHEDULER unless --jobs is given)")
    aud.add_argument("--families", nargs="+", metavar="FAMILY", choices=list(DECODER_FAMILIES),
                     help="the recovery audit's attacker families (default: all five, "
                          "TUPLE.md section 4; fewer is quicker and recovers less, and the run records which)")
    aud.add_argument("--no-decoding", action="store_true", help="skip the recovery audit (and the fronts and defenses)")
    aud.add_argument("--no-utility", action="store_true",
                     help="skip the downstream utility audit (and the fronts and defenses)")
    aud.add_argument("--no-defenses", action="store_true", help="skip the defense audit")
    aud.add_argument("--defense-models", nargs="+", metavar="MODEL",
                     help="evaluate the defenses on these models only (default: every audited model); each must "
                          "have responses and, with --models, be one of them (else exit 2)")
    aud.add_argument("--defense-families", nargs="+", metavar="FAMILY",
                     choices=list(DECODER_FAMILIES),
                     help="the defense-aware attacker's families (default: prior logistic template; "
                          "all five take several times longer)")
    aud.add_argument("--learned-wcpq", nargs="*", metavar="VARIANT", choices=list(LEARNED_VARIANTS),
                     help="learned bounded-cost WCPQ variants to train and attack (paper H.2): budget 0, 0.2 or 0.5 "
                          "review costs, each with and without the pair loss: 0-no-pair 0-paired 0.2-no-pair 0.2-paired "
                          "0.5-no-pair 0.5-paired "
                          "(default: all six, several minutes on the demo; give the flag alone for none)")
    aud.add_argument("--in-stages", action="store_true",
                     help="store each audit as it finishes (refusal and QuasiLeak; recovery; utility and fronts; "
                          "defenses), opening the warehouse only to read and to store, so the dashboard can read "
                          "meanwhile; its progress goes to <warehouse>.build.json, which pages show (same numbers)")
    aud.add_argument("--json", action="store_true", help="print the run summary as JSON on stdout")
    _warehouse_arg(aud)

    ref = sub.add_parser("refusal", help="refusal audit straight from files (no warehouse)",
                         description="Does selecting WITHHOLD protect the mechanism? Scores refusal "
                                     "responses against their worlds (TUPLE.md section 2). Rejected lines "
                                     "are reported on stderr as FILE:LINE: field: reason (a reason shared by "
                                     "more than five lines once, with how many more and which) and skipped "
                                     "(exit 3).")
    ref.add_argument("--worlds", required=True, type=Path, metavar="FILE",
                     help="the worlds the responses answer (JSON Lines, CSV or Parquet)")
    ref.add_argument("--responses", required=True, type=Path, metavar="FILE",
                     help="refusal responses: a mechanism of the world's domain or WITHHOLD (JSON Lines, CSV or "
                          "Parquet)")
    ref.add_argument("--ontology", type=Path, metavar="FILE",
                     help="the decision task's ontology (OWN_TASK.md; default: the TUPLE ontology)")
    ref.add_argument("--json", action="store_true", help="print the CONTRACT.md JSON on stdout (else a table)")

    dfd = sub.add_parser("defend", help="rewrite a native-response file under a defense",
                         description="Rewrite a native-response file (JSON Lines, CSV or Parquet) under one "
                                     "defense (TUPLE.md section 7): quantize (0.1, largest remainder), "
                                     "top2 (the two highest scores; the others absent, never 0), temperature "
                                     "(tau = 2), noise (Gaussian, sigma 0.05, --seed), or wcpq (the strict "
                                     "workflow-constrained quantizer against the frozen full-native policies of a "
                                     "stored run, one per task and cost profile (18 for TUPLE): needs --worlds, "
                                     "and reads the run from the warehouse: --run, default the newest run with "
                                     "utility results). Choice and "
                                     "confidence are kept (WCPQ sets confidence to the codeword's maximum). "
                                     "Unavailable and invalid responses pass through unchanged. Writes JSON "
                                     "Lines. Rejected lines on stderr as FILE:LINE: field: reason (a reason shared by "
                                     "more than five lines once, with how many more and which; exit 3).")
    dfd.add_argument("--method", required=True, choices=["quantize", "top2", "temperature", "noise", "wcpq"],
                     help="the defense: quantize, top2, temperature, noise or wcpq (see above)")
    dfd.add_argument("--in", dest="in_file", required=True, type=Path, metavar="FILE",
                     help="native responses to defend (JSON Lines, CSV or Parquet)")
    dfd.add_argument("--out", dest="out_file", required=True, type=Path, metavar="FILE",
                     help="where to write the defended responses (JSON Lines); never --in, --worlds or --ontology "
                          "(bad usage); a folder of it that does not exist is created")
    dfd.add_argument("--seed", type=int, default=20261011, help="noise seed (default 20261011; the paper's "
                                                                "are 20261011-20261013)")
    dfd.add_argument("--worlds", type=Path, metavar="FILE",
                     help="worlds file: the public candidate order (else the order of the probability keys)")
    dfd.add_argument("--run", metavar="ID", help="wcpq: the stored audit run whose frozen policies to use "
                                                 "(default: the newest run with utility results)")
    dfd.add_argument("--dataset", metavar="NAME", help="wcpq: dataset of the run (default: the only one)")
    dfd.add_argument("--json", action="store_true", help="print a summary as JSON on stdout")
    dfd.add_argument("--ontology", type=Path, metavar="FILE",
                     help="the decision task's ontology for --worlds (OWN_TASK.md; default: the TUPLE ontology)")
    _warehouse_arg(dfd)

    rep = sub.add_parser("report", help="one self-contained HTML (or PDF) report of an audit run",
                         description="Write one self-contained HTML file (works offline) with the headline "
                                     "findings, the main figures (interactive), the key tables and the "
                                     "provenance of a stored audit run; or, with --out FILE.pdf, the same report "
                                     "printed to an A4 PDF by a local Chromium or Google Chrome (found on the "
                                     "PATH, or set QLB_CHROMIUM to its executable).")
    rep.add_argument("--run", metavar="ID", help="audit run (default: the newest, most complete run)")
    rep.add_argument("--dataset", metavar="NAME", help="pick the default run among this dataset's runs (with --run: "
                                                       "the run must be one of this dataset's)")
    rep.add_argument("--out", required=True, type=Path, metavar="FILE.html|FILE.pdf",
                     help="the file to write, HTML or PDF by its suffix (replaced if it exists; a folder of it that "
                          "does not exist is created)")
    _warehouse_arg(rep)

    mig = sub.add_parser("migrate", help="bring an older warehouse's tables up to this version of qlb",
                         description="Apply the schema migrations a warehouse written by an older qlb lacks "
                                     "(every qlb command that writes does this too; the dashboard reads "
                                     "only, so after an upgrade run this once before opening it). Stored "
                                     "data and runs are kept.")
    _warehouse_arg(mig)

    ql = sub.add_parser("quasileak", help="QuasiLeak detector scoring and runs",
                        description="Score privacy detectors on policy-conditioned quasi-evidence group "
                                    "recovery (QUASILEAK.md).")
    qsub = ql.add_subparsers(dest="ql_command", metavar="SUBCOMMAND", parser_class=_Parser)
    qsub.required = True
    qs = qsub.add_parser("score", help="score predictions against a corpus, straight from files",
                         description="Group-aware, policy-conditioned scores of every detector in the "
                                     "predictions file. Rejected lines (in either file; a prediction whose group "
                                     "names an attribute the corpus does not label, too) are reported on stderr as "
                                     "FILE:LINE: field: reason (a reason shared by more than five lines once, with "
                                     "how many more and which) and skipped (exit 3).")
    qs.add_argument("--corpus", required=True, type=Path, metavar="FILE",
                    help="the QuasiLeak corpus: documents with policies and gold groups (JSON Lines, CSV or Parquet)")
    qs.add_argument("--predictions", required=True, type=Path, metavar="FILE",
                    help="detector predictions for the corpus's documents, any number of detectors (JSON Lines, CSV "
                         "or Parquet)")
    qs.add_argument("--split", default=None, choices=SPLITS, help="score one split only (default: every document)")
    qs.add_argument("--json", action="store_true", help="print the CONTRACT.md JSON on stdout (else a table)")
    qv = qsub.add_parser("verify", help="the construction check: is each group weak cue by cue and revealing "
                                        "as a whole?",
                         description="Screen candidate quasi-evidence groups with a verifier's confidences attached "
                                     "(QUASILEAK.md section 2): lift L = (conf - 1/n_values) / (1 - 1/n_values), "
                                     "clipped to [0, 1]; a group is verified when every single cue's lift is at "
                                     "most --tau-weak and the whole group's is at least --tau-reveal. Each line: "
                                     "doc_id, attribute, n_values, cue_confidences (one per cue), "
                                     "group_confidence. Rejected lines on stderr as FILE:LINE: field: reason "
                                     "(exit 3).")
    qv.add_argument("--groups", required=True, type=Path, metavar="FILE",
                    help="JSON Lines, CSV or Parquet, one candidate group per line")
    qv.add_argument("--tau-weak", type=float, default=0.35, help="largest lift a single cue may have (default 0.35)")
    qv.add_argument("--tau-reveal", type=float, default=0.70,
                    help="smallest lift the whole group must have (default 0.70)")
    qv.add_argument("--json", action="store_true", help="print every verdict as JSON on stdout (else a table)")
    qr = qsub.add_parser("run", help="run a detector on a stored corpus and store predictions and scores",
                         description="Run a built-in detector (or an OpenAI-compatible chat endpoint with "
                                     "--detector chat, named chat:ENDPOINT_MODEL, or a local Python function with "
                                     "--detector python --target MODULE:FUNCTION, named python:MODULE.FUNCTION) on "
                                     "the dataset's corpus, store its predictions, then score every detector into a "
                                     "new audit run and print their leaderboard. Documents the detector failed on "
                                     "are listed by reason and count as reporting nothing; when every document "
                                     "failed, or the first five failed alike, or the endpoint stopped answering, "
                                     "nothing is stored (exit 1).")
    qr.add_argument("--detector", required=True, metavar="NAME",
                    help="pattern-pii, lexicon-cues, sim-det-strong, sim-det-local, sim-det-binder, chat or python")
    qr.add_argument("--target", metavar="MODULE:FUNCTION",
                    help="--detector python: the function called once per document with one dict (profile, policy, "
                         "message) that returns {\"groups\": [...]}: module:function importable from the current "
                         "folder or the Python path, or path/to/file.py:function")
    qr.add_argument("--split", default="test", choices=(*SPLITS, "all"),
                    help="corpus split to run on (default test; 'all' for every document)")
    qr.add_argument("--dataset", metavar="NAME",
                    help="dataset whose stored corpus to run on (default: the only one, or simulated-reference)")
    qr.add_argument("--base-url", help="chat endpoint base URL, e.g. http://127.0.0.1:8080/v1 (requests go to "
                                       "URL/chat/completions)")
    qr.add_argument("--endpoint-model", help="model name the endpoint serves")
    qr.add_argument("--api-key-env", default="QLB_API_KEY", help="environment variable holding the API key")
    qr.add_argument("--timeout", type=float, default=60.0, help="seconds per request (default 60)")
    _warehouse_arg(qr)
    qf = qsub.add_parser("forget", help="remove a detector's stored predictions from a dataset",
                         description="Remove a detector's stored predictions from the dataset (a trial version, a "
                                     "detector whose endpoint failed): the next `qlb audit` or `qlb quasileak run` "
                                     "no longer scores it and the newest leaderboard no longer lists it. Runs "
                                     "already stored keep its scores: a run is the record of what it scored.")
    qf.add_argument("--detector", required=True, metavar="NAME", help="the detector, as the leaderboard names it")
    qf.add_argument("--dataset", metavar="NAME", help="dataset (default: the only one, or simulated-reference)")
    _warehouse_arg(qf)
    _collect_parser(sub)
    _verbose_everywhere(parser)
    return parser


VERBOSE_HELP = "log progress details to stderr (also accepted after the command)"


def _verbose_everywhere(parser: argparse.ArgumentParser) -> None:
    """``-v`` after the command too (``qlb collect ... -v``) as before it (``qlb -v collect ...``):
    every command's parser takes it, with no default of its own, so that the top-level one stands
    when it is not repeated there."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in dict.fromkeys(action.choices.values()):       # aliases share a parser
                child.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
                                   help=VERBOSE_HELP)
                _verbose_everywhere(child)


def _collect_parser(sub) -> None:
    from qlb.records.ontology import SPLITS
    col = sub.add_parser(
        "collect", help="ask a real model about every world of a dataset and store its answers",
        description="Ask a model (a typed-decision endpoint, an OpenAI-compatible chat server, or a local Python "
                    "function) about every world of the dataset, once, and store its answers through the same "
                    "validation as `qlb ingest` (COLLECT.md). Rerunning the same command resumes: a world with a "
                    "stored answer is never asked again. Under the summary it prints the most frequent reasons "
                    "why answers are not valid (count, reason, an example world).",
        epilog="exit codes:\n"
               "  0  done (if answers were stored but not one is valid, a warning on stderr says so and what to "
               "fix, then rerun with --replace-invalid)\n"
               "  1  another failure\n"
               "  2  bad usage (an unknown dataset, a --target that cannot be imported, ...)\n"
               "  4  stopped early: an HTTP 408/429/5xx, a timeout or a connection error (typed, openai), or the "
               "python target raised\n"
               "     (its file, line and function named; -v logs the whole traceback), or Ctrl+C or SIGTERM; the "
               "answers so far are kept and the same command resumes\n\n"
               "examples:\n"
               "  qlb collect native --dataset mine --model m1 --transport typed --base-url http://127.0.0.1:8000\n"
               "  qlb collect native --dataset mine --model m1 --transport openai --base-url http://127.0.0.1:8080/v1 "
               "--endpoint-model llama3 --answer letters\n"
               "  qlb collect refusal --dataset mine --model m1 --transport python "
               "--target qlb.examples.triage_model:answer\n"
               "  qlb collect native --dataset mine --model m1 m2 m3 --transport openai --base-url "
               "http://127.0.0.1:8080/v1 --endpoint-model llama3 qwen3 gemma3   (three models at once)",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    col.add_argument("probe", choices=["native", "refusal"],
                     help="native: the coarse decision; refusal: the fine mechanism or WITHHOLD")
    col.add_argument("--dataset", required=True, metavar="NAME", help="dataset whose worlds are asked")
    col.add_argument("--model", required=True, nargs="+", metavar="NAME",
                     help="the model's name in the warehouse; several names collect those models at once, each "
                          "its own collection with its own --concurrency requests in flight")
    col.add_argument("--transport", required=True, choices=["typed", "openai", "python"],
                     help="typed: POST the typed request body to --base-url plus --path; openai: an OpenAI-compatible "
                          "chat server (--base-url, --endpoint-model); python: call --target in this process")
    col.add_argument("--base-url", nargs="+", metavar="URL",
                     help="endpoint base URL (typed, openai), http:// or https://, e.g. http://HOST:PORT/v1 for an "
                          "OpenAI-compatible server; the request path is appended to its path and its query "
                          "(?api-version=...) kept; a credential in it is masked wherever it is stored or shown, "
                          "but --api-key-env is the place for a key; with several models one for all or one per "
                          "--model")
    col.add_argument("--path", default="/v1/decisions", metavar="P",
                     help="typed: request path, appended to the base URL's path (default /v1/decisions)")
    col.add_argument("--endpoint-model", nargs="+", metavar="M",
                     help="the model name sent in the request (openai: required); one for all or one per --model")
    col.add_argument("--api-key-env", metavar="VAR",
                     help="environment variable holding an API key (sent as a bearer token; never stored or printed)")
    col.add_argument("--answer", choices=["json", "letters"], default=None,
                     help="openai only: a JSON answer (default) or one letter with top_logprobs")
    col.add_argument("--no-schema", action="store_true",
                     help="openai --answer json only: do not send a JSON schema")
    col.add_argument("--target", nargs="+", metavar="MODULE:FUNCTION",
                     help="python: the function called with each request body, as MODULE:FUNCTION with the module "
                          "importable from the current folder or the Python path (mymodel:decide for ./mymodel.py, "
                          "pkg.mod:decide), or as the path of an existing .py file (./mymodel.py:decide); one for "
                          "all or one per --model")
    col.add_argument("--split", nargs="+", metavar="S", choices=SPLITS,
                     help=f"only these splits, of {', '.join(SPLITS)} (default: every world)")
    col.add_argument("--limit", type=int, metavar="N", help="ask at most N worlds this time")
    col.add_argument("--interval", type=float, default=0.0, metavar="S",
                     help="seconds between dispatches (default 0)")
    col.add_argument("--timeout", type=float, default=180.0, metavar="S", help="seconds per request (default 180)")
    col.add_argument("--concurrency", type=int, default=1, metavar="N",
                     help="requests in flight (default 1, as in the paper)")
    col.add_argument("--retries", type=int, default=0, metavar="N",
                     help="retry 408/429/5xx/timeouts/connection errors N times with exponential backoff "
                          "(honours Retry-After; default 0)")
    col.add_argument("--replace-invalid", action="store_true",
                     help="ask again only the worlds whose stored answer is invalid or unavailable (the earlier "
                          "answer is kept as history; worlds without a stored answer are not asked)")
    col.add_argument("--show-request", action="store_true",
                     help="print the request body for the first world that would be asked (every world answered: the "
                          "one its first world was asked with), and ask nothing (the "
                          "python --target need not be importable yet, nor the --api-key-env variable set)")
    col.add_argument("--json", action="store_true",
                     help="print the summary as JSON: the COLLECT.md keys, then skipped_unanswered, left_for_later, "
                          "not_reached (worlds the stop left unanswered) and reasons (the 10 most frequent: outcome, reason, count, example_world)")
    _warehouse_arg(col)


# the audit engine names its parameters; the command line speaks of the flags that set them
FLAG_WORDS = {"(decode=False)": "(--no-decoding)", "(utility=False)": "(--no-utility)",
              "(defenses=False)": "(--no-defenses)"}


def _in_flag_words(why: str) -> str:
    """A skipped audit's reason with the engine's parameter names put as the user's flags."""
    for engine, flag in FLAG_WORDS.items():
        why = why.replace(engine, flag)
    return why


# the audit stages and skips in the words the pages use (the code's identifiers stay "decoding")
STAGE_WORDS = {"decoding": "recovery"}


def _stage_words(label: str) -> str:
    """A progress label or skipped audit (``decoding``, ``decoding: detail``) in the pages' words."""
    stage, colon, rest = label.partition(":")
    return STAGE_WORDS.get(stage, stage) + colon + rest


class _BuildBar:
    """`qlb demo`'s progress on stderr: one bar for the whole build (labels "<stage>[: detail]",
    positions that only grow, an ETA from the mean rate since the start), or, when stderr is not
    a terminal, one plain line per stage."""

    def __init__(self) -> None:
        from tqdm import tqdm
        self.bar = tqdm(total=1, desc="qlb demo", file=sys.stderr, disable=None, leave=False, dynamic_ncols=True,
                        smoothing=0, bar_format="{desc} {percentage:3.0f}%|{bar}| {elapsed}<{remaining}")
        self.stage = ""

    def __call__(self, label: str, done: int, total: int) -> None:
        label = _stage_words(label)
        stage = label.partition(":")[0]
        if self.bar.disable:
            if stage != self.stage:
                print(f"qlb demo: {stage} ({_build_share(done, total)})", file=sys.stderr, flush=True)
        else:
            self.bar.total = total
            self.bar.set_description_str(label, refresh=False)
            self.bar.update(done - self.bar.n)
            if stage != self.stage:
                self.bar.refresh()
        self.stage = stage

    def close(self) -> None:
        self.bar.close()


def _build_share(done: int, total: int) -> str:
    """How much of the build is done, as a percentage: "<1%" once it has started but not reached 1%
    (the first stages take seconds of a build of minutes), never a "0%" that looks stuck."""
    share = 100 * done / max(total, 1)
    return "0%" if done <= 0 else "<1%" if share < 1 else f"{int(share)}%"


def _cmd_demo(args: argparse.Namespace) -> int:
    from qlb.demo import build_demo
    from qlb.records.ontology import OntologyError
    from warehouse.db import default_path
    from warehouse.ontologies import OntologyInUse

    path = args.warehouse or default_path()
    if args.ontology is not None and not args.ontology.is_file():
        raise _UserError(f"{args.ontology}: no such file")
    _check_demo_dataset(path, args.dataset)
    bar = _BuildBar()
    try:
        result = build_demo(path, args.seed, bar, decode=not args.no_decoding, jobs=args.jobs,
                            ontology_path=args.ontology, dataset=args.dataset, background=args.background)
    except OntologyInUse as exc:     # a dataset whose worlds use another ontology: choose another --dataset
        raise _UsageError(" ".join(exc.problems)) from None
    except OntologyError as exc:     # a broken file
        raise _RejectedInput(exc.problems) from None
    finally:
        bar.close()
    summary = {"dataset": result.dataset_id, "simulated": True, "warehouse": str(path),
               "exports": str(result.export_dir), "ingests": {},
               "run_id": result.run.run_id if result.run else None, "background_pid": result.background_pid,
               "audit": result.run.to_json() if result.run else None}
    for kind, r in result.ingests.items():
        summary["ingests"][kind] = {"ingest_id": r.ingest_id, "already_ingested": r.duplicate,
                                    "accepted": len(r.report.accepted), "invalid": r.report.n_invalid,
                                    "rejected": len(r.report.rejects)}
    worlds_file = Path(result.export_dir) / "worlds.jsonl" if args.ontology is not None else None
    if worlds_file is not None:
        summary["worlds_file"] = str(worlds_file)
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(f"SIMULATED dataset {result.dataset_id!r} in {path}")
        for kind, s in summary["ingests"].items():
            state = "already ingested, unchanged" if s["already_ingested"] else (
                f"{s['accepted']} accepted ({s['invalid']} invalid kept), {s['rejected']} quarantined")
            print(f"  {kind:<10} {state}")
        print("Quarantined lines are planted on purpose to exercise the quarantine; "
              "see the Data page or `qlb ingest --dry-run`.")
        if args.background:
            print(f"audits: in the background (pid {result.background_pid}; output in {path}.build.log); "
                  "the dashboard fills in as each is stored" if result.background_pid else
                  "audits: a background audit is already running on this warehouse")
        if result.run is not None:
            state = "reused" if result.run.reused else "stored"
            print(f"audit run {result.run.run_id} {state}")
            for name, why in result.run.skipped.items():
                print(f"skipped {_stage_words(name)}: {_in_flag_words(why)}")
        if worlds_file is not None:
            print("\n".join(_own_worlds_next_steps(worlds_file, args.ontology, str(path))))
    return EXIT_OK


def _check_demo_dataset(path: str, dataset: str | None) -> None:
    """`qlb demo --dataset NAME` writes simulated data: into a new or a simulated dataset only, never
    into real data (bad usage, checked before anything is generated or written)."""
    from warehouse import queries
    from warehouse.db import reader

    if dataset is None or not Path(path).exists():
        return
    with reader(path) as con:
        existing = queries.fetch_df(con, "dataset_by_id", [dataset])
    if not existing.empty and not bool(existing["simulated"].iloc[0]):
        raise _UsageError(f"--dataset {dataset!r} exists and holds real (not simulated) data; the demo writes "
                          "simulated data into a new or simulated dataset only: choose another --dataset")


def _own_worlds_next_steps(worlds_file: Path, ontology: Path, warehouse: str) -> list[str]:
    """Where `qlb demo --ontology` wrote the simulated worlds of the user's task, and the commands
    that load them into a dataset of the user's own and collect a real model's answers on them."""
    def command(*words: str) -> str:
        return "  " + shlex.join(["qlb", *words])
    return [f"SIMULATED worlds for your task: {worlds_file}",
            "to collect your own model's answers on them, load them into a dataset of your own (NAME), the "
            "ontology first:",
            command("ingest", "ontology", str(ontology), "--dataset", "NAME", "--warehouse", warehouse),
            command("ingest", "worlds", str(worlds_file), "--dataset", "NAME", "--warehouse", warehouse),
            command("collect", "native", "--dataset", "NAME", "--model", "MODEL", "--transport", "openai",
                    "--base-url", "http://HOST:PORT/v1", "--endpoint-model", "M", "--warehouse", warehouse)]


def _cmd_ingest_ontology(args: argparse.Namespace) -> int:
    """`qlb ingest ontology FILE --dataset NAME`: validate the whole file, then attach it to the dataset."""
    from qlb.records.ontology import OntologyError, decode_ontology_bytes, parse_ontology
    from warehouse.db import default_path, open_reader, writer
    from warehouse.ontologies import OntologyInUse, replace_problem, store_ontology

    if args.model:
        raise _UsageError("--model does not apply to an ontology")
    path = args.warehouse or default_path()
    if not args.file.is_file():
        raise _UserError(f"{args.file}: no such file")
    source = str(args.file)
    new_warehouse = not Path(path).exists()
    out = {"file": source, "kind": "ontology", "dataset": args.dataset, "dry_run": args.dry_run,
           "sha256": None, "changed": None, "domains": None, "classes": None, "mechanisms": None,
           "notes": [], "problems": [], "warehouse": str(path),
           "new_warehouse": new_warehouse and not args.dry_run}
    try:
        text = decode_ontology_bytes(args.file.read_bytes(), source)
        onto = parse_ontology(text, source)
        out.update(sha256=onto.sha256, domains=len(onto.domains),
                   classes=sum(len(d.classes) for d in onto.domains.values()),
                   mechanisms=sum(len(d.mechanisms) for d in onto.domains.values()), notes=list(onto.notes))
        if args.dry_run:
            if Path(path).exists():
                con = open_reader(path)
                try:
                    refused = replace_problem(con, args.dataset, onto.sha256, source)
                finally:
                    con.close()
                if refused:
                    raise OntologyInUse([refused])
        else:
            with writer(path) as con:
                _, out["changed"] = store_ontology(con, args.dataset, text, source)
    except OntologyError as exc:
        # a file that breaks a rule is rejected input (3); a valid file the dataset cannot take is a
        # --dataset that cannot be used here (2, as README's exit codes have it for a wrong --dataset)
        in_use = isinstance(exc, OntologyInUse)
        out["problems"] = list(exc.problems)
        for line in exc.problems:
            print(f"qlb ingest: error: {line}" if in_use else line, file=sys.stderr)
        if args.json:
            print(json.dumps(out, indent=2))
        return EXIT_USAGE if in_use else EXIT_REJECTED
    for note in out["notes"]:
        print(f"note: {note}", file=sys.stderr)
    if args.json:
        print(json.dumps(out, indent=2))
        return EXIT_OK
    counts = (f"{_plural(out['domains'], 'domain')}, {_plural(out['classes'], 'class', 'classes')}, "
              f"{_plural(out['mechanisms'], 'mechanism')}")
    if args.dry_run:
        print(f"{source}: valid ontology {onto.sha256} ({counts}); would be the ontology of dataset "
              f"{args.dataset!r}; nothing written")
    elif out["changed"] is False:
        print(f"{source}: ontology {onto.sha256} ({counts}) unchanged: dataset {args.dataset!r} already uses it "
              f"(warehouse {path})")
    else:
        print(f"{source}: ontology {onto.sha256} ({counts}) -> dataset {args.dataset!r}, "
              f"{_warehouse_words(path, new_warehouse)}")
    return EXIT_OK


def _warehouse_words(path: str, new: bool) -> str:
    """Which warehouse an ingest wrote: ``warehouse PATH``, and ``(new warehouse)`` when this command
    created the file (a mistyped --warehouse would otherwise pass unnoticed)."""
    return f"warehouse {path}" + (" (new warehouse)" if new else "")


NEEDS_FIRST = {"responses": "worlds", "refusal": "worlds", "predictions": "corpus"}    # kind -> what it refers to


def _check_dataset_exists(path: str, dataset: str, kind: str) -> None:
    """Responses and predictions refer to a dataset's worlds or documents: into a dataset that is not
    there (a typo, most often) every line would be quarantined, so say it in one line instead."""
    from warehouse.db import reader

    hint = (f"; {kind} refer to its {NEEDS_FIRST[kind]}: ingest those first "
            f"(`qlb ingest {NEEDS_FIRST[kind]} FILE --dataset {dataset}`)")
    if not Path(path).exists():
        raise _UsageError(f"no dataset {dataset!r}: {path} holds no warehouse yet" + hint)
    with reader(path) as con:
        _resolve_dataset(con, dataset, hint)


def _datasets_before(con, dataset: str) -> tuple[list[str], int, bool]:
    """Before an ingest, on its own connection (the writer, which brings an older warehouse up to
    date first; None: no warehouse yet): the warehouse's datasets, the worlds ``dataset`` has, and
    whether it has an ontology of its own."""
    from warehouse import queries
    from warehouse.ontologies import stored_ontology

    if con is None:
        return [], 0, False
    datasets = queries.fetch_df(con, "datasets")
    known = datasets["dataset_id"].tolist()
    if dataset not in known:
        return known, 0, False
    worlds = int(datasets.loc[datasets["dataset_id"] == dataset, "worlds"].iloc[0])
    return known, worlds, stored_ontology(con, dataset) is not None


def _foreign_domains_hint(dataset: str, foreign: dict[str, int], datasets: list[str], worlds: int) -> str:
    """One paragraph for worlds whose domains the built-in TUPLE ontology lacks, ingested into a
    dataset without an ontology of its own (a mistyped --dataset, or the ontology step forgotten)."""
    from qlb.records.ontology import load_ontology

    new = dataset not in datasets
    named = ", ".join(f"{d} ({_plural(n, 'line')})" for d, n in foreign.items())
    text = (f"qlb ingest: dataset {dataset!r} " + ("is new, so it" if new else "has no ontology of its own: it")
            + f" uses the built-in TUPLE ontology (domains {', '.join(load_ontology().domains)}), which lacks "
            f"the domain{'s' if len(foreign) > 1 else ''} these worlds name: {named}. ")
    if worlds == 0:
        text += (f"If they are your own decision task, attach its ontology first, then ingest this file again: "
                 f"`{shlex.join(['qlb', 'ingest', 'ontology', 'FILE', '--dataset', dataset])}`.")
    else:
        text += ("A dataset with worlds keeps its ontology: ingest them into a new dataset, its ontology "
                 "attached first (`qlb ingest ontology FILE --dataset NEW`).")
    near = _close_name(dataset, datasets)
    if near:
        text += f" Or did you mean dataset {near!r}?"
    return text


def _ingest_empty_file(args: argparse.Namespace, path: str) -> int:
    """`qlb ingest` of a file without lines (empty, blank lines only, a CSV header alone, a Parquet
    file without rows) into a dataset that exists: a warning on stderr, nothing stored, no ingest
    recorded, exit 0 (CONTRACT.md names no exit code for it; nothing was rejected). Into a dataset
    that does not exist it is a failure (exit 1): the file creates nothing, and a script that went
    on would meet a missing dataset at its next step. The warehouse is only read."""
    from qlb.records.readers import detect_format, file_sha256

    fmt = detect_format(args.file)
    what = ("the file is empty" if args.file.stat().st_size == 0
            else {"csv": "a header and no rows", "parquet": "no rows"}.get(fmt, "blank lines only"))
    datasets = _datasets_in(path)
    if datasets is None or args.dataset not in datasets:
        where = (f"{path} holds no warehouse yet" if datasets is None
                 else f"the warehouse {path} has {', '.join(datasets) or 'none'}")
        raise _UserError(f"{args.file} holds no lines ({what}): nothing {'would be ' if args.dry_run else ''}"
                         f"stored, and dataset {args.dataset!r} does not exist ({where}); a file without lines "
                         "creates no dataset")
    print(f"qlb ingest: warning: {args.file} holds no lines ({what}); "
          + ("nothing would be stored" if args.dry_run else "nothing stored, no ingest recorded"), file=sys.stderr)
    if args.json:
        print(json.dumps({"file": str(args.file), "kind": args.kind, "dataset": args.dataset, "ingest_id": None,
                          "already_ingested": False, "dry_run": args.dry_run, "lines": 0, "accepted": 0,
                          "invalid": 0, "rejected": 0, "sha256": file_sha256(args.file), "warehouse": str(path),
                          "new_warehouse": False, "new_dataset": False, "already_stored": 0, "empty_file": True,
                          "quarantine_cleared": 0, "invalid_lines": [], "rejected_lines": [],
                          "rejected_lines_not_listed": 0}, indent=2))
    return EXIT_OK


def _datasets_in(path: str) -> list[str] | None:
    """The datasets of the warehouse at ``path``, read only; None when there is no warehouse."""
    from warehouse import queries
    from warehouse.db import reader

    if not Path(path).exists():
        return None
    with reader(path) as con:
        return queries.fetch_df(con, "datasets")["dataset_id"].tolist()


def _cmd_ingest(args: argparse.Namespace) -> int:
    from qlb.records.schemas import dataset_name_problem

    problem = dataset_name_problem(args.dataset)
    if problem:
        raise _UsageError(f"--dataset: {problem}")
    if args.kind == "ontology":
        return _cmd_ingest_ontology(args)
    from warehouse.db import default_path, open_reader, writer
    from qlb.records.readers import count_lines, detect_format, has_lines, whole_file_problem
    from warehouse.ingest import (IngestRequest, coverage_of_detectors, detectors_of_ingest, ingest_file,
                                  validate_file)
    from warehouse import queries

    path = args.warehouse or default_path()
    if args.file.is_dir():
        raise _UserError(f"{args.file}: is a directory, not a file (name one file to ingest)")
    if not args.file.is_file():
        raise _UserError(f"{args.file}: no such file" if not args.file.exists() else f"{args.file}: not a regular file")
    try:
        file_format = detect_format(args.file)
    except ValueError as exc:                   # the name says no format: bad usage, like an unknown kind
        raise _UsageError(str(exc)) from None
    if args.kind in NEEDS_FIRST:                # first: an empty file into a dataset not there is that error too
        _check_dataset_exists(path, args.dataset, args.kind)
    if not has_lines(args.file, file_format):
        return _ingest_empty_file(args, path)
    new_warehouse = not Path(path).exists()
    bar = _progress(args.file.name, count_lines(args.file))

    def progress(n: int) -> None:
        bar.update(n - bar.n)

    if args.dry_run:
        con = open_reader(path) if Path(path).exists() else None
        try:
            datasets, worlds_before, own_ontology = _datasets_before(con, args.dataset)
            report = validate_file(con, IngestRequest(args.kind, args.file, args.dataset, model=args.model), progress=progress)
            coverage = (coverage_of_detectors(con, args.dataset, report.detectors,
                                              [(p.detector, p.doc_id) for _, p in report.accepted])
                        if args.kind == "predictions" and con is not None else None)
        finally:
            if con is not None:
                con.close()
        ingest_id, duplicate, unpaired = None, False, None
    else:
        with writer(path) as con:
            datasets, worlds_before, own_ontology = _datasets_before(con, args.dataset)
            result = ingest_file(con, IngestRequest(args.kind, args.file, args.dataset, model=args.model), progress=progress)
            unpaired = (queries.fetch_df(con, "unpaired_worlds", [args.dataset]) if args.kind == "worlds" else None)
            coverage = (coverage_of_detectors(con, args.dataset, detectors_of_ingest(con, result.ingest_id)
                                              if result.duplicate else result.report.detectors)
                        if args.kind == "predictions" else None)
        report, ingest_id, duplicate = result.report, result.ingest_id, result.duplicate
    bar.close()
    for msg in report.messages(group_repeats=True) + report.invalid_messages():
        print(msg, file=sys.stderr)
    cause = whole_file_problem(args.file, file_format) if report.rejects else None
    if cause:
        print(f"qlb ingest: hint: {cause}", file=sys.stderr)
    if unpaired is not None and not unpaired.empty:
        print(_unpaired_warning(args.dataset, unpaired), file=sys.stderr)
    for cov in coverage or ():
        if _partial_splits(cov):
            print(_coverage_warning(args.dataset, cov, args.dry_run), file=sys.stderr)
    if args.kind == "worlds" and report.foreign_domains and not own_ontology:
        worlds_now = worlds_before + (0 if args.dry_run or duplicate else len(report.accepted))   # some may be in
        print(_foreign_domains_hint(args.dataset, report.foreign_domains, datasets, worlds_now), file=sys.stderr)
    out = {"file": str(args.file), "kind": args.kind, "dataset": args.dataset, "ingest_id": ingest_id,
           "already_ingested": duplicate, "dry_run": args.dry_run, "lines": report.n_lines,
           "accepted": len(report.accepted), "invalid": report.n_invalid, "rejected": len(report.rejects),
           "sha256": report.sha256, "warehouse": str(path), "new_warehouse": new_warehouse and not args.dry_run,
           "new_dataset": args.dataset not in datasets and not args.dry_run and not duplicate,
           "already_stored": report.already_stored, "empty_file": False,
           "quarantine_cleared": report.cleared_rejects, "invalid_lines": report.invalid_located()}
    out["rejected_lines"], out["rejected_lines_not_listed"] = report.rejects_located()
    if unpaired is not None:
        out["unpaired_worlds"] = len(unpaired)
    if coverage is not None:
        out["detector_coverage"] = [
            {"detector": c.detector, "predicted": c.predicted, "documents": c.documents,
             "splits": {split: {"predicted": k, "documents": n} for split, (k, n) in _in_split_order(c.by_split)},
             "partial_splits": _partial_splits(c)} for c in coverage]
    if args.json:
        print(json.dumps(out, indent=2))
        return EXIT_REJECTED if report.rejects else EXIT_OK
    for cov in coverage or ():
        print(_coverage_line(cov, args.dry_run))
    if coverage and not args.dry_run and not duplicate:      # an ingest stores predictions; an audit scores them
        print(f"score them: {_audit_command(args.dataset, args.warehouse)} (every detector of the dataset into a new "
              "run, its leaderboard printed), or Recompute now on the QuasiLeak page")
    if duplicate:
        print(f"{args.file}: already ingested into {args.dataset!r} as ingest #{ingest_id} "
              f"(same sha256); nothing changed (warehouse {path})")
    else:
        stored = f"{'would store' if args.dry_run else 'stored'} {len(report.accepted):,}"
        if args.kind == "responses":
            stored += (f" ({report.n_invalid:,} of them invalid: kept with valid = false, the audits read them as "
                       "unavailable)" if report.n_invalid else " (all valid)")
        if report.already_stored:
            stored += f"; {report.already_stored:,} already stored (the same values; skipped)"
        rejected = f"{len(report.rejects):,} rejected" + (" (kept in the quarantine with their text)"
                                                           if report.rejects and not args.dry_run else "")
        if report.cleared_rejects:
            rejected += (f"; {_plural(report.cleared_rejects, 'quarantined line')} of earlier ingests cleared "
                         "(this file stored their keys)")
        where = (f"; dry run, nothing written (checked against {path})" if args.dry_run and not new_warehouse
                 else "; dry run, nothing written" if args.dry_run
                 else f" -> dataset {args.dataset!r} unchanged: nothing new, no ingest recorded "
                      f"({_warehouse_words(path, new_warehouse)})" if ingest_id is None
                 else f" -> {'new ' if out['new_dataset'] else ''}dataset {args.dataset!r}, ingest #{ingest_id}, "
                      f"{_warehouse_words(path, new_warehouse)}")
        print(f"{args.file}: {_plural(report.n_lines, 'line')}; {stored}; {rejected}{where}")
    return EXIT_REJECTED if report.rejects else EXIT_OK


def _in_split_order(by_split: dict[str, tuple[int, int]]) -> list[tuple[str, tuple[int, int]]]:
    """A detector's coverage per split, in the order train, validation, test (another split last)."""
    from qlb.records.ontology import SPLITS

    return sorted(by_split.items(), key=lambda item: (SPLITS.index(item[0]) if item[0] in SPLITS else len(SPLITS),
                                                      item[0]))


def _partial_splits(cov) -> list[str]:
    """The splits whose documents a detector (``DetectorCoverage``) does not all have predictions for,
    where that changes its scores: the split the audits score (test; every split of a corpus without
    one), and any other split it has some but not all documents of (a detector run on the test
    documents alone is not warned about the train documents)."""
    scored = {"test"} if "test" in cov.by_split else set(cov.by_split)      # qlb.quasileak.leaderboard.scoring_split
    return [split for split, (k, n) in _in_split_order(cov.by_split) if k < n and (k > 0 or split in scored)]


def _coverage_line(cov, dry_run: bool) -> str:
    """What a predictions ingest leaves a detector with: ``detector 'x': predictions for 9 of the
    corpus's 144 documents (test 9 of 144)``."""
    splits = ", ".join(f"{split} {k:,} of {n:,}" for split, (k, n) in _in_split_order(cov.by_split))
    return (f"detector {cov.detector!r}: {'would have ' if dry_run else ''}predictions for {cov.predicted:,} of the "
            f"corpus's {cov.documents:,} documents ({splits})")


def _coverage_warning(dataset: str, cov, dry_run: bool) -> str:
    """The warning after a predictions ingest that leaves a detector without predictions for some
    documents of a split that counts (``_partial_splits``): how many, and what it does to its scores."""
    parts = [(split, *cov.by_split[split]) for split in _partial_splits(cov)]
    covered = " and ".join(f"{k:,} of the {n:,} documents of split {split}" for split, k, n in parts)
    missing = sum(n - k for _, k, n in parts)
    return (f"qlb ingest: warning: detector {cov.detector!r} {'would have' if dry_run else 'has'} predictions for "
            f"{covered} of dataset {dataset!r}: the other {missing:,} count as reporting nothing when it is scored "
            "(their targets missed). If the detector ran on them, ingest their predictions under the same detector "
            "name.")


def _unpaired_warning(dataset: str, unpaired) -> str:
    """The warning after a worlds ingest that leaves worlds without their twin (``unpaired_worlds``
    rows): how many, the first few, and what to do."""
    n = len(unpaired)
    shown = ", ".join(f"{w} (pair {p})" for w, p in zip(unpaired["world_id"][:3], unpaired["pair_id"][:3]))
    return (f"qlb ingest: warning: {_plural(n, 'world')} of dataset {dataset!r} "
            f"{'has' if n == 1 else 'have'} no twin: {shown}{', ...' if n > 3 else ''}. A pair is two worlds that "
            "share every public field and differ in the protected mechanism; ingest the missing twins (a file "
            "of them, or this one corrected). Until then the audits count each as a pair of one world.")


def _cmd_refusal(args: argparse.Namespace) -> int:
    from qlb.tuple import refusal
    from warehouse.ingest import IngestRequest, validate_file

    for f in (args.worlds, args.responses, *([args.ontology] if args.ontology else [])):
        if not f.is_file():
            raise _UserError(f"{f}: no such file")
    ontology = _ontology_file(args.ontology)
    worlds_report = validate_file(None, IngestRequest("worlds", args.worlds, "stateless"), ontology=ontology)
    worlds = {w.world_id: w for _, w in worlds_report.accepted}
    resp_report = validate_file(None, IngestRequest("refusal", args.responses, "stateless"), worlds=worlds,
                                ontology=ontology)
    where = {"worlds": args.worlds, "ontology": args.ontology}
    for report, path in ((worlds_report, args.worlds), (resp_report, args.responses)):
        _print_rejects(path, _reject_lines(report.rejects), where)
    frame = refusal.responses_frame([r for _, r in resp_report.accepted], worlds)
    summary = refusal.summarize(refusal.score_responses(frame, ontology))
    if args.json:
        print(json.dumps(refusal.to_contract_json(summary), indent=2))
    else:
        print(refusal.format_table(summary, ontology))
    return EXIT_REJECTED if worlds_report.rejects or resp_report.rejects else EXIT_OK


def _ontology_file(path: Path | None):
    """The ontology of ``--ontology FILE`` (None: the TUPLE default); a broken file is bad input
    (every problem on stderr, exit 3)."""
    if path is None:
        return None
    from qlb.records.ontology import OntologyError, parse_ontology
    try:
        return parse_ontology(path.read_text(encoding="utf-8"), str(path))
    except OntologyError as exc:
        raise _RejectedInput(exc.problems) from None


def _reject_lines(rejects: Sequence[Any]) -> list[tuple[int, str]]:
    """(line, ``field: reason``) of a validation report's rejects."""
    return [(r.line_no, (f"{r.field}: " if r.field else "") + r.reason) for r in rejects]


def _stateless_reason(said: str, where: dict[str, Path | None]) -> str:
    """A reject reason worded for a stateless command, which reads files, not a dataset: an unknown
    world or document is one that is not in ``--worlds`` or ``--corpus``; a domain outside the
    ontology is outside ``--ontology`` or, without it, the TUPLE ontology (own-task worlds need
    ``--ontology``). ``where``: the command's files by flag name (worlds, corpus, ontology)."""
    if where.get("worlds") is not None:
        for hint in ("(ingest its worlds first)", "(not in the worlds file)"):
            said = said.replace(hint, f"(not in --worlds {where['worlds']})")
    if where.get("corpus") is not None:
        said = said.replace("(ingest the corpus first)", f"(not in --corpus {where['corpus']})")
    if "is not a domain of the dataset's ontology" in said:
        ontology = where.get("ontology")
        said = said.replace("the dataset's ontology", f"--ontology {ontology}" if ontology else "the TUPLE ontology")
        if ontology is None:
            said += "; for worlds of your own decision task, pass its ontology with --ontology FILE"
    return said


def _print_rejects(path: Path, rejects: Sequence[tuple[int, str]], where: dict[str, Path | None]) -> None:
    """Each rejected line of a stateless command on stderr as ``FILE:LINE: field: reason``, in line
    order; a reason that more than five lines share is said once, at its first line, with how many
    more lines and which (``warehouse.ingest.grouped_messages``, as `qlb ingest` says them)."""
    from warehouse.ingest import grouped_messages

    for message in grouped_messages(str(path), [(n, None, _stateless_reason(said, where)) for n, said in rejects]):
        print(message, file=sys.stderr)


class _RejectedInput(Exception):
    """Input rejected as a whole (exit 3), one line per problem."""

    def __init__(self, problems: list[str]):
        super().__init__("; ".join(problems))
        self.problems = problems


def _cmd_defend(args: argparse.Namespace) -> int:
    from qlb.runs.defend_file import defend_file
    from warehouse.ingest import IngestRequest, validate_file

    if not args.in_file.is_file():
        raise _UserError(f"{args.in_file}: no such file")
    if args.worlds is not None and not args.worlds.is_file():
        raise _UserError(f"{args.worlds}: no such file")
    _check_defend_out(args)
    where = {"worlds": args.worlds, "ontology": args.ontology}
    worlds = None
    rejected = False
    if args.worlds is not None:
        report = validate_file(None, IngestRequest("worlds", args.worlds, "stateless"),
                               ontology=_ontology_file(args.ontology))
        _print_rejects(args.worlds, _reject_lines(report.rejects), where)
        rejected = bool(report.rejects)
        worlds = {w.world_id: w for _, w in report.accepted}
    policies = None
    if args.method == "wcpq":
        if worlds is None:
            raise _UsageError("--method wcpq needs --worlds FILE (the public fields the recipients read)")
        policies = _frozen_policies(args)
    bar = _progress(args.method, None)

    def progress(done: int, total: int) -> None:
        bar.total, bar.n = total, done
        bar.refresh()

    rep = defend_file(args.in_file, args.out_file, args.method, args.seed, worlds, policies, progress)
    bar.close()
    _print_rejects(args.in_file, rep.rejects, where)
    if args.json:
        print(json.dumps(rep.to_json(), indent=2))
    else:
        extra = f", {rep.fallbacks} identity fallbacks" if args.method == "wcpq" else ""
        print(f"{args.method}: {rep.written} lines written to {args.out_file} ({rep.transformed} transformed, "
              f"{rep.passed_through} passed through unchanged{extra}, {len(rep.rejects)} rejected)")
    return EXIT_REJECTED if rep.rejects or rejected else EXIT_OK


def _same_file(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` name one file (links and ``..`` seen through; ``b`` exists)."""
    try:
        return a.resolve() == b.resolve() or (a.exists() and os.path.samefile(a, b))
    except (OSError, RuntimeError):       # a symlink loop, say: not the input file
        return False


def _check_defend_out(args: argparse.Namespace) -> None:
    """``qlb defend --out`` never overwrites one of the command's own input files (bad usage); a
    folder of it that does not exist yet is created, as ``qlb report --out`` does."""
    inputs = (("--in", args.in_file), ("--worlds", args.worlds), ("--ontology", args.ontology))
    for flag, given in inputs:
        if given is not None and given.is_file() and _same_file(args.out_file, given):
            raise _UsageError(f"--out {args.out_file} is the same file as {flag} {given}: it would overwrite its own "
                              "input; write the defended responses to another file")
    if args.out_file.is_dir():
        raise _UsageError(f"--out {args.out_file} is a folder; name the file to write")
    folder = next((p for p in args.out_file.parents if p.exists()), None)
    if folder is not None and not folder.is_dir():
        raise _UsageError(f"--out {args.out_file}: {folder} is a file, not a folder")
    try:
        args.out_file.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _UserError(f"--out {args.out_file}: cannot create its folder {args.out_file.parent} "
                         f"({exc.strerror or exc})") from None


def _collect_options(args: argparse.Namespace) -> list:
    """One CollectOptions per ``--model``; ``--base-url``, ``--endpoint-model`` and ``--target``
    give one value for every model or one per model, in order."""
    from qlb.records.schemas import model_name_problem
    from qlb.runs.collect import CollectOptions

    models = list(args.model)
    if len(set(models)) < len(models):
        raise _UsageError("--model names a model twice")
    problem = next(filter(None, map(model_name_problem, models)), None)
    if problem:
        raise _UsageError(f"--model: {problem}")

    def each(flag: str, values: list[str] | None) -> list[str | None]:
        if not values:
            return [None] * len(models)
        if len(values) in (1, len(models)):
            return list(values) * (len(models) // len(values))
        raise _UsageError(f"{flag}: give one value for every model or one per --model "
                          f"({len(models)} models, {len(values)} values)")

    if args.transport != "openai" and (args.answer is not None or args.no_schema):
        flag = "--answer" if args.answer is not None else "--no-schema"
        raise _UsageError(f"{flag} applies to --transport openai only, not {args.transport}: drop it")
    if args.answer == "letters" and args.no_schema:
        raise _UsageError("--no-schema applies to --answer json only (--answer letters sends no schema): drop it")
    settings = zip(models, each("--base-url", args.base_url), each("--endpoint-model", args.endpoint_model),
                   each("--target", args.target))
    return [CollectOptions(probe=args.probe, dataset_id=args.dataset, model=model, transport=args.transport,
                           base_url=base_url, path=args.path, endpoint_model=endpoint_model,
                           api_key_env=args.api_key_env, answer=args.answer or "json", schema=not args.no_schema,
                           target=target, splits=args.split, limit=args.limit, interval=args.interval,
                           timeout=args.timeout, concurrency=args.concurrency, retries=args.retries,
                           replace_invalid=args.replace_invalid)
            for model, base_url, endpoint_model, target in settings]


REASONS_SHOWN = 5          # the most frequent reasons `qlb collect` prints under its summary


def _plural(n: int, word: str, many: str | None = None) -> str:
    """``1 world``, ``2 worlds`` (``many`` for an irregular plural)."""
    return f"{n:,} {word if n == 1 else many or word + 's'}"


def _collect_advice(result, opts) -> list[str]:
    """What to do about the most frequent reasons of one model's collection, when their HTTP status
    says (the key, the URL, the JSON schema); each piece of advice once."""
    from qlb.runs.collect import reason_advice
    advice = (reason_advice(r["reason"], opts) for r in result.reasons[:REASONS_SHOWN])
    return list(dict.fromkeys(a for a in advice if a))


def _ask_again(replace_invalid: bool) -> str:
    """How to ask again the worlds whose stored answer is invalid or unavailable."""
    return "rerun the same command" if replace_invalid else "add --replace-invalid"


def _collect_summary(result, probe: str, dataset: str, opts=None) -> list[str]:
    """The text summary of one model's collection: the counts, why worlds were not asked, the
    most frequent reasons its answers are not valid, and what to do about them when their HTTP
    status says (``opts``: the model's CollectOptions)."""
    lines = [f"{probe} answers of {result.model!r} in dataset {dataset!r}: {result.stored} stored "
             f"({result.valid} valid, {result.invalid} invalid, {result.unavailable} unavailable); "
             f"{_plural(result.skipped_existing, 'world')} skipped (already answered)"
             + (f"; {_plural(result.skipped_unanswered, 'world')} without a stored answer not asked "
                "(--replace-invalid asks again only invalid or unavailable answers; rerun without it to ask them)"
                if result.skipped_unanswered else "")
             + (f"; {_plural(result.not_reached, 'world')} not answered: the collection stopped first"
                if result.not_reached else "")
             + (f"; {_plural(result.left_for_later, 'world')} left for a later run by --limit"
                if result.left_for_later else "")
             + (f"; collection {result.collection_id}" if result.collection_id else "")]
    if result.reasons:
        lines.append(f"  why {_plural(result.invalid + result.unavailable, 'answer')} "
                     f"{'is' if result.invalid + result.unavailable == 1 else 'are'} not valid, most frequent first:")
        for r in result.reasons[:REASONS_SHOWN]:
            lines.append(f"  {r['count']:>6}  {r['outcome']}: {r['reason']} (e.g. world {r['example_world']})")
        rest = result.reasons[REASONS_SHOWN:]
        if rest:
            lines.append(f"  {sum(r['count'] for r in rest):>6}  with {_plural(len(rest), 'other reason')} "
                         "(every reason: the Collection page)")
    advice = _collect_advice(result, opts) if opts is not None else []
    if advice:
        lines.append(f"  what to do: {'; '.join(advice)}; then {_ask_again(opts.replace_invalid)} to ask those "
                     "worlds again")
    return lines


def _stop_hint(result, opts) -> str:
    """A word on a stop whose cause the user can act on: a 429 asks to slow down; answers all refused
    (a 401/403/404 on the first worlds) are stored unavailable, which the resume skips."""
    from qlb.collect.transports import stopped_refused
    if stopped_refused(result.stopped):
        if opts.replace_invalid:
            return "fix it, then resume"
        return (f"fix it, then resume, and run the command once more with --replace-invalid to ask the "
                f"{_plural(result.unavailable, 'world')} stored unavailable again")
    if result.stopped.startswith("HTTP 429"):
        if opts.retries:
            return (f"the server still asked to slow down after {_plural(opts.retries, 'retry', 'retries')}: "
                    "raise --retries or --interval S")
        return ("the server asks to slow down: add --retries N (each retry waits as the server's Retry-After "
                "says) or --interval S")
    return ""


def _resume_line(argv: Sequence[str]) -> str:
    """``resume with: qlb ...``, a credential typed into the command (a --base-url with a password or
    a key parameter) masked, saying so."""
    from qlb.collect.redact import MASK, redact_words
    shown, masked = redact_words(list(argv))
    line = f"resume with: qlb {shlex.join(shown)}"
    if masked:
        line += (f" (put your credential back where {MASK} is, or better: pass the key in an environment variable "
                 "named by --api-key-env VAR, kept out of the URL)")
    return line


@contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """While answers arrive, SIGTERM (what `timeout`, a CI cancel or `kill` sends) stops the
    collection as Ctrl+C does: the requests in flight end, the worker processes shut down, what
    arrived is stored, and the collection records "terminated (SIGTERM)". A second SIGTERM during
    that stop is ignored (SIGKILL still ends the process)."""
    import signal
    import threading
    from qlb.runs.collect import Interrupted

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    fired: list[int] = []

    def stop(signum, frame) -> None:
        if not fired:
            fired.append(signum)
            raise Interrupted("terminated (SIGTERM)")

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)


@contextmanager
def _logs_redacted() -> Iterator[None]:
    """With -v, httpx logs every request's URL: mask a credential in it, as everywhere else."""
    from qlb.collect.redact import redact

    class Redact(logging.Filter):
        def filter(self, record: logging.LogRecord) -> bool:
            record.msg, record.args = redact(record.getMessage()), None
            return True

    handlers, masking = list(logging.getLogger().handlers), Redact()
    for handler in handlers:
        handler.addFilter(masking)
    try:
        yield
    finally:
        for handler in handlers:
            handler.removeFilter(masking)


def _cmd_collect(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from qlb.collect.transports import TARGET_RAISED, stopped_refused
    from qlb.runs.collect import CollectError, collect_many, first_request, make_transport
    from warehouse.db import default_path, reader, writer

    options = _collect_options(args)
    path = args.warehouse or default_path()
    if not Path(path).exists():
        raise _UsageError(f"{path}: no warehouse here yet (ingest the dataset's worlds first)")
    try:
        for opts in options:
            opts.check(asking=not args.show_request)
    except CollectError as exc:
        raise _UsageError(str(exc)) from None
    if args.show_request:
        if len(options) > 1:
            raise _UsageError("--show-request shows one model's request: give one --model")
        opts = options[0]
        try:
            with reader(path) as con:
                body, note = first_request(con, opts)
        except CollectError as exc:
            raise _UsageError(str(exc)) from None
        if note:
            print(note, file=sys.stderr)
        payload = body          # typed and python send the body itself: the target need not be importable
        if opts.transport == "openai":
            try:
                transport = make_transport(opts)
            except CollectError as exc:
                raise _UsageError(str(exc)) from None
            payload = transport.payload(body, opts.probe)
            transport.close()
        print(json.dumps(payload, indent=2, ensure_ascii=False))
        return EXIT_OK
    who = args.model[0] if len(options) == 1 else f"{len(options)} models"
    bar = _progress(f"collect {args.probe} {who}", None)
    bar.unit = "answer"

    def progress(stored: int, total: int) -> None:
        bar.total, bar.n = total, stored
        bar.refresh()

    try:
        with _sigterm_as_interrupt(), _logs_redacted(), writer(path) as con:    # SIGTERM handled from the start
            results = collect_many(con, options, progress=progress)
    except CollectError as exc:
        raise _UsageError(str(exc)) from None
    finally:
        bar.close()
    if args.json:
        summaries = [r.to_json() for r in results]
        print(json.dumps(summaries[0] if len(summaries) == 1 else summaries, indent=2))
    else:
        for result, opts in zip(results, options):
            print("\n".join(_collect_summary(result, args.probe, args.dataset, opts)))
    several = len(results) > 1
    for result, opts in zip(results, options):
        whose = f" of {result.model!r}" if several else ""
        if result.none_valid and not stopped_refused(result.stopped):      # that stop's line says what to do
            which = "the one answer" if result.stored == 1 else f"none of the {result.stored:,} answers"
            todo = "; ".join(_collect_advice(result, opts)) or "fix the model or what it returns"
            print(f"qlb collect: warning: {which} stored" + (f" for {result.model!r}" if several else "")
                  + f" {'is not' if result.stored == 1 else 'is'} valid ({result.invalid} invalid, "
                    f"{result.unavailable} unavailable; the audits read them as unavailable): {todo} (the reasons "
                    "are listed with the summary and on the Collection page), then ask these worlds again "
                  + ("with the same command" if args.replace_invalid else "by adding --replace-invalid"),
                  file=sys.stderr)
        if result.no_logprobs:
            print(f"qlb collect: warning: the server returned no logprobs for {_plural(result.no_logprobs, 'answer')}"
                  f"{whose}: the probability views of this model will be empty; does it support logprobs?",
                  file=sys.stderr)
    stopped = [(r, o) for r, o in zip(results, options) if r.stopped]
    for result, opts in stopped:
        resume = _resume_line(argv) if result is stopped[-1][0] else ""
        if result.stopped.startswith(TARGET_RAISED):        # rerunning would raise again: the model needs a fix
            resume = f"fix the model, then {resume}" if resume else "fix the model before resuming"
        hint = _stop_hint(result, opts)
        print(f"qlb collect: stopped: {result.stopped}; {_plural(result.stored, 'answer')} stored"
              + (f" for {result.model!r}" if several else "") + (f"; {hint}" if hint else "")
              + (f"; {resume}" if resume else ""), file=sys.stderr)
    # a collection that ran to its end is done (COLLECT.md: exit 0), whatever its answers: the warning says the rest
    return EXIT_STOPPED if stopped else EXIT_OK


def _cmd_migrate(args: argparse.Namespace) -> int:
    from warehouse.db import current_version, default_path, file_schema_version, writer

    path = Path(args.warehouse or default_path())
    if not path.exists():
        raise _UserError(f"{path}: no warehouse here yet (run `qlb demo` or ingest a file)")
    before = file_schema_version(path)
    with writer(path) as con:
        after = current_version(con)
    print(f"{path}: schema version {after}" + (f" (was {before})" if before != after else " (already current)"))
    return EXIT_OK


RUNS_LISTED = 5            # runs an unknown --run lists, newest first


def _report_run(con, run: str | None, dataset: str | None) -> tuple[str, str, bool]:
    """(run id, its dataset, whether the run was chosen by default) for `qlb report`: ``run`` when
    it is an audit run (of ``dataset``, when named), else the newest of the most complete runs (of
    ``dataset``, when named). An unknown run is an error listing the newest runs; a run of another
    dataset than ``dataset`` is bad usage naming both."""
    from qlb.runs.report import default_run
    from warehouse import queries

    runs = queries.fetch_df(con, "all_runs", [])
    pool = runs if dataset is None else runs[runs["dataset_id"] == dataset]
    if run is None:
        best = default_run(runs, dataset)
        if best is None:
            raise _UserError(f"no audit run for dataset {dataset!r} (run `qlb audit --dataset {dataset}`)" if dataset
                             else "the warehouse holds no audit run yet (run `qlb demo` or `qlb audit`)")
        return str(best["run_id"]), str(best["dataset_id"]), True
    match = runs[runs["run_id"] == run]
    if match.empty:
        shown = pool.head(RUNS_LISTED)                          # all_runs: newest first
        listed = [r if dataset else f"{r} (dataset {d})" for r, d in zip(shown["run_id"], shown["dataset_id"])]
        listed += ["..."] if len(pool) > RUNS_LISTED else []
        raise _UsageError(f"no run {run!r} in {f'dataset {dataset!r}' if dataset else 'the warehouse'} "
                          f"(newest audit runs: {', '.join(listed) or 'none'})")
    owner = str(match["dataset_id"].iloc[0])
    if dataset is not None and owner != dataset:
        raise _UsageError(f"run {run!r} belongs to dataset {owner!r}, not to --dataset {dataset!r} "
                          f"(drop --dataset, or pick a run of {dataset!r}: "
                          f"{', '.join(pool['run_id'].head(RUNS_LISTED)) or 'it has none'})")
    return run, owner, False


def _cmd_report(args: argparse.Namespace) -> int:
    from qlb.runs.report import build_report
    from warehouse.db import default_path, reader

    path = args.warehouse or default_path()
    if not Path(path).exists():
        raise _UserError(f"{path}: no warehouse here yet (run `qlb demo` or `qlb audit`)")
    pdf = args.out.suffix.lower() == ".pdf"
    if not pdf and args.out.suffix.lower() not in (".html", ".htm"):
        raise _UsageError(f"--out {args.out}: the report is HTML or PDF; name the file *.html or *.pdf")
    if pdf:
        from qlb.export.pdf import NoBrowser, find_browser
        try:
            browser = find_browser()          # before the report is built: a missing browser is said at once
        except NoBrowser as exc:
            raise _UserError(f"--out {args.out}: {exc}") from None
    with reader(path) as con:
        run_id, dataset, defaulted = _report_run(con, args.run, args.dataset and _resolve_dataset(con, args.dataset))
        text = build_report(con, run_id)
    if pdf:
        from qlb.export.pdf import PrintFailed, html_to_pdf
        try:
            printed = html_to_pdf(text, args.out, browser)
        except PrintFailed as exc:
            raise _UserError(f"--out {args.out}: {exc}") from None
        written = f"{_plural(printed.pages, 'A4 page')}, {printed.size_bytes / 1e6:.1f} MB"
    else:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text, encoding="utf-8")
        written = f"{len(text.encode()) / 1e6:.1f} MB"
    print(f"report of run {run_id} of dataset {dataset!r} written to {args.out} ({written})"
          + (f"; the newest, most complete run of {'the dataset' if args.dataset else 'the warehouse'} "
             "(--run ID picks another)" if defaulted else ""))
    return EXIT_OK


def _frozen_policies(args: argparse.Namespace) -> dict:
    from qlb.runs.policies import frozen_policies
    from warehouse import queries
    from warehouse.db import default_path, reader

    path = args.warehouse or default_path()
    if not Path(path).exists():
        raise _UserError(f"{path}: no warehouse here (wcpq reads the frozen policies of a stored run)")
    with reader(path) as con:
        dataset = _resolve_dataset(con, args.dataset)
        runs = queries.fetch_df(con, "utility_runs", [dataset])["run_id"].tolist()
        if args.run is not None and args.run not in runs:
            every = queries.fetch_df(con, "all_runs", [])
            if args.run not in set(every["run_id"]):
                shown = every[every["dataset_id"] == dataset]["run_id"].tolist()
                raise _UsageError(f"--run: no run {args.run!r} in dataset {dataset!r} (newest audit runs: "
                                  f"{', '.join(shown[:RUNS_LISTED]) or 'none'}"
                                  f"{', ...' if len(shown) > RUNS_LISTED else ''})")
            raise _UsageError(f"--run: run {args.run!r} has no utility results, which wcpq takes its frozen policies "
                              f"from (runs of dataset {dataset!r} with them: "
                              f"{', '.join(runs[:RUNS_LISTED]) or 'none'}{', ...' if len(runs) > RUNS_LISTED else ''})")
        if not runs:
            raise _UserError(f"no run with utility results in {dataset!r}: run `qlb audit` first")
        run_id = args.run or runs[0]
        models = queries.fetch_df(con, "models_with_responses", [dataset])["model"].tolist()
        return {m: frozen_policies(con, run_id, m) for m in models}


def _resolve_dataset(con, name: str | None, hint: str = "") -> str:
    """The dataset ``name`` (or the one to use when none is named); bad usage, with ``hint`` after
    the message, when it is not there."""
    from qlb.demo import DEMO_DATASET
    from warehouse import queries
    ids = queries.fetch_df(con, "datasets")["dataset_id"].tolist()
    if name:
        if name not in ids:
            near = _close_name(name, ids)
            raise _UsageError(f"no dataset {name!r} in the warehouse (have: {', '.join(ids) or 'none'})"
                              + (f"; did you mean {near!r}?" if near else "") + hint)
        return name
    if len(ids) == 1:
        return ids[0]
    if DEMO_DATASET in ids:
        return DEMO_DATASET
    raise _UsageError(f"several datasets; pick one with --dataset ({', '.join(ids) or 'none'})")


def _cmd_audit(args: argparse.Namespace, argv: Sequence[str] = ()) -> int:
    from qlb.tuple import refusal
    from qlb.tuple.learned_wcpq import LEARNED_VARIANTS
    from qlb.present.names import cost_interval, pct_interval
    from qlb.runs.audit import AuditOptions, audit_inputs, run_audits, unknown_defense_models, unknown_models
    from qlb.stats.parallel import SchedulerError
    from warehouse.db import default_path, writer
    from warehouse.ontologies import dataset_ontology

    path = args.warehouse or default_path()
    from qlb.tuple.release_views import VIEWS
    # --jobs/--scheduler are checked first (bad usage); a scheduler is connected to only when the audit
    # sends its first task: after the dataset and models are checked, and never when a run is reused
    with _audit_workers(args) as jobs:
        if not Path(path).exists():
            raise _UserError(f"{path}: no warehouse here yet (run `qlb demo` or `qlb ingest`)")
        bar = _progress("audit", None)
        bar.unit = "task"
        said: dict[str, int] = {}          # stage -> the quarter last written for it

        def progress(label: str, done: int, total: int) -> None:
            label = _stage_words(label)
            if bar.disable:     # no bar (stderr is a log, or TQDM_DISABLE): a line per stage and quarter, as qlb demo
                quarter = 4 * done // max(total, 1)
                if said.get(label) != quarter:
                    print(f"qlb audit: {label} {done}/{total} tasks", file=sys.stderr, flush=True)
                    said[label] = quarter
                return
            bar.set_description(label)
            bar.total, bar.n = total, done
            bar.refresh()

        status = None
        with ExitStack() as held:
            if args.in_stages:        # the one audit in stages of this warehouse, held till this command ends
                held.enter_context(_only_build(path))
            try:
                with writer(path) as con:
                    dataset = _resolve_dataset(con, args.dataset)
                    have = audit_inputs(con, dataset)[0]
                    problem = (unknown_models(args.models, have, dataset)
                               or unknown_defense_models(args.defense_models, args.models, have, dataset))
                    if problem:
                        raise _UsageError(problem)
                    ontology = dataset_ontology(con, dataset)
                    options = AuditOptions(models=args.models, force=args.force, decode=not args.no_decoding,
                                           views=args.views or VIEWS, jobs=jobs, utility=not args.no_utility,
                                           defenses=not args.no_defenses, defense_models=args.defense_models,
                                           families=set(args.families) if args.families else None,
                                           defense_families=set(args.defense_families) if args.defense_families else None,
                                           learned_wcpq=None if args.learned_wcpq is None else
                                           [LEARNED_VARIANTS[v] for v in args.learned_wcpq])
                    if args.in_stages:
                        status = _staged_status(con, path, dataset, options, argv)
                    else:
                        run = run_audits(con, dataset, options, progress)
                if args.in_stages:
                    run = _audit_in_stages(path, dataset, options, progress, status)
            except SchedulerError as exc:       # the cluster failed the run: say what was stored and what to do
                raise _UserError(_cluster_failure(exc, status)) from None
            finally:
                bar.close()
    if args.json:
        print(json.dumps(run.to_json(), indent=2))
        return EXIT_OK
    state = ("reused (same data and parameters)" if run.reused else
             f"stored, resuming an audit that stopped midway (kept: "
             f"{', '.join(AUDIT_STAGE_WORDS.get(s, s) for s in run.resumed)})" if run.resumed else "stored")
    print(f"run {run.run_id} for dataset {dataset!r}: {state}")
    if run.refusal_summary is not None:
        print("\nRefusal audit (all domains):")
        print(refusal.format_table(run.refusal_summary, ontology))
    if run.ql_scores is not None:
        print("\n" + "\n".join(_quasileak_board(*_stored_ql_scores(path, run))))
    if run.recovery is not None:
        pooled = _in_audit_order(run.recovery[run.recovery["scope"] == "pooled"])
        print("\nSecret recovery on the test split (all domains, with 95% intervals):")
        print(_text_table(pooled, "view", lambda r: pct_interval(r.accuracy, r.ci_low, r.ci_high)))
    if run.utility is not None:
        u = _in_audit_order(run.utility[(run.utility["scope"] == "pooled") & (run.utility["profile"] == "authored")])
        print("\nDownstream mean cost per case on the test split (authored costs, with 95% intervals):")
        print(_text_table(u, "task", lambda r: cost_interval(r.mean_cost, r.ci_low, r.ci_high), rows=["model", "view"]))
    if run.defenses is not None:
        d = _in_audit_order(run.defenses[~run.defenses["defense"].str.startswith("noise seed")])
        print("\nDefense-aware secret recovery on the test split (with 95% intervals):")
        print(_text_table(d, "defense", lambda r: pct_interval(r.accuracy, r.ci_low, r.ci_high)))
    for name, why in run.skipped.items():
        print(f"skipped {_stage_words(name)}: {_in_flag_words(why)}")
    return EXIT_OK


def _in_audit_order(frame):
    """``frame``'s rows in the audit's own order, whether the run was just computed or reused from
    the warehouse (which returns them alphabetically): models by name, views as
    ``release_views.VIEWS`` (no output ... full native), tasks as ``workflows.TASKS``, defenses as
    the figures show them (``DEFENSE_ORDER``, then the learned WCPQ variants); a value outside its
    order comes last."""
    from qlb.present.figures import DEFENSE_ORDER
    from qlb.tuple.defense_audit import LEARNED_ENDPOINTS
    from qlb.tuple.release_views import VIEWS
    from qlb.tuple.workflows import TASKS

    orders = {"view": list(VIEWS), "task": list(TASKS), "defense": [*DEFENSE_ORDER, *LEARNED_ENDPOINTS]}
    keys = ["model"] if "model" in frame.columns else []
    ranked = frame.copy()
    for column, order in orders.items():
        if column in frame.columns:
            rank = {v: i for i, v in enumerate(order)}
            ranked[f"_rank_{column}"] = frame[column].map(lambda v, rank=rank: rank.get(v, len(rank)))
            keys += [f"_rank_{column}", column]
    ranked = ranked.sort_values(keys, kind="stable") if keys else ranked
    return ranked.drop(columns=[c for c in ranked.columns if c.startswith("_rank_")])


def _text_table(frame, columns: str, cell, rows: Sequence[str] = ("model",)) -> str:
    """A terminal table of ``frame``: a row per ``rows``, a column per value of ``columns`` (display
    names, in the frame's order), each cell ``cell(row)``."""
    from qlb.present.names import name

    shown = frame.assign(_cell=[cell(r) for r in frame.itertuples(index=False)],
                         **{c: frame[c].map(lambda v, c=c: name(c, v)) for c in (*rows, columns) if c != "model"})
    table = shown.pivot_table(index=list(rows), columns=columns, values="_cell", aggfunc="first", sort=False)
    table.columns.name = None
    return table.fillna("N/A").to_string()


@contextmanager
def _only_build(path: str) -> Iterator[None]:
    """`qlb audit --in-stages` holds the warehouse's build lock (``build_lock``) for the whole command,
    taken before it writes the status file: while another audit in stages runs on the warehouse
    (both would store the same unfinished run's stages into one status file), the second stops before
    it reads anything (exit 1), naming the other from its status file."""
    from warehouse.build_status import STAGE_NAMES, BuildRunning, build_lock, read_status

    try:
        with build_lock(path):
            yield
    except BuildRunning:
        other = read_status(path)
        who = (f" (dataset {other.dataset_id!r}, process {other.pid}, {STAGE_NAMES.get(other.stage, other.stage)})"
               if other is not None and other.alive else "")
        stop = f"`kill {other.pid}`" if other is not None and other.alive else "Ctrl+C in its terminal"
        raise _UserError(f"another audit in stages is running on this warehouse{who}; wait for it to finish (the "
                         f"dashboard shows its progress) or stop it ({stop}), then run this command again: it "
                         f"resumes what that audit stored") from None


def _staged_status(con, path: str, dataset: str, options, argv: Sequence[str] = ()) -> Any:
    """The status file keeper of `qlb audit --in-stages` (sized by the dataset's models and domains),
    with the command (``argv``) that resumes it if it stops."""
    from qlb.demo import StagedAuditStatus
    from qlb.runs.decoding import chosen_models
    from warehouse.ontologies import dataset_ontology

    models = chosen_models(con, dataset, options.models)
    defended = [m for m in models if not options.defense_models or m in options.defense_models]
    return StagedAuditStatus(path, dataset, len(models), len(dataset_ontology(con, dataset).domains),
                             len(defended) if options.run_defenses else 0, decode=options.decode,
                             learned=len(options.learned_endpoints),
                             command=shlex.join(["qlb", *argv]) if argv else "")


def _audit_in_stages(path: str, dataset: str, options, progress, status) -> Any:
    from qlb.runs.audit import run_audits_in_stages

    def both(stage: str, done: int, total: int) -> None:
        progress(stage, done, total)
        status.progress(stage, done, total)

    try:
        run = run_audits_in_stages(path, dataset, options, both, status.stored)
    except BaseException as exc:
        status.failed(str(exc) or type(exc).__name__)
        raise
    if run.reused:
        status.stored("defenses", run)          # nothing to do: say so, pages stop waiting
    return run


@contextmanager
def _audit_workers(args: argparse.Namespace) -> Iterator[Any]:
    """Where `qlb audit` runs its (model, domain) tasks: ``--scheduler`` (else $QLB_SCHEDULER
    unless ``--jobs`` is given) names a Dask scheduler, checked here (bad usage), connected when
    the audit sends its first task (so a bad dataset or model name, or a run to reuse, never waits
    for it) and closed after the command, with a line on stderr when it connects (``_say_connected``);
    otherwise ``--jobs`` local processes."""
    import os

    from qlb.stats.parallel import SCHEDULER_ENV_VAR, SchedulerError, check_scheduler, dask_workers

    if args.scheduler and args.jobs is not None:
        raise _UsageError("--jobs and --scheduler exclude each other (the scheduler's workers do the work)")
    scheduler = args.scheduler or (os.environ.get(SCHEDULER_ENV_VAR) if args.jobs is None else None)
    if not scheduler:
        yield args.jobs or 1
        return
    source = "--scheduler" if args.scheduler else f"${SCHEDULER_ENV_VAR}"
    try:
        check_scheduler(scheduler)
    except SchedulerError as exc:
        raise _UsageError(f"{source}: {exc}") from None
    import distributed  # noqa: F401  (its import sets its loggers to INFO; -v shows them, else warnings only)
    logging.getLogger("distributed").setLevel(logging.INFO if args.verbose else logging.WARNING)
    # a scheduler lost mid-run is one line of ours (SchedulerLost); without -v, not also the client's
    # tracebacks of every reconnection attempt
    client_log = logging.getLogger("distributed.client")
    level = client_log.level
    if not args.verbose:
        client_log.setLevel(logging.CRITICAL)
    try:
        with dask_workers(scheduler, lazy=True, connected=_say_connected) as workers:
            yield workers
    finally:
        client_log.setLevel(level)


def _say_connected(workers: Any) -> None:
    """On stderr, once connected: the scheduler, its number of workers and its dashboard; a
    warning when it has no worker yet (an adaptive cluster starts without: the audit waits), and
    one naming the workers started without qlb's Dask settings (``slow_workers``)."""
    from tqdm import tqdm

    n = len(workers.client.scheduler_info(n_workers=-1)["workers"])
    tqdm.write(f"qlb audit: Dask scheduler {workers.address} ({n} worker{'s' * (n != 1)}); "
               f"dashboard: {workers.dashboard or 'none (the scheduler serves no dashboard)'}", file=sys.stderr)
    if n == 0:
        tqdm.write(f"qlb audit: warning: the Dask scheduler at {workers.address} has no workers yet; the audit "
                   f"waits for them (start one with `dask worker {workers.address} --nthreads 1`)", file=sys.stderr)
    if workers.slow:
        from qlb.stats.parallel import worker_config_path
        k = len(workers.slow)
        tqdm.write(f"qlb audit: warning: {'all ' if k == n and k > 1 else ''}{k} of {n} workers run without qlb's "
                   f"Dask settings (Dask's profiler on, or its MALLOC_TRIM_THRESHOLD_): the numbers are the same, "
                   f"the fits about 25% slower; start the workers with DASK_CONFIG={worker_config_path()} "
                   f"({', '.join(workers.slow[:2])}{' ...' if k > 2 else ''})", file=sys.stderr)


AUDIT_STAGE_WORDS = {"refusal": "refusal and QuasiLeak", "decoding": "recovery", "utility": "utility and fronts",
                     "defenses": "defenses"}


def _cluster_failure(exc: Exception, status: Any) -> str:
    """One line for an audit the cluster failed (``SchedulerError``): what went wrong, what was
    stored (``--in-stages`` stores the stages before; the same command resumes that unfinished
    run, keeping them) and, for a lost scheduler, what to do."""
    from qlb.stats.parallel import SchedulerLost

    stored = status.status.stored if status is not None else []
    kept = (f"stored so far: {', '.join(AUDIT_STAGE_WORDS.get(s, s) for s in stored)} (unfinished run "
            f"{status.status.run_id})" if stored else "nothing was stored")
    if isinstance(exc, SchedulerLost):
        again = ": it keeps the stages stored and computes the rest" if stored else ""
        return f"{exc}; {kept}; rerun the same command once the scheduler is back{again}"
    return f"{exc}; {kept}; the same command resumes it" if stored else str(exc)


def _cmd_quasileak(args: argparse.Namespace) -> int:
    return {"score": _cmd_ql_score, "verify": _cmd_ql_verify, "run": _cmd_ql_run,
            "forget": _cmd_ql_forget}[args.ql_command](args)


def _cmd_ql_forget(args: argparse.Namespace) -> int:
    from qlb.runs.quasileak import forget_detector
    from warehouse import queries
    from warehouse.db import default_path, writer

    path = args.warehouse or default_path()
    if not Path(path).exists():
        raise _UsageError(f"{path}: no warehouse here")
    with writer(path) as con:
        dataset = _resolve_dataset(con, args.dataset)
        n = forget_detector(con, dataset, args.detector)
        if not n:                         # nothing of that name: say which detectors there are
            held = queries.fetch_df(con, "ql_detector_predictions", [dataset])["detector"].tolist()
            near = _close_name(args.detector, held)
            raise _UsageError(f"--detector {args.detector!r}: no predictions of it in dataset {dataset!r} (detectors "
                              f"there: {', '.join(held) or 'none'})" + (f"; did you mean {near!r}?" if near else ""))
    print(f"forgot detector {args.detector!r} of dataset {dataset!r}: {_plural(n, 'prediction line')} removed; runs "
          f"already stored keep its scores; {_audit_command(dataset, args.warehouse)} scores the others into a new run")
    return EXIT_OK


def _audit_command(dataset: str, warehouse: Path | None) -> str:
    """``qlb audit --dataset D`` (with ``--warehouse W`` when the command was given one) for a user to run next."""
    return shlex.join(["qlb", "audit", "--dataset", dataset] + (["--warehouse", str(warehouse)] if warehouse else []))


def _cmd_ql_verify(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from qlb.quasileak.scoring import lift, verify_group
    from qlb.records.readers import read_records
    from qlb.records.schemas import VerifierGroup, describe_error

    if not args.groups.is_file():
        raise _UserError(f"{args.groups}: no such file")
    for name, tau in (("--tau-weak", args.tau_weak), ("--tau-reveal", args.tau_reveal)):
        if not 0 <= tau <= 1:
            raise _UsageError(f"{name} {tau} is outside [0, 1]")
    verdicts, rejected = [], 0
    for rec in read_records(args.groups, frozenset({"cue_confidences", "n_values", "group_confidence"})):
        try:
            if rec.error is not None:
                raise _LineError(rec.field, rec.error)
            g = (VerifierGroup.model_validate_json(rec.text) if rec.text is not None
                 else VerifierGroup.model_validate(rec.obj))
        except ValidationError as exc:
            fld, reason = describe_error(exc)
            print(f"{args.groups}:{rec.line_no}: " + (f"{fld}: " if fld else "") + reason, file=sys.stderr)
            rejected += 1
            continue
        except _LineError as exc:
            print(f"{args.groups}:{rec.line_no}: " + (f"{exc.field}: " if exc.field else "") + exc.reason,
                  file=sys.stderr)
            rejected += 1
            continue
        ok, why = verify_group(g.cue_confidences, g.group_confidence, g.n_values, args.tau_weak, args.tau_reveal)
        verdicts.append({"line": rec.line_no, "doc_id": g.doc_id, "attribute": g.attribute, "verified": ok,
                         "max_cue_lift": max(lift(c, g.n_values) for c in g.cue_confidences),
                         "group_lift": lift(g.group_confidence, g.n_values), "reason": why})
    if args.json:
        print(json.dumps({"tau_weak": args.tau_weak, "tau_reveal": args.tau_reveal, "groups": verdicts}, indent=2))
    else:
        print(f"{'line':>6}  {'doc_id':<20}{'attribute':<16}{'max cue lift':>13}{'group lift':>12}  verdict")
        for v in verdicts:
            print(f"{v['line']:>6}  {v['doc_id'][:19]:<20}{v['attribute'][:15]:<16}{v['max_cue_lift']:>13.2f}"
                  f"{v['group_lift']:>12.2f}  {'verified' if v['verified'] else v['reason']}")
        n_ok = sum(v["verified"] for v in verdicts)
        print(f"{n_ok} of {len(verdicts)} groups verified (tau_weak {args.tau_weak}, tau_reveal {args.tau_reveal})"
              + (f"; {rejected} lines rejected" if rejected else ""))
    return EXIT_REJECTED if rejected else EXIT_OK


class _LineError(Exception):
    def __init__(self, field: str | None, reason: str):
        super().__init__(reason)
        self.field, self.reason = field, reason


def _cmd_ql_score(args: argparse.Namespace) -> int:
    from qlb.quasileak import scoring as quasileak
    from warehouse.ingest import IngestRequest, validate_file

    for f in (args.corpus, args.predictions):
        if not f.is_file():
            raise _UserError(f"{f}: no such file")
    corpus_report = validate_file(None, IngestRequest("corpus", args.corpus, "stateless"))
    docs = [d for _, d in corpus_report.accepted]
    # a group must name one of the corpus's attributes (QUASILEAK.md section 4), as a stored corpus checks it
    pred_report = validate_file(None, IngestRequest("predictions", args.predictions, "stateless"),
                                documents={d.doc_id: len(d.text) for d in docs},
                                attributes=frozenset(a for d in docs for a in d.policy))
    where = {"corpus": args.corpus}
    _print_rejects(args.corpus, _reject_lines(corpus_report.rejects), where)
    _print_rejects(args.predictions, _reject_lines(pred_report.rejects), where)
    corpus = quasileak.documents_from_records(docs)
    ids = [d for d, doc in corpus.items() if args.split is None or doc["split"] == args.split]
    preds = quasileak.predictions_from_records([p for _, p in pred_report.accepted])
    for det, p in sorted(preds.items()):      # as `qlb ingest predictions` warns: a document left out is "nothing"
        missing = len(set(ids) - set(p))
        if missing:
            print(f"qlb quasileak score: warning: detector {det!r} has predictions for {len(ids) - missing:,} of the "
                  f"{len(ids):,} documents{f' of split {args.split}' if args.split else ''}: the other {missing:,} "
                  "count as reporting nothing (their targets missed)", file=sys.stderr)
    out = {"detectors": {det: quasileak.detector_report(quasileak.score_detector(corpus, p, ids))
                         for det, p in sorted(preds.items())}}
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(f"{'detector':<22}{'targets':>8}{'complete R':>12}{'graded R':>10}{'strict P':>10}{'complete F1':>13}")
        for det, rep in out["detectors"].items():
            a = rep["all"]
            f = lambda v: "N/A" if v is None else f"{v:.3f}"  # noqa: E731
            print(f"{det:<22}{a['targets']:>8}{f(a['complete_recall']):>12}{f(a['graded_recall']):>10}"
                  f"{f(a['strict_precision']):>10}{f(a['complete_f1']):>13}")
    return EXIT_REJECTED if corpus_report.rejects or pred_report.rejects else EXIT_OK


def _cmd_ql_run(args: argparse.Namespace) -> int:
    import os

    from qlb.collect.transports import base_url_problem
    from qlb.runs.audit import run_audits
    from qlb.quasileak.detectors import ChatEndpointDetector, PythonDetector, builtin_detectors
    from qlb.runs.quasileak import (DetectorFailed, DetectorStopped, detector_coverage, failure_tally, run_detector,
                                    stored_scores)
    from warehouse.db import default_path, writer

    if args.target is not None and args.detector != "python":
        raise _UsageError(f"--target names the function of --detector python; --detector {args.detector} takes none")
    if args.detector == "python":           # its target is imported once the warehouse is known to be there
        if not args.target:
            raise _UsageError("--detector python needs --target module:function (or path/to/file.py:function), the "
                              "function called once per document")
    elif args.detector == "chat":
        if not args.base_url or not args.endpoint_model:
            raise _UsageError("--detector chat needs --base-url and --endpoint-model")
        problem = base_url_problem(args.base_url, "http://HOST:PORT/v1")        # as qlb collect checks it
        if problem:
            raise _UsageError(problem)
        if args.timeout <= 0:
            raise _UsageError(f"--timeout {args.timeout:g}: expected a number of seconds above 0")
        detector = ChatEndpointDetector(args.base_url, args.endpoint_model, os.environ.get(args.api_key_env),
                                        timeout=args.timeout)
    else:
        known = builtin_detectors()
        if args.detector not in known:
            raise _UsageError(f"unknown detector {args.detector!r}; expected one of {', '.join(known)}, chat or "
                              "python")
        detector = known[args.detector]
    path = args.warehouse or default_path()
    if not Path(path).exists():
        raise _UserError(f"{path}: no warehouse here yet (run `qlb demo` or ingest a corpus)")
    if args.detector == "python":
        try:
            detector = PythonDetector(args.target)      # qlb collect's loader and its words
        except ValueError as exc:                       # no such module, file or function, or its import raised
            raise _UsageError(str(exc)) from None
    bar = _progress(detector.name, None)

    def progress(done: int, total: int) -> None:
        bar.total = total
        bar.n = done
        bar.refresh()

    tally, failed = failure_tally(), None
    try:
        with writer(path) as con:
            dataset = _resolve_dataset(con, args.dataset)
            stats = run_detector(con, dataset, detector, None if args.split == "all" else args.split, progress,
                                 tally=tally)
            run = run_audits(con, dataset, decode=False, utility=False)
            scores, coverage = stored_scores(con, run.run_id), detector_coverage(con, dataset)
    except DetectorFailed as exc:           # scored, it would look like a detector that found nothing
        failed = exc
    except DetectorStopped as exc:          # an unreachable endpoint, or the first documents failing alike
        raise _UserError(str(exc)) from None
    finally:
        bar.close()
        if isinstance(detector, ChatEndpointDetector):
            detector.close()
    if failed is not None:                  # the reasons, then the one-line error (exit 1)
        print("\n".join(_detector_failure_lines(failed.reasons, sum(r["count"] for r in failed.reasons), stored=False)))
        raise _UserError(str(failed))
    documents, failures = stats["documents"], stats["failures"]
    print(f"{detector.name}: {_plural(documents, 'document')}"
          + (f", {failures:,} failed" if failures else ", none failed")
          + f"; predictions stored; scores in run {run.run_id}" + (" (reused: same data)" if run.reused else ""))
    if failures:
        print("\n".join(_detector_failure_lines(tally.most_frequent(), failures)))
    board = _quasileak_board(scores, coverage, detector.name)
    if board:
        print("\n" + "\n".join(board))
        scored = scores["split"].iloc[0]
        if args.split not in ("all", scored) and scored != "all":     # a run on another split than the scored one
            print(f"  (the detector ran on the {args.split} split; the scores are of the {scored} split, where it has "
                  f"no predictions from this run: rerun with --split {scored} or --split all)")
    if failures and failures / documents >= QL_FAILURE_WARNING:
        print(f"qlb quasileak: warning: {failures:,} of {documents:,} documents ({100 * failures / documents:.0f}%) "
              f"failed; the scores count each as reporting nothing, so {detector.name}'s recall above is lower than "
              "it would be had they been answered (the reasons are listed under the summary)", file=sys.stderr)
    return EXIT_OK


QL_FAILURE_WARNING = 0.10     # a detector run whose failures are at least this share of its documents gets a warning
QL_BOARD_METRICS = ("complete_f1", "complete_recall", "strict_precision", "over_flag_rate")


def _stored_ql_scores(path: str, run) -> tuple:
    """An audit run's stored QuasiLeak scores (each detector's simulated flag with them) and the documents each
    detector answered, read from the warehouse."""
    from qlb.runs.quasileak import detector_coverage, stored_scores
    from warehouse.db import reader

    with reader(path) as con:
        return stored_scores(con, run.run_id), detector_coverage(con, run.dataset_id)


def _close_name(name: str, names: Sequence[str]) -> str | None:
    """The one of ``names`` closest to ``name`` (a typo: ``tab-courts`` for ``tab-court``), or None."""
    import difflib
    near = difflib.get_close_matches(name, [n for n in names if n != name], n=1)
    return near[0] if near else None


def _detector_failure_lines(reasons: list[dict], failures: int, stored: bool = True) -> list[str]:
    """Why a detector's documents failed, most frequent first, each with its first document, as
    `qlb collect` lists why answers are not valid; a stored failed document counts as reporting nothing."""
    lines = [f"  why {_plural(failures, 'document')} failed (each counts as reporting nothing in the scores; every "
             "document's reason: the QuasiLeak page's document viewer), most frequent first:" if stored else
             f"  why the {_plural(failures, 'document')} failed, most frequent first:"]
    for r in reasons[:REASONS_SHOWN]:
        lines.append(f"  {r['count']:>6}  {r['reason']} (e.g. document {r['example_world']})")
    rest = reasons[REASONS_SHOWN:]
    if rest:
        lines.append(f"  {sum(r['count'] for r in rest):>6}  with {_plural(len(rest), 'other reason')}")
    return lines


def _quasileak_board(scores, coverage=None, just_run: str | None = None) -> list[str]:
    """The QuasiLeak leaderboard of a run as text: each detector's complete-group F1, complete recall,
    strict precision and over-flag rate on the scored split, with 95% document-bootstrap intervals,
    best complete-group F1 first, and the documents each answered when one did not answer all (as
    the QuasiLeak page shows them); ``just_run`` marked with ``*``, a simulated detector named so.
    ``scores``: ``stored_scores`` rows; ``coverage``: ``detector_coverage`` rows."""
    import pandas as pd

    from qlb.present.coverage import COLUMN, coverage_column, coverage_on, coverage_sentence, split_words
    from qlb.present.names import QL_METRIC_NAMES, pct_interval

    a = scores[scores["slice_kind"] == "all"]
    if a.empty:
        return []
    split = a["split"].iloc[0]
    rows = []
    for det, sub in a.groupby("detector", sort=True):
        m = sub.set_index("metric")
        simulated = "simulated" in sub and bool(sub["simulated"].any())
        f1 = m["value"].get("complete_f1")
        rank = 1.0 if f1 is None or pd.isna(f1) else -f1          # no F1 (nothing predicted, no target): last
        rows.append((rank, det, [("* " if det == just_run else "  ") + det + (" (SIMULATED)" if simulated else "")]
                     + [pct_interval(m["value"].get(k), m["ci_low"].get(k), m["ci_high"].get(k))
                        for k in QL_BOARD_METRICS]))
    rows.sort(key=lambda r: r[:2])
    header = ["  detector", *(QL_METRIC_NAMES[k] for k in QL_BOARD_METRICS)]
    table = [cells for *_, cells in rows]
    on = coverage_on(scores, coverage)          # what the run stored when it scored (today's for an older run)
    answered = coverage_column(pd.Series([det for _, det, _ in rows]), on) if on is not None else None
    if answered is not None:
        header.insert(1, COLUMN)
        table = [[cells[0], cell, *cells[1:]] for cells, cell in zip(table, answered)]
    widths = [max(len(c[i]) for c in [header, *table]) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))).rstrip()
             for cells in [header, *table]]
    marked = f"; * {just_run}, the detector this command ran" if just_run in set(a["detector"]) else ""
    said = coverage_sentence(on, split)
    return [f"QuasiLeak detectors on {split_words(split)}, best complete-group F1 first "
            f"(with 95% intervals{marked}):", *lines] + ([said] if said else [])


class _UserError(Exception):
    pass


class _UsageError(Exception):
    """Bad combination of arguments (exit 2, like argparse's own usage errors)."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run one `qlb` command; the exit code (0 ok, 2 bad usage, 3 rejected input lines, 1 other failure)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = build_parser().parse_args(argv)
    except KeyboardInterrupt:            # Ctrl+C in the second or two the commands take to load: no traceback
        print("qlb: interrupted", file=sys.stderr)
        return EXIT_FAILURE
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    from warehouse.db import WarehouseError
    from warehouse.ingest import IngestError

    handlers = {"demo": _cmd_demo, "ingest": _cmd_ingest, "refusal": _cmd_refusal,
                "audit": lambda a: _cmd_audit(a, argv),
                "defend": _cmd_defend, "report": _cmd_report, "migrate": _cmd_migrate,
                "quasileak": _cmd_quasileak, "collect": lambda a: _cmd_collect(a, argv)}
    stdout = sys.stdout
    sys.stdout = _StdoutUntilClosed(stdout)
    try:
        return handlers[args.command](args)
    except _UsageError as exc:
        print(f"qlb {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except _RejectedInput as exc:
        for line in exc.problems:
            print(line, file=sys.stderr)
        return EXIT_REJECTED
    except (_UserError, WarehouseError, IngestError, ValueError) as exc:
        print(f"qlb {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    except KeyboardInterrupt as exc:     # Ctrl+C; or SIGTERM while qlb collect runs (its reason says so)
        print(f"qlb {args.command}: {getattr(exc, 'reason', 'interrupted')}", file=sys.stderr)
        return EXIT_FAILURE
    except BrokenPipeError:     # the reader went away (`qlb ... | head`): not an error of ours, nothing more to say
        _to_devnull(stdout.fileno())     # no second error as Python flushes at exit
        return EXIT_OK
    except Exception as exc:  # last resort: one line, no traceback (use -v for details)
        logging.getLogger(__name__).debug("unexpected failure", exc_info=True)
        print(f"qlb {args.command}: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    finally:
        sys.stdout.flush()          # through the guard: a reader gone before the last write costs no exit code
        sys.stdout = stdout


def _to_devnull(fd: int) -> None:
    """Point ``fd`` at /dev/null (what Python still flushes at exit goes nowhere, with no second error)."""
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, fd)
    finally:
        os.close(null)


class _StdoutUntilClosed:
    """``sys.stdout`` while a command runs: once its reader goes away (`qlb refusal ... | head -1`),
    what is left to print is dropped, quietly, and the command goes on to its own exit code (3 for
    rejected lines, say), as if everything had been read."""

    def __init__(self, stream: Any) -> None:
        self._stream, self.gone = stream, False

    def write(self, text: str) -> int:
        if not self.gone:
            try:
                return self._stream.write(text)
            except BrokenPipeError:
                self._reader_gone()
        return len(text)

    def flush(self) -> None:
        if not self.gone:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._reader_gone()

    def _reader_gone(self) -> None:
        self.gone = True
        try:        # what is still buffered goes nowhere when Python flushes at exit: no second error then
            _to_devnull(self._stream.fileno())
        except (OSError, ValueError, AttributeError):
            pass

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


if __name__ == "__main__":
    sys.exit(main())
