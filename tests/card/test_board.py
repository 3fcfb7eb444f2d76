"""The board: its CSV recomputed from two card.json files and their runs, and its page."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pytest

from clearsight.card import load_card
from clearsight.card.board import better, write_board
from clearsight.metrics.bootstrap import bootstrap_weights
from clearsight.sweep.results import load_run_data
from fixtures.cards import SCRIPT, SMALL


@pytest.fixture(scope="module")
def board(cards: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[pd.DataFrame, str]:
    out = tmp_path_factory.mktemp("board")
    dirs = [cards["scripted"][1].out, cards["observer"][1].out]
    html, csv = write_board(dirs, out)
    return pd.read_csv(csv, keep_default_na=False, na_values=[""]), html.read_text()


def test_number_rows_are_the_cards_numbers_ranked(cards: Any, board: Any) -> None:
    frame, _ = board
    numbers = frame[frame["kind"] == "number"]
    expected = []
    for which in ("scripted", "observer"):
        card = load_card(cards[which][1].out)
        for key, n in card["numbers"][card["model"]].items():
            expected.append((card["model"], key, n))
    assert len(numbers) == len(expected)
    for model, key, n in expected:
        row = numbers[(numbers["model"] == model) & (numbers["key"] == key)].iloc[0]
        assert row["text"] == n["text"]
        if n["estimate"] is None:
            assert math.isnan(row["estimate"])
        else:
            assert math.isclose(row["estimate"], n["estimate"], rel_tol=1e-12)
    # ranks recomputed from the values: on clean accuracy the observer (1.0) beats B-always
    clean = numbers[numbers["key"] == "clean accuracy"].set_index("model")
    scripted = cards["scripted"][0]
    order = clean["estimate"].rank(ascending=False, method="min")
    assert clean["rank"].to_dict() == order.to_dict()
    assert clean.loc["observer", "rank"] == 1
    assert clean.loc[scripted, "estimate"] < 1
    assert better("fog W internal") == "zero"
    assert better("water V*_acc") == "low"
    assert better("TGS-self") == "high"
    assert better("probe cross-run ECE") == "low"


def test_paired_differences_are_recomputed_from_the_shared_items(cards: Any, board: Any) -> None:
    frame, _ = board
    pairs = frame[frame["kind"] == "paired"].set_index("key")
    scripted, observer = cards["scripted"][0], "observer"
    assert set(pairs["model"]) == {scripted}
    assert set(pairs["other"]) == {observer}
    a = load_run_data(cards["scripted"][1].out / "sweep").records
    b = load_run_data(cards["observer"][1].out / "sweep").records
    for group in ("clean", "fog", "water"):
        sa = a[
            (a["model"] == scripted) & (a["condition"] == group) & (a["wording"] == "mcq.reason")
        ]
        sb = b[
            (b["model"] == observer) & (b["condition"] == group) & (b["wording"] == "mcq.reason")
        ]
        keys = ["scene", "target", "level_m"]
        both = sa.fillna({"level_m": -1}).merge(sb.fillna({"level_m": -1}), on=keys)
        diff = both["correct_x"] - both["correct_y"]
        row = pairs.loc[f"accuracy difference ({group})"]
        assert row["n"] == len(both) > 0
        assert math.isclose(row["estimate"], float(diff.mean()), abs_tol=1e-12)
        # the interval: the same scene bootstrap of the mean paired difference, done by hand
        scenes = sorted(both["scene"].unique())
        w = bootstrap_weights(len(scenes), SMALL.n_boot, SMALL.seed)
        sums = np.array([diff[both["scene"] == s].sum() for s in scenes])
        counts = np.array([(both["scene"] == s).sum() for s in scenes])
        reps = (w @ sums) / (w @ counts)
        low, high = np.percentile(reps, [2.5, 97.5])
        assert math.isclose(row["low"], low, abs_tol=1e-9)
        assert math.isclose(row["high"], high, abs_tol=1e-9)


def test_the_board_page_escapes_model_names(board: Any) -> None:
    _, html = board
    assert SCRIPT not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<h2>Paired differences</h2>" in html


def test_the_board_ranks_no_undetermined_figure_and_says_so(board: Any) -> None:
    frame, html = board
    numbers = frame[frame["kind"] == "number"]
    unranked = numbers[numbers["bound"].isin(["undefined", "undetermined"])]
    assert len(unranked) > 0  # the small cards' close-ups leave some W undetermined
    assert unranked["rank"].isna().all()
    assert numbers.loc[~numbers.index.isin(unranked.index), "rank"].notna().any()
    assert "no rank on an undefined or undetermined figure" in html


def test_the_default_card_sweeps_down_to_the_murkiest_level() -> None:
    """Every other level (to 3.9 m) left the perceiver's fog W undetermined on the card's
    close-up photos; the default sweeps all eight, to 1.95 m."""
    from clearsight.card import CardConfig
    from clearsight.sweep.face.card import card_sweep_config

    levels = card_sweep_config(CardConfig(), ("observer",)).levels_m
    assert len(levels) == 8
    assert min(levels) == 1.953125
