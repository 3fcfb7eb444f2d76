"""Self-distillation (Table 2) on the tiny offline Llama: which trajectories are chosen, the SFT
masking, LoRA training lowering the loss, the adapter's manifest, saving and loading."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from clearsight.models.hf import ADAPTER_MANIFEST
from clearsight.probe.distill.analysis import adapter_bases, distill_table
from clearsight.probe.distill.sft import IGNORE, sft_example, successful_trajectories
from clearsight.probe.instances import Instance
from clearsight.probe.records import store_transcript
from clearsight.probe.sensor import SensorReply
from clearsight.probe.transcript import Transcript, Turn
from clearsight.seeding import content_hash
from clearsight.store import RunStore
from clearsight.validate import InputError

pytest.importorskip("peft")

QUESTIONS = [
    ("t/car", "What colour is the car?", ("blue", "red"), "B", "red"),
    ("t/sky", "What is the sky like?", ("clear", "cloudy"), "A", "clear and blue"),
    ("t/dog", "What animal is on the porch?", ("cat", "dog"), "B", "a dog"),
    ("t/cup", "How many cups are there?", ("one", "two"), "A", "one cup"),
]


def _conversation(
    reasoner: str, qid: int, *, strategy: str = "bp", commit: str | None = None, run: int = 0
) -> Transcript:
    """A two-turn conversation: one query answered (u shown 2 of 3), then a commit."""
    iid, question, options, gold, reply = QUESTIONS[qid]
    inst = Instance(iid, "", question, options, gold, "test", "colour")
    t = Transcript.start(inst, reasoner=reasoner, strategy=strategy, sensor="s", k=3, run=run)
    answer = SensorReply("Describe it.", (reply, reply, "no idea"), 0, reply, 2, 3, judge="exact")
    query_raw = f'I should look first. My question is: "Describe the {iid[2:]}."'
    t = t.with_turn(Turn(1, query_raw, query=f"Describe the {iid[2:]}.", reply=answer, shown_u=2))
    letter = commit or gold
    return t.with_turn(Turn(2, f"It says {reply}. The answer is: ({letter})", commit=letter))


def _run(tmp_path: Path, reasoner: str) -> Path:
    """A probe run: four successful BP conversations of ``reasoner``, and ones not to learn
    from (a wrong one, a ReAct one, another reasoner's)."""
    run = tmp_path / "run"
    with RunStore.open(run) as store:
        for qid in range(4):
            store_transcript(store, _conversation(reasoner, qid))
        store_transcript(store, _conversation(reasoner, 0, commit="A", run=1))  # wrong
        store_transcript(store, _conversation(reasoner, 1, strategy="react"))
        store_transcript(store, _conversation("hf:other", 2))
    return run


def test_only_successful_bp_conversations_of_one_reasoner(tmp_path: Path) -> None:
    run = _run(tmp_path, "hf:mine")
    with pytest.raises(InputError, match="hf:mine, hf:other"):
        successful_trajectories(run)  # two hf reasoners: say which
    name, chosen = successful_trajectories(run, "hf:mine")
    assert name == "hf:mine"
    assert [t.instance_id for _, t in chosen] == ["t/car", "t/sky", "t/dog", "t/cup"]
    assert all(t.correct and t.strategy == "bp" for _, t in chosen)
    assert len(successful_trajectories(run, "hf:other")[1]) == 1
    with pytest.raises(InputError, match="no successful react"):
        successful_trajectories(run, "hf:other", "react")


@pytest.fixture(scope="module")
def tiny(tiny_llama_path: Path):  # type: ignore[no-untyped-def]
    from clearsight.models.hf import make_hf

    return make_hf(str(tiny_llama_path), {"device": "cpu", "dtype": "float32"})


def _segments(labels: tuple[int, ...]) -> list[list[int]]:
    """The runs of consecutive labelled tokens."""
    out: list[list[int]] = []
    previous = IGNORE
    for label in labels:
        if label != IGNORE:
            if previous == IGNORE:
                out.append([])
            out[-1].append(label)
        previous = label
    return out


def test_sft_example_labels_only_the_reasoners_turns(tiny, tiny_llama_path: Path) -> None:  # type: ignore[no-untyped-def]
    t = _conversation(f"hf:{tiny_llama_path}", 0)
    example = sft_example(tiny, "k", t, max_tokens=4096)
    assert len(example.input_ids) == len(example.labels)
    assert all(
        label in (IGNORE, token)
        for token, label in zip(example.input_ids, example.labels, strict=True)
    )
    decoded = [tiny.tokenizer.decode(seg) for seg in _segments(example.labels)]
    # each of the reasoner's two turns, closed by its end-of-turn token; nothing else
    assert [d.strip() for d in decoded] == [f"{turn.raw}<|im_end|>" for turn in t.turns]
    text = tiny.tokenizer.decode(example.input_ids)
    assert "What colour is the car?" in text  # the question is context, not a target
    assert "red (consistency 2/3)" in text  # the reply with the u the reasoner was shown
    assert example.labelled == sum(len(s) for s in _segments(example.labels))
    cut = sft_example(tiny, "k", t, max_tokens=40)
    assert cut.input_ids == example.input_ids[:40]


def test_distill_lowers_the_loss_and_saves_a_loadable_adapter(
    tiny,  # type: ignore[no-untyped-def]
    tiny_llama_path: Path,
    tmp_path: Path,
) -> None:
    import torch
    from typer.testing import CliRunner

    from clearsight.cli import app
    from clearsight.models.hf import make_hf

    reasoner = f"hf:{tiny_llama_path}"
    run = _run(tmp_path, reasoner)
    out = tmp_path / "adapter"
    args = ["probe", "distill", str(run), "--out", str(out), "--reasoner", reasoner]
    args += ["--datasets", "test", "--held-out", "1"]  # every instance of the test set
    flags = ["--epochs", "3", "--rank", "4", "--alpha", "8", "--learning-rate", "0.01"]
    result = CliRunner().invoke(app, [*args, *flags, "--validation", "0.25", "--seed", "1"])
    assert result.exit_code == 0, result.output
    assert "chosen epoch" in result.output
    assert (out / "adapter_model.safetensors").is_file()
    manifest = json.loads((out / ADAPTER_MANIFEST).read_text())
    assert manifest["base"] == reasoner
    assert manifest["seed"] == 1
    assert (manifest["trajectories"], len(manifest["train"]), len(manifest["validation"])) == (
        4,
        3,
        1,
    )
    assert manifest["config"]["rank"] == 4
    assert manifest["config"]["alpha"] == 8
    history = manifest["history"]
    assert [row["epoch"] for row in history] == [1, 2, 3]
    # a few LoRA steps lower the loss on the training conversations
    assert history[-1]["train_loss"] < manifest["before"]["train_loss"] - 0.1
    val = [row["val_loss"] for row in history]
    assert manifest["chosen_epoch"] == 1 + int(np.argmin(val))
    assert manifest["chosen_by"] == "lowest validation loss"
    # the data hash is the hash of the examples rebuilt from the run
    _, chosen = successful_trajectories(run, reasoner)
    rebuilt = [sft_example(tiny, k, t, 1024) for k, t in chosen]
    assert manifest["data_hash"] == content_hash([[e.input_ids, e.labels] for e in rebuilt])
    # hf:<adapter> loads the base with the adapter merged: other logits than the base's
    adapted = make_hf(str(out), {"device": "cpu", "dtype": "float32"})
    assert adapted.name == f"hf:{out}"
    ids = torch.tensor([rebuilt[0].input_ids])
    with torch.no_grad():
        base_logits = tiny.model(input_ids=ids).logits
        new_logits = adapted.model(input_ids=ids).logits
    assert float((base_logits - new_logits).abs().max()) > 1e-3
    # the adapter lowers the loss of its training conversations against the base
    train_keys = {row["key"] for row in manifest["train"]}
    train = [e for e in rebuilt if e.key in train_keys]

    def loss(model: object) -> float:
        with torch.no_grad():
            return float(
                np.mean(
                    [
                        float(
                            model(  # type: ignore[operator]
                                input_ids=torch.tensor([e.input_ids]),
                                labels=torch.tensor([e.labels]),
                            ).loss
                        )
                        for e in train
                    ]
                )
            )

    chosen_row = history[manifest["chosen_epoch"] - 1]
    assert loss(adapted.model) == pytest.approx(chosen_row["train_loss"], abs=1e-3)
    assert loss(tiny.model) == pytest.approx(manifest["before"]["train_loss"], abs=1e-3)
    # an adapter is not overwritten, and nothing to learn from is an error
    again = CliRunner().invoke(app, [*args, *flags])
    assert again.exit_code == 2
    assert "already holds an adapter" in again.output
    assert adapter_bases([f"hf:{out}", reasoner, "scripted:x"]) == {f"hf:{out}": reasoner}
    none = CliRunner().invoke(app, [*args[:4], str(tmp_path / "b"), "--reasoner", "hf:nobody"])
    assert none.exit_code == 2
    assert "no successful bp conversation of hf:nobody" in none.output


def test_table_2_puts_each_adapter_beside_its_base() -> None:
    rows = [
        ("hf:base", "bp", "seedbench", True),
        ("hf:base", "bp", "seedbench", False),
        ("hf:base", "bp", "cvqa", False),
        ("hf:sft", "bp", "seedbench", True),
        ("hf:sft", "bp", "cvqa", True),
        ("hf:sft", "react", "cvqa", False),  # not BP
        ("hf:other", "bp", "cvqa", True),  # neither the adapter nor its base
    ]
    frame = pd.DataFrame(rows, columns=["reasoner", "strategy", "dataset", "correct"])
    table = distill_table(frame, {"hf:sft": "hf:base"}).set_index("reasoner")
    assert list(table.index) == ["hf:base", "hf:sft"]
    assert table.loc["hf:sft", "distilled from"] == "hf:base"
    assert table.loc["hf:base", "distilled from"] == ""
    assert table.loc["hf:base", "seedbench"] == pytest.approx(50.0)
    assert table.loc["hf:sft", "cvqa"] == pytest.approx(100.0)
    assert table.loc["hf:sft", "conversations"] == 2
    assert distill_table(frame, {}).empty
    assert distill_table(frame, {"hf:absent": "hf:base"}).empty
