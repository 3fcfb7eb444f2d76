"""``run_card``: run a card's parts for one model, then write ``card.html`` and ``card.json``.

A card directory holds one run per protocol part (``sweep/``, ``grounding/``, ``probe/``: each
registered protocol whose face declares a :class:`~clearsight.faces.card_run.CardRun`, named as
its face), each run by its protocol's card run through :func:`clearsight.driver.run`, so a card
resumes like
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
from typing import TYPE_CHECKING, cast

from clearsight.card.numbers import CardJSON, card_cost, cost_json, numbers_json
from clearsight.card.page import render_card
from clearsight.card.parts import plan_parts
from clearsight.faces import card_runs, face_of
from clearsight.faces.card import CardSection, Number
from clearsight.faces.card_run import CardConfig, Part
from clearsight.pages.output import write_atomic
from clearsight.report import appendix
from clearsight.store import DB_NAME, run_manifest, run_protocol

if TYPE_CHECKING:
    from clearsight.driver import RunOptions, RunSummary
    from clearsight.execute import ExecutorName

#: Version of card.json's layout (bump when keys change).
CARD_VERSION = 1
CARD_JSON = "card.json"
CARD_HTML = "card.html"
#: The full report each part's run directory holds.
REPORT = "report.html"


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


def _roles(model: str, models: list[str], parts: list[Part]) -> dict[str, str]:
    """What each model of the card's numbers is there as: the card's model, or the role of the
    anchor part that names it (``anchor <model>``)."""
    anchors = {
        p.name.removeprefix("anchor "): p.role for p in parts if p.name.startswith("anchor ")
    }
    return {m: "card model" if m == model else anchors.get(m, "anchor") for m in models}


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
    write the card; ``say`` reports each step (what ran, what was skipped). Each protocol's
    card run runs where its own part runs, into the directory named as its face."""
    config = config or CardConfig()
    out = Path(out)
    parts = plan_parts(model, config)
    result = CardResult(out, parts)
    runs = {p.name for p in parts if p.runs}
    for part in parts:
        say(f"{part.name}: {'runs as ' + part.role if part.runs else 'skipped: ' + part.note}")
    executor: ExecutorName = "process" if workers > 1 else "serial"
    opts: RunOptions = {"fresh": fresh, "executor": executor, "workers": workers}
    for name, card_run in card_runs():
        if name in runs:
            result.summaries[name] = card_run.run(model, config, parts, out / name, opts)
    for name, summary in result.summaries.items():
        say(f"{name}: {summary.units} units executed, {summary.ok} ok, {summary.failed} failed")
    stale = {n for n, s in result.summaries.items() if s.units or not (out / n / REPORT).is_file()}
    write_card(model, out, config, parts, stale)
    return result


def write_card(
    model: str, out: Path, config: CardConfig, parts: list[Part], stale: set[str]
) -> CardJSON:
    """Read the card's runs, each through its protocol's face (its card section), (re)write the
    full reports of the ``stale`` parts (their runs changed, or they have none yet), then
    ``card.json`` and ``card.html``; returns card.json's content."""
    sections = {part: card_section(out / part, config.n_boot, config.seed) for part in runs(out)}
    numbers: dict[str, list[Number]] = {model: []}
    for part, section in sections.items():
        for name, found in section.by_model.items():
            numbers.setdefault(name, []).extend(found)
        numbers[model].extend(section.numbers)
        if part in stale and section.write_report is not None:
            section.write_report(appendix(out / part))
    cost = card_cost({part: section.cost for part, section in sections.items()})
    card: CardJSON = {
        "card_version": CARD_VERSION,
        "model": model,
        "manifest_hash": manifest_hash(model, out, config),
        "config": config.model_dump(mode="json"),
        "roles": _roles(model, list(numbers), parts),
        "numbers": {m: numbers_json(v) for m, v in numbers.items()},
        "cost": cost_json(cost),
        "parts": [p.to_json() for p in parts],
        "reports": {part: f"{part}/{REPORT}" for part in sections},
    }
    figures = [(section.title, section.figure) for section in sections.values()]
    write_atomic(out / CARD_JSON, json.dumps(card, indent=1, allow_nan=False) + "\n")
    write_atomic(out / CARD_HTML, render_card(card, numbers, parts, figures, cost))
    return card


def runs(out: Path) -> list[str]:
    """The card's runs in page order: those of the registry's card runs (:func:`card_runs`)
    the card directory holds, then any other run directory in it (a run of another protocol
    added to the card), by name."""
    known = [name for name, _ in card_runs()]
    others = sorted(
        d.name for d in out.iterdir() if (d / DB_NAME).is_file() and d.name not in known
    )
    return [*(part for part in known if (out / part).is_dir()), *others]


def card_section(run_dir: Path, n_boot: int, seed: int) -> CardSection:
    """The card section of the run in ``run_dir``, from its protocol's face."""
    face = face_of(run_protocol(run_dir))
    return face.need(face.card, "card section")(run_dir, n_boot, seed)


def manifest_hash(model: str, out: Path, config: CardConfig) -> str:
    """content_hash of the card's configuration, its model and each part run's config hash."""
    from clearsight.seeding import content_hash

    hashes = {part: run_manifest(out / part).get("config_hash") for part in runs(out)}
    return content_hash({"model": model, "config": config.model_dump(mode="json"), "runs": hashes})


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
