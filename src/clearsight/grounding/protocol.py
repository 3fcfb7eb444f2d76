"""Trajectory grounding (docs/methods.md §5): plan items, run them, keep records.

Four kinds of items, each a typed spec of :mod:`clearsight.grounding.specs` (keyed by
:attr:`~clearsight.specs.Spec.key`) that the worker is handed as it is; a record is a pure
function of its spec:

1. ``grounding.trajectory`` (:class:`~clearsight.grounding.specs.TrajectorySpec`) — (problem,
   model, template, decoding): the model's own greedy trajectory in the run's template (a
   native one kept as written, its spans marked; the canonical one segmented and re-rendered;
   the manifest's ``trajectory`` says which and why); or, for a problem that brings a given
   trajectory text, that text cut at its confidence slot. Unparseable output fails the item
   with the reason.
2. ``grounding.edit`` (:class:`~clearsight.grounding.specs.EditSpec`) — (problem, axis, span,
   generator): TGS-Bench's vision / reasoning error injection on the canonical trajectory
   (model edit, checked; rule fallback). The problems of a TGS-Bench file
   (``GroundingConfig.bench``, :mod:`clearsight.grounding.bench.file`) bring their pairs.
3. ``grounding.judge`` (:class:`~clearsight.grounding.specs.JudgeSpec`, when a judge is
   configured) — (problem, pair, order, judge): which side of a TGS-Bench pair holds the error.
4. ``grounding.variation`` (:class:`~clearsight.grounding.specs.VariationSpec`, sampled
   content variation) — (problem, axis, k, own trajectory, model, sampling, seed): alternative
   k of one axis, sampled by the model (:mod:`clearsight.grounding.variation`); a rejected
   sample is kept with its reason (``accepted`` false) and not scored.
5. ``grounding.elicit`` (:class:`~clearsight.grounding.specs.ElicitSpec`) — (problem, variant,
   trajectory, share, model, read-out): one confidence read-out
   (:mod:`clearsight.grounding.confidence.methods`; one forward pass per slot). Variants:
   ``self/rX`` (own trajectory with share X of the rationale masked), ``bench/good``,
   ``bench/<axis>/bad``, ``variation/<axis>/s<k>`` (sampled) or ``variation/<axis>/alt``
   (hand-written), ``hesitation/pre`` and ``hesitation/post`` (the first hesitation event; event k
   >= 1: ``hesitation/<k>/pre`` and ``.../post``).

The later stages are planned from the stored records of the earlier ones, with
the trajectories inside their specs, so a rerun resumes at any stage. Items are grouped into
units (one model, up to ``unit_size`` items) so a worker batches their forward passes.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

from clearsight import driver
from clearsight.driver import ModelNeed, Protocol, RunOptions, RunSummary, Stage
from clearsight.grounding.bench.file import load_bench
from clearsight.grounding.bench.use import bench_edits
from clearsight.grounding.config import GroundingConfig
from clearsight.grounding.plan import (
    load_problems,
    plan_edits,
    plan_elicitations,
    plan_judge,
    plan_trajectories,
    plan_variations,
)
from clearsight.grounding.problems.hub import benchmark_record
from clearsight.grounding.problems.problem import Problem, load_jsonl
from clearsight.grounding.specs import EDIT, ELICIT, JUDGE, TRAJECTORY, VARIATION, template_ref
from clearsight.grounding.trajectories.written import trajectory_from_json
from clearsight.grounding.unit import MASKED_PURPOSE, GroundingUnit, run_unit
from clearsight.models.base import Capabilities
from clearsight.provenance import run_manifest, source_digest
from clearsight.seeding import derive_seed
from clearsight.specs import Spec, to_plain
from clearsight.store import RunStore

if TYPE_CHECKING:
    pass


def _stage(kind: str, model: str, items: Sequence[Spec], config: GroundingConfig) -> Stage[Spec]:
    """One stage: its items for ``model``, pending ones in units of ``config.unit_size``."""
    size = config.unit_size
    options = config.options_of(model)

    def units(pending: Sequence[Spec]) -> list[GroundingUnit[Spec]]:
        return [
            GroundingUnit(kind, model, options, tuple(pending[i : i + size]))
            for i in range(0, len(pending), size)
        ]

    return Stage(kind, items, units, run_unit)


def _ok_readouts(store: RunStore, kind: str) -> Iterable[tuple[dict[str, Any], dict[str, Any]]]:
    """The stored spec and read-outs of each ok record of ``kind`` (stored JSON: the record of
    an earlier stage or an earlier run)."""
    for rec in store.iter_records("ok", kind=kind, raw=False):
        yield rec.spec, dict(rec.readouts)


def _models(config: GroundingConfig) -> list[ModelNeed]:
    """The measured model must score candidates under a custom attention mask (TGS-self hides
    the trajectory's spans); the generator and the judge must generate."""
    needs = [
        ModelNeed(
            config.model,
            config.options_of(config.model),
            Capabilities(candidate_probs=True, attention_mask=True),
            MASKED_PURPOSE,
        )
    ]
    if config.pairs and config.generator is not None:
        opts = config.options_of(config.generator)
        needs.append(ModelNeed(config.generator, opts, Capabilities(), "the TGS-Bench generator"))
    if config.judge is not None and config.pairs:
        opts = config.options_of(config.judge)
        needs.append(ModelNeed(config.judge, opts, Capabilities(), "the judge"))
    return needs


def _manifest(config: GroundingConfig, problems: list[Problem]) -> dict[str, object]:
    chosen = config.template()
    template = to_plain(template_ref(chosen.template))
    trajectory = {
        "choice": config.trajectory_template,
        "template": chosen.name,
        "reason": chosen.reason,
        "max_new_tokens": config.trajectory_tokens(),
    }
    files = [
        {
            "source": str(Path(path).resolve()),
            "sha256": source_digest(Path(path), (".jsonl", ".json")),
            "count": len(load_jsonl(path)[: config.limit]),
        }
        for path in config.jsonl
    ]
    benchmarks = [
        {"benchmark": name, **benchmark_record(name, config.datasets_dir or ".")}
        for name in config.benchmarks
    ]
    sources = {"bundled": config.n_problems, "files": files, "count": len(problems)}
    if benchmarks:  # runs without benchmarks keep the manifest they always had
        sources["benchmarks"] = benchmarks
    bench = None if config.bench is None else dict(load_bench(config.bench).manifest)
    return run_manifest(
        config.model_dump(mode="json"),
        "grounding",
        template=template,
        trajectory=trajectory,
        problems=sources,
        tgs_bench=bench,
    )


def _stages(
    config: GroundingConfig, problems: list[Problem], store: RunStore
) -> Iterator[Stage[Any]]:
    """Trajectories, then the TGS-Bench edits, the judge pass, and the elicitations planned
    from what the first two stages stored."""
    by_id = {p.id: p for p in problems}
    given = {} if config.bench is None else bench_edits(load_bench(config.bench))
    yield _stage(TRAJECTORY, config.model, plan_trajectories(config, problems), config)
    if config.pairs:
        gen_model = config.generator or config.model
        benched = {pid for pid, _ in given}  # a TGS-Bench file's problems bring their pairs
        to_edit = [p for p in problems if p.id not in benched]
        yield _stage(EDIT, gen_model, plan_edits(config, to_edit), config)
    own = {
        s["problem"]["id"]: r
        for s, r in _ok_readouts(store, TRAJECTORY)
        if s["problem"]["id"] in by_id and s["model"] == config.model
    }
    edits = {
        (s["problem_id"], s["axis"]): str(r["edited"])
        for s, r in _ok_readouts(store, EDIT)
        if s["generator"] == config.generator
    } | given
    if config.judge is not None and config.pairs:
        yield _stage(JUDGE, config.judge, plan_judge(config, problems, edits), config)
    variations = plan_variations(config, problems, own)
    if variations:
        yield _stage(VARIATION, config.model, variations, config)
    alternatives = {
        (s["problem"]["id"], s["axis"], int(s["sample"])): trajectory_from_json(r["alternative"])
        for s, r in _ok_readouts(store, VARIATION)
        if r["accepted"]
        and s["model"] == config.model
        and s["problem"]["id"] in by_id
        and s["seed"]
        == derive_seed(config.seed, s["problem"]["id"], s["axis"], s["sample"], "variation")
    }
    items = plan_elicitations(config, problems, own, edits, alternatives)
    yield _stage(ELICIT, config.model, items, config)


#: Trajectory grounding as a value for :func:`clearsight.driver.run`.
GROUNDING: Protocol[GroundingConfig, list[Problem]] = Protocol(
    "grounding", _models, load_problems, _manifest, _stages
)


def run_grounding(
    config: GroundingConfig,
    run_dir: Path | str,
    **options: Unpack[RunOptions],
) -> RunSummary:
    """Plan and run the stages (``summary.stages``: each stage's summary). Resumable. The
    same as
    ``driver.run_with(GROUNDING, config, run_dir, **options)``."""
    return driver.run_with(GROUNDING, config, run_dir, **options)


__all__ = ["GROUNDING", "run_grounding"]
