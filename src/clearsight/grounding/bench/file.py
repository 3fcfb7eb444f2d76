"""The TGS-Bench file: a built pool of good/bad trajectory pairs, written once, scored by any model.

A TGS-Bench is two files side by side (``clearsight build-bench --out bench.jsonl`` writes
both; :func:`load_bench` reads both):

* ``bench.jsonl`` — one JSON object a line, one per kept item: ``id`` (the problem's id),
  ``problem`` (its :class:`~clearsight.grounding.problems.problem.Problem` fields, no ``solution``),
  ``good`` (the generator's trajectory: ``vision``, ``reasoning``, ``answer``) and ``pairs``,
  by axis (``vision``, ``reasoning``, ``answer``), each ``{"bad": trajectory, "injector":
  "model" | "rule", "rule", "model_refused", "similarity", "judge_p_bad"}``: the bad side
  differs from ``good`` on its axis only.
* ``bench.manifest.json`` — ``format`` (:data:`FORMAT`), ``version`` (:data:`VERSION`), the
  generator and its options, the judge, the prompts' and template's hashes, the seed, the
  source benchmarks with their hashes, ``counts`` and ``retention`` per benchmark and axis,
  the rejection reasons, the injectors, ``n_items``, ``n_pairs`` and ``pairs_sha256`` (the
  sha256 of the JSONL's bytes).

:func:`load_bench` checks everything it reads and stops at the first fault with one line
naming the file, the line and what is wrong (an :class:`~clearsight.validate.InputError`).
A loaded bench is put to use by :mod:`clearsight.grounding.bench.use`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from clearsight.grounding.bench.pairs import AXES
from clearsight.grounding.problems.problem import Problem
from clearsight.grounding.trajectories.trajectory import SEGMENTS, Trajectory
from clearsight.paths import write_target
from clearsight.validate import InputError, jsonl_values, refuse_repeated_ids, short_repr

__all__ = [
    "FORMAT",
    "VERSION",
    "BenchItem",
    "BenchPair",
    "TgsBench",
    "load_bench",
    "manifest_path",
    "write_bench",
]

FORMAT = "clearsight.tgs-bench"
VERSION = 1

_PAIR_FIELDS: dict[str, tuple[type, ...]] = {
    "injector": (str,),
    "rule": (str, type(None)),
    "model_refused": (str, type(None)),
    "similarity": (float, int),
    "judge_p_bad": (float, int, type(None)),
}
_PROBLEM_FIELDS = ("id", "benchmark", "question", "gold", "answer_type")


class BenchPairJSON(TypedDict):
    """A :class:`BenchPair` as a line of the pairs file holds it (``bad``: the trajectory's
    ``vision``, ``reasoning`` and ``answer``)."""

    bad: dict[str, str]
    injector: str
    rule: str | None
    model_refused: str | None
    similarity: float
    judge_p_bad: float | None


@dataclass(frozen=True)
class BenchPair:
    """The bad side of one pair and how it was made: ``injector`` ``model`` or ``rule``,
    ``rule`` (the rule's name, None for a model edit), ``model_refused`` (why the model's edit
    was refused, where the rule stepped in), ``similarity`` (character similarity of the
    changed component to the good one) and ``judge_p_bad`` (the judge's probability that the
    bad side holds the error; None without a judge)."""

    bad: Trajectory
    injector: str
    rule: str | None
    model_refused: str | None
    similarity: float
    judge_p_bad: float | None = None

    def to_json(self) -> BenchPairJSON:
        return {
            "bad": self.bad.to_json(),
            "injector": self.injector,
            "rule": self.rule,
            "model_refused": self.model_refused,
            "similarity": self.similarity,
            "judge_p_bad": self.judge_p_bad,
        }


@dataclass(frozen=True)
class BenchItem:
    """One problem of the pool: its good trajectory and its pairs by axis."""

    problem: Problem
    good: Trajectory
    pairs: Mapping[str, BenchPair]

    def to_json(self) -> dict[str, Any]:
        problem = {k: v for k, v in self.problem.to_json().items() if k != "solution"}
        pairs = {axis: self.pairs[axis].to_json() for axis in AXES if axis in self.pairs}
        return {
            "id": self.problem.id,
            "problem": problem,
            "good": self.good.to_json(),
            "pairs": pairs,
        }


@dataclass(frozen=True)
class TgsBench:
    """A TGS-Bench: its items and its manifest (see the module docstring)."""

    items: tuple[BenchItem, ...]
    manifest: Mapping[str, Any] = field(default_factory=dict)


def manifest_path(path: Path | str) -> Path:
    """Where the manifest of the pairs file ``path`` lives: ``<stem>.manifest.json`` beside it."""
    p = Path(path)
    return p.with_name(p.stem + ".manifest.json")


def write_bench(bench: TgsBench, path: Path | str) -> tuple[Path, Path]:
    """Write the pairs JSONL and its manifest (``pairs_sha256``, ``n_items``, ``n_pairs``,
    ``format`` and ``version`` set here); returns both paths."""
    path = Path(path)
    # ASCII escapes: a reader that splits lines at Unicode line breaks (U+0085, U+2028, as
    # str.splitlines does) still reads one item a line
    lines = [json.dumps(item.to_json(), sort_keys=True) for item in bench.items]
    data = ("\n".join(lines) + "\n" if lines else "").encode("utf-8")
    manifest = {
        **bench.manifest,
        "format": FORMAT,
        "version": VERSION,
        "pairs_file": path.name,
        "pairs_sha256": hashlib.sha256(data).hexdigest(),
        "n_items": len(bench.items),
        "n_pairs": sum(len(item.pairs) for item in bench.items),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    mpath = write_target(manifest_path(path))
    write_target(path).write_bytes(data)
    mpath.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path, mpath


# --------------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------------


def _read_manifest(path: Path) -> dict[str, Any]:
    mpath = manifest_path(path)
    try:
        manifest = json.loads(mpath.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise InputError(f"invalid TGS-Bench file {path}: its manifest {mpath} is missing") from exc
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise InputError(f"invalid TGS-Bench manifest {mpath}: {exc}") from exc
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise InputError(f"invalid TGS-Bench manifest {mpath}: its format is not {FORMAT!r}")
    if manifest.get("version") != VERSION:
        raise InputError(
            f"invalid TGS-Bench manifest {mpath}: version {short_repr(manifest.get('version'))}, "
            f"this clearsight reads version {VERSION}"
        )
    return manifest


def _trajectory(value: Any, what: str) -> Trajectory:
    if not isinstance(value, dict) or set(value) != set(SEGMENTS):
        raise InputError(f"{what}: an object with exactly {', '.join(SEGMENTS)}")
    if not all(isinstance(value[s], str) for s in SEGMENTS):
        raise InputError(f"{what}: its {', '.join(SEGMENTS)} are strings")
    if not value["answer"].strip():
        raise InputError(f"{what}: the answer is empty")
    return Trajectory(value["vision"], value["reasoning"], value["answer"])


def _problem(value: Any) -> Problem:
    if not isinstance(value, dict):
        raise InputError(f"problem: an object, got {short_repr(value)}")
    missing = [k for k in _PROBLEM_FIELDS if not isinstance(value.get(k), str)]
    if missing:
        raise InputError(f"problem: missing or non-string {', '.join(missing)}")
    options = value.get("options") or []
    if not isinstance(options, list) or not all(isinstance(o, str) for o in options):
        raise InputError("problem: options are a list of strings")
    image, meta = value.get("image"), value.get("meta")
    if image is not None and not isinstance(image, str):
        raise InputError("problem: image is a string or null")
    if meta is not None and not isinstance(meta, dict):
        raise InputError("problem: meta is an object or null")
    return Problem(
        id=value["id"],
        benchmark=value["benchmark"],
        question=value["question"],
        gold=value["gold"],
        answer_type=value["answer_type"],
        image=image,
        options=tuple(options),
        meta=meta,
    )


def _pair(value: Any, axis: str, good: Trajectory) -> BenchPair:
    if not isinstance(value, dict):
        raise InputError(f"pair {axis}: an object, got {short_repr(value)}")
    bad = _trajectory(value.get("bad"), f"pair {axis}: bad")
    for name, types in _PAIR_FIELDS.items():
        v = value.get(name)
        if isinstance(v, bool) or not isinstance(v, types):
            raise InputError(f"pair {axis}: invalid {name} {short_repr(v)}")
    if value["injector"] not in ("model", "rule"):
        raise InputError(f"pair {axis}: injector is model or rule, got {value['injector']!r}")
    g, b = good.to_json(), bad.to_json()
    changed = [s for s in SEGMENTS if g[s] != b[s]]
    if changed != [axis]:
        raise InputError(
            f"pair {axis}: the bad side must differ from the good one on {axis} only, "
            f"it differs on {', '.join(changed) or 'nothing'}"
        )
    return BenchPair(
        bad,
        value["injector"],
        value["rule"],
        value["model_refused"],
        float(value["similarity"]),
        None if value["judge_p_bad"] is None else float(value["judge_p_bad"]),
    )


def _item(value: Any) -> BenchItem:
    if not isinstance(value, dict) or set(value) != {"id", "problem", "good", "pairs"}:
        raise InputError("an item is an object with exactly id, problem, good, pairs")
    problem = _problem(value["problem"])
    if value["id"] != problem.id:
        raise InputError(f"id {short_repr(value['id'])} is not its problem's id {problem.id!r}")
    good = _trajectory(value["good"], "good")
    pairs = value["pairs"]
    if not isinstance(pairs, dict) or not pairs or not set(pairs) <= set(AXES):
        raise InputError(f"pairs: an object keyed by some of {', '.join(AXES)}")
    return BenchItem(problem, good, {a: _pair(pairs[a], a, good) for a in AXES if a in pairs})


def load_bench(path: Path | str) -> TgsBench:
    """A TGS-Bench file and its manifest, every line checked (see the module docstring);
    InputError with one line naming the file (and line) for anything wrong."""
    path = Path(path)
    manifest = _read_manifest(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"unreadable TGS-Bench file {path}: {exc.strerror}") from exc
    if hashlib.sha256(data).hexdigest() != manifest.get("pairs_sha256"):
        raise InputError(
            f"invalid TGS-Bench file {path}: its sha256 is not the manifest's pairs_sha256 "
            "(edited after it was built?)"
        )
    items: list[BenchItem] = []
    lines: list[int] = []
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"invalid TGS-Bench file {path}: not UTF-8 ({exc.reason})") from exc
    for n, value in jsonl_values(text, path):
        try:
            items.append(_item(value))
        except InputError as exc:
            raise InputError(f"invalid TGS-Bench file {path}:{n}: {exc}") from exc
        lines.append(n)
    where = zip((item.problem.id for item in items), (f"{path}:{n}" for n in lines), strict=True)
    refuse_repeated_ids(where, "TGS-Bench problem")
    if len(items) != manifest.get("n_items"):
        raise InputError(
            f"invalid TGS-Bench file {path}: {len(items)} items, the manifest says "
            f"{short_repr(manifest.get('n_items'))}"
        )
    return TgsBench(tuple(items), manifest)
