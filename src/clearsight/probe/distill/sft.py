"""Self-distillation's training data: a reasoner's successful trajectories as masked token ids.

The paper's §4.3 (:mod:`clearsight.probe.distill.train` trains on them). From a probe run, the
finished conversations of one ``hf`` reasoner with one strategy (the paper: ``bp``) that committed
the gold option (:func:`successful_trajectories`), shown the true u (the ablation's none and random
u are another population: clearsight's reading of the paper's "BP traces") and from the held-out
split of the chosen datasets (:func:`in_held_out_split`; the paper's: "a held-out SeedBench split").
Each becomes one chat, exactly as the reasoner read it
(:func:`~clearsight.probe.reasoner.loop.conversation_messages`: the strategy's system prompt, the
question, every earlier turn and the sensor's replies with the u it was shown), ending with its
committing turn. :func:`balance_sensors` takes as many from each sensor (the paper's balance across
its two sensors; the distillation's default). The chat is rendered with the model's own chat
template (the backend's renderer, so training and inference see the same text) and tokenised once;
only the reasoner's own turns — each turn's text and the end-of-turn token after it — carry labels,
everything else is masked (:data:`IGNORE`) (:func:`sft_example`). A conversation longer than
``max_tokens`` is cut there.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from clearsight.probe.records import iter_transcripts
from clearsight.probe.transcript import Transcript
from clearsight.seeding import content_hash
from clearsight.store import RunStore
from clearsight.validate import InputError

if TYPE_CHECKING:
    from clearsight.models.base import Message
    from clearsight.models.hf_backend import HfBackend

#: The label of a token outside the loss (PyTorch's cross-entropy ``ignore_index``).
IGNORE = -100


@dataclass(frozen=True)
class SftExample:
    """One conversation as training data: token ids, labels (``IGNORE`` outside the
    reasoner's turns) and where it came from."""

    key: str
    instance_id: str
    input_ids: tuple[int, ...]
    labels: tuple[int, ...]

    @property
    def labelled(self) -> int:
        """Tokens in the loss."""
        return sum(label != IGNORE for label in self.labels)


def in_held_out_split(instance_id: str, share: float, seed: int) -> bool:
    """Whether an instance belongs to the held-out distillation split: the number in [0, 1)
    read from the content hash of ``seed`` and its id is below ``share``. Each instance's
    membership depends on nothing else (not the run's order, nor which other instances it
    holds), so the split is the same in every run and on every machine."""
    draw = int(content_hash(["distill split", seed, instance_id])[:13], 16) / 16**13
    return draw < share


def distillation_set(
    signal: str, datasets: Sequence[str], held_out: float, seed: int
) -> tuple[Callable[[Transcript], bool], str]:
    """Which conversations may train (beside being successful): those shown ``signal``, of
    instances of ``datasets`` in the held-out split (:func:`in_held_out_split`); and that rule
    in words, for the error that finds none."""

    def keep(t: Transcript) -> bool:
        return (
            t.signal == signal
            and t.dataset in datasets
            and in_held_out_split(t.instance_id, held_out, seed)
        )

    words = (
        f" with {signal} u in the held-out split ({held_out:g}) of {', '.join(datasets)} "
        "(--datasets, --held-out)"
    )
    return keep, words


def successful_trajectories(
    run_dir: Path | str,
    reasoner: str | None = None,
    strategy: str = "bp",
    keep: Callable[[Transcript], bool] | None = None,
    kept: str = "",
) -> tuple[str, list[tuple[str, Transcript]]]:
    """``(reasoner, [(key, transcript)])``: the finished conversations of ``reasoner`` with
    ``strategy`` in the run that committed the gold option (and pass ``keep``, the
    distillation set's filter that ``kept`` describes), in store order. Without a reasoner,
    the run's only ``hf`` reasoner that has any (InputError when none or several)."""
    with RunStore.open(run_dir, read_only=True) as store:
        good = [
            (key, t)
            for key, t in iter_transcripts(store)
            if t.strategy == strategy
            and t.correct
            and t.stop == "committed"
            and (keep is None or keep(t))
        ]
    names = sorted({t.reasoner for _, t in good if t.reasoner.startswith("hf:")})
    if reasoner is None:
        if len(names) != 1:
            found = ", ".join(names) or "none"
            raise InputError(
                f"name the reasoner to distill (--reasoner): the run's hf reasoners with "
                f"successful {strategy} conversations{kept} are {found}"
            )
        reasoner = names[0]
    chosen = [(key, t) for key, t in good if t.reasoner == reasoner]
    if not chosen:
        raise InputError(f"the run has no successful {strategy} conversation of {reasoner}{kept}")
    return reasoner, chosen


def balance_sensors(
    chosen: Sequence[tuple[str, Transcript]], limit: int | None = None
) -> list[tuple[str, Transcript]]:
    """As many trajectories from each sensor (the paper's 1,800 were balanced across its two
    sensors): ``n = min over sensors of their count`` (with ``limit``, at most
    ``limit // sensors``), the first n of each sensor in store order, the store order kept.
    InputError when the limit leaves none per sensor."""
    by_sensor = Counter(t.sensor for _, t in chosen)
    if not by_sensor:
        return []
    per = min(by_sensor.values())
    if limit is not None:
        per = min(per, limit // len(by_sensor))
    if per < 1:
        raise InputError(
            f"--limit {limit} leaves no trajectory for each of the {len(by_sensor)} sensors "
            f"({', '.join(sorted(by_sensor))}); raise it or turn balancing off"
        )
    taken: Counter[str] = Counter()
    out = []
    for key, t in chosen:
        if taken[t.sensor] < per:
            taken[t.sensor] += 1
            out.append((key, t))
    return out


def _chat(transcript: Transcript) -> list[Message]:
    """The chat the reasoner read, ending with its own committing turn."""
    from clearsight.models.base import Message, TextPart
    from clearsight.probe.instances import Instance
    from clearsight.probe.reasoner.loop import LoopSettings, conversation_messages

    instance = Instance(
        transcript.instance_id,
        "",
        transcript.question,
        transcript.options,
        transcript.gold,
        transcript.dataset,
        transcript.category,
    )
    settings = LoopSettings(
        transcript.strategy,
        budget=transcript.budget,
        signal=transcript.signal,  # type: ignore[arg-type]
    )
    *before, last = transcript.turns
    messages = conversation_messages(instance, before, settings, transcript.k)
    return [*messages, Message("assistant", (TextPart(last.raw),))]


def sft_example(
    backend: HfBackend, key: str, transcript: Transcript, max_tokens: int
) -> SftExample:
    """The transcript as token ids with labels on the reasoner's turns only (see the module
    docstring); InputError when the chat template does not render the conversation's
    prefixes as prefixes of the whole (then turns cannot be told apart)."""
    from clearsight.models.base import Message

    messages = _chat(transcript)
    render = backend.inputs.render
    # the whole chat: the last assistant turn closed by the template (a user turn follows)
    full = render([*messages, Message.user("(end)")])
    spans = []
    for i, message in enumerate(messages):
        if message.role != "assistant":
            continue
        start, upto = len(render(messages[:i])), render(messages[: i + 1])
        if not full.startswith(upto):
            raise InputError(
                f"{backend.name}: the chat template does not render a conversation's turns as "
                "prefixes of the whole; cannot mask them for training"
            )
        spans.append((start, len(upto)))
    enc = backend.tokenizer(full, add_special_tokens=False, return_offsets_mapping=True)
    ids, offsets = list(enc["input_ids"]), list(enc["offset_mapping"])
    labels = [IGNORE] * len(ids)
    for start, end in spans:
        for j, (a, _) in enumerate(offsets):
            if start <= a < end:
                labels[j] = ids[j]
            elif a >= end:  # the turn's end-of-turn token is the reasoner's to emit too
                if ids[j] in backend.eos_ids:
                    labels[j] = ids[j]
                    break
                if full[end:a].strip():
                    break
    last = max((j for j, label in enumerate(labels) if label != IGNORE), default=-1) + 1
    cut = min(last, max_tokens)
    return SftExample(key, transcript.instance_id, tuple(ids[:cut]), tuple(labels[:cut]))
