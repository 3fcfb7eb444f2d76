"""Where a probe run's instances come from: the bundled set, a local copy in a dataset's row
layout, or a hub snapshot."""
