"""``clearsight board``: several cards side by side, ranked, with paired differences.

``board.csv`` has one row per card model and card number (``kind`` = ``number``: the card.json
values, and the model's ``rank`` among the board's models on that number: 1 = best, by the
direction of :func:`better`), and one row per pair of cards and group of paired items
(``kind`` = ``paired``): the accuracy difference ``mean_i (correct_A,i - correct_B,i)`` over
the items both cards asked, with a 95 % interval from a cluster bootstrap of those paired
differences — both models answered the same items, so the pairing removes the items' own
difficulty from the interval. Which items pair, their groups and clusters, each protocol says
in its card run (:attr:`CardRun.board <clearsight.faces.card_run.CardRun>`; the sweep: the
same scene, target, condition, level, wording and question, grouped as clean and each arm,
clustered by source photo).
``board.html`` shows the same tables.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from clearsight.card.numbers import CardJSON
from clearsight.card.page import numbers_table
from clearsight.card.run import load_card
from clearsight.faces import card_runs
from clearsight.faces.card import Number, NumberJSON
from clearsight.pages.html import esc, fmt_ci, frame_table, page
from clearsight.pages.output import csv_text, write_atomic
from clearsight.validate import InputError

CSV_COLUMNS = (
    "kind",
    "key",
    "model",
    "other",
    "estimate",
    "low",
    "high",
    "bound",
    "text",
    "n",
    "rank",
)
#: Bounds whose estimate is no value to rank by (no crossing, or W left open).
_UNRANKED = ("undefined", "undetermined")


def better(key: str) -> str:
    """How a number ranks: 'high' (accuracy, TGS), 'low' (V*_acc: sees into murkier water;
    AURC, ECE) or 'zero' (W: confidence falls with accuracy, |W| smallest)."""
    if " W " in f" {key} ":
        return "zero"
    if "V*_acc" in key or "AURC" in key or "ECE" in key:
        return "low"
    return "high"


def _number(d: NumberJSON) -> Number:
    def f(v: float | None) -> float:
        return math.nan if v is None else float(v)

    return Number(
        d["key"],
        f(d["estimate"]),
        f(d["low"]),
        f(d["high"]),
        d["text"],
        d.get("bound", ""),
        int(d.get("n", 0)),
    )


def number_rows(cards: Sequence[CardJSON]) -> pd.DataFrame:
    """The ``number`` rows of board.csv: each card model's own numbers with its rank."""
    rows = []
    for card in cards:
        model = card["model"]
        for key, d in card["numbers"][model].items():
            n = _number(d)
            rows.append(
                {
                    "kind": "number",
                    "key": key,
                    "model": model,
                    "other": "",
                    "estimate": n.estimate,
                    "low": n.low,
                    "high": n.high,
                    "bound": n.bound,
                    "text": n.text,
                    "n": n.n,
                }
            )
    frame = pd.DataFrame(rows, columns=list(CSV_COLUMNS[:-1]))
    frame["rank"] = math.nan
    ranked = frame[~frame["bound"].isin(_UNRANKED)]
    for group, sub in ranked.groupby("key", sort=False):
        score = {"high": -sub["estimate"], "low": sub["estimate"], "zero": sub["estimate"].abs()}
        frame.loc[sub.index, "rank"] = score[better(str(group))].rank(method="min")
    return frame


def paired_rows(
    dirs: Sequence[Path], cards: Sequence[CardJSON], n_boot: int, seed: int
) -> pd.DataFrame:
    """The ``paired`` rows of board.csv (module docstring): per protocol that pairs items
    across cards and whose run every card holds, per pair of cards, per group of items both
    answered."""
    rows = []
    for name, card_run in card_runs():
        if card_run.board is not None and all((Path(d) / name).is_dir() for d in dirs):
            items = [
                card_run.board(Path(d) / name, c["model"]) for d, c in zip(dirs, cards, strict=True)
            ]
            rows += _pair_rows(cards, items, n_boot, seed)
    return pd.DataFrame(rows, columns=list(CSV_COLUMNS))


def _pair_rows(
    cards: Sequence[CardJSON], items: Sequence[pd.DataFrame], n_boot: int, seed: int
) -> list[dict[str, object]]:
    """The paired rows of one protocol's items (``items``: each card's, as its card run's
    ``board`` gives them), per pair of cards and group, in the groups' own order."""
    from clearsight.metrics.bootstrap import cluster_bootstrap_mean

    rows: list[dict[str, object]] = []
    for (i, a), (j, b) in itertools.combinations(enumerate(cards), 2):
        both = items[i].merge(items[j], on=["item", "group"], suffixes=("_a", "_b"))
        for group in dict.fromkeys(both["group"]):
            sub = both[both["group"] == group]
            diff = (sub["correct_a"] - sub["correct_b"]).to_numpy(float)
            clusters = sub["cluster_a"].to_numpy()  # the item's cluster: the same in both
            ci = cluster_bootstrap_mean(diff, clusters, n_boot=n_boot, seed=seed)
            rows.append(
                {
                    "kind": "paired",
                    "key": f"accuracy difference ({group})",
                    "model": a["model"],
                    "other": b["model"],
                    "estimate": ci.estimate,
                    "low": ci.low,
                    "high": ci.high,
                    "bound": "",
                    "text": fmt_ci(ci.estimate, ci.low, ci.high),
                    "n": len(sub),
                    "rank": math.nan,
                }
            )
    return rows


def write_board(card_dirs: Sequence[Path], out: Path) -> tuple[Path, Path]:
    """Write ``out/board.html`` and ``out/board.csv`` for the cards in ``card_dirs``."""
    if len(card_dirs) < 2:
        raise InputError(f"a board needs two or more card directories, got {len(card_dirs)}")
    cards = [load_card(Path(d)) for d in card_dirs]
    models = [c["model"] for c in cards]
    if len(set(models)) < len(models):
        raise InputError(f"two card directories hold the same model: {', '.join(models)}")
    cfg = cards[0]["config"]
    numbers = number_rows(cards)
    pairs = paired_rows(card_dirs, cards, int(cfg["n_boot"]), int(cfg["seed"]))
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    csv_path, html_path = out / "board.csv", out / "board.html"
    write_atomic(csv_path, csv_text(pd.concat([numbers, pairs])))
    write_atomic(html_path, render_board(cards, numbers, pairs, card_dirs, out))
    return html_path, csv_path


def render_board(
    cards: Sequence[CardJSON],
    numbers: pd.DataFrame,
    pairs: pd.DataFrame,
    card_dirs: Sequence[Path],
    out: Path,
) -> str:
    """The board page: numbers side by side, ranks, paired differences, links to the cards."""
    by_model = {c["model"]: [_number(d) for d in c["numbers"][c["model"]].values()] for c in cards}
    ranks = numbers.pivot(index="key", columns="model", values="rank")
    ranks = ranks.reindex(index=list(dict.fromkeys(numbers["key"])), columns=list(by_model))
    ranks = ranks.map(lambda v: "–" if pd.isna(v) else f"{int(v)}").reset_index()
    shown = pairs[["key", "model", "other", "text", "n"]].rename(
        columns={"model": "A", "other": "B", "text": "A - B [95 % CI]", "n": "shared items"}
    )
    links = "".join(
        f"<li><a href='{esc(_rel(Path(d) / 'card.html', out))}'>{esc(c['model'])}</a></li>"
        for d, c in zip(card_dirs, cards, strict=True)
    )
    body = (
        f"<h1>clearsight board: {len(cards)} models</h1>"
        "<p class='note'>Every card number side by side (95 % bootstrap intervals), each "
        "model's rank on it (1 = best: higher accuracy and TGS; lower V*_acc, AURC and ECE; "
        "W closest to 0; no rank on an undefined or undetermined figure, whose interval cannot "
        "order the models: a larger card design, more scenes or levels, determines it), and "
        "paired accuracy differences on the sweep items two cards "
        "share, with photo-bootstrap intervals (crops of one photo resampled together).</p>"
        f"<h2>Numbers</h2>{numbers_table(by_model, {m: 'card model' for m in by_model})}"
        f"<h2>Ranks</h2>{frame_table(ranks)}"
        f"<h2>Paired differences</h2>{frame_table(shown)}"
        f"<h2>Cards</h2><ul>{links}</ul>"
    )
    return page("clearsight board", body)


def _rel(path: Path, start: Path) -> str:
    import os

    return os.path.relpath(path.resolve(), start.resolve())
