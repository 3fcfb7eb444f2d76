"""A small sweep run for the viewer's tests, answered by the image-capturing observer
(``capture``, :mod:`fixtures.capture`) beside the plain observer: two photos, fog at three
levels, the clean and blank controls, a letter and a verbal wording, both tasks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from clearsight.seeding import derive_seed
from clearsight.store import RunStore
from clearsight.sweep.protocol import run_sweep
from fixtures.capture import CAPTURED, view_config


@pytest.fixture(scope="session")
def view_run(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, dict[str, npt.NDArray[np.uint8]]]:
    """The run and, per item key the capture backend answered, the image it received."""
    run = tmp_path_factory.mktemp("view") / "run"
    CAPTURED.clear()
    run_sweep(view_config(), run, progress=False)
    with RunStore.open(run, read_only=True) as store:
        keys = [r.key for r in store.iter_records("ok", kind="sweep", raw=False)]
    by_seed = {derive_seed(key): key for key in keys}
    return run, {by_seed[seed]: image for seed, image in CAPTURED.items()}
