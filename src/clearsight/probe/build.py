"""The benchmark builder: the paper's two-stage filter (section 3.2, METHODS.md section 6).

* **Stage 1** (:func:`build_stage1`): for each question and sensor, draw 11 direct answers to
  the multiple-choice question (one request with ``n = 11`` where the backend supports it),
  count ``c`` = answers naming the gold option, keep ``1 <= c <= 5``: the sensor is sometimes
  right but unreliable. Every question's samples, parsed letters and ``c`` are stored as a
  record (protocol ``probe.build``) so the filter is recomputable; ``c`` also feeds the
  accuracy-by-consistency analysis (Fig. 2).
* **Stage 2** (:func:`build_stage2`): keep the stage-1 questions that at least one blind person
  solved through the same interface (``clearsight serve`` sessions, stored as transcripts with
  reasoner ``human:<name>``).

Both stages write the kept instances as JSONL in :meth:`Instance.to_json` form, which
``clearsight probe run --dataset jsonl --instances FILE`` reads back.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from clearsight.probe.instances import Instance
from clearsight.probe.reasoner import fill_prompt, parse_letter, prompts
from clearsight.probe.sensor import Sensor
from clearsight.probe.transcript import load_transcripts
from clearsight.seeding import content_hash, derive_seed
from clearsight.store import Record, RunStore
from clearsight.validate import InputError

BUILD_PROTOCOL: Final = "probe.build"
SAMPLES: Final = 11
KEEP: Final = (1, 5)


class BuildConfig(BaseModel):
    """A benchmark build (``clearsight build``): which questions, which stage, and what the
    stage filters them with. Where the kept questions (and stage 1's samples) go is the
    command's, not the configuration's."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    stage: Literal[1, 2] = Field(1, description="1: sensor consistency filter; 2: human-solved.")
    instances: str = Field("bundled", description="bundled, a JSONL file or a dataset directory.")
    dataset: str = Field("bundled", description="Loader name, or jsonl.")
    instance_ids: tuple[str, ...] | None = Field(
        None, description="Only these instance ids (default: all)."
    )
    sensor: str = Field("perceiver", description="Sensor model (stage 1).")
    samples: int = Field(SAMPLES, ge=1, description="Direct samples per question (stage 1).")
    sessions: tuple[Path, ...] = Field(
        (), description="Run directories with human sessions (stage 2)."
    )


@dataclass(frozen=True)
class Stage1Result:
    """One question's direct answers from one sensor and whether it is kept."""

    instance: Instance
    sensor: str
    samples: tuple[str, ...]
    letters: tuple[str | None, ...]
    c: int
    kept: bool


def consistency_count(letters: Sequence[str | None], gold: str) -> int:
    """c: how many direct answers name the gold option."""
    return sum(letter == gold for letter in letters)


def build_stage1(
    instances: Sequence[Instance],
    sensor: Sensor,
    *,
    samples: int = SAMPLES,
    keep: tuple[int, int] = KEEP,
    seed: int = 0,
    store: RunStore | None = None,
    progress: bool = True,
) -> list[Stage1Result]:
    """Stage 1 for every instance (see the module docstring); with ``store``, each result is
    a record and questions already stored are not asked again."""
    from tqdm import tqdm

    lo, hi = keep
    if not 0 <= lo <= hi <= samples:
        raise InputError(f"keep range {keep} must lie within 0..{samples}")
    template = prompts()["common"]["direct"]
    done: dict[str, Any] = {}
    keys = {}
    for inst in instances:
        spec = {
            "instance": inst.to_json(),
            "sensor": sensor.name,
            "sensor_options": sensor.options,
            "samples": samples,
            "temperature": sensor.temperature,
            "prompt": content_hash(template),
            "seed": seed,
        }
        keys[inst.id] = (content_hash([BUILD_PROTOCOL, spec]), spec)
    if store is not None:
        store.add_items((k, BUILD_PROTOCOL, s) for k, s in keys.values())
        wanted = {k for k, _ in keys.values()}
        done = {r.key: r.raw for r in store.iter_records("ok") if r.key in wanted}
    out = []
    for inst in tqdm(instances, desc="build stage 1", disable=not progress):
        key, _ = keys[inst.id]
        started = time.perf_counter()
        if key in done:
            texts = tuple(done[key]["samples"])
        else:
            prompt = fill_prompt(template, inst, 1, 1)
            texts, _ = sensor.sample(inst, prompt, samples, derive_seed(key), max_new_tokens=8)
        letters = tuple(parse_letter(t, inst.letters, inst.options) for t in texts)
        c = consistency_count(letters, inst.gold)
        result = Stage1Result(inst, sensor.name, texts, letters, c, lo <= c <= hi)
        out.append(result)
        if store is not None and key not in done:
            raw = {"samples": list(texts)}
            readouts = {"letters": list(letters), "c": c, "kept": result.kept, "id": inst.id}
            store.write_records(
                [Record(key, "ok", None, raw, readouts, time.perf_counter() - started)]
            )
    return out


def build_stage2(instances: Iterable[Instance], runs: Sequence[Path]) -> list[Instance]:
    """The instances at least one person (reasoner ``human:<name>``) solved in the given run
    directories."""
    solved = {
        t.instance_id
        for run in runs
        for t in load_transcripts(run)
        if t.reasoner.startswith("human:") and t.correct
    }
    return [i for i in instances if i.id in solved]


def write_instances(instances: Iterable[Instance], path: Path) -> Path:
    """Instances as JSONL (one :meth:`Instance.to_json` per line)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(i.to_json(), ensure_ascii=False) + "\n" for i in instances))
    return path
