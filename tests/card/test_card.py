"""The card: card.json's schema and values, what is skipped and why, a rerun executes
nothing, and the page offline in a real browser (escaped model text, every number shown)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest

from clearsight.card import CardResult, load_card, run_card
from clearsight.card.page import parts_list
from clearsight.grounding.face import TGS_KEYS
from clearsight.probe.results import load_probe_results
from fixtures.cards import SCRIPT, SMALL

CHROMIUM = Path("/usr/bin/chromium")
SWEEP_KEYS = [
    f"{arm} {what}"
    for arm in ("fog", "water")
    for what in (
        "V*_acc",
        "W internal",
        "W verbalized",
        "W abstain",
        "AURC",
        "ECE internal",
        "ECE verbalized",
    )
]
NUMBER_FIELDS = {"key", "estimate", "low", "high", "text", "bound", "n"}


def _card(cards: dict[str, tuple[str, CardResult]], which: str) -> tuple[str, dict[str, Any]]:
    model, result = cards[which]
    return model, load_card(result.out)


def test_card_json_holds_every_number_with_its_interval(cards: Any) -> None:
    model, card = _card(cards, "scripted")
    assert card["model"] == model
    assert re.fullmatch(r"[0-9a-f]{16,64}", card["manifest_hash"])
    assert card["roles"] == {model: "card model", "observer": "reference observer"}
    assert list(card["numbers"]) == [model, "observer"]
    own = card["numbers"][model]
    assert [*own] == ["clean accuracy", *SWEEP_KEYS, "probe accuracy", "probe cross-run ECE"]
    assert [*card["numbers"]["observer"]] == ["clean accuracy", *SWEEP_KEYS]
    for numbers in card["numbers"].values():
        for key, n in numbers.items():
            assert set(n) == NUMBER_FIELDS
            assert n["key"] == key
            if n["estimate"] is not None and n["low"] is not None:
                assert n["low"] - 1e-9 <= n["estimate"] <= n["high"] + 1e-9, n
    for part, path in card["reports"].items():
        assert (cards["scripted"][1].out / path).is_file(), part


def test_the_cards_ece_is_the_sweeps_pooled_ece(cards: Any) -> None:
    """ECE of internal and verbalized confidence on the card: the sweep report's pooled cell
    (clean and every level of the arm) of the letter and the verbal wording."""
    from clearsight.sweep.analysis import analyse_sweep

    model, card = _card(cards, "scripted")
    out = cards["scripted"][1].out
    calibration = (
        analyse_sweep(out / "sweep", n_boot=SMALL.n_boot, seed=SMALL.seed)
        .tasks["identify"]
        .calibration
    )
    for label, wording in (("internal", "mcq.reason"), ("verbalized", "verbal.plain")):
        row = calibration[
            (calibration["model"] == model)
            & (calibration["arm"] == "fog")
            & (calibration["wording"] == wording)
            & (calibration["level"] == "pooled")
        ].iloc[0]
        got = card["numbers"][model][f"fog ECE {label}"]
        assert math.isclose(got["estimate"], row.ece, abs_tol=1e-12)
        assert math.isclose(got["low"], row.ece_low, abs_tol=1e-12)


def test_probe_accuracy_is_the_share_of_right_commits(cards: Any) -> None:
    model, card = _card(cards, "scripted")
    frame = load_probe_results(cards["scripted"][1].out / "probe").transcripts
    assert len(frame) == len(SMALL.probe_questions) * SMALL.probe_runs
    expected = float((frame["committed"] == frame["gold"]).mean())
    got = card["numbers"][model]["probe accuracy"]
    assert math.isclose(got["estimate"], expected, abs_tol=1e-12)
    # B to everything: one run of each question commits like the other, so every question's
    # cross-run confidence is 1 and the ECE is the share of questions B gets wrong
    wrong = 1 - frame.groupby("instance_id")["correct"].first().astype(float).mean()
    ece = card["numbers"][model]["probe cross-run ECE"]["estimate"]
    assert math.isclose(ece, wrong, abs_tol=1e-12)


def test_what_cannot_run_is_skipped_with_its_reason(cards: Any) -> None:
    model, card = _card(cards, "scripted")
    parts = {p["name"]: p for p in card["parts"]}
    assert parts["grounding"]["runs"] is False
    assert "lacks attention_mask" in parts["grounding"]["note"]
    assert parts["probe"]["runs"]
    assert "sensor" in parts["probe"]["role"]
    assert not any(label in card["numbers"][model] for _, label in TGS_KEYS)
    _, observer = _card(cards, "observer")
    notes = {p["name"]: p["note"] for p in observer["parts"]}
    assert "ObserverReference" in notes["probe"]  # the observer answers boxed questions only


def test_a_missing_anchor_is_skipped_with_the_fetch_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from clearsight.card import parts
    from clearsight.sweep.face.card import SWEEP_CARD_RUN

    monkeypatch.setattr(parts, "missing_embedded", lambda: "needs SmolLM2: run `clearsight fetch`")
    cfg = SMALL.model_copy(update={"anchors": ("observer", "hf:smollm2-135m")})
    anchors = [p for p in SWEEP_CARD_RUN.plan("observer", cfg) if p.name.startswith("anchor ")]
    assert [(p.name, p.runs) for p in anchors] == [("anchor hf:smollm2-135m", False)]
    assert "clearsight fetch" in anchors[0].note
    assert "Run <code>clearsight fetch</code>" in parts_list(anchors)


def test_a_second_card_on_the_same_directory_runs_nothing(cards: Any) -> None:
    model, first = cards["scripted"]
    before = load_card(first.out)
    again = run_card(model, first.out, SMALL, say=lambda _: None)
    assert first.executed > 0
    assert again.executed == 0
    assert again.failed == 0
    assert load_card(first.out) == before


@pytest.mark.skipif(not CHROMIUM.exists(), reason="no /usr/bin/chromium: run `make browser`")
def test_the_page_renders_offline_escaped_with_every_number(cards: Any) -> None:
    playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright not installed")
    model, card = _card(cards, "scripted")
    page_path = cards["scripted"][1].out / "card.html"
    requests: list[str] = []
    dialogs: list[str] = []
    with playwright_api.sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox"]
        )
        try:
            context = browser.new_context(offline=True, java_script_enabled=True)
            page = context.new_page()
            page.on("request", lambda r: requests.append(r.url))
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            page.goto(page_path.as_uri())
            assert page.title() == f"clearsight card: {model}"
            assert SCRIPT in page.locator("h1").inner_text()  # shown as text, not run
            assert page.locator("script").count() == 0
            for name, numbers in card["numbers"].items():
                for key, n in numbers.items():
                    cell = page.locator(f"td[data-key={json.dumps(f'{name}|{key}')}]")
                    assert cell.inner_text().strip() == n["text"], (name, key)
            assert page.locator("img").count() >= 2
            assert page.evaluate(
                "[...document.images].every(i => i.complete && i.naturalWidth > 0)"
            )
        finally:
            browser.close()
    assert dialogs == []
    assert all(u.startswith(("file:", "data:")) for u in requests), requests


def test_an_awareness_signal_added_to_the_sweep_reaches_the_card(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The card's W numbers iterate the sweep's awareness signals: one more signal there (a
    second abstention wording, say) is one more W on the card, labelled by its first word."""
    import dataclasses

    import pandas as pd

    from clearsight.sweep import signals
    from clearsight.sweep.face import card

    extra = dataclasses.replace(signals.AWARENESS[2], name="abstain_hedge", label="hedge rate")
    monkeypatch.setattr(card, "AWARENESS", (*signals.AWARENESS, extra))
    names = ["accuracy", *(s.name for s in signals.AWARENESS), extra.name]
    rows = pd.DataFrame(
        {
            "model": "m",
            "wording": ["mcq.reason" if n != "verbal_conf" else "verbal.plain" for n in names],
            "signal": names,
            "v_star_m": 8.0,
            "v_low_m": 4.0,
            "v_high_m": 16.0,
            "censored": "",
            "n_items": 12,
            "w": [float(i) / 10 for i in range(len(names))],
            "w_low": -1.0,
            "w_high": 1.0,
            "w_bound": "",
        }
    )
    numbers = card._arm_numbers("fog", rows, (16.0, 8.0, 4.0), "mcq.reason", "verbal.plain")
    keys = ["fog V*_acc", "fog W internal", "fog W verbalized", "fog W abstain", "fog W hedge"]
    assert [n.key for n in numbers] == keys
    assert numbers[-1].estimate == pytest.approx(0.4, abs=1e-12)  # the added signal's own row
