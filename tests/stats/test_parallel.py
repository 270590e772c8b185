"""The task runner's Dask side that needs no cluster: what a worker's code fingerprint covers (the
engine as loaded, not the files on disk, not the UI), the keys tasks get, the scheduler addresses
accepted. (With a cluster: tests/runs/test_cluster.py.)"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from functools import partial
from pathlib import Path

import numpy as np
import pytest
import sklearn
from dask.utils import key_split

from qlb.stats.parallel import SchedulerError, check_scheduler, code_fingerprint, task_keys, task_stage
from qlb.tuple import defense_audit, recovery, utility
from tests.conftest import ROOT


def qlb_copy(folder: Path) -> Path:
    """A copy of this checkout's qlb under ``folder`` (another path: another machine's install)."""
    shutil.copytree(ROOT / "qlb", folder / "qlb", ignore=shutil.ignore_patterns("__pycache__"))
    return folder


def fingerprint_in_a_new_process(root: Path, before: str = "") -> dict[str, str]:
    """``code_fingerprint()`` of a new Python process (another hash seed) whose qlb is the copy
    under ``root``, after running the statements ``before``."""
    script = f"{before}\nimport json\nfrom qlb.stats.parallel import code_fingerprint\nprint(json.dumps(code_fingerprint()))"
    done = subprocess.run([sys.executable, "-c", script], cwd=root, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(root), "PYTHONHASHSEED": "4242"})
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_same_code_anywhere_has_the_same_fingerprint(tmp_path):
    here = code_fingerprint()
    assert fingerprint_in_a_new_process(qlb_copy(tmp_path)) == here
    assert here["python"] == f"{sys.version_info.major}.{sys.version_info.minor}"
    assert (here["numpy"], here["scikit-learn"]) == (np.__version__, sklearn.__version__)
    assert {"qlb", "pandas", "scipy"} <= set(here)


def test_the_code_as_loaded_counts_not_the_file_on_disk(tmp_path):
    """A worker that imported an engine module while it was changed still runs that change after
    the file is put back: it must not pass for this process's code."""
    root = qlb_copy(tmp_path)
    module = root / "qlb" / "tuple" / "recovery.py"
    change = (f"from pathlib import Path\nmodule = Path({str(module)!r})\ntext = module.read_text()\n"
              "module.write_text(text + '\\n\\ndef _changed() -> int:\\n    return 2\\n')\n"
              "import qlb.tuple.recovery\nmodule.write_text(text)\n")
    theirs = fingerprint_in_a_new_process(root, change)
    assert module.read_text() == (ROOT / "qlb" / "tuple" / "recovery.py").read_text()
    assert theirs["qlb"] != code_fingerprint()["qlb"]
    assert {k: v for k, v in theirs.items() if k != "qlb"} == {k: v for k, v in code_fingerprint().items() if k != "qlb"}


def test_ui_code_comments_docstrings_and_line_numbers_do_not_count(tmp_path):
    """The fingerprint covers the engine the tasks run and what it computes: an edit to the CLI,
    the report's names, a comment, a docstring or the lines a function sits on leaves it alone."""
    root = qlb_copy(tmp_path)
    for ui in ("cli.py", "present/names.py"):
        with open(root / "qlb" / ui, "a", encoding="utf-8") as fh:
            fh.write("\n\ndef _another_page_helper() -> str:\n    return 'new'\n")
    parallel = root / "qlb" / "stats" / "parallel.py"
    text = parallel.read_text(encoding="utf-8")
    edited = text.replace('    """Why a domain cannot be fitted', '    """(edited) Why a domain cannot be fitted', 1) \
        .replace("\nfrom __future__ import annotations\n", "\nfrom __future__ import annotations\n\n# lower\n\n", 1)
    assert edited.count("(edited)") == 1 and "# lower" in edited
    parallel.write_text(edited + "\n# a comment at the end\n", encoding="utf-8")
    assert fingerprint_in_a_new_process(root) == code_fingerprint()


def test_a_task_key_names_its_stage_model_and_domain():
    decoding = [("sim-alder", "it", None, ("choice",)), ("sim-birch", "health", None, ("choice",))]
    keys = task_keys(task_stage(recovery._decode_task), decoding)
    batch = keys[0].split(" ")[0].split("-")[1]
    assert keys == [f"recovery-{batch}-0 sim-alder/it", f"recovery-{batch}-1 sim-birch/health"]
    assert [key_split(k) for k in keys] == ["recovery", "recovery"]     # the dashboard groups them by stage
    assert set(task_keys("decoding", decoding)).isdisjoint(keys)         # another batch, other keys
    assert task_stage(partial(utility.utility_domain, ontology=None)) == "utility"
    endpoint = task_keys(task_stage(defense_audit.defend_endpoint), [("sim-alder", "it", None, [], "top2")])
    assert endpoint[0].endswith(" sim-alder/it/top2") and endpoint[0].startswith("defenses-")
    assert task_stage(defense_audit._first_stage) == "defenses" and task_stage(divmod) == "divmod"


@pytest.mark.parametrize("spec", ["127.0.0.1:8786", "tcp://10.0.0.5:8786", "tls://scheduler.lan:8786",
                                  "tcp://[::1]:8786", " local:2 "])
def test_the_accepted_scheduler_addresses(spec):
    assert check_scheduler(spec) == spec.strip()


@pytest.mark.parametrize("spec, hint", [
    ("http://127.0.0.1:8787", "(http:// is a web address, such as the scheduler's dashboard; the scheduler itself "
                              "listens on tcp://HOST:8786 by default)"),
    ("inproc://x:1", "(qlb does not use Dask's inproc:// transport)"),
    ("ucx://host:8786", "(qlb does not use Dask's ucx:// transport)"),
    ("my-laptop", ""), ("local:0", ""), ("tcp://host", "")])
def test_other_addresses_are_refused_naming_the_accepted_forms(spec, hint):
    with pytest.raises(SchedulerError) as error:
        check_scheduler(spec)
    assert str(error.value) == (
        "expected HOST:PORT or tcp://HOST:PORT (a Dask scheduler, port 8786 by default), tls://HOST:PORT (with "
        "Dask's TLS settings, distributed.comm.tls in its configuration) or local:N (N worker processes on this "
        f"machine, N >= 1), not {spec!r}" + (f" {hint}" if hint else ""))
