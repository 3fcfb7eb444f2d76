"""MLflow as a tracker (``--tracker mlflow``): :class:`MlflowSink`.

Its own configuration decides where the run goes: ``MLFLOW_TRACKING_URI`` (a server, a
database, a folder), ``MLFLOW_EXPERIMENT_NAME`` or ``MLFLOW_EXPERIMENT_ID``, and its HTTP retry
settings (``MLFLOW_HTTP_REQUEST_MAX_RETRIES``, ``_BACKOFF_FACTOR``, ``_TIMEOUT``). Those three
clearsight sets in the trackers' own process (:mod:`clearsight.track.process`; the run's process
keeps its environment) where the user has not (:data:`QUICK_HTTP`): MLflow's defaults
(7 retries, backoff factor 2, a 120 s timeout) take minutes to give up on a server that is
down, and the end of a run waits for its sender; with these a down server is one warning
within seconds. The run is begun and ended with MLflow's own ``mlflow.start_run`` and
``mlflow.end_run`` (which read them; every call of a session is made in the trackers'
process, where the run is active) and the rest is sent through ``MlflowClient.log_batch``
(which splits a batch at the server's limits): the parameters when the run begins, one call
per unit during it, the step and summary metrics after it, and the report's files as
artifacts. A summary metric is logged once, at step 0. The sample of items is MLflow's own table,
``MlflowClient.log_table`` as ``sample.parquet`` (floats kept exact; ``mlflow.load_table``
reads it back), each image a PNG under ``table_images/sample/`` that its row's ``image`` cell
names (``filepath``): the sample's own PNG bytes (:class:`EncodedPng`), not encoded a second
time by MLflow.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from itertools import groupby
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    from clearsight.faces.sample import SampledRow
    from clearsight.track.content import Pixels, StepMetric

__all__ = ["QUICK_HTTP", "EncodedPng", "MlflowSink", "Thumbnail"]

#: MLflow's HTTP settings clearsight sets where they are not set (its environment variables,
#: read at each request): two retries, 1 s and 2 s apart, and a 20 s timeout per request.
QUICK_HTTP = {
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "20",
}


class EncodedPng:
    """A PNG as ``MlflowClient.log_table`` takes an image (it asks an image for ``save``,
    ``resize`` and ``size``): saved as the bytes it is, where a ``PIL.Image`` would be encoded
    again (a second PNG encoding of every image, most of the table's cost); the small copy
    MLflow's UI shows (``resize``) made from the image's ``pixels`` where the run kept them
    (else decoded) and saved as a fast WebP (:class:`Thumbnail`)."""

    def __init__(self, png: bytes, pixels: Pixels | None = None) -> None:
        from clearsight.track.content import decoded

        self.png = png
        self.pixels = pixels
        self.image = decoded(png)  # its header read: the size; its pixels when resized

    @property
    def size(self) -> tuple[int, int]:
        """Width and height, as ``PIL.Image.size``."""
        return self.image.size

    def save(self, path: str) -> None:
        """The PNG written to ``path`` (MLflow's ``.png`` artifact file) as it is."""
        with open(path, "wb") as out:
            out.write(self.png)

    def resize(self, size: tuple[int, int]) -> Thumbnail:
        """The pixels resized to ``size`` (width, height) by area averaging: MLflow's small
        copy."""
        import cv2
        import numpy as np

        if self.pixels is not None:
            pixels = self.pixels
        else:
            coded = np.frombuffer(self.png, np.uint8)
            pixels = np.asarray(cv2.imdecode(coded, cv2.IMREAD_COLOR_RGB), dtype=np.uint8)
        small = cv2.resize(pixels, size, interpolation=cv2.INTER_AREA)
        return Thumbnail(np.asarray(small, dtype=np.uint8))


class Thumbnail:
    """MLflow's small copy of an image, which it saves with a ``.webp`` name: WebP at libwebp's
    fastest method (about three times as fast as its default for a 256-pixel image, the file
    a fifth larger: a thumbnail's)."""

    def __init__(self, pixels: Pixels) -> None:
        self.pixels = pixels

    def save(self, path: str) -> None:
        """The WebP written to ``path``."""
        from PIL import Image

        Image.fromarray(self.pixels).save(path, format="WEBP", method=0)


class MlflowSink:
    """One MLflow run (see the module docstring)."""

    def __init__(self) -> None:
        from mlflow import MlflowClient

        for name, value in QUICK_HTTP.items():  # the user's own setting kept
            os.environ.setdefault(name, value)

        self.client = MlflowClient()
        self.run_id = ""
        #: The sample's rows logged so far (its table is logged in parts).
        self.tabled = 0

    def begin(self, name: str, params: Mapping[str, str]) -> None:
        """Begin the MLflow run ``name`` where MLflow's configuration says, ``params`` its
        parameters, in the trackers' own process (the run's process and its own MLflow runs
        are not touched)."""
        import mlflow
        from mlflow.entities import Param

        self.run_id = mlflow.start_run(run_name=name).info.run_id
        self.client.log_batch(self.run_id, params=[Param(k, v) for k, v in params.items()])

    def steps(self, metrics: Sequence[StepMetric]) -> None:
        """Log ``metrics`` in one batch."""
        self._metrics([(m.key, m.value, m.step) for m in metrics])

    def _metrics(self, rows: Sequence[tuple[str, float, int]]) -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        self.client.log_batch(self.run_id, metrics=[Metric(k, v, now, s) for k, v, s in rows])

    def numbers(self, steps: Sequence[StepMetric], summary: Mapping[str, float]) -> None:
        """Step and summary metrics (at step 0) in one batch."""
        rows = [(m.key, m.value, m.step) for m in steps]
        self._metrics(rows + [(k, v, 0) for k, v in summary.items()])

    def files(self, paths: Sequence[Path]) -> None:
        """The report's files as artifacts."""
        for path in paths:
            self.client.log_artifact(self.run_id, str(path))

    def table(self, sample: Sequence[SampledRow]) -> None:
        """The sample as MLflow's table ``sample.parquet`` (images as PNG artifacts). MLflow
        takes a column of images only whole, so each run of rows with an image and each run
        without one (a text problem) is logged in turn, in the sample's order (``log_table``
        appends to the table); a part logged before a failed call is not logged again."""
        import pandas as pd

        from clearsight.track.content import IMAGE, SAMPLE, table_of

        columns, rows = table_of(sample, EncodedPng)
        frame = pd.DataFrame(rows, columns=columns)
        shown = frame[IMAGE].notna().tolist() if IMAGE in frame else [False] * len(frame)
        start = 0
        for has_image, run in groupby(shown):
            end = start + len(list(run))
            if end > self.tabled:
                part = frame.iloc[start:end]
                part = part if has_image else part.drop(columns=[IMAGE], errors="ignore")
                self.client.log_table(self.run_id, part, f"{SAMPLE}.parquet")
                self.tabled = end
            start = end

    def end(self, ok: bool) -> None:
        """End the run, FINISHED or FAILED."""
        import mlflow

        mlflow.end_run("FINISHED" if ok else "FAILED")
