"""``run_card``: run a card's parts for one model, then write ``card.html`` and ``card.json``.

A card directory holds one run per part (``sweep/``, ``grounding/``, ``probe/``), each run by
its protocol's own run function through :func:`clearsight.driver.run`, so a card resumes like
every run: a second ``run_card`` on the same directory and configuration executes nothing and
only rewrites the pages. Each part's full report is written beside its run and linked from the
card. ``card.json`` holds the card's numbers (keys as on the page), what each model cost
(``cost``: :func:`~clearsight.card.numbers.card_cost`), what ran and what was skipped, and the
manifest hash: the content hash of the card's configuration, its model and the
configuration hash each part's run recorded.
"""

from __future__ import annotations

import functools
import json
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict, cast

from clearsight.card.config import BLIND_CONTROL, OBSERVER, CardConfig
from clearsight.card.numbers import (
    Number,
    NumberJSON,
    card_cost,
    cost_json,
    grounding_numbers,
    numbers_json,
    probe_numbers,
    read_probe_frame,
    sweep_numbers,
)
from clearsight.card.page import bars_figure, render_card, sweep_figure
from clearsight.card.parts import SENSOR_ROLE, Part, PartJSON, plan_parts
from clearsight.report.output import write_atomic
from clearsight.store import run_cost, spec_model

if TYPE_CHECKING:
    import pandas as pd

    from clearsight.driver import RunOptions, RunSummary
    from clearsight.execute import ExecutorName

#: Version of card.json's layout (bump when keys change).
CARD_VERSION = 1
CARD_JSON = "card.json"
CARD_HTML = "card.html"
#: The full report each part's run directory holds.
REPORT = "report.html"


class CardJSON(TypedDict):
    """card.json: the card's model, the hash of what made it, the card's configuration (its
    ``model_dump``), each sweep model's role and numbers (model -> key -> number), the parts
    and the part reports' paths relative to the card directory."""

    card_version: int
    model: str
    manifest_hash: str
    config: dict[str, Any]
    roles: dict[str, str]
    numbers: dict[str, dict[str, NumberJSON]]
    cost: list[dict[str, str | int | float | None]]
    parts: list[PartJSON]
    reports: dict[str, str]


@dataclass
class CardResult:
    """What a card run did: the parts, each run's summary, and the files written."""

    out: Path
    parts: list[Part]
    summaries: dict[str, RunSummary] = field(default_factory=dict)

    @property
    def html(self) -> Path:
        """The card page."""
        return self.out / CARD_HTML

    @property
    def executed(self) -> int:
        """Work units executed over all parts (0 on a rerun of a finished card)."""
        return sum(s.units for s in self.summaries.values())

    @property
    def failed(self) -> int:
        """Records that failed over all parts."""
        return sum(s.failed for s in self.summaries.values())


def _role(name: str, model: str) -> str:
    """What a model of the card's sweep is there as: the card's model or an anchor."""
    if name == model:
        return "card model"
    return "reference observer" if name == OBSERVER else "blind control"


def run_card(
    model: str,
    out: Path,
    config: CardConfig | None = None,
    *,
    workers: int = 1,
    fresh: bool = False,
    say: Callable[[str], None] = print,
) -> CardResult:
    """Run every part of ``model``'s card that can run (:func:`plan_parts`) into ``out`` and
    write the card; ``say`` reports each step (what ran, what was skipped)."""
    from clearsight.grounding.protocol import run_grounding
    from clearsight.probe.protocol import run_probe
    from clearsight.sweep.protocol import run_sweep

    config = config or CardConfig()
    out = Path(out)
    parts = plan_parts(model, config)
    result = CardResult(out, parts)
    runs = {p.name for p in parts if p.runs}
    for part in parts:
        say(f"{part.name}: {'runs as ' + part.role if part.runs else 'skipped: ' + part.note}")
    anchors = tuple(p.name.removeprefix("anchor ") for p in parts if p.name.startswith("anchor "))
    models = config.sweep_models(model, tuple(a for a in anchors if f"anchor {a}" in runs))
    if BLIND_CONTROL in models:
        from clearsight.models.embedded import smollm2_dir

        smollm2_dir()  # convert the GGUF once here, not in every worker
    executor: ExecutorName = "process" if workers > 1 else "serial"
    opts: RunOptions = {"fresh": fresh, "executor": executor, "workers": workers}
    result.summaries["sweep"] = run_sweep(config.sweep(models), out / "sweep", **opts)
    opts |= {"executor": "serial", "workers": 1}
    if "grounding" in runs:
        cfg = config.grounding(model)
        result.summaries["grounding"] = run_grounding(cfg, out / "grounding", **opts)
    if "probe" in runs:
        sensor = next(p.role for p in parts if p.name == "probe") == SENSOR_ROLE
        cfg_p = config.probe(model, sensor=sensor)
        result.summaries["probe"] = run_probe(cfg_p, out / "probe", **opts)
    for name, summary in result.summaries.items():
        say(f"{name}: {summary.units} units executed, {summary.ok} ok, {summary.failed} failed")
    stale = {n for n, s in result.summaries.items() if s.units or not (out / n / REPORT).is_file()}
    write_card(model, out, config, parts, stale)
    return result


def write_card(
    model: str, out: Path, config: CardConfig, parts: list[Part], stale: set[str]
) -> CardJSON:
    """Read the card's runs, (re)write the full reports of the ``stale`` parts (their runs
    changed, or they have none yet), then ``card.json`` and ``card.html``; returns
    card.json's content."""
    from clearsight.grounding import analyse_grounding, render_grounding_report
    from clearsight.probe import build_probe_report
    from clearsight.report.sweep import write_sweep_report
    from clearsight.sweep.analysis import analyse_sweep

    n_boot, seed = config.n_boot, config.seed
    analysis = analyse_sweep(out / "sweep", n_boot=n_boot, seed=seed)
    numbers: dict[str, list[Number]] = sweep_numbers(analysis)
    numbers = {model: numbers.get(model, []), **{m: v for m, v in numbers.items() if m != model}}
    if "sweep" in stale:
        write_sweep_report(analysis, out / "sweep", thumbnails=False)
    reports = {"sweep": f"sweep/{REPORT}"}
    tgs: list[Number] = []
    costs: dict[str, pd.DataFrame | None] = {"sweep": analysis.cost}
    if (out / "grounding").is_dir():
        grounding = analyse_grounding(out / "grounding", n_boot=n_boot, seed=seed)
        if "grounding" in stale:
            render_grounding_report(grounding, out / "grounding")
        tgs = grounding_numbers(grounding)
        costs["grounding"] = grounding.cost
        reports["grounding"] = f"grounding/{REPORT}"
    probe: list[Number] = []
    if (out / "probe").is_dir():
        probe = probe_numbers(read_probe_frame(out / "probe"), n_boot, seed)
        costs["probe"] = run_cost(out / "probe", spec_model("sensor"))
        if "probe" in stale:
            build_probe_report(out / "probe")
        reports["probe"] = f"probe/{REPORT}"
    numbers[model] = [*numbers[model], *tgs, *probe]
    cost = card_cost(costs)
    card: CardJSON = {
        "card_version": CARD_VERSION,
        "model": model,
        "manifest_hash": manifest_hash(model, out, config),
        "config": config.model_dump(mode="json"),
        "roles": {m: _role(m, model) for m in numbers},
        "numbers": {m: numbers_json(v) for m, v in numbers.items()},
        "cost": cost_json(cost),
        "parts": [p.to_json() for p in parts],
        "reports": reports,
    }
    letter = next((w for w in config.wordings if not w.startswith("verbal.")), config.wordings[0])
    figures = [
        ("accuracy against visibility", sweep_figure(analysis.curves, letter, analysis.data.arms)),
        ("trajectory grounding (TGS)", bars_figure(tgs, "TGS with 95 % intervals")),
        ("probe", bars_figure(probe, "probe accuracy and cross-run ECE")),
    ]
    write_atomic(out / CARD_JSON, json.dumps(card, indent=1, allow_nan=False) + "\n")
    write_atomic(out / CARD_HTML, render_card(card, numbers, parts, figures, cost))
    return card


def manifest_hash(model: str, out: Path, config: CardConfig) -> str:
    """content_hash of the card's configuration, its model and each part run's config hash."""
    from clearsight.seeding import content_hash
    from clearsight.store import RunStore

    runs = {}
    for part in ("sweep", "grounding", "probe"):
        if (out / part).is_dir():
            with RunStore.open(out / part, read_only=True) as store:
                runs[part] = store.manifest().get("config_hash")
    return content_hash({"model": model, "config": config.model_dump(mode="json"), "runs": runs})


def load_card(card_dir: Path) -> CardJSON:
    """A card directory's card.json: an InputError when it has none, it is not UTF-8 JSON
    (UTF-16, binary) or it is not a card of this version with every field a board reads
    (:func:`_card_problem`)."""
    from clearsight.validate import InputError

    path = Path(card_dir) / CARD_JSON
    try:
        card = json.loads(path.read_bytes().decode("utf-8"))
    except FileNotFoundError:
        raise InputError(
            f"{card_dir} holds no {CARD_JSON}: run `clearsight card MODEL --out {card_dir}` first"
        ) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"cannot read {path}: not UTF-8 JSON ({exc.reason})") from None
    except (OSError, json.JSONDecodeError, RecursionError) as exc:
        raise InputError(f"cannot read {path}: {exc}") from exc
    problem = _card_problem(card)
    if problem is not None:
        raise InputError(f"{path} is not a clearsight card of version {CARD_VERSION}: {problem}")
    return cast("CardJSON", card)


@functools.cache
def _card_fields() -> dict[str, type]:
    """The fields of card.json and the JSON type each holds, read from :class:`CardJSON`."""
    hints = typing.get_type_hints(CardJSON)
    return {name: typing.get_origin(hint) or hint for name, hint in hints.items()}


def _card_problem(card: object) -> str | None:
    """Why ``card`` (card.json's value) is no card a board can read, or None: its version,
    every field of :class:`CardJSON` of its type, the model's numbers each a
    :class:`~clearsight.card.numbers.NumberJSON`, the bootstrap's ``n_boot`` and ``seed``."""
    from clearsight.validate import short_repr

    if not isinstance(card, dict):
        return f"it holds {type(card).__name__}, not an object"
    if card.get("card_version") != CARD_VERSION:
        return f"its card_version is {short_repr(card.get('card_version'))}"
    for name, kind in _card_fields().items():
        if not isinstance(card.get(name), kind):
            return f"its {name!r} is missing or not a {kind.__name__}"
    numbers = card["numbers"].get(card["model"])
    if not isinstance(numbers, dict) or not all(map(_is_number, numbers.values())):
        return f"its numbers of {short_repr(card['model'])} are missing or malformed"
    if not all(isinstance(card["config"].get(k), int) for k in ("n_boot", "seed")):
        return "its config lacks the integers n_boot and seed"
    return None


def _is_number(value: object) -> bool:
    """Whether ``value`` is a :class:`~clearsight.card.numbers.NumberJSON`."""
    if not isinstance(value, dict) or not isinstance(value.get("key"), str):
        return False
    bounds = [value.get(k, "") for k in ("estimate", "low", "high")]
    return (
        all(v is None or (isinstance(v, int | float) and not isinstance(v, bool)) for v in bounds)
        and isinstance(value.get("text"), str)
        and isinstance(value.get("bound", ""), str)
        and isinstance(value.get("n", 0), int)
    )
