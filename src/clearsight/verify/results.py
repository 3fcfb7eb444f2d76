"""A run's re-asks read back beside the records they repeat: the verify's result.

:func:`verify_pairs` reads every re-ask of a run (or those of one verify) with the record it
repeats, labelled by item (model, scene, condition, level, wording) and by the verify's
settings (the model asked, batch size, seed); :func:`verify_run` re-asks a sample through the
driver and returns the :class:`VerifyResult` of that sample; :func:`reproducibility` the
tables the run's report shows, one per verify setting.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

import pandas as pd

from clearsight.faces import face_of_kind
from clearsight.faces.pairs import agreement_table, differing, paired_readouts
from clearsight.faces.verifying import ItemLabels, View, as_stored, no_labels
from clearsight.store import RunStore
from clearsight.verify.specs import DEFAULT_TOLERANCE, VERIFY_KIND

__all__ = ["CHECK_COLUMNS", "VerifyResult", "reproducibility", "verify_pairs", "verify_run"]

#: What names one verify's setting (its rows share them).
CHECK_COLUMNS = ("asked", "batch_size", "seed")
_LABELS = ("key", "of", "model", "scene", "condition", "level_m", "wording", "status", "error")


class VerifySetting(TypedDict):
    """One verify's setting (:data:`CHECK_COLUMNS`): the model asked, its batch size, the
    seed."""

    asked: str
    batch_size: int
    seed: int


class PairLabels(ItemLabels, VerifySetting):
    """A re-ask's labels in :func:`verify_pairs` (:data:`_LABELS` and :data:`CHECK_COLUMNS`):
    its key, the key of the record it repeats, that item's own labels, the re-ask's status and
    error, and its setting."""

    key: str
    of: str
    status: str
    error: str | None


def _read_as(kind: str) -> tuple[Callable[[Mapping[str, object]], ItemLabels], View]:
    """How items of ``kind`` are labelled and compared (its protocol's face says; a kind no
    face re-asks: unlabelled, compared as stored)."""
    face = face_of_kind(kind)
    found = face.reask if face is not None else None
    if found is None or found.kind != kind:
        return no_labels, as_stored
    return found.labels, found.view


def verify_pairs(store: RunStore, keys: Collection[str] | None = None) -> pd.DataFrame:
    """Every re-ask in ``store`` (only ``keys`` where given) beside the record it repeats: the
    labels of :data:`_LABELS` (the item's own, as its protocol's face labels it:
    :class:`~clearsight.faces.verifying.ItemLabels`) and :data:`CHECK_COLUMNS`,
    then the columns of :func:`~clearsight.faces.pairs.paired_readouts` (``_a``: the run's
    record, ``_b``: the re-ask; a failed re-ask has no read-outs)."""
    labels: list[PairLabels] = []
    originals, reasks = [], []
    for rec in store.iter_records(kind=VERIFY_KIND, raw=False):
        if keys is not None and rec.key not in keys:
            continue
        original = store.record(rec.spec["of"])
        labelled, view = _read_as(rec.spec["of_kind"])
        labels.append(
            {
                "key": rec.key,
                "of": rec.spec["of"],
                **labelled(original.spec if original is not None else {}),
                "status": rec.status,
                "error": rec.error,
                "asked": rec.spec["model"],
                "batch_size": rec.spec["batch_size"],
                "seed": rec.spec["seed"],
            }
        )
        originals.append(view(original.readouts) if original is not None else None)
        reasks.append(view(rec.readouts) if rec.status == "ok" else None)
    frame = pd.DataFrame(labels, columns=[*_LABELS, *CHECK_COLUMNS])
    return pd.concat([frame, paired_readouts(originals, reasks)], axis=1)


@dataclass(frozen=True)
class VerifyResult:
    """One verify's re-asks beside the run's records: ``pairs`` (one row per item),
    ``table`` (:func:`~clearsight.faces.pairs.agreement_table`), ``differ`` (the items that
    moved beyond ``tolerance``, worst first) and ``unplanned`` (sampled keys the run's
    configuration no longer plans: not asked)."""

    pairs: pd.DataFrame
    table: pd.DataFrame
    differ: pd.DataFrame
    tolerance: float
    unplanned: tuple[str, ...] = ()

    @property
    def exit_code(self) -> int:
        """0 when every item agrees within the tolerance, 3 when some moved."""
        return 3 if len(self.differ) else 0


def result_of(
    pairs: pd.DataFrame, tolerance: float, unplanned: tuple[str, ...] = ()
) -> VerifyResult:
    """The :class:`VerifyResult` of re-asks read by :func:`verify_pairs`."""
    return VerifyResult(
        pairs, agreement_table(pairs), differing(pairs, tolerance), tolerance, unplanned
    )


def verify_run(
    config: Any, tolerance: float = DEFAULT_TOLERANCE, *, progress: bool = False
) -> VerifyResult:
    """Re-ask the sample of ``config`` (a :class:`~clearsight.verify.reask.VerifyConfig`)
    through the driver, resuming what an earlier verify with the same settings finished, and
    compare each re-ask with the record it repeats."""
    from clearsight.driver import Execution, run
    from clearsight.verify.reask import VERIFY, _plan_of

    if not (Path(config.run_dir) / "run.sqlite").is_file():
        from clearsight.validate import InputError

        raise InputError(f"{config.run_dir} holds no run (no run.sqlite)")
    plan = _plan_of(config)
    run(VERIFY, config, config.run_dir, Execution(progress=progress))
    with RunStore.open(config.run_dir, read_only=True) as store:
        pairs = verify_pairs(store, {spec.key for spec in plan.specs})
    return result_of(pairs, tolerance, plan.unplanned)


def reproducibility(
    run_dir: Path, tolerance: float = DEFAULT_TOLERANCE
) -> list[tuple[VerifySetting, VerifyResult]]:
    """Per verify setting of the run (model asked, batch size, seed), its settings and its
    result; empty when the run holds no re-ask."""
    with RunStore.open(run_dir, read_only=True) as store:
        if not store.count_records(kind=VERIFY_KIND):
            return []
        pairs = verify_pairs(store)
    out = []
    for _, group in pairs.groupby(list(CHECK_COLUMNS), sort=True):
        first = group.iloc[0]
        setting = VerifySetting(
            asked=str(first["asked"]), batch_size=int(first["batch_size"]), seed=int(first["seed"])
        )
        out.append((setting, result_of(group.reset_index(drop=True), tolerance)))
    return out
