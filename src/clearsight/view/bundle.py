"""``clearsight view RUN --bundle DIR``: a run's viewer as a static site that works from
``file://`` and any static host, with no server and no script.

The site holds the run's curve points (``index.html``), per point a page of the sampled items
behind it (``point/N.html``), each sampled item's page (``item/KEY.html``) and the image its
model was shown (``image/KEY.png``), the style sheet, and the same values as JSON
(``bundle.json``: every point with its ``n`` and the keys sampled behind it, every sampled
item's row). The sample is stratified by curve point: each point gets an equal share of
``sample`` items, spread evenly over its listing in the run's order (items behind several
points count once), so every point, however small, shows some of its items where the sample
is at least as large as the points are many.

The site is written into a new directory beside ``DIR`` and moved into place when complete:
``DIR`` must not exist yet, and a failure leaves nothing behind.
"""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path

from clearsight.faces.viewing import Listing, Point, Query, Row, RunView
from clearsight.validate import InputError
from clearsight.view.chart import curves_of
from clearsight.view.pages import render
from clearsight.view.settings import DEFAULT_SAMPLE

__all__ = ["Bundle", "stratified_sample", "write_bundle"]


@dataclass(frozen=True)
class Bundle:
    """A written bundle: where, how many points and how many items (and images) it holds."""

    path: Path
    n_points: int
    n_items: int


#: Most items read of one point's listing to spread its share over.
_SPREAD = 100_000


def _spread(rows: tuple[Row, ...], share: int) -> list[Row]:
    """``share`` rows spread evenly over ``rows`` (all of them when they are fewer)."""
    if len(rows) <= share:
        return list(rows)
    return [rows[math.floor(i * len(rows) / share)] for i in range(share)]


def stratified_sample(view: RunView, points: tuple[Point, ...], size: int) -> list[list[Row]]:
    """Per point, its sampled rows (see the module docstring); ``size`` items at most."""
    share = max(1, math.ceil(size / max(len(points), 1)))
    chosen: set[str] = set()
    out: list[list[Row]] = []
    for point in points:
        rows = view.listing(Query(filters=point.filters, per_page=_SPREAD)).rows
        kept = []
        for row in _spread(rows, share):
            if row.key in chosen or len(chosen) < size:
                chosen.add(row.key)
                kept.append(row)
        out.append(kept)
    return out


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _item_pages(view: RunView, rows: Mapping[str, Row], site: Path) -> None:
    """Each sampled item's page and image."""
    for key in rows:
        detail = view.detail(key)
        png = view.image(key) if detail is not None and detail.image else b""
        if detail is None or png is None:
            raise InputError(f"item {key} left the run while its bundle was written")
        _write(
            site / "item" / f"{key}.html",
            render("item.html", "../", title=view.title, detail=detail),
        )
        if detail.image:
            (site / "image").mkdir(exist_ok=True)
            (site / "image" / f"{key}.png").write_bytes(png)


def _fill(view: RunView, site: Path, size: int) -> Bundle:
    """Write the site of ``view`` into the empty directory ``site``."""
    points = view.points()
    sampled = stratified_sample(view, points, size)
    curves = curves_of(points, lambda number, _: f"point/{number}.html")
    intro = "a point lists a sample of the items its n counts."
    _write(
        site / "index.html",
        render("points.html", "", title=view.title, curves=curves, every="", intro=intro),
    )
    urls = {
        "item_url": lambda key: f"../item/{key}.html",
        "image_url": lambda key: f"../image/{key}.png",
    }
    for number, (point, rows) in enumerate(zip(points, sampled, strict=True)):
        listing = Listing(tuple(rows), point.n)
        page = render("sample.html", "../", title=view.title, point=point, listing=listing, **urls)
        _write(site / "point" / f"{number}.html", page)
    items = {row.key: row for rows in sampled for row in rows}
    _item_pages(view, items, site)
    css = resources.files("clearsight.view").joinpath("static/view.css").read_text("utf-8")
    _write(site / "static" / "view.css", css)
    data = {
        "title": view.title,
        "points": [
            {**asdict(p), "sampled": [r.key for r in rows]}
            for p, rows in zip(points, sampled, strict=True)
        ],
        "items": {key: asdict(row) for key, row in items.items()},
    }
    _write(site / "bundle.json", json.dumps(data, indent=1, allow_nan=False, default=str))
    return Bundle(site, len(points), len(items))


def write_bundle(view: RunView, out: Path, size: int = DEFAULT_SAMPLE) -> Bundle:
    """Write the bundle of ``view`` into the new directory ``out`` (module docstring)."""
    out = Path(out)
    if size < 1:
        raise InputError(f"--sample must be at least 1, got {size}")
    if out.exists():
        raise InputError(f"{out} exists: a bundle is written into a new directory")
    if not out.parent.is_dir():
        raise InputError(f"{out.parent} is not a directory: cannot write a bundle into it")
    view.index.build()  # the listings read it: built now, however long (never "indexing")
    partial = out.parent / f".{out.name}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    try:
        bundle = _fill(view, partial, size)
        partial.rename(out)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    return Bundle(out, bundle.n_points, bundle.n_items)
