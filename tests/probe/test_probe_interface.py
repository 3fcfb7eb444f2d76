"""The probe interface: instances, the sensor and its judges, transcripts in the run store."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from clearsight.models.base import Capabilities, Request, Response
from clearsight.models.scripted import ScriptedBackend
from clearsight.probe.instances import Instance, bundled_instances, instance_image
from clearsight.probe.judges import (
    ExactJudge,
    calibrate_threshold,
    consistency,
    make_judge,
    parse_yes_no,
)
from clearsight.probe.records import load_transcripts, store_transcript, transcript_spec
from clearsight.probe.sensor import Sensor, SensorReply
from clearsight.probe.sources.layouts import row_instance, split_options
from clearsight.probe.sources.load import load_instances
from clearsight.probe.transcript import Transcript, Turn
from clearsight.store import RunStore
from clearsight.validate import InputError


def _inst(**kw: object) -> Instance:
    base: dict[str, object] = {
        "id": "t/1",
        "image": "bundled:skimage-coffee",
        "question": "What drink is in the cup?",
        "options": ("tea", "coffee"),
        "gold": "B",
        "dataset": "bundled",
        "category": "identity",
    }
    base.update(kw)
    return Instance(**base)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------ instances


def test_bundled_instances_cover_the_four_categories() -> None:
    items = bundled_instances(available_only=False)
    assert len(items) >= 40
    assert {i.category for i in items} == {"counting", "colour", "position", "identity"}
    assert len({i.id for i in items}) == len(items)
    for inst in items:
        assert inst.gold in inst.letters
        assert inst.image.startswith("bundled:")


def test_instance_image_is_the_scene_photo() -> None:
    image = instance_image(_inst())
    assert image.dtype == np.uint8
    assert image.shape == (400, 600, 3)


def test_instance_without_options_is_an_input_error() -> None:
    with pytest.raises(InputError, match="no options"):
        _inst(options=())
    with pytest.raises(InputError, match="no options"):
        row_instance(
            {"index": 3, "question": "What is it?", "answer": "A", "image": "x.png"}, "mmstar"
        )
    with pytest.raises(InputError, match="gold"):
        _inst(gold="C")


def test_loaders_read_each_layout(tmp_path: Path) -> None:
    rows = {
        "seedbench": {
            "question_id": "7",
            "question": "How many?",
            "choice_a": "1",
            "choice_b": "2",
            "choice_c": "3",
            "choice_d": "4",
            "answer": "C",
            "image": "a.png",
            "question_type_id": 5,
        },
        "figureqa": {
            "question_id": 2,
            "question_string": "Is Red the minimum?",
            "answer": 0,
            "image": "b.png",
        },
        "mmstar": {
            "index": 9,
            "question": "Which one? Options: A: cat, B: dog, C: cow",
            "answer": "B",
            "image": "c.png",
            "category": "coarse perception",
        },
        "cvqa": {
            "ID": "m1",
            "Question": "Name?",
            "Options": ["w", "x", "y", "z"],
            "Label": 2,
            "image": "d.png",
            "Category": "Buildings",
        },
        "reasonvqa": {
            "id": "r1",
            "question": "Who?",
            "choices": ["p", "q"],
            "answer": "q",
            "image": "e.png",
        },
    }
    golds = {"seedbench": "C", "figureqa": "B", "mmstar": "B", "cvqa": "C", "reasonvqa": "B"}
    for name, row in rows.items():
        path = tmp_path / f"{name}.jsonl"
        path.write_text(json.dumps(row) + "\n")
        (inst,) = load_instances(path, name)
        assert inst.gold == golds[name], name
        assert inst.dataset == name
        assert Path(inst.image).parent == tmp_path
    mm = load_instances(tmp_path / "mmstar.jsonl", "mmstar")[0]
    assert mm.options == ("cat", "dog", "cow")
    assert mm.question == "Which one?"
    assert split_options("Pick. Options: A: x, B: y")[1] == ("x", "y")


def test_parquet_directory_with_embedded_image(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    import pyarrow as pa  # type: ignore[import-untyped]
    import pyarrow.parquet as pq  # type: ignore[import-untyped]
    from PIL import Image

    monkeypatch.setenv("CLEARSIGHT_CACHE", str(tmp_path / "cache"))
    buf = io.BytesIO()
    Image.fromarray(np.full((8, 9, 3), 200, np.uint8)).save(buf, format="PNG")
    table = pa.table(
        {
            "ID": ["a"],
            "Question": ["Q?"],
            "Options": [["x", "y"]],
            "Label": [1],
            "image": [{"bytes": buf.getvalue(), "path": None}],
        }
    )
    (tmp_path / "ds").mkdir()
    pq.write_table(table, tmp_path / "ds" / "test-00000.parquet")
    (inst,) = load_instances(tmp_path / "ds", "cvqa")
    assert inst.gold == "B"
    assert instance_image(inst).shape == (8, 9, 3)


# ------------------------------------------------------------------------------ judges


def test_consistency_counts_the_reply_itself() -> None:
    u, same = consistency(ExactJudge(), "red", ["red", "Red.", "blue", "red", "green"])
    assert u == 3
    assert same == (True, True, False, True, False)


def test_calibrate_threshold_separates_labels() -> None:
    t = calibrate_threshold([0.9, 0.8, 0.3, 0.2, 0.7], [True, True, False, False, True])
    assert 0.3 < t < 0.7
    with pytest.raises(InputError):
        calibrate_threshold([0.5], [True])


def test_parse_yes_no() -> None:
    assert parse_yes_no(" Yes, they match.") is True
    assert parse_yes_no("No.") is False
    assert parse_yes_no("maybe") is None


class _YesNoBackend:
    """Says Yes exactly when both answers mention the same colour word."""

    name = "fake-judge"
    capabilities = Capabilities(generate=True)

    def complete(self, requests: Sequence[Request]) -> list[Response]:
        out = []
        for r in requests:
            text = r.messages[0].text
            a = text.split("Answer 1:")[1].split("\n")[0]
            b = text.split("Answer 2:")[1].split("\n")[0]
            colours = {"red", "blue"}
            same = {w for w in colours if w in a} == {w for w in colours if w in b}
            out.append(Response(texts=("Yes" if same else "No",)))
        return out


def test_llm_judge_asks_pairwise() -> None:
    from clearsight.probe.judges import LLMJudge

    judge = LLMJudge(_YesNoBackend())
    assert judge.equivalent([("a red car", "it is red"), ("red", "blue")]) == [True, False]
    assert judge.name == "llm:fake-judge"
    with pytest.raises(InputError):
        make_judge("nonsense")


# ------------------------------------------------------------------------------ sensor


def _scripted(*samples: Sequence[str]) -> ScriptedBackend:
    return ScriptedBackend([Response(texts=tuple(s)) for s in samples])


def test_sensor_one_call_with_n_and_uniform_index() -> None:
    backend = _scripted(["red", "red", "blue", "red", "green"])
    sensor = Sensor(backend, k=5, judge=ExactJudge())
    assert sensor.one_call
    reply = sensor.ask(_inst(), "What colour is it?", np.random.default_rng(3))
    rng = np.random.default_rng(3)
    rng.integers(0, 2**31 - 1)
    assert reply.index == int(rng.integers(0, 5))
    assert reply.reply == reply.samples[reply.index]
    assert reply.u == sum(s == reply.reply for s in reply.samples)
    assert reply.calls == 1
    assert reply.k == 5
    assert reply.error is None
    assert reply.same[reply.index]


def test_sensor_without_n_makes_k_requests() -> None:
    class OneAtATime(ScriptedBackend):
        capabilities = Capabilities(images=True, generate=True)

    backend = OneAtATime([Response(texts=(t,)) for t in ["a", "b", "a"]])
    reply = Sensor(backend, k=3, judge=ExactJudge()).ask(_inst(), "q", np.random.default_rng(0))
    assert reply.calls == 3
    assert reply.samples == ("a", "b", "a")


def test_sensor_error_is_a_reply_not_an_exception() -> None:
    backend = _scripted()  # no output left: the backend raises
    reply = Sensor(backend, k=5, judge=ExactJudge()).ask(_inst(), "q", np.random.default_rng(0))
    assert reply.error is not None
    assert reply.samples == ()
    assert reply.u == 0
    assert "failed" in reply.shown()


def test_sensor_reply_json_round_trip() -> None:
    reply = SensorReply("q", ("a", "b"), 1, "b", 1, 2, None, "exact", (False, True), 1, 0.5)
    assert SensorReply.from_json(json.loads(json.dumps(reply.to_json()))) == reply
    assert reply.shown() == "b (1/2)"


# ------------------------------------------------------------------------------ transcripts


def _transcript(run: int = 0) -> Transcript:
    inst = _inst()
    t = Transcript.start(inst, reasoner="human:ann", strategy="human", sensor="scripted", run=run)
    reply = SensorReply(
        "what drink?",
        ("coffee", "tea"),
        0,
        "coffee",
        1,
        2,
        judge="exact",
        same=(True, False),
        calls=1,
    )
    t = t.with_turn(Turn(1, "what drink?", query="what drink?", reply=reply, shown_u=1))
    return t.with_turn(Turn(2, "The answer is: (B)", commit="B"))


def test_transcript_round_trip_and_outcome() -> None:
    t = _transcript()
    assert t.stop == "committed"
    assert t.committed == "B"
    assert t.correct
    assert t.rounds == 2
    assert t.queries == 1
    assert t.vlm_calls == 2
    assert Transcript.from_json(json.loads(json.dumps(t.to_json()))) == t
    with pytest.raises(InputError):
        t.finish("Z", "committed")
    with pytest.raises(InputError):
        t.finish(None, "whatever")


def test_transcripts_in_the_store(tmp_path: Path) -> None:
    done = _transcript()
    partial = Transcript.start(_inst(), reasoner="human:bo", strategy="human", sensor="s")
    with RunStore.open(tmp_path / "run") as store:
        store.begin_run({"config": {"protocol": "probe"}})
        key = store_transcript(store, done)
        key2 = store_transcript(store, partial, finished=False)
        assert store.counts() == {"items": 2, "ok": 1, "failed": 1, "pending": 1}
        assert store_transcript(store, done) == key  # same spec, same key
        finished = partial.with_turn(Turn(1, "(A)", commit="A"))
        assert store_transcript(store, finished, transcript_spec(partial)) == key2
    loaded = load_transcripts(tmp_path / "run")
    assert loaded == [done, finished]
    assert not loaded[1].correct


def test_embedding_judge_is_calibrated_and_recomputes_u() -> None:
    pytest.importorskip("transformers")
    from clearsight.probe.judges import EmbeddingJudge, labelled_pairs

    judge = EmbeddingJudge()
    pairs = labelled_pairs()
    sims = judge.similarity([(p.a, p.b) for p in pairs])
    same = np.array([p.same for p in pairs])
    accuracy = float(((sims >= judge.threshold) == same).mean())
    assert accuracy >= 0.65  # better than the 0.5 of a constant verdict on balanced pairs
    assert same.mean() == 0.5
    assert judge.name == f"embedding@{judge.threshold:.4f}"
    backend = _scripted(["a red car", "A red car.", "a blue bus", "the car is red", "red car"])
    reply = Sensor(backend, k=5, judge=judge).ask(_inst(), "colour?", np.random.default_rng(1))
    again = make_judge(reply.judge)  # the stored judge name rebuilds the same judge
    assert consistency(again, reply.reply, reply.samples, reply.query) == (reply.u, reply.same)


@pytest.mark.slow
def test_a_process_loads_smollm2_once_for_reasoner_sensor_and_judge() -> None:
    """The default probe run's three users of SmolLM2 (the reasoner, the perceiver sensor's LLM
    and an LLM judge) share one loaded model per process instead of loading it each."""
    from clearsight.models import shared_backend
    from clearsight.perceiver import PerceiverBackend
    from clearsight.probe.judges import LLMJudge

    reasoner = shared_backend("hf:smollm2-135m")
    sensor = Sensor("perceiver:llm", judge="llm:hf:smollm2-135m")
    perceiver = sensor.backend
    assert isinstance(perceiver, PerceiverBackend)
    assert perceiver.llm is reasoner
    judge = sensor.judge
    assert isinstance(judge, LLMJudge)
    assert judge.backend is reasoner


# ----------------------------------------------- one loader rule for local copies (issue 48)


def test_a_local_copy_with_a_repeated_id_is_refused_before_any_image(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows 1 and 2 under one id: refused naming both rows, and neither row's embedded image
    is cached (the first row's was, before the refusal)."""
    import pyarrow as pa  # type: ignore[import-untyped]
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    cache = tmp_path / "cache"
    monkeypatch.setenv("CLEARSIGHT_CACHE", str(cache))
    table = pa.table(
        {
            "ID": ["a", "a"],
            "Question": ["Q?", "Other?"],
            "Options": [["x", "y"], ["u", "v"]],
            "Label": [1, 0],
            "image": [{"bytes": b"one", "path": None}, {"bytes": b"two", "path": None}],
        }
    )
    pq.write_table(table, tmp_path / "rows.parquet")
    with pytest.raises(InputError) as err:
        load_instances(tmp_path / "rows.parquet", "cvqa")
    assert str(err.value) == (
        f"duplicate instance id 'cvqa/a': given in {tmp_path / 'rows.parquet'} row 1 and again "
        f"in {tmp_path / 'rows.parquet'} row 2 (ids must be unique)"
    )
    assert not cache.exists()


@pytest.mark.parametrize("how", ["dotdot", "symlink", "absolute"])
def test_an_image_path_leaving_a_local_copy_is_refused(tmp_path: Path, how: str) -> None:
    """A dataset's rows name images inside their folder: ``..``, an absolute path elsewhere or
    a symbolic link out is refused with the row (clearsight's own rows, what ``probe build``
    writes, may name absolute paths; their relative ones stay inside too)."""
    from clearsight.probe.sources.load import instances_from_jsonl

    secret = tmp_path / "secret.png"
    secret.write_bytes(b"x")
    folder = tmp_path / "copy"
    folder.mkdir()
    (folder / "link.png").symlink_to(secret)
    escape = {"dotdot": "../secret.png", "symlink": "link.png", "absolute": str(secret)}[how]
    row = {"id": "q1", "question": "Which?", "options": ["a", "b"], "answer": "A"}
    (folder / "rows.jsonl").write_text(json.dumps({**row, "image": escape}) + "\n")
    with pytest.raises(InputError, match=r"mmstar row q1: its image .* leaves "):
        load_instances(folder / "rows.jsonl", "mmstar")
    own = {**row, "gold": "A", "image": escape}
    (folder / "own.jsonl").write_text(json.dumps(own) + "\n")
    if how == "absolute":
        (inst,) = instances_from_jsonl(folder / "own.jsonl")
        assert inst.image == str(secret)
    else:
        with pytest.raises(InputError, match=r"instance q1: its image .* leaves "):
            instances_from_jsonl(folder / "own.jsonl")
    (folder / "rows.jsonl").write_text(json.dumps({**row, "image": "sub/in.png"}) + "\n")
    (inst,) = load_instances(folder / "rows.jsonl", "mmstar")
    assert inst.image == str(folder / "sub" / "in.png")
