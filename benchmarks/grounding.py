"""Grounding benchmark: real forward calls per TGS item, counted by a hook on the model.

Prints ``name: value`` lines:

* ``forward_passes_per_self_item`` — forward calls to elicit one TGS-self item (rationale
  visible and rationale masked), each elicitation in its own call (goal 2: one per condition,
  although the numeral "10" needs a second token in SmolLM2's digit-splitting tokenizer).
* ``forward_passes_per_pair_item`` — forward calls for one TGS-pair item (good and bad side),
  one side per call (goal 2: one per side).
* ``forward_passes_per_curve_item`` — the five masking-curve shares of one item (goal 5).
* ``batched_forward_calls_per_self_item`` — the same with 16 items' conditions batched
  (16 sequences per call).
* ``shared_prefix_forward_calls_per_problem`` — calls for one problem's six elicitations of a
  grounding run (visible, masked, good, three bad sides) batched together: the conversation
  prefix once, then all rows (goal 2).
* ``bench_build_items_per_s`` — problems per second through a whole TGS-Bench build (the four
  stages of ``clearsight grounding build-bench`` with their store, then the pool read back) on 64
  bundled problems, the generator a scripted backend replaying each problem's canonical
  solution (every answer right, so every stage runs on every problem; the model edits are
  refused and the rule steps in): clearsight's own cost per item, model time excluded.
* ``forward_passes_per_variation_item`` — forward calls per content-variation alternative: K = 5
  alternatives of one axis of one trajectory, scored with the verbalize read-out in one
  ``elicit`` call at batch size 1: they share the conversation prefix, which no longer costs
  a second call per row (goal 1 per alternative).
* ``smollm2_elicitations_per_s`` — elicitations per second of the real SmolLM2-135M on this
  machine's CPU, six per problem as in a run (shared machine: a rough figure).

The tiny model is a 2-layer Llama built offline with the real SmolLM2 tokenizer, so numerals
tokenize exactly as in the real model.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from _timing import report
from clearsight.grounding.bench.pairs import bad_trajectory, perturb_answer
from clearsight.grounding.confidence.elicit import ElicitRequest, elicit
from clearsight.grounding.confidence.methods import get_readout, readout_requests
from clearsight.grounding.problems.bundled import bundled_problems
from clearsight.grounding.problems.problem import Problem
from clearsight.grounding.trajectories.trajectory import (
    Trajectory,
    elicit_messages,
    good_trajectory,
)
from clearsight.models.hf import make_hf
from clearsight.seeding import rng_for


class Calls:
    """Counts a model's forward calls (a hook fires once per call, whatever the batch)."""

    def __init__(self, model: Any) -> None:
        self.n = 0
        model.register_forward_hook(self._hook)

    def _hook(self, *args: Any) -> None:
        self.n += 1


def _req(problem: Problem, traj: Trajectory, share: float) -> ElicitRequest:
    messages, spans = elicit_messages(problem, traj)
    hide = tuple(spans[s] for s in ("vision", "reasoning") if spans[s][1] > spans[s][0])
    return ElicitRequest(messages, hide=hide if share > 0 else (), share=share)


def _problem_rows(p: Problem) -> list[ElicitRequest]:
    """The six elicitations of one problem in a run (own trajectory stood in by the good one)."""
    good = good_trajectory(p)
    rows = [_req(p, good, 0.0), _req(p, good, 1.0), _req(p, good, 0.0)]
    for axis, text in (("vision", good.vision[:-1] + "!"), ("reasoning", "so it is 1.")):
        rows.append(_req(p, bad_trajectory(good, axis, text), 0.0))
    bad = perturb_answer(good.answer, p, rng_for("b"))[0]
    rows.append(_req(p, bad_trajectory(good, "answer", bad), 0.0))
    return rows


def _build_items_per_s(tmp: Path) -> float:
    """Problems per second through a TGS-Bench build with a scripted generator."""
    import json

    from clearsight.grounding import BuildBenchConfig, read_bench, run_build_bench

    problems = bundled_problems(64)
    entries = [{"match": "Here is a", "texts": ["Nothing like the span at all."]}]
    for p in problems:
        s = p.solution or {}
        text = f" {s['observation']}\nReasoning: {s['reasoning']}\nAnswer: {s['answer']}"
        entries.append({"match": p.question, "texts": [text]})
    script = tmp / "generator.jsonl"
    script.write_text("\n".join(json.dumps(e) for e in entries) + "\n", encoding="utf-8")
    cfg = BuildBenchConfig(generator=f"scripted:{script}", generator_options={}, n_problems=64)
    t0 = time.perf_counter()
    run_build_bench(cfg, tmp / "build", progress=False)
    bench = read_bench(cfg, tmp / "build")
    elapsed = time.perf_counter() - t0
    assert bench.manifest["counts"]["all"]["good"] == len(problems)
    return len(problems) / elapsed


def main() -> None:
    from fixtures.hf_tiny import build_tiny

    problems = bundled_problems(16)
    tmp = Path(tempfile.mkdtemp())
    try:
        backend = make_hf(str(build_tiny("llama", tmp / "llama")), {"batch_size": 16})
        calls = Calls(backend.model)
        p = problems[0]
        good = good_trajectory(p)
        start = calls.n
        for share in (0.0, 1.0):
            elicit(backend, [_req(p, good, share)], batch_size=1)
        report("forward_passes_per_self_item", calls.n - start, 0)
        bad = bad_trajectory(good, "answer", perturb_answer(good.answer, p, rng_for("b"))[0])
        start = calls.n
        for traj in (good, bad):
            elicit(backend, [_req(p, traj, 0.0)], batch_size=1)
        report("forward_passes_per_pair_item", calls.n - start, 0)
        start = calls.n
        for share in (0.0, 0.25, 0.5, 0.75, 1.0):
            elicit(backend, [_req(p, good, share)], batch_size=1)
        report("forward_passes_per_curve_item", calls.n - start, 0)
        reqs = [_req(q, good_trajectory(q), s) for q in problems for s in (0.0, 1.0)]
        start = calls.n
        elicit(backend, reqs, batch_size=16)
        report("batched_forward_calls_per_self_item", (calls.n - start) / len(problems))
        start = calls.n
        elicit(backend, _problem_rows(p), batch_size=16)
        report("shared_prefix_forward_calls_per_problem", calls.n - start, 0)
        report("bench_build_items_per_s", _build_items_per_s(tmp), 1)
        alts = [bad_trajectory(good, "vision", f"{good.vision} (reading {k})") for k in range(5)]
        start = calls.n
        verbalize = get_readout("verbalize")
        elicit(backend, [r for a in alts for r in readout_requests(verbalize, p, a, 0.0, 0)], 1)
        report("forward_passes_per_variation_item", (calls.n - start) / len(alts))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    try:
        real = make_hf("smollm2-135m", {"batch_size": 16})
    except Exception as exc:  # the package may be missing
        print(f"smollm2 skipped: {exc}")
        return
    reqs = [r for q in problems[:4] for r in _problem_rows(q)]
    elicit(real, reqs[:2])
    t0 = time.perf_counter()
    elicit(real, reqs)
    report("smollm2_elicitations_per_s", len(reqs) / (time.perf_counter() - t0))


if __name__ == "__main__":
    main()
