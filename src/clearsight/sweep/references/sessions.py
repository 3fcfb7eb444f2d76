"""Human sweep sessions: a person answers the visibility sweep's questions on its images.

``clearsight serve RUN --sweep`` serves a sweep run to people: each person, by name, gets the
run's questions in their own seeded order (:mod:`clearsight.sweep.references.human`), one at a time
— the boxed image, the question with its options (the abstain option among them), a 0-100
confidence slider — and every answer is committed at once as the ``human:<name>`` record of
that question's sweep item. All state lives in the store: the next question is the first of
the person's order without a record, so a reload, a closed tab or a restarted server carries on
where the person stopped.

The person must not learn the condition, the level or the answer key from anything but the
pixels: a page names its question by an opaque token (an HMAC of the person's name and the
item key under a per-process secret), the image is rendered at request time and served as
PNG bytes from that token, and nothing the page holds (text, URLs, form fields, cookies) is
derived from the item's spec beyond its prompt and options.

:class:`HumanSweep` is the sweep's :class:`~clearsight.faces.serving.SessionHost` (made by
:func:`sweep_sessions`, the sweep face's ``serve``); its pages are
:mod:`clearsight.sweep.references.pages`.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from clearsight.faces.serving import ServeSettings, Site, SitePages
from clearsight.store import DB_NAME, RunStore
from clearsight.sweep.config import SweepConfig
from clearsight.sweep.references.human import (
    human_items,
    human_model,
    human_record,
    human_wording,
    item_png,
    session_order,
)
from clearsight.sweep.references.pages import SweepPages, SweepView
from clearsight.sweep.specs import PROTOCOL, SweepItem
from clearsight.ui.serving import serving_lock
from clearsight.validate import InputError, invalid_options

__all__ = ["HumanSweep", "sweep_sessions"]


@dataclass(frozen=True)
class _Design:
    """What the run asks, read once: its config, the wording people answer, its questions."""

    config: SweepConfig
    wording: str
    questions: tuple[SweepItem, ...]


class HumanSweep:
    """Runs human sweep sessions in the sweep run ``run_dir`` (see the module docstring).

    ``settings.seed`` seeds each person's order and ``settings.wording`` picks the wording
    answered (default: the run's main letter wording).
    """

    title = "human sweep sessions"
    exposes = "add answers to the run"

    def __init__(self, run_dir: Path, settings: ServeSettings) -> None:
        self.run_dir = Path(run_dir)
        self.settings = settings
        self._secret = secrets.token_bytes(32)
        self._lock = threading.Lock()  # one answer at a time reaches the store
        self._design: _Design | None = None
        self._orders: dict[str, list[SweepItem]] = {}  # name -> their order (made once)
        self._shown: dict[str, tuple[str, float]] = {}  # name -> (item key, when first shown)
        self._writer: str | None = None  # why another process's run keeps sessions out

    @contextmanager
    def writing(self) -> Iterator[None]:
        """Hold the run directory's writer lock while serving (as the probe's sessions do), so
        no ``clearsight sweep`` writes the run under the people answering; when another process
        holds it, sessions are refused with its pid."""
        with serving_lock(self.run_dir, self.blocked_reason() is None) as writer:
            self._writer = writer
            yield

    def prepare(self) -> None:
        """Nothing to make: the people answer into the sweep run's own store."""

    def warm_up(self) -> None:
        """Nothing to load: a question's image is rendered when it is asked for."""

    def pages(self, site: Site) -> SitePages:
        """The start page, a person's page, its image and its answer."""
        return SweepPages(site, self)

    def design(self) -> _Design:
        """The run's questions, planned again from its stored config (no model is called);
        InputError when the run is not a sweep run or asks nothing."""
        if self._design is None:
            from clearsight.sweep.plan import plan_sweep

            if not (self.run_dir / DB_NAME).is_file():
                raise InputError(
                    f"{self.run_dir} holds no run: run `clearsight sweep` into it first, then "
                    "serve it with --sweep"
                )
            with RunStore.open(self.run_dir, read_only=True) as store:
                manifest = store.manifest()
            if manifest.get("protocol") != PROTOCOL or "config" not in manifest:
                raise InputError(
                    f"{self.run_dir} is not a sweep run (protocol "
                    f"{manifest.get('protocol')!r}): serve a sweep run directory with --sweep"
                )
            try:
                config = SweepConfig.model_validate(manifest["config"])
            except ValidationError as exc:
                raise invalid_options(exc, "the run's stored sweep config", self.run_dir) from exc
            wording = human_wording(config, self.settings.wording)
            questions = tuple(q for q in plan_sweep(config).questions if q.wording == wording)
            if not questions:
                raise InputError(f"the run asks no {wording!r} question to answer")
            self._design = _Design(config, wording, questions)
        return self._design

    def blocked_reason(self) -> str | None:
        """Why people cannot answer in this run (another process writes it, it is not a sweep
        run, it asks nothing), or None."""
        if self._writer is not None:
            return self._writer
        try:
            self.design()
        except InputError as exc:
            return str(exc)
        return None

    def order(self, name: str) -> list[SweepItem]:
        """Person ``name``'s questions in their order (:func:`session_order`; made once per
        name: the default design's 3096 items take 0.1 s)."""
        if name not in self._orders:
            design = self.design()
            items = human_items(design.questions, name, design.wording)
            self._orders[name] = session_order(items, self.settings.seed, name)
        return list(self._orders[name])

    def start(self, name: str) -> str:
        """Start or resume ``name``'s session; return the name (InputError when blocked)."""
        name = name.strip()
        human_model(name)  # the name check
        if (reason := self.blocked_reason()) is not None:
            raise InputError(reason)
        return name

    def token(self, name: str, item: SweepItem) -> str:
        """The opaque token naming ``item`` on ``name``'s page (nothing of the spec in it)."""
        message = f"{name}\0{item.key}".encode()
        return hmac.new(self._secret, message, hashlib.sha256).hexdigest()[:32]

    def _progress(self, name: str) -> tuple[int, int, SweepItem | None]:
        """(answered, total, the next question or None) of ``name``'s session."""
        order = self.order(name)
        keys = [item.key for item in order]
        with RunStore.open(self.run_dir, read_only=True) as store:
            pending = set(store.pending_keys(keys))
        current = next((item for item in order if item.key in pending), None)
        return len(order) - len(pending), len(order), current

    def view(self, name: str) -> SweepView:
        """``name``'s page: progress and the next question (its shown time noted for the
        record's elapsed time)."""
        answered, total, item = self._progress(name)
        if item is None:
            return SweepView(name, answered, total, "", "", [])
        if self._shown.get(name, ("", 0.0))[0] != item.key:
            self._shown[name] = (item.key, time.monotonic())
        q = item.question
        return SweepView(
            name,
            answered,
            total,
            self.token(name, item),
            q.prompt,
            list(zip(q.letters, q.options, strict=True)),
        )

    def _current(self, name: str, token: str) -> SweepItem | None:
        """The question ``name`` is on if ``token`` names it, else None."""
        _, _, item = self._progress(name)
        if item is None or not secrets.compare_digest(token, self.token(name, item)):
            return None
        return item

    def image(self, name: str, token: str) -> bytes | None:
        """The PNG of the question ``token`` names, if it is ``name``'s current one."""
        item = self._current(name, token)
        if item is None:
            return None
        return item_png(item, self.design().config.coco_depth_model)

    def answer(self, name: str, token: str, letter: str, confidence: str) -> bool:
        """Store ``name``'s answer to the question ``token`` names, with the slider's
        ``confidence`` (an integer 0-100); False (nothing stored) when the token is not the
        current question's (a page submitted twice, or out of date)."""
        letter = letter.strip().upper()
        try:
            percent = int(confidence)
        except ValueError:
            raise InputError(
                f"the confidence is a whole number 0-100, got {confidence!r}"
            ) from None
        if not 0 <= percent <= 100:
            raise InputError(f"the confidence is a whole number 0-100, got {percent}")
        with self._lock:
            item = self._current(name, token)
            if item is None:
                return False
            shown_key, shown_at = self._shown.get(name, ("", time.monotonic()))
            elapsed = time.monotonic() - shown_at if shown_key == item.key else 0.0
            record = human_record(item, letter, percent / 100.0, elapsed)
            with RunStore.open(self.run_dir) as store:
                store.add_items([item.row()])
                store.write_records([record])
            return True


def sweep_sessions(run_dir: Path, settings: ServeSettings) -> HumanSweep:
    """The human sweep sessions of the sweep run ``run_dir``: an InputError at once when it is
    not a sweep run or asks no question of the wording people answer."""
    sweep = HumanSweep(run_dir, settings)
    sweep.design()
    return sweep
