"""Weights & Biases as a tracker (``--tracker wandb``): :class:`WandbSink`.

``wandb.init`` reads W&B's own settings: ``WANDB_PROJECT``, ``WANDB_ENTITY``, ``WANDB_MODE``
(``offline`` writes the run under ``WANDB_DIR`` for ``wandb sync`` later), the API key from its
usual place; the run is named after the run directory and its config is the parameters. W&B
wants one increasing step per run, so each kind of step is its own x-axis
(``define_metric``): the counts during a run are logged against ``unit`` (one call per unit),
the per-level metrics against ``level_index`` (one call per level), and the summary metrics go
to the run's summary; the report's files are saved with the run. The sample of items is a
``wandb.Table`` logged as ``sample``, each image a ``wandb.Image``. A failed run ends with exit
code 1.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import groupby
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

    from clearsight.faces.sample import SampledRow
    from clearsight.track.content import StepMetric

__all__ = ["LEVEL_AXIS", "UNIT_AXIS", "WandbSink"]

#: The x-axes of the counts during a run and of the per-level metrics.
UNIT_AXIS, LEVEL_AXIS = "unit", "level_index"


class WandbSink:
    """One W&B run (see the module docstring)."""

    def __init__(self) -> None:
        self.run: Any = None

    def begin(self, name: str, params: Mapping[str, str]) -> None:
        """``wandb.init`` of run ``name`` with ``params`` as its config; the two x-axes."""
        import wandb

        self.run = wandb.init(name=name, config=dict(params), reinit="create_new")
        self.run.define_metric(UNIT_AXIS)
        self.run.define_metric(LEVEL_AXIS)
        self.run.define_metric("records_*", step_metric=UNIT_AXIS)

    def steps(self, metrics: Sequence[StepMetric]) -> None:
        """The counts of a unit, in one call, against :data:`UNIT_AXIS`."""
        self._log(metrics, UNIT_AXIS)

    def _log(self, metrics: Sequence[StepMetric], axis: str) -> None:
        for step, group in groupby(sorted(metrics, key=lambda m: m.step), lambda m: m.step):
            self.run.log({axis: step, **{m.key: m.value for m in group}})

    def numbers(self, steps: Sequence[StepMetric], summary: Mapping[str, float]) -> None:
        """Per-level metrics against :data:`LEVEL_AXIS`, and the run's summary."""
        for key in dict.fromkeys(m.key for m in steps):  # a dot would nest the name
            self.run.define_metric(key.replace(".", "\\."), step_metric=LEVEL_AXIS)
        self._log(steps, LEVEL_AXIS)
        self.run.summary.update(dict(summary))

    def files(self, paths: Sequence[Path]) -> None:
        """The report's files, saved with the run."""
        for path in paths:
            self.run.save(str(path), base_path=str(path.parent), policy="now")

    def table(self, sample: Sequence[SampledRow]) -> None:
        """The sample as a ``wandb.Table`` with ``wandb.Image`` cells."""
        import wandb

        from clearsight.track.content import SAMPLE, decoded, table_of

        columns, rows = table_of(sample, lambda png, pixels: wandb.Image(decoded(png, pixels)))
        names: list[str | int] = list(columns)  # the types wandb's signature names
        data: list[Iterable[Any]] = list(rows)
        self.run.log({SAMPLE: wandb.Table(columns=names, data=data)})

    def end(self, ok: bool) -> None:
        """Finish the run (exit code 0, or 1 for a failed run)."""
        self.run.finish(exit_code=0 if ok else 1)
