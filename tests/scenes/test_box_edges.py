"""Where a stated depth layout's box edges show in fog: the depth note says so."""

from __future__ import annotations

import numpy as np

from clearsight.scenes.bundled import EDGE_RATIO, box_edges, load_bundled_scene
from clearsight.scenes.depth import assumed_depth
from clearsight.scenes.model import Box


def test_a_box_nearer_than_its_layout_shows_its_edges() -> None:
    box = Box(10, 10, 20, 30)
    depth = assumed_depth(40, 40, far_m=20.0, target_boxes=[box], targets_m=[2.0])
    assert box_edges(depth, [box]) == [(0, 2.0, 20.0)]


def test_a_box_at_the_layouts_depth_or_filling_the_image_shows_none() -> None:
    box = Box(10, 10, 20, 30)
    same = assumed_depth(40, 40, far_m=20.0, target_boxes=[box], targets_m=[20.0])
    near = assumed_depth(40, 40, far_m=20.0, target_boxes=[box], targets_m=[20.0 / EDGE_RATIO + 1])
    assert box_edges(same, [box]) == []
    assert box_edges(near, [box]) == []  # a step under EDGE_RATIO
    whole = Box(0, 0, 40, 40)
    assert box_edges(np.full((40, 40), 3.0, dtype=np.float32), [whole]) == []


def test_a_ground_plane_box_shows_its_top_edge_against_the_sky() -> None:
    """A target standing on the ground below the horizon: the strip above its box is far."""
    box = Box(10, 18, 20, 30)
    depth = assumed_depth(
        40, 40, far_m=60.0, horizon=0.45, near_m=3.0, target_boxes=[box], targets_m=[8.0]
    )
    (i, inside, around) = box_edges(depth, [box])[0]
    assert (i, inside, around) == (0, 8.0, 60.0)


def test_the_bundled_depth_notes_say_where_the_box_edges_show() -> None:
    camera = load_bundled_scene("skimage-camera")  # a person at 2.5 m before 80 m buildings
    coffee = load_bundled_scene("skimage-coffee")  # cups at 0.5 m on a table at 0.6 m
    assert "box edges show in fog (person box at 2.5 m beside 80 m)" in camera.depth_note
    assert "box edges" not in coffee.depth_note
    assert camera.photo == "bundled:skimage:camera"
