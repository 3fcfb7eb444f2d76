"""trackio as a tracker (``--tracker trackio``): :class:`TrackioSink`.

trackio decides where a run goes by its own settings: a local database under ``TRACKIO_DIR``
(default the Hugging Face cache), a Space (``TRACKIO_SPACE_ID``) or a server
(``TRACKIO_SERVER_URL``). Its ``init`` needs a project and trackio has no setting that names
one, so the project is the one the tracker was asked for with (``--tracker trackio:PROJECT``),
:data:`PROJECT` by default; the run is named after the run directory. The
parameters are the run's config; the counts during a run are one ``log`` call per unit; after
it, the step metrics one ``log`` call per step, the summary metrics one call at step 0 and the
report's files one artifact each. The sample of items is trackio's own ``trackio.Table``,
logged as ``sample`` at step 0, each image a ``trackio.Image`` (a PNG in trackio's media
folder). trackio keeps no run status: a failed run is finished too.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Mapping, Sequence
from itertools import groupby
from typing import TYPE_CHECKING, Any

from clearsight.track.names import PROJECT

if TYPE_CHECKING:
    from pathlib import Path

    from clearsight.faces.sample import SampledRow
    from clearsight.track.content import StepMetric

__all__ = ["TrackioSink"]


class TrackioSink:
    """One trackio run in ``project`` (see the module docstring)."""

    def __init__(self, project: str = PROJECT) -> None:
        self.project = project
        self.run: Any = None

    def begin(self, name: str, params: Mapping[str, str]) -> None:
        """``trackio.init`` of run ``name`` in its project, ``params`` its config (what
        trackio prints goes to stderr: a run command's output stays its own)."""
        import trackio

        with contextlib.redirect_stdout(sys.stderr):
            self.run = trackio.init(
                project=self.project, name=name, config=dict(params), embed=False
            )

    def steps(self, metrics: Sequence[StepMetric]) -> None:
        """Log ``metrics``: one ``log`` call per step."""
        for step, group in groupby(sorted(metrics, key=lambda m: m.step), lambda m: m.step):
            self.run.log({m.key: m.value for m in group}, step=step)

    def numbers(self, steps: Sequence[StepMetric], summary: Mapping[str, float]) -> None:
        """Step metrics, one ``log`` per step, and the summary metrics in one at step 0."""
        self.steps(steps)
        if summary:
            self.run.log(dict(summary), step=0)

    def files(self, paths: Sequence[Path]) -> None:
        """The report's files, one artifact each."""
        for path in paths:
            self.run.log_artifact(path, name=path.name)

    def table(self, sample: Sequence[SampledRow]) -> None:
        """The sample as a ``trackio.Table`` with ``trackio.Image`` cells, at step 0."""
        import trackio

        from clearsight.track.content import SAMPLE, decoded, table_of

        columns, rows = table_of(sample, lambda png, pixels: trackio.Image(decoded(png, pixels)))
        self.run.log({SAMPLE: trackio.Table(columns=columns, data=rows)}, step=0)

    def end(self, ok: bool) -> None:
        """Finish the run (trackio writes what it buffered)."""
        with contextlib.redirect_stdout(sys.stderr):
            self.run.finish()
