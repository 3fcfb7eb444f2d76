"""The pool a TGS-Bench build holds (:mod:`clearsight.grounding.bench.protocol`): every problem's
outcome
read back stage by stage into a :class:`~clearsight.grounding.bench.file.TgsBench` whose
manifest states the sources and their hashes, the counts, retention per benchmark and axis
(kept / attempted), the rejection reasons, the injectors and the judge's identification."""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from clearsight.grounding.bench.file import BenchItem, BenchPair, TgsBench
from clearsight.grounding.bench.pairs import AXES
from clearsight.grounding.bench.protocol import (
    BUILD_BENCH,
    BuildBenchConfig,
    Outcomes,
    done_outcomes,
    load_build_problems,
    plan_check,
    plan_edits,
    plan_good,
    plan_validate,
    source_entries,
)
from clearsight.grounding.bench.readouts import (
    CheckReadouts,
    GoodReadouts,
    PairEditReadouts,
    ValidateReadouts,
)
from clearsight.grounding.bench.specs import (
    CHECK,
    EDIT,
    GOOD,
    VALIDATE,
    CheckSpec,
    generator_ref,
    prompts,
)
from clearsight.grounding.problems.problem import Problem
from clearsight.grounding.trajectories.trajectory import Trajectory
from clearsight.grounding.trajectories.written import trajectory_from_json
from clearsight.seeding import content_hash
from clearsight.store import RunStore


def reason_kind(reason: str) -> str:
    """A rejection reason without its particulars: the text before the first ": " with
    numbers written as ``#`` (``"edit check: character similarity 0.81 < 0.9"`` ->
    ``"edit check"``; ``"character similarity 0.81 < 0.9"`` -> ``"character similarity # < #"``)."""
    head = reason.split(": ", 1)[0]
    return re.sub(r"-?\d+(?:\.\d+)?%?", "#", head)


@dataclass
class _Tally:
    """What the manifest counts while the pool is read."""

    counts: dict[str, Counter[str]] = dataclasses.field(default_factory=dict)
    rejections: dict[str, Counter[str]] = dataclasses.field(default_factory=dict)
    injectors: dict[str, Counter[str]] = dataclasses.field(default_factory=dict)
    refused: dict[str, Counter[str]] = dataclasses.field(default_factory=dict)
    judged: dict[str, list[float]] = dataclasses.field(default_factory=dict)
    with_image: Counter[str] = dataclasses.field(default_factory=Counter)

    def count(self, bench: str, what: str) -> None:
        for b in (bench, "all"):
            self.counts.setdefault(b, Counter())[what] += 1

    def reject(self, stage: str, reason: str | None) -> None:
        self.rejections.setdefault(stage, Counter())[reason_kind(reason or "no record")] += 1


def _good_outcome(
    config: BuildBenchConfig, p: Problem, done: Mapping[str, Outcomes], tally: _Tally
) -> tuple[CheckSpec, Trajectory] | None:
    """The kept good trajectory of a problem and its check item, or None (counted)."""
    good = plan_good(config, [p])[0]
    g = done[GOOD].get(good.key)
    if not g or not g["kept"]:
        tally.reject("good", g["reason"] if g else "no record: the item failed or did not run")
        return None
    check = plan_check(config, [good], done[GOOD])[0]
    c = done[CHECK].get(check.key)
    if not c or not c["kept"]:
        tally.reject("check", c["reason"] if c else "no record: the item failed or did not run")
        return None
    tally.count(p.benchmark, "good")
    return check, trajectory_from_json(c["good"])


def _pairs(
    config: BuildBenchConfig, check: CheckSpec, done: Mapping[str, Outcomes], tally: _Tally
) -> dict[str, BenchPair]:
    pairs = {}
    for edit in plan_edits(config, [check], done[CHECK]):
        e = done[EDIT].get(edit.key)
        if not e or not e["kept"]:
            tally.reject(edit.axis, e["reason"] if e else "no record: the item failed")
            continue
        check_of = plan_validate(config, [edit], done[EDIT])[0]
        v = done[VALIDATE].get(check_of.key)
        if not v or not v["kept"]:
            tally.reject(edit.axis, v["reason"] if v else "no record: the item failed")
            continue
        tally.injectors.setdefault(edit.axis, Counter())[str(e["injector"])] += 1
        if e["model_refused"]:
            refused = tally.refused.setdefault(edit.axis, Counter())
            refused[reason_kind(str(e["model_refused"]))] += 1
        if v["judge_p_bad"] is not None:
            tally.judged.setdefault(edit.axis, []).append(float(v["judge_p_bad"]))
            tally.with_image[edit.axis] += bool(v.get("judge_saw_image", False))
        pairs[edit.axis] = BenchPair(
            check_of.bad,
            str(e["injector"]),
            e["rule"],
            e["model_refused"],
            float(e["similarity"]),
            v["judge_p_bad"],
        )
        tally.count(check.problem.benchmark, edit.axis)
    return pairs


def collect_bench(
    config: BuildBenchConfig, problems: Sequence[Problem], store: RunStore
) -> TgsBench:
    """The pool a build's store holds: the items with at least one kept pair, and the manifest
    (sources, counts, retention = kept / attempted per benchmark and axis, rejection reasons
    by stage or axis, injectors and the model edits' refusal reasons, judge identification)."""
    done: dict[str, Outcomes] = {
        GOOD: done_outcomes(store, GOOD, GoodReadouts),
        CHECK: done_outcomes(store, CHECK, CheckReadouts),
        EDIT: done_outcomes(store, EDIT, PairEditReadouts),
        VALIDATE: done_outcomes(store, VALIDATE, ValidateReadouts),
    }
    tally = _Tally()
    items = []
    for p in problems:
        tally.count(p.benchmark, "attempted")
        kept = _good_outcome(config, p, done, tally)
        if kept is None:
            continue
        pairs = _pairs(config, kept[0], done, tally)
        if pairs:
            items.append(BenchItem(p, kept[1], pairs))
    counts = {b: {k: c[k] for k in ("attempted", "good", *AXES)} for b, c in tally.counts.items()}
    retention = {b: {k: c[k] / c["attempted"] for k in ("good", *AXES)} for b, c in counts.items()}
    manifest = {
        "generator": config.generator,
        "generator_options": config.generator_options,
        "judge": config.judge,
        "seed": config.seed,
        "template": dataclasses.asdict(generator_ref()),
        "prompts_hash": content_hash(prompts()),
        "sources": source_entries(config, problems),
        "counts": counts,
        "retention": retention,
        "rejections": {k: dict(v) for k, v in tally.rejections.items()},
        "injectors": {k: dict(v) for k, v in tally.injectors.items()},
        "model_edits_refused": {k: dict(v) for k, v in tally.refused.items()},
        "judge_picked_bad": {
            a: {
                "n": len(v),
                "share": sum(x > 0.5 for x in v) / len(v),
                "with_image": tally.with_image[a],
            }
            for a, v in tally.judged.items()
        },
    }
    return TgsBench(tuple(items), manifest)


def read_bench(config: BuildBenchConfig, run_dir: Path) -> TgsBench:
    """The pool of a build run (write it with
    :func:`~clearsight.grounding.bench.file.write_bench`)."""
    problems = load_build_problems(config)
    with RunStore.open(run_dir, read_only=True) as store:
        store.expect_protocol(BUILD_BENCH.name)
        return collect_bench(config, problems, store)
