"""A sweep run read back for its report: ok records as a tidy frame, V_eq rows, manifest, failures.

The report never trusts that every piece of a run exists (a partial run, a run without the
water arm, without controls, without verbal wordings, with failed records), so this module turns
the records of the sweep's item kinds (:data:`~clearsight.sweep.specs.PROTOCOL`, one
question to one model; :data:`~clearsight.sweep.specs.VEQ_PROTOCOL`, the ImageNet-C
equivalents; :data:`~clearsight.sweep.specs.DEPTH_PROTOCOL`, each scene's depth profile) into
frames with a fixed set of columns (missing ones filled with NaN) and
typed values: ``correct`` and ``abstained`` as 0.0/1.0 floats, confidences as floats with NaN
for "no value" (a letter wording has no verbal confidence, an unparsed verbal reply has none
either); ``cluster``, the unit the bootstrap resamples: the source photo of the record's
scene (:func:`~clearsight.sweep.numbers.clusters.photo_clusters`). It reads through
:class:`~clearsight.store.RunStore`'s reads by kind; the analysis
(:mod:`clearsight.sweep.analysis`) computes what the report shows from what it returns.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import numpy as np
import pandas as pd

from clearsight.specs import REASK_KIND
from clearsight.store import RunStore, read_shared
from clearsight.sweep.numbers.clusters import scene_clusters
from clearsight.sweep.specs import DEPTH_PROTOCOL, PROTOCOL, VEQ_PROTOCOL

__all__ = [
    "ABSTAIN_FREE_WORDINGS",
    "ARMS",
    "CONTROLS",
    "HUMAN_PREFIX",
    "LETTER_COLUMNS",
    "LETTER_WORDINGS",
    "VERBAL_WORDINGS",
    "RunData",
    "confidence_signal",
    "is_person",
    "is_verbal",
    "level_label",
    "load_run_data",
    "offers_abstain",
    "primary_wording",
]

#: Physical arms in display order.
ARMS: tuple[str, ...] = ("fog", "water", "turbid")
#: Control conditions of the controls table, in display order.
CONTROLS: tuple[str, ...] = ("clean", "blank", "shuffled")
#: Letter read-out wordings, the main one (reason-naming abstain option) first; ``mcq.none``
#: offers no abstain option (accuracy and internal confidence measured without one).
LETTER_WORDINGS: tuple[str, ...] = ("mcq.reason", "mcq.generic", "mcq.none")
#: The wordings whose questions offer no abstain option (no abstain rate to read).
ABSTAIN_FREE_WORDINGS: tuple[str, ...] = ("mcq.none",)
#: What a person's model name starts with (``human:<name>``;
#: :mod:`clearsight.sweep.references.human`).
HUMAN_PREFIX: Final = "human:"
#: Verbalized-confidence wordings, the main one first.
VERBAL_WORDINGS: tuple[str, ...] = ("verbal.plain", "verbal.percent", "verbal.scale")
#: Tasks in display order with their paper names.
TASK_NAMES: dict[str, str] = {"identify": "identification (t2)", "verify": "verification (t3)"}

# Display labels of the standard sweep levels (docs/methods.md §1: labels only, never data).
_LEVEL_LABELS: dict[float, str] = {
    250.0: "250",
    125.0: "125",
    62.5: "62.5",
    31.25: "31.25",
    15.625: "15.6",
    7.8125: "7.8",
    3.90625: "3.9",
    1.953125: "1.95",
}

# Columns the analysis reads; absent ones (e.g. no verbal wording in the run) become NaN.
_TEXT_COLUMNS = (
    "key",
    "model",
    "task",
    "wording",
    "scene",
    "category",
    "condition",
    "asked",
    "answer",
    "question.prompt",
    "question.options",
    "question.correct",
    "box",
    "scene.source",
)
_FLOAT_COLUMNS = ("level_m", "severity", "target", "internal_conf", "verbal_conf", "n_options")


def level_label(level_m: float) -> str:
    """Short display label of a visibility level: '15.6' for 15.625 m, '1.95' for 1.953125 m."""
    return _LEVEL_LABELS.get(float(level_m), f"{level_m:.3g}")


def is_verbal(wording: str) -> bool:
    """True for the verbalized-confidence wordings (``verbal.*``), False for letter read-outs."""
    return wording.startswith("verbal")


def offers_abstain(wording: str) -> bool:
    """Whether the questions of ``wording`` offer an abstain option (every wording but
    :data:`ABSTAIN_FREE_WORDINGS`)."""
    return wording not in ABSTAIN_FREE_WORDINGS


def is_person(model: str) -> bool:
    """Whether ``model`` is a person answering through ``clearsight serve --sweep``."""
    return model.startswith(HUMAN_PREFIX)


def confidence_signal(model: str, wording: str) -> str:
    """The confidence a (model, wording) reads: ``verbal_conf`` — a stated confidence — for a
    verbalized wording and for a person in any wording (the slider: what they say, never token
    probabilities), else ``internal_conf``, the letter read-out's probability."""
    return "verbal_conf" if is_verbal(wording) or is_person(model) else "internal_conf"


def primary_wording(wordings: list[str], verbal: bool) -> str | None:
    """The main wording of a kind present in ``wordings`` (reason-naming / plain first)."""
    preferred = VERBAL_WORDINGS if verbal else LETTER_WORDINGS
    for w in preferred:
        if w in wordings:
            return w
    others = sorted(w for w in wordings if is_verbal(w) == verbal)
    return others[0] if others else None


@dataclass(frozen=True)
class RunData:
    """Everything the report reads from one run directory.

    ``records``: ok sweep records (kind ``PROTOCOL``), one row each, columns as in the module
    docstring. ``veq``: ok V_eq rows (kind ``VEQ_PROTOCOL``: ``scene``, ``severity``,
    ``v_eq_m``, ``gain`` — the retained gain, NaN in runs made before it was stored).
    ``depth``: one row per scene with a stored depth profile (``scene``, ``median_m``,
    ``q25_m``, ``q75_m``, ``near_share``, ``far_share``; empty for a run made before
    profiles were stored). ``counts``: the store's item/ok/failed/pending counts.
    ``failures``: error message → number of failed records, most frequent first. ``levels``:
    arm → its visibility levels in the records, clearest first. ``corrupted`` and
    ``corrupted_veq``: the records (``records``' columns and ``corruption``) and V_eq rows of
    the ImageNet-C corruptions other than fog, which ``records`` and ``veq`` leave out
    (:func:`fog_only`); both with ``corruption`` naming the corruption. ``letters`` and
    ``corrupted_letters``: the letter columns (:data:`LETTER_COLUMNS` the run has) of
    ``records`` and of ``corrupted``, row for row (empty for records made up in memory):
    calibration under weather's temperature scaling reads them, in the one pass over the
    store that reads the records.
    """

    run_dir: Path
    manifest: dict[str, Any]
    counts: dict[str, int]
    records: pd.DataFrame
    veq: pd.DataFrame
    failures: pd.Series
    levels: dict[str, tuple[float, ...]]
    depth: pd.DataFrame
    corrupted: pd.DataFrame = field(default_factory=pd.DataFrame)
    corrupted_veq: pd.DataFrame = field(default_factory=pd.DataFrame)
    letters: pd.DataFrame = field(default_factory=pd.DataFrame)
    corrupted_letters: pd.DataFrame = field(default_factory=pd.DataFrame)

    @property
    def name(self) -> str:
        """The run's name: its directory name."""
        return self.run_dir.resolve().name

    @property
    def models(self) -> list[str]:
        """Models with records, in the manifest's order where it has one."""
        present = set(self.records["model"].dropna())
        listed = [str(m) for m in self.manifest.get("config", {}).get("models", [])]
        return [m for m in listed if m in present] + sorted(present - set(listed))

    def wordings(self, task: str | None = None) -> list[str]:
        """Wordings with records (of ``task``), letter wordings first, in canonical order."""
        frame = self.records if task is None else self.records[self.records["task"] == task]
        present = set(frame["wording"].dropna())
        canonical = [w for w in (*LETTER_WORDINGS, *VERBAL_WORDINGS) if w in present]
        return canonical + sorted(present - set(canonical))

    def asked(self, model: str, condition: str) -> bool:
        """Whether the run's config shows ``condition`` to ``model`` (its ``model_conditions``).

        Runs whose manifest has no config (or no entry for the model) count as asking everything.
        """
        only = self.manifest.get("config", {}).get("model_conditions", {}).get(model)
        return only is None or condition in only

    @property
    def tasks(self) -> list[str]:
        """Tasks with records, identification first."""
        present = set(self.records["task"].dropna())
        return [t for t in TASK_NAMES if t in present] + sorted(present - set(TASK_NAMES))

    @property
    def arms(self) -> list[str]:
        """Physical arms with records, fog first."""
        return [a for a in ARMS if a in self.levels]

    def raw_outputs(self, keys: list[str]) -> dict[str, Any]:
        """The decoded raw outputs of the records ``keys``, read from the run when asked: the
        report shows a handful (qualitative examples), so the frame never holds them all."""
        with RunStore.open(self.run_dir, read_only=True) as store:
            return store.raw_outputs(keys)


#: A sweep record's letter columns: its question's letters (a JSON list), abstain letter and
#: correct letter, and each letter's probability (those a run stores: ``letter_probs.A`` ...).
LETTER_COLUMNS: tuple[str, ...] = (
    *("question.letters", "question.abstain", "question.correct"),
    *(f"letter_probs.{chr(c)}" for c in range(ord("A"), ord("Z") + 1)),
)
# What the report reads of a sweep record, and nothing else (the frame of 1.8 million records
# stays a few hundred bytes a row): the columns above, the scene by its id, the two flags, the
# letter columns (kept apart: ``RunData.letters``).
_READ_COLUMNS = tuple(
    dict.fromkeys(
        (
            *("scene.id" if c == "scene" else c for c in (*_TEXT_COLUMNS, *_FLOAT_COLUMNS)),
            "correct",
            "abstained",
            "corruption",
            *LETTER_COLUMNS,
        )
    )
)


def _letters(frame: pd.DataFrame) -> pd.DataFrame:
    """The letter columns of ``frame`` (:data:`LETTER_COLUMNS` it has), row for row as
    :func:`_typed_records` lays the records out."""
    return frame[[c for c in LETTER_COLUMNS if c in frame]].reset_index(drop=True)


def fog_only(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` without the ImageNet-C corruptions other than fog (their ``corruption`` set):
    the analysis's curves, crossings and tables read fog's severities; the other corruptions
    are read apart (``RunData.corrupted``)."""
    if "corruption" not in frame:
        return frame
    return frame[frame["corruption"].isna()]


def _others(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows of the ImageNet-C corruptions other than fog: :func:`fog_only`'s complement."""
    return frame[frame["corruption"].notna()] if "corruption" in frame else frame.iloc[0:0]


def _typed_records(frame: pd.DataFrame) -> pd.DataFrame:
    """The ok sweep records with the report's columns and dtypes (see the module docstring).
    Text columns are objects, as the report's code expects; from the store's categoricals
    they are references to one string per distinct value (8 bytes a cell)."""
    out = pd.DataFrame(index=frame.index)
    src = frame.rename(columns={"scene.id": "scene"})
    for col in _TEXT_COLUMNS:
        out[col] = src[col].astype(object) if col in src else None
    for col in _FLOAT_COLUMNS:
        out[col] = _numeric(src, col)
    for col in ("correct", "abstained"):  # True (or 1) is 1.0; False, None, absent are 0.0
        values = src[col] if col in src else pd.Series(False, index=src.index)
        out[col] = values.astype(object).isin([True]).astype(float)
    out["answered"] = (out["answer"].notna() & (out["abstained"] == 0.0)).astype(float)
    out["cluster"] = scene_clusters(out)
    return out.reset_index(drop=True)


def _levels(records: pd.DataFrame) -> dict[str, tuple[float, ...]]:
    """Arm → its observed visibility levels, clearest first (arms without records omitted)."""
    out: dict[str, tuple[float, ...]] = {}
    for arm in ARMS:
        lv = records.loc[records["condition"] == arm, "level_m"].dropna().unique()
        if lv.size:
            out[arm] = tuple(sorted((float(v) for v in lv), reverse=True))
    return out


def _numeric(frame: pd.DataFrame, col: str) -> pd.Series:
    """Column ``col`` as floats (NaN where absent or not a number)."""
    if col not in frame:
        return pd.Series(np.nan, index=frame.index, dtype=float)
    return pd.to_numeric(frame[col], errors="coerce").astype(float)


def _own_counts(store: RunStore) -> dict[str, int]:
    """The store's item/ok/failed/pending counts without the re-asks of ``clearsight verify``
    (items of their own kind, counted in the report's Reproducibility section)."""
    counts = store.counts()
    reasks = {
        "items": store.count_items(REASK_KIND),
        "ok": store.count_records(status="ok", kind=REASK_KIND),
        "failed": store.count_records(status="failed", kind=REASK_KIND),
    }
    reasks["pending"] = reasks["items"] - reasks["ok"]
    return {name: n - reasks.get(name, 0) for name, n in counts.items()}


@read_shared
def load_run_data(run_dir: Path) -> RunData:
    """Read a sweep run directory (read-only) into :class:`RunData`; InputError naming the
    right command for a run of another protocol. Read once for the threads that read it at
    the same time (the report and a tracker's sample table: :func:`~clearsight.store.read_shared`);
    the value is not to be modified."""
    with RunStore.open(run_dir, read_only=True) as store:
        store.expect_protocol(PROTOCOL)
        manifest = store.manifest()
        counts = _own_counts(store)
        frame = store.to_frame(status="ok", kind=PROTOCOL, columns=_READ_COLUMNS)
        veq_rows = store.to_frame(status="ok", kind=VEQ_PROTOCOL)
        depth_rows = store.to_frame(status="ok", kind=DEPTH_PROTOCOL)
        errors = [
            record.error
            for record in store.iter_records("failed", raw=False)
            if record.protocol != REASK_KIND  # re-asks: the report's Reproducibility section
        ]
    failures = pd.Series(errors, dtype=object, name="error").astype(str).value_counts()
    fog = fog_only(frame)
    records = _typed_records(fog)
    others = _others(frame)
    named = others.get("corruption", pd.Series(dtype=object)).astype(object).to_numpy()
    return RunData(
        run_dir=Path(run_dir),
        manifest=manifest,
        counts=counts,
        records=records,
        veq=_veq_frame(fog_only(veq_rows)),
        failures=failures,
        levels=_levels(records),
        depth=_depth_profiles(depth_rows),
        corrupted=_typed_records(others).assign(corruption=named),
        corrupted_veq=_veq_frame(_others(veq_rows)),
        letters=_letters(fog),
        corrupted_letters=_letters(others),
    )


def _veq_frame(rows: pd.DataFrame) -> pd.DataFrame:
    """The stored V_eq rows as :class:`RunData`'s ``veq`` (with ``corruption``: fog where the
    row names none)."""
    named = rows["corruption"] if "corruption" in rows else pd.Series(None, index=rows.index)
    veq = pd.DataFrame(
        {
            "scene": rows["scene.id"].astype(object) if "scene.id" in rows else [],
            "severity": _numeric(rows, "severity"),
            "v_eq_m": _numeric(rows, "v_eq_m"),
            "gain": _numeric(rows, "gain"),  # NaN in runs made before gains were stored
            "added": _numeric(rows, "added"),  # NaN in runs made before it was stored
            "corruption": named.astype(object).fillna("fog"),
        }
    ).dropna(subset=["scene", "severity", "v_eq_m"])
    return veq.reset_index(drop=True)


_DEPTH_COLUMNS = ("median_m", "q25_m", "q75_m", "near_share", "far_share")


def _depth_profiles(rows: pd.DataFrame) -> pd.DataFrame:
    """The stored depth profiles, one row per scene (columns as in :class:`RunData`)."""
    scenes = rows["scene.id"].astype(object) if "scene.id" in rows else pd.Series(dtype=object)
    frame = pd.DataFrame({"scene": scenes} | {c: _numeric(rows, c) for c in _DEPTH_COLUMNS})
    return frame.dropna().reset_index(drop=True)
