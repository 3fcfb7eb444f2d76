#!/usr/bin/env bash
# Extract the test photos of Debian's `darknet` package into DEST_DIR, checksummed, without
# installing it: a thin caller of `clearsight fetch --steps photos` (src/clearsight/fetch/steps.py).
# Usage: scripts/fetch-darknet-photos.sh DEST_DIR
# Where apt is unavailable the bundled scenes that need these photos are skipped (with a note).
set -euo pipefail
dest=${1:?usage: $0 DEST_DIR}
exec "${PYTHON:-python3}" -c 'import sys; from pathlib import Path
from clearsight.fetch import fetch_photos
print(fetch_photos(Path(sys.argv[1])).describe())' "$dest"
