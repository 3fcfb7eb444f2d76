"""An item is the unit of failure: a reply that cannot be read, a unit that raises, or a record
the store cannot encode fails only its own items (exit 3), the run's other items are kept, and
a rerun retries the failed ones. Real sweeps through the command line on a scripted model."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import clearsight.models.registry
from clearsight.cli import app
from clearsight.driver import EXIT_FAILED_ITEMS
from clearsight.store import Record, RunStore, load_run

runner = CliRunner()
SCENE = "skimage-chelsea"
#: clean, the eight fog levels and blank: ten questions, asked in this order
N_ITEMS = 10
GOOD = {"candidate_probs": {"A": 0.7, "B": 0.1, "C": 0.1}}


def _script(path: Path, replies: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in replies))
    return path


def _sweep(model: Path, out: Path, wording: str = "mcq.reason") -> Any:
    """One scene, fog, identification, in one wording: ten questions to ``model``."""
    args = ["sweep", "--scene-ids", SCENE, "--arms", "fog", "--tasks", "identify"]
    args += ["--controls", "clean,blank", "--wordings", wording, "--workers", "1"]
    return runner.invoke(app, [*args, "--model", f"scripted:{model}", "--out", str(out)])


def _questions(run: Path) -> Any:
    frame = load_run(run)
    return frame[frame.protocol == "sweep"]


@pytest.fixture(autouse=True)
def _fresh_backends(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each command loads its scripted model afresh (the process keeps loaded models)."""
    monkeypatch.setattr(clearsight.models.registry, "_SHARED", {})


def test_a_probability_just_below_zero_fails_its_item_and_a_rerun_finishes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = {"candidate_probs": {"A": 0.7, "B": -1e-9, "C": 0.1}}
    model = _script(tmp_path / "m.jsonl", [GOOD] * 5 + [bad] + [GOOD] * 4)
    run = tmp_path / "run"
    result = _sweep(model, run)
    assert result.exit_code == EXIT_FAILED_ITEMS, result.output
    assert "10 records written, 1 failed" in result.output  # 9 answers and the depth profile
    frame = _questions(run)
    assert len(frame) == N_ITEMS
    failed = frame[frame.status == "failed"]
    assert len(failed) == 1
    assert "candidate_probs['B'] = -1e-09 is not a probability in [0, 1]" in failed.error.iloc[0]
    assert (frame[frame.status == "ok"].answer == "A").all()

    _script(model, [GOOD])  # the model fixed: only the failed item is asked again
    monkeypatch.setattr(clearsight.models.registry, "_SHARED", {})
    again = _sweep(model, run)
    assert again.exit_code == 0, again.output
    assert "1 records written, 0 failed" in again.output
    frame = _questions(run)
    assert (frame.status == "ok").all()
    assert len(frame) == N_ITEMS


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ({"candidate_probs": [0.7, 0.1, 0.1]}, "candidate_probs is [0.7, 0.1, 0.1], not a mapping"),
        (
            {"candidate_probs": {"A": math.nan, "B": 0.1}},
            "candidate_probs['A'] = nan is not finite",
        ),
        ({"candidate_probs": {"A": 1.5}}, "candidate_probs['A'] = 1.5 is not a probability"),
        ({"candidate_probs": {"A": math.inf}}, "candidate_probs['A'] = inf is not finite"),
        ({"candidate_probs": {"Z": 0.5}}, "candidate_probs names 'Z', not a candidate"),
        ({"candidate_probs": {"A": "0.5"}}, "candidate_probs['A'] is '0.5', not a number"),
    ],
    ids=["list", "nan", "above-1", "inf", "unoffered", "string"],
)
def test_a_reply_that_cannot_be_read_fails_alone(
    tmp_path: Path, reply: dict[str, Any], reason: str
) -> None:
    model = _script(tmp_path / "m.jsonl", [GOOD] * 3 + [reply] + [GOOD] * 6)
    result = _sweep(model, tmp_path / "run")
    assert result.exit_code == EXIT_FAILED_ITEMS, result.output
    frame = _questions(tmp_path / "run")
    assert (frame.status == "ok").sum() == N_ITEMS - 1
    (error,) = frame[frame.status == "failed"].error
    assert error.startswith("UnreadableReplyError: ")
    assert reason in error


def test_nan_probabilities_are_never_stored_as_an_answer(tmp_path: Path) -> None:
    nan = {"candidate_probs": {letter: math.nan for letter in "ABCDE"}}
    model = _script(tmp_path / "m.jsonl", [nan] * N_ITEMS)
    result = _sweep(model, tmp_path / "run")
    assert result.exit_code == EXIT_FAILED_ITEMS, result.output
    frame = _questions(tmp_path / "run")
    assert (frame.status == "failed").all()
    assert frame.error.str.contains("is not finite").all()


def test_a_reply_cut_inside_a_surrogate_pair_is_stored_repaired_and_said(tmp_path: Path) -> None:
    from clearsight.models.replies import REPLACED_SURROGATES

    cut = {"texts": ["Answer: A\nConfidence: 80 \ud83d"]}
    model = _script(tmp_path / "m.jsonl", [cut] * N_ITEMS)
    result = _sweep(model, tmp_path / "run", wording="verbal.plain")
    assert result.exit_code == 0, result.output
    with RunStore.open(tmp_path / "run", read_only=True) as store:
        records = list(store.iter_records("ok", kind="sweep"))
    assert len(records) == N_ITEMS
    for record in records:
        assert record.raw["texts"] == ["Answer: A\nConfidence: 80 \ufffd"]
        assert record.raw["extra"][REPLACED_SURROGATES] == ["texts[0]"]
        assert record.readouts["answer"] == "A"
        assert record.readouts["verbal_conf"] == pytest.approx(0.8, abs=1e-12)


def test_a_record_the_store_cannot_encode_fails_alone(tmp_path: Path) -> None:
    from clearsight.execute import write_or_fail
    from clearsight.sweep.config import SweepConfig
    from clearsight.sweep.plan import plan_sweep

    cfg = SweepConfig(scene_ids=(SCENE,), arms=("fog",), controls=("clean",))
    items = plan_sweep(cfg).questions[:3]
    keys = [item.key for item in items]
    with RunStore.open(tmp_path / "run") as store:
        store.add_items(items)
        records = [
            Record(keys[0], "ok", None, {"texts": ["fine"]}, {"answer": "A"}, 0.1),
            Record(keys[1], "ok", None, {"texts": ["cut \ud83d"]}, {"answer": "A"}, 0.1),
            Record(keys[2], "ok", None, {"extra": {1, 2}}, {"answer": "B"}, 0.1),
        ]
        stored = write_or_fail(store, records)
        assert [r.status for r in stored] == ["ok", "failed", "failed"]
        errors = [str(r.error) for r in stored[1:]]
        assert all(e.startswith("the record could not be stored: ") for e in errors)
        assert "UnicodeEncodeError" in errors[0]
        assert "not JSON-able" in errors[1]
        assert store.counts() == {"items": 3, "ok": 1, "failed": 2, "pending": 2}


def test_a_unit_that_raises_fails_its_items_and_the_run_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import clearsight.sweep.unit as unit
    from clearsight.sweep import SweepConfig, run_sweep

    def broken(item: Any, reply: Any, elapsed: float) -> Record:
        raise RuntimeError("a bug in a read-out")

    monkeypatch.setattr(unit, "item_record", broken)
    cfg = SweepConfig(
        scene_ids=(SCENE,),
        arms=("fog",),
        tasks=("identify",),
        wordings=("mcq.reason",),
        controls=("clean",),
    )
    summary = run_sweep(cfg, tmp_path / "run", progress=False)
    assert summary.exit_code == EXIT_FAILED_ITEMS
    assert summary.stages["sweep"].failed == 9
    assert summary.stages["sweep.depth"].ok == 1  # the later stage ran
    assert summary.reasons[0] == ("RuntimeError: a bug in a read-out", 9)


class _ChatServer:
    """A local OpenAI-compatible server serving model ``m``, whose every chat completion says
    ``content``."""

    def __init__(self, content: str) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # the models it serves (asked before the run)
                self._send({"object": "list", "data": [{"id": "m", "object": "model"}]})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                choices = [
                    {"index": i, "message": {"role": "assistant", "content": content}}
                    for i in range(body.get("n", 1))
                ]
                self._send({"model": "m", "choices": choices})

            def _send(self, reply: dict[str, Any]) -> None:
                payload = json.dumps(reply).encode()  # a lone surrogate escaped as \ud83d
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def model(self) -> str:
        return f"openai:http://127.0.0.1:{self.httpd.server_address[1]}/v1#m"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def test_a_server_reply_cut_inside_a_surrogate_pair_is_stored(tmp_path: Path) -> None:
    pytest.importorskip("openai")
    server = _ChatServer("Answer: B\nConfidence: 60 \ud83d")
    try:
        args = ["sweep", "--scene-ids", SCENE, "--arms", "fog", "--tasks", "identify"]
        args += ["--controls", "clean", "--wordings", "verbal.plain", "--workers", "1"]
        out = tmp_path / "run"
        result = runner.invoke(app, [*args, "--model", server.model, "--out", str(out)])
    finally:
        server.close()
    assert result.exit_code == 0, result.output
    from clearsight.models.replies import REPLACED_SURROGATES

    with RunStore.open(out, read_only=True) as store:
        records = list(store.iter_records("ok", kind="sweep"))
    assert len(records) == 9  # clean and the eight fog levels
    for record in records:
        assert record.raw["texts"] == ["Answer: B\nConfidence: 60 \ufffd"]
        assert record.raw["extra"][REPLACED_SURROGATES] == ["texts[0]"]
        assert record.readouts["verbal_conf"] == pytest.approx(0.6, abs=1e-12)


def test_a_probe_reply_cut_inside_a_surrogate_pair_is_repaired_and_said(tmp_path: Path) -> None:
    from clearsight.probe.protocol import run_probe
    from clearsight.probe.records import load_transcripts
    from fixtures.probe_runs import probe_config

    reasoner = _script(
        tmp_path / "cut.jsonl", [{"match": "Question:", "texts": ["The answer is: (B) \ud83d"]}]
    )
    sensor = _script(
        tmp_path / "cut-sensor.jsonl", [{"match": "Answer with", "texts": ["(B) \ud83d"]}]
    )
    cfg = probe_config(tmp_path, reasoners=(f"scripted:{reasoner}",), sensor=f"scripted:{sensor}")
    summary = run_probe(cfg, tmp_path / "run", progress=False)
    assert (summary.ok, summary.failed) == (8, 0)
    for t in load_transcripts(tmp_path / "run"):
        assert t.committed == "B"
        assert "\ud83d" not in t.turns[0].raw
        said = (
            {"reasoner": 0, "sensor": 1} if t.strategy == "direct" else {"reasoner": 1, "sensor": 0}
        )
        assert t.meta["replaced_surrogates"] == said
