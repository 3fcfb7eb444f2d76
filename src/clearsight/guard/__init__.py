"""The visibility guard (issue 19): a backend wrapper ``guard:<model>`` that abstains when an
image-only visibility estimate says the model can no longer see, its calibration from a finished
sweep, and its estimate's error against the sweep's true visibility (docs/guard.md).

:mod:`.estimate` measures (dark channel prior, visibility in metres with depth),
:mod:`.backend` wraps a model, :mod:`.calibrate` fits and stores the threshold;
:mod:`clearsight.sweep.page.guard` (the sweep report's guard section) compares the estimate with the
true V.
"""

from clearsight.guard.calibrate import GuardCalibration, calibrate, load_calibration, split_scenes
from clearsight.guard.estimate import VisibilityEstimate, estimate_visibility

__all__ = [
    "GuardCalibration",
    "VisibilityEstimate",
    "calibrate",
    "estimate_visibility",
    "load_calibration",
    "split_scenes",
]
