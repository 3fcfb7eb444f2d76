"""Viewer benchmark: ``clearsight view`` on the paper-scale store of ``paper_scale.py``.

The store is built as ``paper_scale.py`` builds it (a real sweep of ``--run-scenes`` scenes,
then the paper's full design through the driver with every unit's records looked up from it:
1,806,000 items at 1000 scenes), or reused with ``--run DIR`` (``--keep DIR`` builds it there).
First the viewer is started in a child process (its app, with its start-up) and its first
page asked for at once:

* ``viewer_start_first_response_s_<n>`` (and the page's status): with no index yet, the page
  that says "indexing N of M" (503) while the build runs in the background; the child then
  exits, leaving the part of the index built so far (resumed below).

The viewer's side index (``RUN/view-index.sqlite``, :mod:`clearsight.view.index`) is then
brought up to date in a child process of its own, as ``clearsight view RUN --index`` does —
built from the whole store the first time (minutes at this scale), read from where it stopped
afterwards:

* ``viewer_index_sync_s_<n>``: that build or update; ``viewer_index_mb_<n>``: the index's size;
  ``viewer_index_rss_mb_<n>``: that child's peak RSS.

The viewer is then timed in another child process, so its peak RSS is the viewer's alone,
through its app (Starlette's test client, no network):

* ``viewer_first_page_s_<n>``: the first page of the listing of every item;
* ``viewer_filter_s_<n>``: a listing with a model, condition and level chosen (a filter change);
* ``viewer_points_s_<n>``: the curve points page (the analysis's curves of the whole run, as
  grouped counts over the index);
* ``viewer_item_with_image_s``: one item's page and its image re-rendered;
* ``viewer_side_models_s_<n>`` and ``viewer_side_strip_fog_s_<n>``: that item's side-by-side
  pages, the item for each model and its scene's fog strip (clean, then every fog level);
* ``viewer_rss_mb_<n>``: the child's peak RSS after all of them.

``--quick``: 5 scenes, 2 run for real.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from _timing import report
from clearsight.sweep.protocol import run_sweep
from paper_scale import _learn, design, replay_run

_CHILD = """
import re, resource, sys, time
from pathlib import Path
from starlette.testclient import TestClient
from clearsight.view import open_views
from clearsight.view.app import create_view_app

run, n = Path(sys.argv[1]), sys.argv[2]
client = TestClient(create_view_app(open_views([run])), base_url="http://127.0.0.1")

def timed(path):
    start = time.perf_counter()
    response = client.get(path)
    assert response.status_code == 200, (path, response.status_code, response.text[-400:])
    return time.perf_counter() - start, response.text

first, page = timed("/run/0/items")
print(f"viewer_first_page_s_{n}: {first:.3f}")
key = re.search(r'data-key="([0-9a-f]{64})"', page).group(1)
spent, _ = timed("/run/0/items?model=observer&condition=fog&level=3.9")
print(f"viewer_filter_s_{n}: {spent:.3f}")
spent, _ = timed("/run/0/")
print(f"viewer_points_s_{n}: {spent:.3f}")
start = time.perf_counter()
assert client.get(f"/run/0/item/{key}").status_code == 200
assert client.get(f"/run/0/image/{key}.png").status_code == 200
print(f"viewer_item_with_image_s: {time.perf_counter() - start:.3f}")
for group, name in (("models", "side_models"), ("fog", "side_strip_fog")):
    spent, _ = timed(f"/run/0/related/{key}/{group}")
    print(f"viewer_{name}_s_{n}: {spent:.3f}")
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(f"viewer_rss_mb_{n}: {rss:.1f}")
"""


_START = """
import sys, time
from pathlib import Path
from starlette.testclient import TestClient
from clearsight.view import open_views
from clearsight.view.app import create_view_app

run, n = Path(sys.argv[1]), sys.argv[2]
start = time.perf_counter()
with TestClient(create_view_app(open_views([run])), base_url="http://127.0.0.1") as client:
    status = client.get("/run/0/items").status_code
    print(f"viewer_start_first_response_s_{n}: {time.perf_counter() - start:.3f} ({status})")
"""

_INDEX = """
import resource, sys, time
from pathlib import Path
from clearsight.view import open_views
from clearsight.view.index import index_path

run, n = Path(sys.argv[1]), sys.argv[2]
view = open_views([run])[0]
start = time.perf_counter()
view.index.build()
print(f"viewer_index_sync_s_{n}: {time.perf_counter() - start:.3f}")
print(f"viewer_index_mb_{n}: {index_path(run).stat().st_size / 2**20:.1f}")
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(f"viewer_index_rss_mb_{n}: {rss:.1f}")
"""


def build(root: Path, run: Path, n: int, n_run: int) -> int:
    """Build the paper-scale store of ``n`` scenes in ``run``; its item count."""
    fraction = run.parent / f"{run.name}.fraction"
    start = time.perf_counter()
    run_sweep(design(root, n_run), fraction, progress=False)
    _learn(fraction)
    replay_run(design(root, n), run)
    report("viewer_store_build_s", time.perf_counter() - start)
    from clearsight.store import RunStore

    with RunStore.open(run, read_only=True) as store:
        return int(store.counts()["items"])


def measure(run: Path, items: int) -> None:
    """Time the viewer's first response as it starts, bring the index of ``run`` up to date,
    then time the viewer's pages, each in a child process; they print the figures."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    for child in (_START, _INDEX, _CHILD):
        subprocess.run([sys.executable, "-c", child, str(run), str(items)], env=env, check=True)


def main(argv: Sequence[str] | None = None) -> None:
    """Build (or reuse) the store, then measure the viewer on it."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenes", type=int, default=1000)
    parser.add_argument("--run-scenes", type=int, default=10)
    parser.add_argument("--quick", action="store_true", help="5 scenes, 2 of them run")
    parser.add_argument("--run", type=Path, help="a paper-scale store built before")
    parser.add_argument("--keep", type=Path, help="build the store here (kept)")
    args = parser.parse_args(argv)
    n, n_run = (5, 2) if args.quick else (args.scenes, args.run_scenes)
    cache = Path(os.environ.get("CLEARSIGHT_CACHE", Path.home() / ".cache" / "clearsight"))
    root = cache / "paper_scale"
    root.mkdir(parents=True, exist_ok=True)
    if args.run is not None:
        from clearsight.store import RunStore

        with RunStore.open(args.run, read_only=True) as store:
            measure(args.run, int(store.counts()["items"]))
        return
    if args.keep is not None:
        measure(args.keep, build(root, args.keep, n, n_run))
        return
    with tempfile.TemporaryDirectory(prefix="viewer_") as tmp:
        run = Path(tmp) / "run"
        measure(run, build(root, run, n, n_run))


if __name__ == "__main__":
    main()
