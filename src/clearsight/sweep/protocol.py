"""The visibility sweep (papers/visibility-sweep.txt): plan the items, run them, keep the records.

A sweep item is one question about one boxed target of one scene under one condition — clean,
fog or water at a visibility level, blank, shuffled, or ImageNet-C fog at a severity — asked of
one model with one prompt wording. Its spec holds everything that determines its output (scene
reference, box, question with options and answer key, physics parameters, model, seed) and its
key is the spec's content hash. Items are grouped into units of one scene and one model, so a
worker decodes the scene once and renders each degraded image once for all the questions that
use it; pixels never reach the store.
"""

from __future__ import annotations

import dataclasses
import time
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from clearsight import driver
from clearsight.driver import Execution, ModelNeed, Protocol, RunSummary, Stage
from clearsight.execute import ExecutorName
from clearsight.execute.unit import KeyedItems
from clearsight.models import (
    Backend,
    Decoding,
    Message,
    ObserverReference,
    PartialBatchError,
    Request,
    shared_backend,
)
from clearsight.physics import (
    blank_like,
    derangement,
    draw_box,
    imagenet_c_equivalents,
)
from clearsight.provenance import run_manifest
from clearsight.scenes.model import Scene
from clearsight.seeding import content_hash, derive_seed, rng_for
from clearsight.store import Record, RunStore
from clearsight.sweep.conditions import arm_stack, imagenet_c_seed, imagenet_c_stack
from clearsight.sweep.config import SweepConfig
from clearsight.sweep.readouts import letter_readout, parse_verbalized
from clearsight.tasks import (
    AbstainWording,
    DistractorScheme,
    Question,
    TemplateRef,
    category_prior,
    identification_question,
    verbalized_question,
    verification_questions,
)
from clearsight.validate import InputError

if TYPE_CHECKING:
    from clearsight.execute.on_ray import RayConfig

PROTOCOL = "sweep"
VEQ_PROTOCOL = "sweep.veq"
_VERBAL_TEMPLATE = {
    "verbal.plain": "verbal.plain.v1",
    "verbal.percent": "verbal.percent.v1",
    "verbal.scale": "verbal.scale.v1",
}


# --------------------------------------------------------------------------------------------
# Scenes as references a worker can load
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SceneRef:
    """How to load a scene in any process: its source, id and (for COCO) the selected target."""

    source: str
    id: str
    categories: tuple[str, ...]
    boxes: tuple[tuple[int, int, int, int], ...]
    coco: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "id": self.id, "coco": self.coco}


def scene_refs(config: SweepConfig) -> list[SceneRef]:
    """The scenes of a sweep, as references (no pixels are decoded here)."""
    if config.scenes == "bundled":
        from clearsight.scenes.bundled import bundled_scene_ids, bundled_specs

        specs = bundled_specs()
        ids = list(config.scene_ids) if config.scene_ids is not None else bundled_scene_ids()
        unknown = [i for i in ids if i not in specs]
        if unknown:
            raise InputError(f"unknown scene ids {unknown}; bundled scenes: {', '.join(specs)}")
        refs = [
            SceneRef(
                "bundled",
                i,
                tuple(t.category for t in specs[i].targets),
                tuple(t.box.as_tuple() for t in specs[i].targets),
            )
            for i in ids
        ]
    else:
        from clearsight.scenes.coco import CocoSelectionConfig, select_coco_targets

        if config.coco_annotations is None or config.coco_images is None:
            raise InputError("scenes='coco' needs coco_annotations and coco_images")
        targets = select_coco_targets(
            config.coco_annotations,
            config.coco_images,
            CocoSelectionConfig(n=config.coco_n, seed=config.seed),
        )
        refs = [
            SceneRef(
                "coco",
                t.scene_id,
                (t.category,),
                (t.box,),
                coco={f.name: _jsonable(getattr(t, f.name)) for f in dataclasses.fields(t)},
            )
            for t in targets
        ]
    if not refs:
        raise InputError(
            "the scene set is empty: no scene to sweep (check scene ids or `make data`)"
        )
    if not config.all_targets:
        refs = [
            dataclasses.replace(r, categories=r.categories[:1], boxes=r.boxes[:1]) for r in refs
        ]
    return refs


def _jsonable(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, tuple):
        return list(value)
    return value


_SCENE_CACHE: dict[str, Scene] = {}


def load_scene(ref: dict[str, Any], depth_model: str) -> Scene:
    """Decode a scene from its reference (bundled: cached per process)."""
    if ref["source"] == "bundled":
        from clearsight.scenes.bundled import load_bundled_scene

        return load_bundled_scene(ref["id"])
    from clearsight.scenes.coco import CocoTarget, load_coco_scene

    key = content_hash([ref, depth_model])
    if key not in _SCENE_CACHE:
        fields = dict(ref["coco"])
        fields["file"] = Path(fields["file"])
        fields["box"] = tuple(fields["box"])
        _SCENE_CACHE.clear()  # keep one COCO scene: units are per scene
        _SCENE_CACHE[key] = load_coco_scene(CocoTarget(**fields), _depth_estimator(depth_model))
    return _SCENE_CACHE[key]


_DEPTH: dict[str, Any] = {}


def _depth_estimator(model: str) -> Any:
    """A depth provider by name: ``assumed:<metres>`` (a stated constant depth) or a Depth
    Anything model id or path (one instance per process)."""
    from clearsight.scenes.depth import AssumedDepth, DepthAnythingEstimator

    if model not in _DEPTH:
        if model.startswith("assumed:"):
            try:
                far = float(model.split(":", 1)[1])
            except ValueError:
                raise InputError(f"depth {model!r}: expected assumed:<metres>") from None
            _DEPTH[model] = AssumedDepth(far_m=far)
        else:
            _DEPTH[model] = DepthAnythingEstimator(model)
    return _DEPTH[model]


# --------------------------------------------------------------------------------------------
# Planning
# --------------------------------------------------------------------------------------------


def question_to_json(q: Question) -> dict[str, Any]:
    return dataclasses.asdict(q)


def question_from_json(d: dict[str, Any]) -> Question:
    fields = dict(d)
    for name in ("question_template", "instruction_template", "abstain_template"):
        if fields.get(name) is not None:
            fields[name] = TemplateRef(**fields[name])
    for name in ("letters", "options"):
        fields[name] = tuple(fields[name])
    return Question(**fields)


def distractor_scheme(config: SweepConfig, prior: dict[str, float]) -> DistractorScheme:
    """The scheme a sweep uses: ``auto`` resolves to exchangeable where it exists."""
    if config.distractors != "auto":
        return config.distractors
    return "exchangeable" if max(prior.values()) <= 0.25 else "proportional"


def _questions(
    category: str,
    prior: dict[str, float],
    config: SweepConfig,
    scheme: DistractorScheme,
    seed_parts: tuple[Any, ...],
) -> list[tuple[str, str | None, str, Question]]:
    """(task, asked, wording, question) for one target: the same options in every wording."""
    out: list[tuple[str, str | None, str, Question]] = []
    for task in config.tasks:
        for wording in config.wordings:
            abstain: AbstainWording = "generic" if wording == "mcq.generic" else "reason"
            rng = rng_for(*seed_parts, task)
            if task == "identify":
                qs: list[tuple[str | None, Question]] = [
                    (
                        None,
                        identification_question(
                            category, prior, rng, abstain=abstain, scheme=scheme
                        ),
                    )
                ]
            else:
                yes, no = verification_questions(
                    category, prior, rng, abstain=abstain, scheme=scheme
                )
                qs = [("true", yes), ("distractor", no)]
            for asked, q in qs:
                if wording in _VERBAL_TEMPLATE:
                    q = verbalized_question(q, _VERBAL_TEMPLATE[wording])
                out.append((task, asked, wording, q))
    return out


@dataclass(frozen=True)
class SweepUnit(KeyedItems):
    """The work of one scene for one model: picklable, independent of every other unit."""

    protocol: str
    model: str
    model_options: dict[str, Any]
    scene: dict[str, Any]
    depth_model: str
    items: tuple[tuple[str, dict[str, Any]], ...]
    max_new_tokens: int = 24

    @property
    def cost(self) -> float:
        """Relative run time, so executors start the longest units first: an equivalent
        visibility costs seconds, a question milliseconds."""
        return len(self.items) * (500.0 if self.protocol == VEQ_PROTOCOL else 1.0)


@dataclass(frozen=True)
class SweepPlan:
    """All items of a sweep and their grouping into units."""

    units: tuple[SweepUnit, ...]
    prompt_hashes: dict[str, str]
    prior: dict[str, float]
    distractor_scheme: str

    @property
    def items(self) -> list[tuple[str, str, dict[str, Any]]]:
        return [(k, u.protocol, s) for u in self.units for k, s in u.items]


def item_key(spec: dict[str, Any], question_hash: str | None = None) -> str:
    """The content hash of a sweep item's spec.

    The question (the bulk of a spec, shared by every condition of a target) enters through its
    own content hash, so a key is still a hash of everything in the spec but costs one small
    encode per item; planners pass ``question_hash`` computed once per question.
    """
    qh = question_hash if question_hash is not None else content_hash(spec["question"])
    return content_hash({**spec, "question": qh})


def _conditions(config: SweepConfig) -> list[tuple[str, float | None, int | None]]:
    conds: list[tuple[str, float | None, int | None]] = []
    if "clean" in config.controls:
        conds.append(("clean", None, None))
    for arm in config.arms:
        conds += [(arm, v, None) for v in config.levels_m]
    for control in ("blank", "shuffled"):
        if control in config.controls:
            conds.append((control, None, None))
    if "imagenet_c" in config.controls:
        conds += [("imagenet_c", None, s) for s in config.imagenet_c_severities]
    return conds


def plan_sweep(config: SweepConfig) -> SweepPlan:
    """Every item of the sweep: scenes x targets x conditions x tasks x wordings x models."""
    refs = scene_refs(config)
    prior = category_prior([c for r in refs for c in r.categories])
    scheme = distractor_scheme(config, prior)
    prompt_hashes: dict[str, str] = {}
    # id() of question dicts that all stay alive in `per_scene` until planning ends
    question_hashes: dict[int, str] = {}
    per_scene = _scene_specs(config, refs, prior, scheme, prompt_hashes, question_hashes)
    units = _model_units(config, refs, per_scene, question_hashes) + _veq_units(config, refs)
    return SweepPlan(tuple(units), prompt_hashes, prior, scheme)


def _scene_specs(
    config: SweepConfig,
    refs: Sequence[SceneRef],
    prior: dict[str, float],
    scheme: DistractorScheme,
    prompt_hashes: dict[str, str],
    question_hashes: dict[int, str],
) -> list[list[dict[str, Any]]]:
    """Per scene, the model-free item specs: targets x questions x conditions (recording each
    template's hash in ``prompt_hashes`` and each question's in ``question_hashes``)."""
    partner = derangement(len(refs), config.seed) if "shuffled" in config.controls else None
    physics = {
        "airlight": config.airlight,
        "wavelengths_nm": list(config.wavelengths_nm),
        "water_table": config.water_table,
        "veil": config.veil,
        "box_thickness_px": config.box_thickness_px,
    }
    conditions = _conditions(config)
    per_scene: list[list[dict[str, Any]]] = []
    for i, ref in enumerate(refs):
        specs: list[dict[str, Any]] = []
        for t, (category, box) in enumerate(zip(ref.categories, ref.boxes, strict=True)):
            shown_partner = None
            if partner is not None:
                other = refs[int(partner[i])]
                shown_partner = {
                    "scene": other.to_json(),
                    "box": list(other.boxes[0]),
                    "category": other.categories[0],
                }
            for task, asked, wording, q in _questions(
                category, prior, config, scheme, (config.seed, ref.id, t)
            ):
                for tref in q.templates:
                    prompt_hashes[tref.id] = tref.sha256
                question = question_to_json(q)
                question_hashes[id(question)] = content_hash(question)
                for condition, level, severity in conditions:
                    spec: dict[str, Any] = {
                        "scene": ref.to_json(),
                        "target": t,
                        "box": list(box),
                        "category": category,
                        "condition": condition,
                        "level_m": level,
                        "severity": severity,
                        "task": task,
                        "asked": asked,
                        "wording": wording,
                        "question": question,
                        "physics": physics,
                        "seed": config.seed,
                    }
                    if condition == "shuffled":
                        spec["shown"] = shown_partner
                    specs.append(spec)
        per_scene.append(specs)
    return per_scene


def _model_units(
    config: SweepConfig,
    refs: Sequence[SceneRef],
    per_scene: Sequence[Sequence[dict[str, Any]]],
    question_hashes: Mapping[int, str],
) -> list[SweepUnit]:
    """One unit per model and scene: the scene's specs in the model's wordings and conditions."""
    units: list[SweepUnit] = []
    for model in config.models:
        options = dict(config.model_options.get(model, {}))
        if model == "observer":
            options = {**config.observer.model_dump(), **options}
        wordings = set(config.wordings_of(model))
        shown = set(config.conditions_of(model))
        for ref, specs in zip(refs, per_scene, strict=True):
            items = []
            for spec in specs:
                if spec["wording"] not in wordings or spec["condition"] not in shown:
                    continue
                full = {**spec, "model": model, "model_options": options}
                items.append((item_key(full, question_hashes[id(spec["question"])]), full))
            units.append(
                SweepUnit(
                    PROTOCOL,
                    model,
                    options,
                    ref.to_json(),
                    config.coco_depth_model,
                    tuple(items),
                    config.max_new_tokens,
                )
            )
    return units


def _veq_units(config: SweepConfig, refs: Sequence[SceneRef]) -> list[SweepUnit]:
    """The ImageNet-C control's equivalent-visibility units, one per scene (no model)."""
    if "imagenet_c" not in config.controls:
        return []
    units = []
    for ref in refs:
        items = []
        for s in config.imagenet_c_severities:
            spec = {"scene": ref.to_json(), "severity": s, "seed": config.seed}
            items.append((content_hash([VEQ_PROTOCOL, spec]), spec))
        units.append(
            SweepUnit(VEQ_PROTOCOL, "", {}, ref.to_json(), config.coco_depth_model, tuple(items))
        )
    return units


# --------------------------------------------------------------------------------------------
# Running a unit (inside a worker)
# --------------------------------------------------------------------------------------------


class _Images:
    """Degraded images of one scene, each rendered once, boxes drawn per target on copies."""

    def __init__(self, scene: Scene, items: Sequence[dict[str, Any]]) -> None:
        self.scene = scene
        physics = items[0]["physics"]
        self.thickness = int(physics["box_thickness_px"])
        self._stacks: dict[str, dict[Any, npt.NDArray[np.uint8]]] = {}
        levels: dict[str, set[float]] = defaultdict(set)
        severities: set[int] = set()
        for it in items:
            if it["condition"] in ("fog", "water"):
                levels[it["condition"]].add(float(it["level_m"]))
            elif it["condition"] == "imagenet_c":
                severities.add(int(it["severity"]))
        arm_physics: dict[str, dict[str, Any]] = {
            "fog": {"airlight": physics["airlight"]},
            "water": {
                "wavelengths_nm": tuple(physics["wavelengths_nm"]),
                "table": physics["water_table"],
                "veil": physics["veil"],
            },
        }
        for arm, lv in levels.items():
            ordered = sorted(lv, reverse=True)
            stack = arm_stack(scene, arm, ordered, **arm_physics[arm])  # type: ignore[arg-type]
            self._stacks[arm] = dict(zip(ordered, stack, strict=True))
        if severities:
            ordered_sev = sorted(severities)
            nominal = imagenet_c_stack(scene, ordered_sev, items[0]["seed"])
            self._stacks["imagenet_c"] = dict(zip(ordered_sev, nominal, strict=True))
        self._boxed: dict[tuple[Any, ...], npt.NDArray[np.uint8]] = {}

    def get(self, spec: dict[str, Any], shown: Scene | None) -> npt.NDArray[np.uint8]:
        cond = spec["condition"]
        box = tuple(spec["box"])
        if cond == "shuffled":
            assert shown is not None
            key: tuple[Any, ...] = ("shuffled", tuple(spec["shown"]["box"]), shown.id)
            base, box = shown.image, tuple(spec["shown"]["box"])
        elif cond == "clean":
            key, base = ("clean", box), self.scene.image
        elif cond == "blank":
            key, base = ("blank", box), blank_like(self.scene.image)
        else:
            level = spec["level_m"] if cond in ("fog", "water") else spec["severity"]
            key, base = (cond, level, box), self._stacks[cond][level]
        if key not in self._boxed:
            self._boxed[key] = draw_box(base.copy(), box, self.thickness)
        return self._boxed[key]


def _shown_letter(q: Question, category: str | None) -> str | None:
    """The option that names the object actually in the box (None: nothing, or no option)."""
    if category is None:
        return None
    if q.task == "verify":
        return q.answer_letters[0] if q.asked_category == category else q.answer_letters[1]
    for letter in q.answer_letters:
        if q.option_for(letter) == category:
            return letter
    return None


def _request(
    key: str,
    spec: dict[str, Any],
    q: Question,
    image: npt.NDArray[np.uint8],
    clean: Scene | None,
    max_new_tokens: int,
) -> Request:
    cond = spec["condition"]
    shown_category = (
        None
        if cond == "blank"
        else (spec["shown"]["category"] if cond == "shuffled" else spec["category"])
    )
    box = tuple(spec["shown"]["box"] if cond == "shuffled" else spec["box"])
    reference = ObserverReference(
        clean=None if clean is None else clean.image,
        box=box,
        letters=q.answer_letters,
        shown_letter=_shown_letter(q, shown_category),
        abstain_letter=q.abstain,
        abstain_names_reason=spec["wording"] != "mcq.generic",
    )
    seed = derive_seed(key)
    messages = (Message.user(image, q.prompt),)
    if q.readout == "verbalized":
        return Request(
            messages, Decoding(max_new_tokens=max_new_tokens, seed=seed), reference=reference
        )
    return Request(
        messages,
        Decoding(max_new_tokens=1, seed=seed),
        candidates=q.letters,
        generate=False,
        reference=reference,
    )


def sweep_readouts(spec: dict[str, Any], raw: dict[str, Any]) -> dict[str, Any]:
    """Answer, correctness, abstention and confidences of one sweep record, from raw output."""
    q = question_from_json(spec["question"])
    out: dict[str, Any] = {"chance": q.chance, "n_options": len(q.answer_letters)}
    if q.readout == "verbalized":
        texts = raw.get("texts") or [""]
        answer, conf = parse_verbalized(texts[0], q.letters)
        out.update(answer=answer, verbal_conf=conf, internal_conf=None, letter_mass=None)
        out["verbal_parsed"] = conf is not None
    else:
        lr = letter_readout(raw.get("candidate_probs"), q.answer_letters, q.abstain)
        out.update(
            answer=lr.answer, internal_conf=lr.confidence, verbal_conf=None, letter_mass=lr.mass
        )
        out["letter_probs"] = lr.raw
    out["abstained"] = out["answer"] is not None and out["answer"] == q.abstain
    out["correct"] = out["answer"] == q.correct
    return out


def _failed(unit: SweepUnit, exc: BaseException, started: float) -> list[Record]:
    """Every item of ``unit`` failed with ``exc`` (a unit-level failure)."""
    return [Record.failed(key, exc, time.perf_counter() - started) for key in unit.keys]


def run_unit(unit: SweepUnit) -> list[Record]:
    """Records of one unit. A unit-level failure (an unreadable image, say) fails its items with
    the reason; a failing request fails only its own item."""
    started = time.perf_counter()
    try:
        scene = load_scene(unit.scene, unit.depth_model)
    except Exception as exc:  # recorded with its reason; the run goes on
        return _failed(unit, exc, started)
    if unit.protocol == VEQ_PROTOCOL:
        return _run_veq(unit, scene, started)
    try:
        backend = shared_backend(unit.model, unit.model_options)
        images = _Images(scene, [s for _, s in unit.items])
    except Exception as exc:
        return _failed(unit, exc, started)
    partners: dict[str, Scene | BaseException] = {}
    built: list[Request | BaseException] = []
    for key, spec in unit.items:
        try:
            built.append(_build(key, spec, scene, images, partners, unit))
        except Exception as exc:  # this item fails alone, with its reason
            built.append(exc)
    requests = [r for r in built if isinstance(r, Request)]
    answers = iter(_complete(backend, requests))
    responses = [r if isinstance(r, BaseException) else next(answers) for r in built]
    elapsed = (time.perf_counter() - started) / max(len(responses), 1)
    records = []
    for (key, spec), response in zip(unit.items, responses, strict=True):
        if isinstance(response, BaseException):
            records.append(Record.failed(key, response, elapsed))
            continue
        raw = response.to_json()
        records.append(Record(key, "ok", None, raw, sweep_readouts(spec, raw), elapsed))
    return records


def _build(
    key: str,
    spec: dict[str, Any],
    scene: Scene,
    images: _Images,
    partners: dict[str, Scene | BaseException],
    unit: SweepUnit,
) -> Request:
    """The request of one item; a shuffled item loads (once) the scene whose pixels it shows."""
    shown = None
    if spec["condition"] == "shuffled":
        ref = spec["shown"]["scene"]
        if ref["id"] not in partners:
            try:
                partners[ref["id"]] = load_scene(ref, unit.depth_model)
            except Exception as exc:
                partners[ref["id"]] = exc
        partner = partners[ref["id"]]
        if isinstance(partner, BaseException):
            raise partner
        shown = partner
    clean = None if spec["condition"] == "blank" else (shown or scene)
    q = question_from_json(spec["question"])
    return _request(key, spec, q, images.get(spec, shown), clean, unit.max_new_tokens)


def _complete(backend: Backend, requests: list[Request]) -> list[Any]:
    """All responses in one batched call; if the batch fails, one call per request so a bad
    request fails alone."""
    try:
        return list(backend.complete(requests))
    except PartialBatchError as exc:  # the backend kept its successes: no request is redone
        return list(exc.results)
    except Exception:
        out: list[Any] = []
        for r in requests:
            try:
                out.append(backend.complete([r])[0])
            except Exception as exc:
                out.append(exc)
        return out


def _run_veq(unit: SweepUnit, scene: Scene, started: float) -> list[Record]:
    severities = [int(s["severity"]) for _, s in unit.items]
    seed = imagenet_c_seed(scene.id, unit.items[0][1]["seed"])
    try:
        v_eq = imagenet_c_equivalents(scene.image, scene.depth_m, seed, severities)
    except Exception as exc:
        return _failed(unit, exc, started)
    elapsed = (time.perf_counter() - started) / len(severities)
    return [
        Record(key, "ok", None, {}, {"v_eq_m": v}, elapsed)
        for (key, _), v in zip(unit.items, v_eq, strict=True)
    ]


# --------------------------------------------------------------------------------------------
# A whole run
# --------------------------------------------------------------------------------------------


def _models(config: SweepConfig) -> list[ModelNeed]:
    """Every model the sweep asks; it must load (no capability beyond answering is needed: the
    read-outs use what a backend fills in, and the blind control is text-only on purpose)."""
    return [
        ModelNeed(m, dict(config.model_options.get(m, {})), purpose="the visibility sweep")
        for m in config.models
    ]


def _stages(config: SweepConfig, plan: SweepPlan, store: RunStore) -> Iterator[Stage]:
    """Questions to the models, then the model-free ImageNet-C equivalents."""
    for kind in (PROTOCOL, VEQ_PROTOCOL):
        units = [u for u in plan.units if u.protocol == kind]
        if units:
            yield Stage(
                kind,
                [item for u in units for item in u.items],
                partial(_pending_units, units),
                run_unit,
            )


def _pending_units(
    units: Sequence[SweepUnit], pending: Sequence[tuple[str, Mapping[str, Any]]]
) -> list[SweepUnit]:
    """The planned units cut down to their pending items (units with none dropped)."""
    keys = {key for key, _ in pending}
    cut = (dataclasses.replace(u, items=tuple(i for i in u.items if i[0] in keys)) for u in units)
    return [u for u in cut if u.items]


def _manifest(config: SweepConfig, plan: SweepPlan) -> dict[str, Any]:
    return run_manifest(
        config.model_dump(mode="json"),
        PROTOCOL,
        prompt_hashes=plan.prompt_hashes,
        category_prior=plan.prior,
        distractor_scheme=plan.distractor_scheme,
    )


#: The visibility sweep as a value for :func:`clearsight.driver.run`.
SWEEP: Protocol[SweepConfig, SweepPlan] = Protocol(
    PROTOCOL, _models, plan_sweep, _manifest, _stages
)


def run_sweep(
    config: SweepConfig,
    run_dir: Path,
    *,
    fresh: bool = False,
    allow_mismatch: bool = False,
    executor: ExecutorName = "serial",
    workers: int = 1,
    progress: bool = True,
    ray: RayConfig | None = None,
) -> RunSummary:
    """Plan the sweep, store its items, run what is not finished, and return what ran.

    A rerun of a finished run does nothing but check; an interrupted run resumes. The same as
    ``clearsight.driver.run(SWEEP, config, run_dir, Execution(...))``.
    """
    return driver.run(
        SWEEP,
        config,
        run_dir,
        Execution(executor, workers, ray, progress),
        fresh=fresh,
        allow_mismatch=allow_mismatch,
    )
