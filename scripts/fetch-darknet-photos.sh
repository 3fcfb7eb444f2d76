#!/usr/bin/env bash
# Extract the test photos of Debian's `darknet` package into a data cache, without installing it.
# Usage: scripts/fetch-darknet-photos.sh DEST_DIR
# Where apt is unavailable the bundled scenes that need these photos are skipped (with a note).
set -euo pipefail
dest=${1:?usage: $0 DEST_DIR}
photos="dog eagle giraffe horses kite person"
have_all=1
for p in $photos; do [ -f "$dest/$p.jpg" ] || have_all=0; done
[ "$have_all" = 1 ] && exit 0
if ! command -v apt-get >/dev/null 2>&1 || ! command -v dpkg >/dev/null 2>&1; then
    echo "note: apt-get/dpkg not available; the darknet photo scenes will be skipped" >&2
    exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
if ! apt-get download darknet >/dev/null 2>&1; then
    apt-get update -qq >/dev/null 2>&1 || true
    if ! apt-get download darknet >/dev/null 2>&1; then
        echo "note: 'apt-get download darknet' failed; the darknet photo scenes will be skipped" >&2
        exit 0
    fi
fi
dpkg -x darknet_*.deb extracted
mkdir -p "$dest"
for p in $photos; do cp "extracted/usr/share/darknet/data/$p.jpg" "$dest/"; done
cp extracted/usr/share/doc/darknet/copyright "$dest/COPYRIGHT"
echo "darknet photos extracted to $dest"
