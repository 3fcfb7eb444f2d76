"""The parts of the sweep's analysis: per-scene bootstrap cells, crossing curves and W,
calibration and selective prediction, the wordings' Table VI and the guard's estimate."""
