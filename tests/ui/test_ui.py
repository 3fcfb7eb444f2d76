"""The web UI through Starlette's TestClient: pages, escaping, path safety, human sessions."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from starlette.testclient import TestClient

from clearsight.models.base import Response
from clearsight.models.scripted import ScriptedBackend
from clearsight.probe.instances import Instance
from clearsight.probe.play.session import HumanPlay
from clearsight.probe.records import load_transcripts
from clearsight.probe.sensor import Sensor
from clearsight.seeding import rng_for
from clearsight.store import Record, RunStore
from clearsight.ui import ServeSettings
from clearsight.ui.app import PAGE_CSP, create_app
from clearsight.ui.runs import list_files, record_page, safe_file
from clearsight.validate import InputError

SCRIPT = "<script>alert(1)</script>"
ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;"
BASE = "http://127.0.0.1"


def _sweep_run(run: Path, n: int = 7) -> list[str]:
    """A run of ``n`` sweep-like records; record 2 failed, record 3 holds a script reply."""
    keys = [f"k{i:03d}" for i in range(n)]
    with RunStore.open(run) as store:
        store.begin_run({"config": {"protocol": "sweep", "note": SCRIPT}})
        store.add_items([(k, "sweep", {"scene": f"s{i}", "level": i}) for i, k in enumerate(keys)])
        records = []
        for i, key in enumerate(keys):
            text = SCRIPT if i == 3 else f"answer {i}"
            if i == 2:
                records.append(Record(key, "failed", "backend timed out", None, {}, 0.5))
            else:
                records.append(Record(key, "ok", None, {"texts": [text]}, {"letter": "A"}, 0.1))
        store.write_records(records)
    return keys


def _client(run: Path, **kwargs: object) -> TestClient:
    return TestClient(create_app(run, ServeSettings(), None, **kwargs), base_url=BASE)  # type: ignore[arg-type]


def test_browse_pages_render_counts_and_paginate(tmp_path: Path) -> None:
    run = tmp_path / "demo"
    keys = _sweep_run(run)
    client = _client(run)
    home = client.get("/")
    assert home.status_code == 200
    assert home.headers["content-security-policy"] == PAGE_CSP
    assert "<td>records ok</td><td>6</td>" in home.text
    assert "sweep</a>: 7" in home.text
    first = client.get("/records", params={"per_page": 3})
    assert first.status_code == 200
    assert "7 records · page 1 of 3" in first.text
    listed = re.findall(r'href="/records/(k\d+)"', first.text)
    assert listed == keys[:3]
    last = client.get("/records", params={"per_page": 3, "page": 3})
    assert re.findall(r'href="/records/(k\d+)"', last.text) == keys[6:]
    assert 'rel="prev"' in last.text
    assert 'rel="next"' not in last.text
    failed = client.get("/records", params={"status": "failed"})
    assert re.findall(r'href="/records/(k\d+)"', failed.text) == ["k002"]
    assert "backend timed out" in failed.text
    assert client.get("/records", params={"page": "x"}).status_code == 400
    assert client.get("/records", params={"per_page": 100000}).status_code == 400


def test_record_page_and_raw_json(tmp_path: Path) -> None:
    run = tmp_path / "demo"
    _sweep_run(run)
    client = _client(run)
    page = client.get("/records/k001")
    assert page.status_code == 200
    assert "answer 1" in page.text
    assert "&#34;level&#34;: 1" in page.text
    raw = client.get("/records/k001/raw.json")
    assert raw.headers["content-type"].startswith("application/json")
    data = raw.json()
    assert data["raw"] == {"texts": ["answer 1"]}
    assert data["spec"] == {"scene": "s1", "level": 1}
    assert data["readouts"] == {"letter": "A"}
    assert data["status"] == "ok"
    assert client.get("/records/nope").status_code == 404
    assert client.get("/records/nope/raw.json").status_code == 404


def test_model_output_is_escaped_everywhere(tmp_path: Path) -> None:
    run = tmp_path / "demo"
    _sweep_run(run)
    client = _client(run)
    for url in ("/", "/records", "/records/k003"):
        text = client.get(url).text
        assert SCRIPT not in text, url
    assert ESCAPED in client.get("/records/k003").text
    # the manifest's value (run data too) is escaped on the home page
    assert "&lt;script&gt;" in client.get("/").text


def test_no_template_marks_data_safe() -> None:
    from importlib import resources

    folder = resources.files("clearsight.ui").joinpath("templates")
    names = [p.name for p in folder.iterdir() if p.name.endswith(".html")]
    assert "session.html" in names
    for name in names:
        text = folder.joinpath(name).read_text()
        assert "|safe" not in text.replace(" ", ""), name
        assert "autoescape false" not in text, name


def test_report_files_served_and_everything_else_refused(tmp_path: Path) -> None:
    run = tmp_path / "demo"
    _sweep_run(run)
    (run / "report.html").write_text("<p>report</p>")
    (run / "sub").mkdir()
    (run / "sub" / "summary.csv").write_text("x\n1\n")
    (run / "sub" / "a.csv").write_text("instance,gold\n")
    (run / "dog.jpg").write_bytes(b"\xff\xd8\xff")
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET")
    (run / "link").symlink_to(secret)
    (run / "summary.md").symlink_to(run / "run.sqlite")  # a report name leading to the store
    client = _client(run)
    ok = client.get("/files/sub/summary.csv")
    assert ok.status_code == 200
    assert ok.text == "x\n1\n"
    report = client.get("/files/report.html")
    assert report.text == "<p>report</p>"
    assert report.headers["content-security-policy"].startswith("sandbox")
    listing = client.get("/files").text
    assert re.findall(r'href="/files/([^"]+)"', listing) == ["report.html", "sub/summary.csv"]
    for url in (
        "/files/run.sqlite",
        "/files/summary.md",
        "/files/sub/a.csv",
        "/files/dog.jpg",
        "/files/.clearsight.lock",
        "/files/%2e%2e/secret.txt",
        "/files/%2e%2e%2fsecret.txt",
        "/files/sub/%2e%2e/%2e%2e/secret.txt",
        "/files/%2E%2E%2F%2E%2E%2Fetc%2Fpasswd",
        "/files/..%2fsecret.txt",
        "/files/%2fetc%2fpasswd",
        "/files/link",
        "/files/sub",
        "/files/",
    ):
        response = client.get(url)
        assert response.status_code in (403, 404), url
        assert "TOP-SECRET" not in response.text, url
        assert "root:" not in response.text, url


def test_safe_file_resolves_inside_only(tmp_path: Path) -> None:
    run = tmp_path / "run"
    (run / "d").mkdir(parents=True)
    (run / "d" / "f.txt").write_text("f")
    (run / "d" / "report.html").write_text("f")
    (tmp_path / "report.html").write_text("o")
    assert safe_file(run, "d/report.html") == (run / "d" / "report.html").resolve()
    assert safe_file(run, "d/../d/report.html") == (run / "d" / "report.html").resolve()
    for bad in ("../report.html", "d/../../report.html", str(tmp_path / "report.html"), "d", ""):
        assert safe_file(run, bad) is None, bad
    assert safe_file(run, "d/report.html\x00") is None
    assert safe_file(run, "d/f.txt") is None  # inside, but not a report file
    assert list_files(run) == [("d/report.html", 1)]


def test_host_header_and_missing_run(tmp_path: Path) -> None:
    client = TestClient(create_app(tmp_path / "new", ServeSettings(), None), base_url=BASE)
    home = client.get("/")
    assert home.status_code == 200
    assert "No run database here yet" in home.text
    assert record_page(tmp_path / "new").total == 0
    assert not (tmp_path / "new").exists()  # browsing never creates a run
    evil = TestClient(create_app(tmp_path, ServeSettings(), None), base_url="http://evil.example")
    assert evil.get("/").status_code == 400
    assert client.get("/play").status_code == 404  # no sensor: browsing only


def test_static_assets_fixed_names_only(tmp_path: Path) -> None:
    client = _client(tmp_path)
    js = client.get("/static/app.js")
    assert js.status_code == 200
    assert js.headers["content-type"].startswith("text/javascript")
    assert client.get("/static/%2e%2e%2fapp.py").status_code == 404
    assert client.get("/static/session.py").status_code == 404


@pytest.mark.parametrize("status", ["ok", "failed"])
def test_records_filter_by_status(tmp_path: Path, status: str) -> None:
    run = tmp_path / "demo"
    _sweep_run(run)
    page = record_page(run, status=status)
    assert page.total == (6 if status == "ok" else 1)
    assert all(row["status"] == status for row in page.rows)
    assert json.loads(page.rows[0]["spec_preview"])["scene"].startswith("s")


# ------------------------------------------------------------------------------ human sessions

CAR_SAMPLES = ("red", "red", "blue", "red", "red")


def _instance(tmp_path: Path) -> Instance:
    image = tmp_path / "car.png"
    Image.fromarray(np.full((32, 48, 3), 200, np.uint8)).save(image)
    return Instance(
        id="test/car-colour",
        image=str(image),
        question="What colour is the car?",
        options=("blue", "red", "green"),
        gold="B",
        dataset="test",
        category="colour",
    )


def _sensor() -> Sensor:
    backend = ScriptedBackend(
        matched=[
            ("colour", Response(texts=CAR_SAMPLES)),
            ("script", Response(texts=(SCRIPT,) * 5)),
        ],
        name="scripted:test",
    )
    return Sensor(backend, k=5, judge="exact")


def _play_client(run: Path, tmp_path: Path, **settings: object) -> tuple[TestClient, str]:
    cfg = ServeSettings.model_validate({"sensor": "scripted:test", "judge": "exact", **settings})
    play = HumanPlay(run, cfg, instances=[_instance(tmp_path)], sensor=_sensor())
    client = TestClient(create_app(run, cfg, play), base_url=BASE, follow_redirects=False)
    page = client.get("/play")
    assert page.status_code == 200
    token = re.search(r'name="csrf-token" content="([^"]+)"', page.text)
    assert token is not None
    return client, token.group(1)


def _start(client: TestClient, token: str, name: str = "ana") -> str:
    response = client.post(
        "/play", data={"csrf": token, "name": name, "instance": "test/car-colour"}
    )
    assert response.status_code == 303, response.text
    return str(response.headers["location"]).removeprefix("/session/")


def _post(client: TestClient, token: str, key: str, action: str, **fields: str) -> int:
    return client.post(f"/session/{key}/{action}", data={"csrf": token, **fields}).status_code


def test_human_session_over_http_stores_transcript(tmp_path: Path) -> None:
    run = tmp_path / "humans"
    client, token = _play_client(run, tmp_path)
    key = _start(client, token)
    page = client.get(f"/session/{key}").text
    assert "What colour is the car?" in page
    assert "(B) red" in page
    assert "<img" not in page  # the person never sees the image
    assert _post(client, token, key, "query", query="What colour is the car?") == 303
    # stored after the turn: an unfinished session whose samples and gold stay hidden
    with RunStore.open(run, read_only=True) as store:
        (partial,) = list(store.iter_records())
    assert partial.status == "failed"
    assert partial.error == "unfinished: 1 turns so far"
    assert client.get(f"/records/{key}").status_code == 404  # no record page for the player
    # the operator's browser of the same run (another server) hides the session in progress
    operator = _client(run)
    hidden = operator.get(f"/records/{key}").text
    assert "blue" not in hidden
    assert "hidden while the session is in progress" in hidden
    assert "blue" not in operator.get(f"/records/{key}/raw.json").text
    assert "hidden while the session is in progress" in operator.get("/records").text
    assert '"gold"' not in operator.get("/records").text.replace("&#34;", '"')
    assert _post(client, token, key, "query", query="Is there a script on it?") == 303
    assert _post(client, token, key, "query", query="How big is it?") == 303  # no scripted reply
    page = client.get(f"/session/{key}").text
    assert ESCAPED in page
    assert SCRIPT not in page
    assert "the sensor failed" in page
    assert _post(client, token, key, "commit", letter="B") == 303
    (transcript,) = load_transcripts(run)
    assert transcript.reasoner == "human:ana"
    assert transcript.strategy == "human"
    assert [t.query for t in transcript.turns[:3]] == [
        "What colour is the car?",
        "Is there a script on it?",
        "How big is it?",
    ]
    assert transcript.turns[3].commit == "B"
    assert transcript.committed == "B"
    assert transcript.correct is True
    assert transcript.stop == "committed"
    assert transcript.rounds == 4
    first, second, failed = (t.reply for t in transcript.turns[:3])
    assert first is not None
    assert second is not None
    assert failed is not None
    assert first.samples == CAR_SAMPLES
    assert first.u == CAR_SAMPLES.count(first.reply)  # u counts the realised reply itself
    assert (second.reply, second.u) == (SCRIPT, 5)
    assert failed.error is not None
    assert failed.u == 0
    assert (transcript.vlm_calls, transcript.failed_calls) == (10, 5)  # the failed call apart
    page = client.get(f"/session/{key}").text
    assert f"({first.u}/5)" in page
    assert "Committed (B)" in page
    assert "correct" not in page  # the player never learns the gold or the verdict
    assert "gold" not in page
    assert 'id="ask"' not in page  # no more queries
    record_page_text = operator.get(f"/records/{key}").text
    assert "Committed (B): correct" in record_page_text  # the operator sees the verdict
    assert ESCAPED in record_page_text
    assert SCRIPT not in record_page_text
    assert _post(client, token, key, "query", query="more?") == 400


def test_session_survives_a_restart_and_resumes(tmp_path: Path) -> None:
    run = tmp_path / "humans"
    client, token = _play_client(run, tmp_path)
    key = _start(client, token)
    assert _post(client, token, key, "query", query="What colour is the car?") == 303
    # a new server process (new form token) picks the session up from the store
    client2, token2 = _play_client(run, tmp_path)
    assert _post(client2, token2, key, "commit", letter="A") == 404  # not this browser's yet
    assert _start(client2, token2) == key  # an unfinished session is resumed, not restarted
    assert _post(client2, token, key, "commit", letter="A") == 403  # the old token is stale
    assert "What colour is the car?" in client2.get(f"/session/{key}").text
    assert _post(client2, token2, key, "commit", letter="(a)") == 303
    (transcript,) = load_transcripts(run)
    assert transcript.committed == "A"
    assert transcript.correct is False
    assert transcript.rounds == 2
    again = _start(client2, token2)  # a finished session: the next run starts
    assert again != key
    with RunStore.open(run, read_only=True) as store:
        runs = sorted(r.spec["run"] for r in store.iter_records())
    assert runs == [0, 1]


def test_a_session_is_one_item_under_its_spec_and_only_its_settings_continue_it(
    tmp_path: Path,
) -> None:
    from clearsight.probe.specs import TranscriptSpec
    from clearsight.seeding import content_hash

    run = tmp_path / "humans"
    cfg = ServeSettings(sensor="scripted:test", judge="exact", seed=3)
    play = HumanPlay(run, cfg, instances=[_instance(tmp_path)], sensor=_sensor())
    key = play.start("ana", "test/car-colour")
    play.ask(key, "What colour is the car?")
    reseeded = HumanPlay(
        run, cfg.model_copy(update={"seed": 4}), instances=[_instance(tmp_path)], sensor=_sensor()
    )
    with pytest.raises(InputError, match=r"started with seed 3 \(server: 4\)"):
        reseeded.commit(key, "B")
    play.commit(key, "B")
    with RunStore.open(run, read_only=True) as store:
        (record,) = list(store.iter_records())  # every turn went to the session's one item
    spec = {
        "instance_id": "test/car-colour",
        "reasoner": "human:ana",
        "strategy": "human",
        "sensor": "scripted:test",
        "run": 0,
        "k": 5,
        "budget": 100,
        "signal": "true",
        "seed": 3,
        "judge": "exact",
    }
    assert (record.key, record.protocol, record.spec, record.status) == (key, "probe", spec, "ok")
    assert key == content_hash(["probe", spec]) == TranscriptSpec.from_json(spec).key
    assert record.readouts["rounds"] == 2


def test_budget_bad_input_and_rng_are_recorded(tmp_path: Path) -> None:
    run = tmp_path / "humans"
    client, token = _play_client(run, tmp_path, budget=2)
    key = _start(client, token, "bo")
    car = "test/car-colour"
    assert (
        client.post("/play", data={"csrf": token, "name": "x y", "instance": car}).status_code
        == 400
    )
    assert (
        client.post("/play", data={"csrf": token, "name": "bo", "instance": "no"}).status_code
        == 400
    )
    assert client.post("/play", data={"name": "bo", "instance": car}).status_code == 403  # no token
    assert _post(client, token, key, "query", query="   ") == 400
    assert _post(client, token, key, "commit", letter="Z") == 400
    assert _post(client, token, "no-such-key", "query", query="hi") == 404
    assert _post(client, token, key, "query", query="What colour is the car?") == 303
    assert "One turn left" in client.get(f"/session/{key}").text
    assert _post(client, token, key, "query", query="What colour is the car, again?") == 303
    (transcript,) = load_transcripts(run)
    assert transcript.stop == "budget"
    assert transcript.committed is None
    assert transcript.rounds == 2
    # each turn's draw is seeded from the session key and the turn index (no global state)
    indices = [t.reply.index for t in transcript.turns if t.reply is not None]
    for i, index in zip((1, 2), indices, strict=True):
        gen = rng_for("serve", key, i)
        gen.integers(0, 2**31 - 1)
        assert index == int(gen.integers(0, 5))
    assert 'stop reason: <span id="stop-reason">budget</span>' in client.get(f"/session/{key}").text


def test_play_is_blocked_in_a_sweep_run(tmp_path: Path) -> None:
    run = tmp_path / "demo"
    _sweep_run(run)
    client, token = _play_client(run, tmp_path)
    assert "human sessions are stored only in probe runs" in client.get("/play").text
    response = client.post(
        "/play", data={"csrf": token, "name": "ana", "instance": "test/car-colour"}
    )
    assert response.status_code == 400
    with RunStore.open(run, read_only=True) as store:
        assert store.counts()["items"] == 7  # nothing added to the sweep's store


def test_serve_command_checks_its_options(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from clearsight.cli import app

    runner = CliRunner()
    bad_k = runner.invoke(app, ["serve", str(tmp_path / "run"), "--k", "0"])
    assert bad_k.exit_code == 2
    assert "invalid serve options" in bad_k.output
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    not_dir = runner.invoke(app, ["serve", str(a_file)])
    assert not_dir.exit_code == 2
    assert "is not a directory" in not_dir.output
    assert not (tmp_path / "run").exists()


def test_a_sensor_that_cannot_load_is_recorded_not_fatal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "humans"
    cfg = ServeSettings(sensor=f"scripted:{tmp_path / 'missing.jsonl'}", judge="exact")
    play = HumanPlay(run, cfg, instances=[_instance(tmp_path)])
    play.warm_up()  # what serve starts in a thread: reports, does not raise
    assert "did not load yet" in capsys.readouterr().out
    key = play.start("cy", "test/car-colour")
    play.ask(key, "What colour is the car?")
    view = play.view(key)
    assert view is not None
    (turn,) = view.turns
    assert turn.error is not None
    assert "JSONL file of responses" in turn.error
    assert not view.finished  # the session goes on
    play.commit(key, "B")
    (transcript,) = load_transcripts(run)
    assert transcript.sensor_errors == 1
    assert transcript.correct is True


def test_record_page_shows_a_model_conversation(tmp_path: Path) -> None:
    from clearsight.probe.records import store_transcript
    from clearsight.probe.sensor import SensorReply
    from clearsight.probe.transcript import Transcript, Turn

    inst = _instance(tmp_path)
    reply = SensorReply("What colour?", CAR_SAMPLES, 0, "red", 4, 5, judge="exact")
    thought = "<b>I think</b> ask.\nQuery: What colour?"
    transcript = Transcript.start(inst, reasoner="hf:smollm2-135m", strategy="bp", sensor="x")
    transcript = transcript.with_turn(
        Turn(1, thought, query="What colour?", reply=reply, shown_u=2, thought="I think")
    )
    transcript = transcript.with_turn(Turn(2, "The answer is: (B)", commit="B"))
    direct = Transcript.start(inst, reasoner="vlm", strategy="direct", sensor="x", k=1, budget=1)
    one = SensorReply("Answer with a letter.", ("(C) green",), 0, "(C) green", 1, 1)
    direct = direct.with_turn(
        Turn(1, "(C) green", query="Answer with a letter.", reply=one, commit="C", shown_u=1)
    )
    run = tmp_path / "probe"
    with RunStore.open(run) as store:
        store.begin_run({"config": {"protocol": "probe"}})
        key = store_transcript(store, transcript)
        direct_key = store_transcript(store, direct)
    client = _client(run)  # browsing only: no sensor needed to read conversations
    page = client.get(f"/records/{key}").text
    assert 'Q: <span class="query">What colour?</span>' in page
    assert '<span class="reply">red</span>' in page
    assert "(4/5)" in page
    assert "shown to the reasoner: 2" in page
    assert "&lt;b&gt;I think&lt;/b&gt;" in page
    assert "<b>I think</b>" not in page
    assert "Committed (B): correct" in page
    page = client.get(f"/records/{direct_key}").text
    assert "Answer with a letter." in page  # the Direct turn shows its query and its commit
    assert "(1/1)" in page
    assert 'committed <strong class="letter">(C)</strong>' in page
    assert "Committed (C): wrong" in page


def test_a_new_run_gets_a_manifest_and_a_model_run_keeps_its_own(tmp_path: Path) -> None:
    run = tmp_path / "humans"
    cfg = ServeSettings(sensor="scripted:test", judge="exact", k=5, budget=7)
    play = HumanPlay(run, cfg, instances=[_instance(tmp_path)], sensor=_sensor())
    play.start("di", "test/car-colour")
    with RunStore.open(run, read_only=True) as store:
        manifest = store.manifest()
    assert manifest["config"]["reasoner"] == "human"
    assert manifest["config"]["budget"] == 7
    assert manifest["protocol"] == "probe"
    assert manifest["source"] == "clearsight serve"
    # a run that already has a configuration (a model probe run) keeps it
    model_run = tmp_path / "models"
    with RunStore.open(model_run) as store:
        store.begin_run({"config": {"strategies": ["bp"]}})
    HumanPlay(model_run, cfg, instances=[_instance(tmp_path)], sensor=_sensor()).start(
        "di", "test/car-colour"
    )
    with RunStore.open(model_run, read_only=True) as store:
        assert store.manifest()["config"] == {"strategies": ["bp"]}
        assert store.counts()["failed"] == 1  # the human session, in progress


def test_a_served_run_holds_the_writer_lock_and_a_written_one_is_browse_only(
    tmp_path: Path,
) -> None:
    """Serving takes the run's writer lock: a probe run started on a served directory is
    refused, and a server on a run another process writes refuses sessions with that pid."""
    import subprocess
    import sys

    from clearsight.driver import RunLocked, run_lock

    run = tmp_path / "humans"
    cfg = ServeSettings.model_validate({"sensor": "scripted:test", "judge": "exact"})
    play = HumanPlay(run, cfg, instances=[_instance(tmp_path)], sensor=_sensor())
    with play.writing():
        assert play.blocked_reason() is None
        with pytest.raises(RunLocked), run_lock(run):
            pass
    # another process holds the lock (a run writing it): sessions are refused, naming its pid
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path; from clearsight.driver import run_lock\n"
            "with run_lock(Path(sys.argv[1])):\n    print('held', flush=True); time.sleep(60)",
            str(run),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "held"
        other = HumanPlay(run, cfg, instances=[_instance(tmp_path)], sensor=_sensor())
        with other.writing():
            reason = other.blocked_reason()
            assert reason is not None
            assert f"pid {holder.pid}" in reason
            with pytest.raises(InputError, match=f"pid {holder.pid}"):
                other.start("ana", "test/car-colour")
    finally:
        holder.kill()
        holder.wait()


def test_play_goes_on_in_a_probe_run_with_analyses(tmp_path: Path) -> None:
    run = tmp_path / "probe"
    with RunStore.open(run) as store:
        store.begin_run({"config": {}, "protocol": "probe"})
        store.add_items([("b1", "probe.belief", {"transcript": "t"}), ("q1", "probe.qtype", {})])
    client, token = _play_client(run, tmp_path)
    assert "human sessions are stored only in probe runs" not in client.get("/play").text
    assert _start(client, token)


def test_browsing_a_sweep_run_keeps_no_writer_out(tmp_path: Path) -> None:
    from clearsight.driver import run_lock

    run = tmp_path / "demo"
    _sweep_run(run)
    cfg = ServeSettings.model_validate({"sensor": "scripted:test", "judge": "exact"})
    play = HumanPlay(run, cfg, instances=[_instance(tmp_path)], sensor=_sensor())
    with play.writing():
        assert play.blocked_reason() is not None  # a sweep run: browse only
        with run_lock(run):  # a sweep resuming into it is not refused
            pass


# ------------------------------------------------------------------------------ the signal shown

U_SPAN = re.compile(r'<span class="u"[^>]*>\((\d+)/5\)</span>')


@pytest.mark.parametrize("signal", ["true", "none", "random"])
def test_the_signal_a_person_is_shown_is_stored_like_a_models(tmp_path: Path, signal: str) -> None:
    run = tmp_path / "humans"
    client, token = _play_client(run, tmp_path, signal=signal)
    key = _start(client, token)
    for query in ("What colour is the car?", "Which colour is the car?"):
        assert _post(client, token, key, "query", query=query) == 303
    page = client.get(f"/session/{key}").text
    assert _post(client, token, key, "commit", letter="B") == 303
    (transcript,) = load_transcripts(run)
    assert transcript.signal == signal
    with RunStore.open(run, read_only=True) as store:
        (record,) = list(store.iter_records())
    assert record.spec["signal"] == signal
    assert record.readouts["signal"] == signal
    replies = [t for t in transcript.turns if t.reply is not None]
    true_u = [t.reply.u for t in replies if t.reply is not None]
    assert true_u == [CAR_SAMPLES.count(t.reply.reply) for t in replies if t.reply is not None]
    if signal == "true":
        expected: list[int | None] = list(true_u)
    elif signal == "none":
        expected = [None, None]
    else:  # drawn uniformly from 1..K with the generator of (session key, turn index)
        expected = [int(rng_for("serve", "signal", key, t.index).integers(1, 6)) for t in replies]
    assert [t.shown_u for t in replies] == expected
    # the person's page shows what they were shown, and never names the signal
    assert [int(u) for u in U_SPAN.findall(page)] == [u for u in expected if u is not None]
    assert "random" not in page.lower()
    assert "shown to the reasoner" not in page
    assert ('id="no-signal"' in page) == (signal == "none")
    # the operator's record page shows the true u, and the u shown where it differs
    record_page_text = _client(run).get(f"/records/{key}").text
    assert [int(u) for u in U_SPAN.findall(record_page_text)] == true_u
    differs = [u for u, t in zip(expected, true_u, strict=True) if u != t]
    shown = re.findall(r"shown to the reasoner: (\w+)", record_page_text)
    assert shown == ["none" if u is None else str(u) for u in differs]


def test_balanced_sessions_cycle_through_the_three_signals(tmp_path: Path) -> None:
    from clearsight.probe.numbers.accuracy import ablation_table
    from clearsight.probe.results import transcripts_frame

    run = tmp_path / "humans"
    cfg = ServeSettings(sensor="scripted:test", judge="exact", signal="balanced", seed=5)
    play = HumanPlay(run, cfg, instances=[_instance(tmp_path)], sensor=_sensor())
    signals = {}
    for name in ("ana", "bo"):
        for _ in range(4):
            key = play.start(name, "test/car-colour")
            play.ask(key, "What colour is the car?")
            play.commit(key, "B")
        runs = [t for t in load_transcripts(run) if t.reasoner == f"human:{name}"]
        signals[name] = [t.signal for t in runs]
        assert sorted(signals[name][:3]) == ["none", "random", "true"]  # three in a row: all
        assert signals[name][3] == signals[name][0]  # then the cycle starts again
        order = [play.session_signal(f"human:{name}", n) for n in range(4)]
        assert signals[name] == order  # the seeded rule
    assert play.session_signal("human:ana", 0) == play.session_signal("human:ana", 3)
    # the seed changes the order for some person (the rule draws it; it is not fixed)
    reseeded = [
        HumanPlay(run, cfg.model_copy(update={"seed": s})).session_signal("human:ana", 0)
        for s in range(12)
    ]
    assert len(set(reseeded)) == 3
    # people stand beside the models in the ablation table, one row per signal
    table = ablation_table(transcripts_frame(load_transcripts(run)))
    human = table[table["reasoner"] == "human"]
    assert sorted(human["signal"]) == ["none", "random", "true"]
    assert human.set_index("signal")["acc"].tolist() == [100.0, 100.0, 100.0]
    assert human["instances"].tolist() == [1, 1, 1]


def test_serve_refuses_an_unknown_signal(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from clearsight.cli import app

    out = CliRunner().invoke(app, ["serve", str(tmp_path / "run"), "--signal", "loud"])
    assert out.exit_code == 2
    assert "signal" in out.output
    assert not (tmp_path / "run").exists()


def test_players_see_opaque_instance_ids_and_the_records_keep_the_real_one(
    tmp_path: Path,
) -> None:
    """The play page and the session page name the instance by an opaque id (a real id such as
    bundled/person-horse gives the answer away); posting it starts the session, and the
    transcript and the operator's pages keep the real id."""
    run = tmp_path / "humans"
    client, token = _play_client(run, tmp_path)
    play_page = client.get("/play?name=ana").text
    public = re.search(r'name="instance" value="(q-[0-9a-f]{8})"', play_page)
    assert public is not None
    assert "car-colour" not in play_page
    response = client.post(
        "/play", data={"csrf": token, "name": "ana", "instance": public.group(1)}
    )
    assert response.status_code == 303, response.text
    key = str(response.headers["location"]).removeprefix("/session/")
    session_page = client.get(f"/session/{key}").text
    assert public.group(1) in session_page
    assert "car-colour" not in session_page
    assert "car-colour" not in client.get("/play?name=ana").text  # the player's session list
    assert _post(client, token, key, "commit", letter="B") == 303
    (transcript,) = load_transcripts(run)
    assert transcript.instance_id == "test/car-colour"
    assert "test/car-colour" in _client(run).get("/records").text


def test_the_default_sensor_is_the_detector_perceiver() -> None:
    assert ServeSettings().sensor == "perceiver:detector"
