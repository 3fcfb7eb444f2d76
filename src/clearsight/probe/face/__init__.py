"""The probe after its run: :data:`PROBE_FACE`, what its report, ``clearsight verify``, the card
and export ask of a probe run — and of a benchmark build's stage 1, reported as the probe (its
sensor samples are the report's Fig. 2) (:class:`~clearsight.faces.face.ProtocolFace`).

* **report**: :func:`clearsight.probe.page.report.build_probe_report`, runs with another sensor or K
  beside it, written into the run's directory.
* **verify**: the direct answers (the sensor answering the question itself, one sample; kind
  ``probe``) rebuilt from their stored form and kept only where the rebuilt item's key is the
  stored one, stratified over sensors, datasets and runs, answered by the probe's own unit
  (:func:`clearsight.probe.unit.run_probe_unit`) with the sensor swapped for the model asked,
  its random stream still the item's (its key). Conversations (a reasoner and K sensor samples
  a turn) are not re-asked: their turns depend on every earlier reply. Read-outs derived again:
  a direct answer's letter parsed again from the sensor's text
  (:func:`~clearsight.probe.reasoner.parsing.parse_letter`), a conversation's commit from its
  last turn's text (:func:`~clearsight.probe.reasoner.parsing.parse_action`), then the summary
  (:meth:`~clearsight.probe.transcript.Transcript.readouts`). Earlier turns' queries are not
  parsed again: each was answered by the sensor as it was parsed then.
* **card** (:mod:`clearsight.probe.face.card`): accuracy and cross-run ECE with
  question-bootstrap intervals (:func:`~clearsight.probe.analysis.probe_intervals`); in a card
  run, the card's questions asked of an image model as the sensor answering directly (once it
  answered one free question about an image), or of a text-only model as the reasoner asking
  the card's sensor.
* **rows**: one per finished conversation, with its item's ``key``.
* **shown**: a direct answer's image as its sensor saw it
  (:func:`~clearsight.probe.instances.instance_image` of its stored instance).
* **serve**: a person playing the blind reasoner
  (:class:`~clearsight.probe.play.session.HumanPlay`, ``clearsight serve``); a stored
  conversation, turn by turn, on the operator's record page
  (:func:`~clearsight.probe.play.views.record_conversation`); an unfinished person's session
  withheld from the browser (:func:`~clearsight.probe.play.views.withheld`).
* **view**: :class:`clearsight.probe.view.ProbeRunView` (``clearsight view``: an operator's
  tool, with the images; never part of the human-play server).
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import JsonValue

from clearsight.faces.card_run import CardRun
from clearsight.faces.face import ProtocolFace, ReportRequest, Row, frame_rows
from clearsight.faces.serving import Serving
from clearsight.faces.verifying import ItemLabels, Reaskable, no_context, rebuilt, text_at
from clearsight.models.base import Capabilities
from clearsight.probe.face.card import card_plan, card_run, card_section, probe_numbers
from clearsight.specs import Spec
from clearsight.store import Record

if TYPE_CHECKING:
    from clearsight.faces.serving import ServeSettings, SessionHost
    from clearsight.faces.viewing import RunView
    from clearsight.pages.output import ReportPaths
    from clearsight.probe.transcript import Transcript

__all__ = ["PROBE_FACE", "direct_of", "probe_numbers"]


def _report(request: ReportRequest) -> ReportPaths:
    from clearsight.probe.page.report import build_probe_report

    request.in_place("probe")
    return build_probe_report(request.run_dir, request.others, request.appendix)


# ----------------------------------------------------------------------------------- verify


def _direct(spec: Mapping[str, object]) -> bool:
    return spec.get("strategy") == "direct" and "instance" in spec


def _stratum(spec: Mapping[str, object]) -> tuple[object, ...]:
    return (spec.get("sensor"), text_at(spec, "instance", "dataset"), spec.get("run"))


def direct_of(stored: Mapping[str, Any]) -> Spec:
    """A probe's direct answer from its stored form."""
    from clearsight.probe.instances import Instance
    from clearsight.probe.specs import DirectSpec

    return DirectSpec(
        instance=Instance.from_json(stored["instance"]),
        sensor=stored["sensor"],
        sensor_options=dict(stored.get("sensor_options") or {}),
        sensor_max_new_tokens=stored["sensor_max_new_tokens"],
        temperature=stored["temperature"],
        seed=stored["seed"],
        prompt=stored["prompt"],
        run=stored["run"],
    )


def _typed(config: Mapping[str, Any], stored: Mapping[str, Mapping[str, Any]]) -> dict[str, Spec]:
    return rebuilt(direct_of, stored)


def _answer(
    items: Sequence[Any], model: str, options: Mapping[str, JsonValue], context: None
) -> list[Record]:
    """Each direct answer by the probe's own unit, the sensor swapped for ``model``; the
    item's key kept (its records' key and the seed of its random stream)."""
    from clearsight.probe.plan import ProbeUnit
    from clearsight.probe.unit import run_probe_unit

    records = []
    for item in items:
        asked = replace(item, sensor=model, sensor_options=dict(options))
        asked.__dict__["key"] = item.key  # the cached key: the item's, not the swapped spec's
        records += run_probe_unit(ProbeUnit(asked))
    return records


def _labels(spec: Mapping[str, object]) -> ItemLabels:
    """A direct answer's sensor, instance and strategy."""
    return ItemLabels(
        model=text_at(spec, "sensor"),
        scene=text_at(spec, "instance", "id"),
        condition=text_at(spec, "strategy"),
        level_m=None,
        wording=None,
    )


def _generates(item: Any) -> Capabilities:
    return Capabilities(generate=True)


def _view(readouts: Mapping[str, object]) -> Mapping[str, object]:
    return {"answer": readouts.get("committed")}


def _derive(spec: Mapping[str, Any], raw: Any, stored: Mapping[str, Any]) -> Mapping[str, Any]:
    from clearsight.probe.instances import Instance
    from clearsight.probe.transcript import Transcript

    transcript = Transcript.from_json(raw)
    if "instance" in spec and transcript.turns:
        letters = Instance.from_json(spec["instance"]).letters
        transcript = _committed_again(transcript, letters)
    return dict(transcript.readouts())


def _committed_again(t: Transcript, letters: tuple[str, ...]) -> Transcript:
    """``t`` with the letter of its last turn parsed again from the text it was parsed from
    (a direct answer: the sensor's; a conversation's: the reasoner's last turn)."""
    from clearsight.probe.reasoner.parsing import parse_action, parse_letter

    last = t.turns[-1]
    failed = last.reply is not None and last.reply.error is not None
    if t.strategy == "direct":
        if failed:
            return t
        letter = parse_letter(last.raw, letters, t.options)
        last = replace(last, commit=letter, note="" if letter else "unparsed")
        stop = "committed" if letter else "unparsed"
    else:
        if not last.raw or t.stop not in ("committed", "budget"):
            return t
        action = parse_action(last.raw, letters, t.options)
        letter = action.letter if action.kind == "commit" else None
        last = replace(last, commit=letter)
        stop = "committed" if letter else t.stop
    return replace(t, turns=(*t.turns[:-1], last)).finish(letter, stop)


# ------------------------------------------------------------------------- export and serving


def _rows(run_dir: Path, keys: Collection[str] | None = None) -> Iterator[Row]:
    from clearsight.probe.results import load_probe_results

    return frame_rows(load_probe_results(run_dir).transcripts, keys)


def _shown(run_dir: Path, stored: Mapping[str, Mapping[str, Any]]) -> dict[str, bytes]:
    """Each stored item's instance image (what its sensor saw) as PNG by key."""
    from clearsight.faces.sample import png_bytes
    from clearsight.probe.instances import Instance, instance_image

    return {
        key: png_bytes(instance_image(Instance.from_json(spec["instance"])))
        for key, spec in stored.items()
        if "instance" in spec
    }


def _sessions(run_dir: Path, settings: ServeSettings) -> SessionHost:
    from clearsight.probe.play.session import HumanPlay

    return HumanPlay(run_dir, settings)


def _conversation(record: Mapping[str, object]) -> object | None:
    from clearsight.probe.play.views import record_conversation

    return record_conversation(record)


def _withheld(record: Mapping[str, object]) -> str | None:
    from clearsight.probe.play.views import withheld

    return withheld(record)


def _run_view(run_dir: Path) -> RunView:
    from clearsight.probe.view import ProbeRunView

    return ProbeRunView(run_dir)


#: The probe's face after its run (see the module docstring).
PROBE_FACE = ProtocolFace(
    "probe",
    report=_report,
    reask=Reaskable(
        "probe",
        _stratum,
        _typed,
        _generates,
        _answer,
        no_context,
        eligible=_direct,
        view=_view,
        model_field="sensor",
        labels=_labels,
    ),
    derive={"probe": _derive},
    card=card_section,
    card_run=CardRun(card_plan, card_run),
    rows=_rows,
    shown=_shown,
    serve=Serving(_sessions, _conversation, _withheld),
    view=_run_view,
)
