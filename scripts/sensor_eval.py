"""Evaluate a sensor on the bundled probe questions: accuracy, seconds per reply, page replies.

Three measurements of one sensor (default ``perceiver:detector``, the default sensor of
``clearsight serve``):

* **direct accuracy** — every bundled question asked the way the probe's VLM-Direct strategy asks it
  (:func:`clearsight.probe.strategies.direct.run_direct`: the question, the lettered options,
  "answer with the letter", one sample at the sensor's temperature 1.0), the letter read by
  :func:`~clearsight.probe.reasoner.parsing.parse_letter` and compared with the gold letter, over
  ``--runs`` runs (seeds from ``rng_for("sensor_eval", instance, run)``);
* **free-form replies** — the question alone, as a player would type it on the page, one sample
  each; a reply is counted as naming an option when, articles dropped, all its words lie in
  exactly one option's words (or it is an option's text), and as right when that option is
  gold;
* **the page** — ``clearsight serve``'s app with default settings (sensor, judge, K) driven
  over HTTP with Starlette's TestClient as ``tests/ui`` does: a session on three bundled
  questions, each asked as its own query; the seconds of each reply and the reply text the
  page shows. The sensor and the judge are loaded first, as ``clearsight serve`` does in a
  thread at its start (the seconds of that are printed); ``--cold`` skips that, so the first
  reply waits for them.

Usage::

    PYTHONPATH=src .venv/bin/python scripts/sensor_eval.py [--sensor perceiver:detector]
        [--runs 5] [--skip-page] [--cold]
"""

from __future__ import annotations

import argparse
import re
import tempfile
import time
from pathlib import Path

PAGE_QUESTIONS = ("dog-animal", "dog-bike-colour", "horses-count")


def direct_accuracy(sensor_spec: str, runs: int) -> None:
    """Accuracy of VLM-Direct answers over ``runs`` runs of every bundled question."""
    from clearsight.probe.instances import bundled_instances
    from clearsight.probe.sensor import Sensor
    from clearsight.probe.strategies.direct import run_direct
    from clearsight.seeding import rng_for

    sensor = Sensor(sensor_spec, k=1, judge="exact")
    instances = bundled_instances()
    by_category: dict[str, list[bool]] = {}
    answered = 0
    for inst in instances:
        for run in range(runs):
            t = run_direct(inst, sensor, rng=rng_for("sensor_eval", inst.id, run), run=run)
            answered += t.committed is not None
            by_category.setdefault(inst.category, []).append(t.committed == inst.gold)
    every = [c for v in by_category.values() for c in v]
    print(f"direct: {len(instances)} questions x {runs} runs, {answered} answers parsed")
    print(f"direct accuracy: {sum(every) / len(every):.3f} ({sum(every)}/{len(every)})")
    for category, v in sorted(by_category.items()):
        print(f"  {category:9s} {sum(v) / len(v):.3f} ({sum(v)}/{len(v)})")


def _words(text: str) -> list[str]:
    from clearsight.probe.judges import normalise

    return [w for w in normalise(text).split() if w not in ("a", "an", "the")]


def named_option(reply: str, options: tuple[str, ...]) -> int | None:
    """The index of the one option a free-form reply names (module docstring), or None."""
    said = _words(reply)
    if not said:
        return None
    exact = [i for i, o in enumerate(options) if _words(o) == said]
    if exact:
        return exact[0]
    within = [i for i, o in enumerate(options) if set(said) <= set(_words(o))]
    return within[0] if len(within) == 1 else None


def free_form(sensor_spec: str) -> None:
    """One free-form reply per bundled question (the question alone)."""
    from clearsight.probe.instances import bundled_instances
    from clearsight.probe.sensor import Sensor

    sensor = Sensor(sensor_spec, k=1, judge="exact")
    right = named = 0
    instances = bundled_instances()
    for inst in instances:
        (reply,), _ = sensor.sample(inst, inst.question, 1, 0)
        index = named_option(reply, inst.options)
        named += index is not None
        ok = index is not None and inst.letters[index] == inst.gold
        right += ok
        gold = inst.option(inst.gold)
        mark = "ok " if ok else "-- "
        print(f"  {mark}{inst.id:32s} {inst.question[:52]:52s} -> {reply!r} (gold {gold!r})")
    print(f"free-form: {named}/{len(instances)} replies name an option, {right} the gold one")


def page(sensor_spec: str | None, warm: bool) -> None:
    """Three queries on the page with default settings; seconds and reply of each. ``warm``:
    load the sensor and judge first, as ``clearsight serve`` does in a thread at start."""
    from starlette.testclient import TestClient

    from clearsight.probe.play.session import HumanPlay
    from clearsight.ui import ServeSettings
    from clearsight.ui.app import create_app

    settings = ServeSettings() if sensor_spec is None else ServeSettings(sensor=sensor_spec)
    print(f"page: sensor {settings.sensor}, judge {settings.judge}, K {settings.k}")
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "humans"
        play = HumanPlay(run, settings)
        if warm:
            t0 = time.perf_counter()
            play.warm_up()
            print(f"  warm-up (serve's start: sensor and judge): {time.perf_counter() - t0:.2f} s")
        client = TestClient(
            create_app(run, settings, play), base_url="http://127.0.0.1", follow_redirects=False
        )
        token_match = re.search(r'name="csrf-token" content="([^"]+)"', client.get("/play").text)
        assert token_match is not None
        token = token_match.group(1)
        instances = {inst.id: inst for inst in play.instances()}
        for short in PAGE_QUESTIONS:
            inst = instances[f"bundled/{short}"]
            start = client.post(
                "/play", data={"csrf": token, "name": "eval", "instance": play.public_id(inst.id)}
            )
            key = str(start.headers["location"]).removeprefix("/session/")
            t0 = time.perf_counter()
            status = client.post(
                f"/session/{key}/query", data={"csrf": token, "query": inst.question}
            ).status_code
            seconds = time.perf_counter() - t0
            text = client.get(f"/session/{key}").text
            replies = re.findall(
                r'<span class="reply">(.*?)</span>\s*<span class="u"[^>]*>(.*?)<', text
            )
            reply, u = replies[-1] if replies else ("(none)", "")
            print(f"  {seconds:5.2f} s  [{status}] Q: {inst.question}  A: {reply} {u}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sensor", default="perceiver:detector")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--skip-page", action="store_true")
    parser.add_argument(
        "--cold", action="store_true", help="no warm-up: the first query loads the sensor"
    )
    args = parser.parse_args()
    if not args.skip_page:  # first: its first reply includes loading the sensor
        page(None if args.sensor == "perceiver:detector" else args.sensor, not args.cold)
    direct_accuracy(args.sensor, args.runs)
    free_form(args.sensor)


if __name__ == "__main__":
    main()
