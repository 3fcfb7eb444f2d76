"""The probe's benchmark building (the paper's two-stage filter, section 3.2) as a protocol of
its own: stage 1 asks the sensor directly, stage 2 keeps the questions it fails."""
