"""Trust in ``clearsight serve`` (issue 15, finding 2): a person playing a session reaches its
own question, options and the replies it was shown, and nothing else of the run; a post from
another site's page is refused; no form input gets anything but an answer or a clear refusal.

The attack is driven through Starlette's TestClient like ``test_ui.py``: a run directory that
holds what a run may hold next to the sessions (the store, the instance file and its image, a
report, a model's conversation on the same instance with the gold and every sample), another
person's finished session, and the player's own. Then every route the app declares (each path
parameter filled with every key of the store and every file of the run directory), the pages
of the operator's browser (``/records``, raw JSON, ``/files/...``) and every link the served
pages hold are fetched with the player's cookies, mid-session and after the commit.
"""

from __future__ import annotations

import base64
import json
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import quote

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image
from starlette.routing import Route
from starlette.testclient import TestClient

from clearsight.models.base import Response
from clearsight.models.scripted import ScriptedBackend
from clearsight.probe.instances import Instance
from clearsight.probe.play.session import HumanPlay
from clearsight.probe.records import load_transcripts, store_transcript
from clearsight.probe.sensor import Sensor, SensorReply
from clearsight.probe.transcript import Transcript, Turn
from clearsight.store import RunStore
from clearsight.ui import ServeSettings
from clearsight.ui.app import create_app

BASE = "http://127.0.0.1"
#: Five distinct sensor samples: the person sees the one realised per query, never the others.
SAMPLES = tuple(f"sample-{word}-of-five" for word in ("alpha", "bravo", "charlie", "delta", "echo"))
#: What a model's conversation in the same run was told (the person must never read it).
MODEL_SAMPLES = ("model-only-sample-one", "model-only-sample-two", "model-only-sample-three")
QUERIES = ("What colour is the dog?", "Is the dog large?")
#: A verdict as a page or a record writes it: "(B): correct", "committed (B): wrong", JSON.
VERDICT = re.compile(r"\([A-Z]\)\W*(correct|wrong)|\W(correct|wrong)\W*:")


@dataclass
class World:
    """A served run: the player's client, its form token, its session key, the image bytes."""

    run: Path
    client: TestClient
    token: str
    key: str
    image: bytes
    inst: Instance
    #: How many posts got each status (the fuzz tests print it).
    answers: Counter[int] = field(default_factory=Counter)


def _instance(run: Path, gold: str) -> Instance:
    """The instance, its image and its JSONL file inside the run directory (as in the issue)."""
    image = run / "dog.jpg"
    Image.fromarray(np.arange(32 * 48 * 3, dtype=np.uint8).reshape(32, 48, 3)).save(image)
    inst = Instance(
        id="test/dog-colour",
        image=str(image),
        question="What colour is the dog?",
        options=("black", "brown", "white"),
        gold=gold,
        dataset="test",
        category="colour",
    )
    (run / "instances.jsonl").write_text(json.dumps(inst.to_json()) + "\n")
    return inst


def _model_conversation(run: Path, inst: Instance) -> None:
    """A model's finished conversation on the same instance: gold, verdict and all samples."""
    reply = SensorReply(QUERIES[0], MODEL_SAMPLES, 0, MODEL_SAMPLES[0], 1, 3, judge="exact")
    t = Transcript.start(inst, reasoner="hf:smollm2-135m", strategy="bp", sensor="x", k=3)
    t = t.with_turn(Turn(1, QUERIES[0], query=QUERIES[0], reply=reply, shown_u=1))
    t = t.with_turn(Turn(2, f"The answer is: ({inst.gold})", commit=inst.gold))
    with RunStore.open(run) as store:
        store.begin_run({"config": {"protocol": "probe", "strategies": ["bp"]}})
        store_transcript(store, t)
    (run / "report.html").write_text(f"<p>{inst.id}: gold ({inst.gold}), {MODEL_SAMPLES}</p>")


def _token(page: str) -> str:
    found = re.search(r'name="csrf-token" content="([^"]+)"', page)
    assert found is not None
    return found.group(1)


def _client(run: Path, inst: Instance) -> tuple[TestClient, str]:
    """A fresh browser on the play server of ``run`` (its own cookie jar) and its form token."""
    settings = ServeSettings(sensor="scripted:test", judge="exact", k=5, budget=20)
    backend = ScriptedBackend(matched=[("dog", Response(texts=SAMPLES))], name="scripted:test")
    play = HumanPlay(run, settings, instances=[inst], sensor=Sensor(backend, k=5, judge="exact"))
    client = TestClient(create_app(run, settings, play), base_url=BASE, follow_redirects=False)
    return client, _token(client.get("/play").text)


def _play(client: TestClient, token: str, name: str, queries: tuple[str, ...]) -> str:
    started = client.post(
        "/play", data={"csrf": token, "name": name, "instance": "test/dog-colour"}
    )
    assert started.status_code == 303, started.text
    key = str(started.headers["location"]).removeprefix("/session/")
    for query in queries:
        asked = client.post(f"/session/{key}/query", data={"csrf": token, "query": query})
        assert asked.status_code == 303, asked.text
    return key


def _world(root: Path, gold: str) -> World:
    """The run with the model's conversation, bo's finished session and ana's open one."""
    run = root / "humans"
    run.mkdir(parents=True)
    inst = _instance(run, gold)
    _model_conversation(run, inst)
    bo, bo_token = _client(run, inst)
    bo_key = _play(bo, bo_token, "bo", (*QUERIES, "Is it a puppy? dog", "dog breed?"))
    assert bo.post(f"/session/{bo_key}/commit", data={"csrf": bo_token, "letter": gold}).is_redirect
    ana, token = _client(run, inst)
    key = _play(ana, token, "ana", QUERIES)
    return World(run, ana, token, key, (run / "dog.jpg").read_bytes(), inst)


class _Links(HTMLParser):
    """The same-site addresses a page links to (href, src, form action)."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("href", "src", "action") and value and value.startswith("/"):
                self.found.append(value.split("#")[0])


def _candidates(world: World) -> list[str]:
    """Every route of the app with each path parameter filled with every store key and every
    file of the run directory, plus the operator's pages for each of them."""
    with RunStore.open(world.run, read_only=True) as store:
        keys = [record.key for record in store.iter_records()]
    files = sorted(p.relative_to(world.run).as_posix() for p in world.run.rglob("*") if p.is_file())
    values = [*keys, *files, "app.js", "app.css", "no-such-thing"]
    urls = {"/", "/records", "/files", "/records?status=failed", "/records?protocol=probe"}
    for value in values:
        urls.update({f"/records/{value}", f"/records/{value}/raw.json", f"/files/{value}"})
        urls.update({f"/{value}", f"/static/{value}", f"/session/{value}"})
    routes = world.client.app.routes  # type: ignore[attr-defined]
    assert routes, "the app declares its routes"
    for route in routes:
        assert isinstance(route, Route)
        names = list(route.param_convertors)
        if not names:
            urls.add(route.path)
        for value in values:
            path = route.path
            for name in names:
                path = re.sub(r"\{" + name + r"(:[a-z]+)?\}", value, path)
            urls.add(path)
    return sorted(urls)


def _crawl(world: World) -> Iterator[tuple[str, int, bytes]]:
    """GET every candidate address and every link found in a served page, once each."""
    queue = _candidates(world)
    seen: set[str] = set()
    while queue:
        url = queue.pop(0)
        if url in seen:
            continue
        seen.add(url)
        response = world.client.get(url)
        yield url, response.status_code, response.content
        if response.headers.get("content-type", "").startswith("text/html"):
            links = _Links()
            links.feed(response.text)
            queue.extend(link for link in links.found if link not in seen)


def _leaks(world: World, tried: dict[str, tuple[int, bytes]]) -> list[str]:
    """What of the hidden the responses gave away: the gold, a sample the player was not shown,
    the image's bytes (raw or base64)."""
    (mine,) = [
        t for t in load_transcripts(world.run, include_unfinished=True) if t.reasoner == "human:ana"
    ]
    shown = {t.reply.reply for t in mine.turns if t.reply is not None}
    hidden = [s for s in (*SAMPLES, *MODEL_SAMPLES) if s not in shown]
    assert len(hidden) >= len(SAMPLES) - len(QUERIES) + len(MODEL_SAMPLES)
    image_b64 = base64.b64encode(world.image)[:64]
    out = []
    for url, (_, body) in tried.items():
        text = body.decode("utf-8", "replace")
        out += [f"{url}: sample {s!r}" for s in hidden if s in text]
        if "gold" in text.lower() or VERDICT.search(text):
            out.append(f"{url}: gold or verdict")
        if world.image[:64] in body or image_b64 in body or body.startswith(b"\xff\xd8"):
            out.append(f"{url}: image bytes")
    return out


def _normalised(world: World, tried: dict[str, tuple[int, bytes]]) -> dict[str, tuple[int, str]]:
    """The responses with the per-process form token taken out (it differs between servers)."""
    return {
        url: (status, body.decode("utf-8", "replace").replace(world.token, "TOKEN"))
        for url, (status, body) in tried.items()
    }


def test_a_human_session_reaches_only_its_own_question_options_and_replies(
    tmp_path: Path,
) -> None:
    """Finding 2: every route, link, record page, raw JSON and ``/files/<each file>`` tried by
    the player, mid-session and after the commit, gives away no gold letter, no sample it was
    not shown and no image byte; and what it is served is the same whatever the gold is (the
    same world with gold C instead of B answers byte for byte the same)."""
    worlds = [_world(tmp_path / "gold-b", "B"), _world(tmp_path / "gold-c", "C")]
    answers: list[dict[str, tuple[int, str]]] = []
    for world in worlds:
        tried = {url: (status, body) for url, status, body in _crawl(world)}
        assert _leaks(world, tried) == []
        committed = world.client.post(
            f"/session/{world.key}/commit", data={"csrf": world.token, "letter": "A"}
        )
        assert committed.status_code == 303
        after = {url: (status, body) for url, status, body in _crawl(world)}
        assert _leaks(world, after) == []
        answers.append(_normalised(world, {**{f"{u} (mid)": a for u, a in tried.items()}, **after}))
        # the player's own session page is there, with its question, options and replies
        own = world.client.get(f"/session/{world.key}").text
        assert "What colour is the dog?" in own
        assert "(C) white" in own
        assert "Committed (A)" in own
    assert answers[0] == answers[1]  # nothing served depends on the gold
    urls = sorted({url.removesuffix(" (mid)") for url in answers[0]})
    reached = sorted(
        {url.removesuffix(" (mid)") for url, (st, _) in answers[0].items() if st == 200}
    )
    print(f"\n{len(urls)} addresses tried (each mid-session and after the commit):")
    print("\n".join(urls))
    print("answered 200:", reached)
    assert {"/play", f"/session/{worlds[0].key}", "/static/app.js"} <= set(reached)
    assert not any(url.startswith(("/records", "/files")) for url in reached)


def test_the_session_page_needs_the_browser_that_started_it(tmp_path: Path) -> None:
    """Another browser (another person) holding a session's key, even with a valid form token,
    neither reads nor plays it; it resumes only by starting the same name on the same
    instance."""
    world = _world(tmp_path, "B")
    other, token = _client(world.run, world.inst)
    assert other.get(f"/session/{world.key}").status_code == 404
    posted = other.post(f"/session/{world.key}/query", data={"csrf": token, "query": "dog?"})
    assert posted.status_code == 404
    (mine,) = [
        t for t in load_transcripts(world.run, include_unfinished=True) if t.reasoner == "human:ana"
    ]
    assert mine.rounds == len(QUERIES)  # the other browser's query was not played


def _stored(run: Path) -> list[tuple[object, ...]]:
    """What the store holds (its counts, manifest and every record), to tell that a refused
    post wrote nothing."""
    with RunStore.open(run, read_only=True) as store:
        return [
            (store.counts(), store.manifest()),
            *(
                (r.key, r.status, r.error, r.attempt, r.finished_at, r.raw, r.readouts)
                for r in store.iter_records()
            ),
        ]


FOREIGN = (
    {"origin": "http://evil.example"},
    {"origin": "null"},  # a sandboxed frame or an opaque origin
    {"origin": "http://127.0.0.1:8765"},  # another port is another origin
    {"origin": "https://127.0.0.1"},
    {"origin": "not a url"},
    {"referer": "http://evil.example/page.html"},
    {"referer": "http://127.0.0.1.evil.example/"},
)


def test_a_post_from_another_origin_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    """A post with a valid form token and the session's pass, but a foreign ``Origin`` (or,
    without one, a foreign ``Referer``), is refused 403 on every state-changing route and
    writes nothing; the app's own origin is accepted either way."""
    world = _world(tmp_path, "B")
    before = _stored(world.run)
    forms = {
        "/play": {"name": "cy", "instance": "test/dog-colour"},
        f"/session/{world.key}/query": {"query": "What colour is the dog?"},
        f"/session/{world.key}/commit": {"letter": "B"},
        f"/session/{world.key}/abandon": {},
    }
    for headers in FOREIGN:
        for url, fields in forms.items():
            response = world.client.post(url, data={"csrf": world.token, **fields}, headers=headers)
            assert response.status_code == 403, (url, headers)
            assert "refused" in response.text
            assert "set-cookie" not in response.headers
    assert _stored(world.run) == before
    ask = f"/session/{world.key}/query"
    for headers in (
        {"origin": BASE},
        {"origin": BASE + ":80"},
        {"referer": BASE + f"/session/{world.key}"},
        {"origin": BASE, "referer": "http://evil.example/"},  # Origin decides when sent
    ):
        fields = {"csrf": world.token, "query": "Is the dog large?"}
        assert world.client.post(ask, data=fields, headers=headers).status_code == 303, headers
    (mine,) = [
        t for t in load_transcripts(world.run, include_unfinished=True) if t.reasoner == "human:ana"
    ]
    assert mine.rounds == len(QUERIES) + 4


# ------------------------------------------------------------------------- fuzzing the forms

#: Examples per property below (each a request and two reads of the store: about 10 ms).
FORM_EXAMPLES = 200
FUZZ = settings(
    max_examples=FORM_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
#: How a post may be answered: done (303, to the session's page), or a clear refusal.
ANSWERED = {303}
REFUSED = {400, 403, 404, 413, 415}
ERROR_LINE = re.compile(r'<p class="warn" id="error">([^<]+)</p>')
ACTIONS = ("query", "commit", "abandon")
#: Field values worth trying besides arbitrary text: valid ones, near misses, edge sizes.
VALUES = st.one_of(
    st.text(max_size=40),
    st.sampled_from(
        ["ana", "bo", "test/dog-colour", "A", "b", "(C)", "D", " ", "\x00", "x" * 2001, "é" * 41]
    ),
)


def _refusal_message(response_text: str) -> str:
    """The one line a refusal says: the error page's message, or the origin check's text."""
    found = ERROR_LINE.search(response_text)
    return found.group(1).strip() if found else response_text.strip()


def _check_answer(world: World, status: int, text: str, before: list[tuple[object, ...]]) -> None:
    """A post was done, or refused with a message and nothing written."""
    assert status in ANSWERED | REFUSED, (status, text[:300])
    world.answers[status] += 1
    if status in REFUSED:
        message = _refusal_message(text)
        assert message
        assert "internal error" not in message
        assert "Traceback" not in text
        assert _stored(world.run) == before


def _open_session(world: World) -> str:
    """The player's session, a new one started when the last has ended (so every example can
    reach an open session)."""
    if 'id="ask"' not in world.client.get(f"/session/{world.key}").text:
        world.key = _play(world.client, world.token, "ana", ())
    return world.key


def test_any_posted_form_is_done_or_clearly_refused_and_a_refusal_writes_nothing(
    tmp_path: Path,
) -> None:
    """Hypothesis: any fields (with the valid token, a stale one or none), on any of the four
    state-changing routes of an open session or a made-up session key, from the app's origin
    or another, get a 303 or a 4xx with a message (never a 500 or an exception), and a
    refused post leaves the store as it was."""
    world = _world(tmp_path, "B")

    @FUZZ
    @given(
        target=st.sampled_from(["/play", *ACTIONS, "query", "query", "made-up key"]),
        made_up=st.text(min_size=1, max_size=20),
        token=st.sampled_from([world.token, world.token, world.token, "", "stale", None]),
        fields=st.fixed_dictionaries(
            {}, optional={name: VALUES for name in ("name", "instance", "query", "letter")}
        ),
        extra=st.dictionaries(st.text(max_size=8), VALUES, max_size=3),
        origin=st.sampled_from([None, BASE, BASE, "http://evil.example", "null"]),
    )
    def post(
        target: str,
        made_up: str,
        token: str | None,
        fields: dict[str, str],
        extra: dict[str, str],
        origin: str | None,
    ) -> None:
        url = f"/session/{_open_session(world)}/{target}" if target in ACTIONS else target
        if target == "made-up key":
            url = f"/session/{quote(made_up, safe='')}/query"
        before = _stored(world.run)
        data = {**extra, **fields} if token is None else {**extra, **fields, "csrf": token}
        headers = {} if origin is None else {"origin": origin}
        response = world.client.post(url, data=data, headers=headers)
        _check_answer(world, response.status_code, response.text, before)

    post()
    print("\nanswers by status:", dict(sorted(world.answers.items())))
    assert set(world.answers) - ANSWERED, "the examples include refusals"


def test_any_posted_body_is_done_or_clearly_refused(tmp_path: Path) -> None:
    """Hypothesis: arbitrary bytes under any content type (half of them after the valid
    token) get a 303 or a 4xx with a message, and a refusal writes nothing."""
    world = _world(tmp_path, "B")
    ctypes = [
        "application/x-www-form-urlencoded",
        "application/x-www-form-urlencoded; charset=latin-1",
        "multipart/form-data; boundary=x",
        "application/json",
        "text/plain",
        "",
    ]

    @FUZZ
    @given(
        target=st.sampled_from(["/play", *ACTIONS]),
        body=st.binary(max_size=300),
        with_token=st.booleans(),
        ctype=st.sampled_from(ctypes),
    )
    def post(target: str, body: bytes, with_token: bool, ctype: str) -> None:
        url = f"/session/{_open_session(world)}/{target}" if target in ACTIONS else target
        before = _stored(world.run)
        content = f"csrf={world.token}&".encode() + body if with_token else body
        response = world.client.post(url, content=content, headers={"content-type": ctype})
        _check_answer(world, response.status_code, response.text, before)

    post()
    print("\nanswers by status:", dict(sorted(world.answers.items())))
    assert set(world.answers) - ANSWERED, "the examples include refusals"
    big = {"csrf": world.token, "query": "x" * 70_000}
    response = world.client.post(f"/session/{world.key}/query", data=big)
    assert response.status_code == 413
    assert "a request body longer than 65536 bytes" in _refusal_message(response.text)


def test_any_name_in_the_play_page_address_is_shown_as_text(tmp_path: Path) -> None:
    """Hypothesis: ``/play?name=<anything>`` renders (200), the name escaped, listing no
    session but that name's own."""
    world = _world(tmp_path, "B")

    @FUZZ
    @given(name=st.one_of(st.text(max_size=40), st.sampled_from(["ana", "bo", "<b>x</b>"])))
    def show(name: str) -> None:
        response = world.client.get("/play", params={"name": name})
        assert response.status_code == 200
        listed = set(re.findall(r'<td class="t">(human:[^<]*)</td>', response.text))
        assert listed <= {f"human:{name.strip()}"}
        assert "<b>x</b>" not in response.text

    show()


def test_operator_flag_serves_the_browser_and_no_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``clearsight serve RUN --operator`` serves the records and report files, no play page,
    and takes no lock (nor creates anything); without the flag the same run is served for
    play only."""
    import uvicorn
    from typer.testing import CliRunner

    from clearsight.cli import app

    world = _world(tmp_path, "B")
    served: list[TestClient] = []
    monkeypatch.setattr(  # the server runs on the socket serve bound first
        uvicorn.Server,
        "run",
        lambda server, sockets=None: served.append(TestClient(server.config.app, base_url=BASE)),
    )
    runner = CliRunner()
    result = runner.invoke(app, ["serve", str(world.run), "--operator"])
    assert result.exit_code == 0, result.output
    assert "operator mode" in result.output
    (browser,) = served
    assert browser.get("/records").status_code == 200
    assert browser.get(f"/records/{world.key}").status_code == 200
    assert browser.get("/files/report.html").status_code == 200
    assert browser.get("/files/run.sqlite").status_code == 404
    assert browser.get("/play").status_code == 404
    missing = tmp_path / "no-run-yet"
    assert runner.invoke(app, ["serve", str(missing), "--operator"]).exit_code == 0
    assert not missing.exists()  # no lock taken, nothing created
    played = runner.invoke(
        app, ["serve", str(world.run), "--sensor", "scripted:x.jsonl", "--judge", "exact"]
    )
    assert played.exit_code == 0, played.output
    player = served[-1]
    assert player.get("/records").status_code == 404
    assert player.get("/files/report.html").status_code == 404
    assert player.get("/play").status_code == 200
