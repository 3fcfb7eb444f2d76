"""VLM Direct, the baseline: no reasoner, the sensor answers the multiple-choice question itself.

One sample (one VLM call) per run, at the run's temperature, of the direct question
(``common.direct`` of ``prompts/strategies.yaml``: the question, the lettered options, "answer with
the letter"); the letter is read forgivingly
(:func:`~clearsight.probe.reasoner.parsing.parse_letter`) and a reply naming no option ends the
conversation ``unparsed``. Build stage 1 asks the same question (:func:`direct_question`) eleven
times per sensor.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

import numpy as np
from pydantic import JsonValue

from clearsight.probe.instances import Instance
from clearsight.probe.reasoner.parsing import parse_letter
from clearsight.probe.reasoner.prompts import fill_prompt, prompts
from clearsight.probe.sensor import Sensor, SensorReply
from clearsight.probe.transcript import Transcript, Turn
from clearsight.seeding import content_hash


@dataclass(frozen=True)
class Direct:
    """The VLM-direct strategy (see the module docstring): no reasoner, nothing searched."""

    name: str = "direct"
    reasoned: bool = False
    searches: bool = False

    def prompt_hash(self) -> str:
        """Content hash of the direct question's text."""
        return content_hash(prompts()["common"]["direct"])


#: VLM Direct.
DIRECT: Final = Direct()


def direct_question(instance: Instance) -> str:
    """The multiple-choice question as the sensor is asked it directly."""
    return fill_prompt(prompts()["common"]["direct"], instance, 1, 1)


def run_direct(
    instance: Instance,
    sensor: Sensor,
    *,
    rng: np.random.Generator,
    run: int = 0,
    meta: Mapping[str, JsonValue] | None = None,
) -> Transcript:
    """VLM Direct: the sensor answers the multiple-choice question itself, one sample (one VLM
    call) per run; the letter is parsed from its text. A missing image is an InputError, not a
    reply; a failed call ends the conversation ``error``."""
    prompt = direct_question(instance)
    transcript = Transcript.start(
        instance,
        reasoner="vlm",
        strategy=DIRECT.name,
        sensor=sensor.name,
        run=run,
        k=1,
        budget=1,
        signal="none",
        meta=meta,
    )
    seed = int(rng.integers(0, 2**31 - 1))
    sensor.image(instance)
    sensed = sensor.repaired
    try:
        (text,), calls = sensor.sample(instance, prompt, 1, seed, max_new_tokens=8)
    except Exception as exc:
        reply = SensorReply(prompt, (), -1, "", 0, 1, error=f"{type(exc).__name__}: {exc}")
        turn = Turn(1, "", query=prompt, reply=reply, note="sensor failed")
        return transcript.with_turn(turn).finish(None, "error")
    reply = SensorReply(prompt, (text,), 0, text, 1, 1, judge="none", same=(True,), calls=calls)
    letter = parse_letter(text, instance.letters, instance.options)
    turn = Turn(
        1, text, query=prompt, reply=reply, commit=letter, note="" if letter else "unparsed"
    )
    out = transcript.with_turn(turn).with_repaired(0, sensor.repaired - sensed)
    return out if letter is not None else out.finish(None, "unparsed")
