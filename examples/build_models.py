"""Build the example ONNX models that pytest-inferperf's examples and tests measure.

Everything is generated locally with ``onnx.helper`` and seeded random weights; nothing is
downloaded. Four models are produced:

* ``mobilenet_v2.onnx`` - a MobileNetV2-style CNN (width 0.5 by default), input ``image``
  float32 ``[batch, 3, 224, 224]``, output ``logits`` ``[batch, 1000]``.
* ``mobilenet_v2_int8.onnx`` - its statically quantised int8 variant (``QLinearConv``).
* ``minilm.onnx`` - a MiniLM/BERT-style encoder (2 layers, hidden 384, 12 heads), inputs
  ``input_ids``/``attention_mask``/``token_type_ids`` int64 ``[batch, sequence]``, output
  ``last_hidden_state`` float32 ``[batch, sequence, 384]``.
* ``minilm_int8.onnx`` - its dynamically quantised variant (``MatMulInteger``).

The weights are random, so the outputs mean nothing; the graphs are shaped like the real
models so that their operator mix, memory traffic and run time are realistic.

Usage::

    python examples/build_models.py [--out DIR] [--force]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import math
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

if importlib.util.find_spec("pytest_inferperf") is None:
    # running from a source checkout without installing the package
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

OPSET = 17
IR_VERSION = 8  # loadable by onnxruntime 1.16 and later

# MobileNetV2 inverted-residual table: expansion t, output channels c, repeats n, stride s.
MOBILENET_V2_BLOCKS: tuple[tuple[int, int, int, int], ...] = (
    (1, 16, 1, 1),
    (6, 24, 2, 2),
    (6, 32, 3, 2),
    (6, 64, 4, 2),
    (6, 96, 3, 1),
    (6, 160, 3, 2),
    (6, 320, 1, 1),
)

MODEL_NAMES: tuple[str, ...] = (
    "mobilenet_v2",
    "mobilenet_v2_int8",
    "minilm",
    "minilm_int8",
)


@dataclass
class _GraphBuilder:
    """Accumulates nodes and initializers, handing out unique tensor names."""

    rng: np.random.Generator
    nodes: list[onnx.NodeProto] = field(default_factory=list)
    initializers: list[onnx.TensorProto] = field(default_factory=list)
    _counter: int = 0

    def name(self, prefix: str) -> str:
        self._counter += 1
        return f"{prefix}_{self._counter}"

    def const(self, prefix: str, array: np.ndarray) -> str:
        tensor_name = self.name(prefix)
        self.initializers.append(numpy_helper.from_array(array, tensor_name))
        return tensor_name

    def node(
        self,
        op_type: str,
        inputs: Sequence[str],
        prefix: str,
        *,
        output: str | None = None,
        **attrs: object,
    ) -> str:
        out = output or self.name(prefix)
        self.nodes.append(
            helper.make_node(op_type, list(inputs), [out], name=self.name(prefix), **attrs)
        )
        return out

    def normal(self, shape: Sequence[int], std: float) -> np.ndarray:
        return (self.rng.standard_normal(shape) * std).astype(np.float32)


def _save_atomic(model: onnx.ModelProto, path: Path) -> None:
    """Write ``model`` to ``path`` via a temporary file and ``os.replace``."""
    with _atomic_target(path) as tmp:
        onnx.save(model, str(tmp))


@contextlib.contextmanager
def _atomic_target(path: Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; move it into place if the block succeeds."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".tmp.onnx", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        tmp.chmod(0o644)  # mkstemp creates 0600; give the model ordinary file permissions
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _finish_model(
    builder: _GraphBuilder,
    name: str,
    inputs: list[onnx.ValueInfoProto],
    outputs: list[onnx.ValueInfoProto],
) -> onnx.ModelProto:
    graph = helper.make_graph(builder.nodes, name, inputs, outputs, builder.initializers)
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET)],
        ir_version=IR_VERSION,
        producer_name="pytest-inferperf examples",
    )
    onnx.checker.check_model(model)
    return model


# --------------------------------------------------------------------------- MobileNetV2


def _make_divisible(value: float, divisor: int = 8) -> int:
    """Round channels the way the reference MobileNetV2 does (never down by more than 10%)."""
    rounded = max(divisor, int(value + divisor / 2) // divisor * divisor)
    if rounded < 0.9 * value:
        rounded += divisor
    return rounded


def _conv(
    b: _GraphBuilder,
    x: str,
    c_in: int,
    c_out: int,
    *,
    kernel: int,
    stride: int = 1,
    group: int = 1,
    gain: float = 2.0,
) -> str:
    """Conv with folded-BN bias; He-style init (``gain`` 2 before ReLU6, less for linear)."""
    fan_in = (c_in // group) * kernel * kernel
    weight = b.const(
        "conv_w", b.normal((c_out, c_in // group, kernel, kernel), math.sqrt(gain / fan_in))
    )
    bias = b.const("conv_b", b.normal((c_out,), 0.01))
    pad = kernel // 2
    return b.node(
        "Conv",
        [x, weight, bias],
        "conv",
        kernel_shape=[kernel, kernel],
        strides=[stride, stride],
        pads=[pad, pad, pad, pad],
        group=group,
    )


def _relu6(b: _GraphBuilder, x: str, lo: str, hi: str) -> str:
    return b.node("Clip", [x, lo, hi], "relu6")


def _inverted_residual(
    b: _GraphBuilder,
    x: str,
    c_in: int,
    c_out: int,
    *,
    stride: int,
    expand: int,
    clip: tuple[str, str],
) -> str:
    hidden = c_in * expand
    h = x
    if expand != 1:
        h = _relu6(b, _conv(b, h, c_in, hidden, kernel=1), *clip)
    h = _relu6(b, _conv(b, h, hidden, hidden, kernel=3, stride=stride, group=hidden), *clip)
    # Linear bottleneck: smaller init keeps the residual stream from growing block by block.
    h = _conv(b, h, hidden, c_out, kernel=1, gain=0.5)
    if stride == 1 and c_in == c_out:
        h = b.node("Add", [x, h], "residual")
    return h


def make_mobilenet_v2(
    *, image_size: int = 224, width: float = 0.5, seed: int = 0
) -> onnx.ModelProto:
    """Return a MobileNetV2-style ``ModelProto`` (see :func:`build_mobilenet_v2`)."""
    if image_size < 32 or width <= 0:
        raise ValueError(f"image_size must be >= 32 and width > 0, got {image_size}, {width}")
    b = _GraphBuilder(np.random.default_rng(seed))
    clip = (
        b.const("relu6_min", np.array(0.0, np.float32)),
        b.const("relu6_max", np.array(6.0, np.float32)),
    )
    c_in = _make_divisible(32 * width)
    x = _relu6(b, _conv(b, "image", 3, c_in, kernel=3, stride=2), *clip)
    for expand, channels, repeats, stride in MOBILENET_V2_BLOCKS:
        c_out = _make_divisible(channels * width)
        for i in range(repeats):
            x = _inverted_residual(
                b, x, c_in, c_out, stride=stride if i == 0 else 1, expand=expand, clip=clip
            )
            c_in = c_out
    last = _make_divisible(1280 * max(1.0, width))
    x = _relu6(b, _conv(b, x, c_in, last, kernel=1), *clip)
    x = b.node("GlobalAveragePool", [x], "pool")
    x = b.node("Flatten", [x], "flatten", axis=1)
    fc_w = b.const("fc_w", b.normal((1000, last), math.sqrt(1.0 / last)))
    fc_b = b.const("fc_b", np.zeros(1000, np.float32))
    b.node("Gemm", [x, fc_w, fc_b], "fc", output="logits", transB=1)
    image = helper.make_tensor_value_info(
        "image", TensorProto.FLOAT, ["batch", 3, image_size, image_size]
    )
    logits = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1000])
    return _finish_model(b, "mobilenet_v2", [image], [logits])


def build_mobilenet_v2(
    path: str | os.PathLike[str], *, image_size: int = 224, width: float = 0.5, seed: int = 0
) -> Path:
    """Build a MobileNetV2-style CNN and save it (atomically) to ``path``.

    Stem 3x3/2 conv + ReLU6, the standard inverted-residual table (1x1 expand + ReLU6,
    3x3 depthwise + ReLU6, 1x1 linear projection, residual Add where stride 1 and the
    channels match) with channels scaled by ``width``, a final 1x1 conv to 1280 channels,
    GlobalAveragePool, Flatten and a Gemm to 1000 classes. Batch norm is assumed folded
    into the conv biases. Input ``image`` float32 ``[batch, 3, S, S]``, output ``logits``.
    """
    out = Path(path)
    _save_atomic(make_mobilenet_v2(image_size=image_size, width=width, seed=seed), out)
    return out


# --------------------------------------------------------------------------- MiniLM


@dataclass(frozen=True)
class _EncoderShape:
    hidden: int
    heads: int
    intermediate: int

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads


def _linear(b: _GraphBuilder, x: str, d_in: int, d_out: int, prefix: str) -> str:
    weight = b.const(f"{prefix}_w", b.normal((d_in, d_out), 0.02))
    bias = b.const(f"{prefix}_b", b.normal((d_out,), 0.02))
    return b.node("Add", [b.node("MatMul", [x, weight], f"{prefix}_matmul"), bias], f"{prefix}_add")


def _layer_norm(b: _GraphBuilder, x: str, hidden: int, prefix: str) -> str:
    scale = b.const(f"{prefix}_gamma", np.ones(hidden, np.float32))
    bias = b.const(f"{prefix}_beta", np.zeros(hidden, np.float32))
    return b.node("LayerNormalization", [x, scale, bias], prefix, axis=-1, epsilon=1e-12)


def _gelu(b: _GraphBuilder, x: str) -> str:
    """GELU in the erf form exporters emit: ``x * 0.5 * (1 + erf(x / sqrt(2)))``."""
    sqrt2 = b.const("gelu_sqrt2", np.array(math.sqrt(2.0), np.float32))
    one = b.const("gelu_one", np.array(1.0, np.float32))
    half = b.const("gelu_half", np.array(0.5, np.float32))
    erf = b.node("Erf", [b.node("Div", [x, sqrt2], "gelu_div")], "gelu_erf")
    scaled = b.node("Mul", [x, b.node("Add", [erf, one], "gelu_add")], "gelu_mul")
    return b.node("Mul", [scaled, half], "gelu_half")


def _split_heads(b: _GraphBuilder, x: str, shape: _EncoderShape, perm: Sequence[int]) -> str:
    heads_shape = b.const("heads_shape", np.array([0, 0, shape.heads, shape.head_dim], np.int64))
    reshaped = b.node("Reshape", [x, heads_shape], "split_heads")
    return b.node("Transpose", [reshaped], "heads_transpose", perm=list(perm))


def _self_attention(b: _GraphBuilder, x: str, mask_bias: str, shape: _EncoderShape) -> str:
    q = _split_heads(b, _linear(b, x, shape.hidden, shape.hidden, "query"), shape, (0, 2, 1, 3))
    k = _split_heads(b, _linear(b, x, shape.hidden, shape.hidden, "key"), shape, (0, 2, 3, 1))
    v = _split_heads(b, _linear(b, x, shape.hidden, shape.hidden, "value"), shape, (0, 2, 1, 3))
    scale = b.const("attn_scale", np.array(math.sqrt(shape.head_dim), np.float32))
    scores = b.node("Div", [b.node("MatMul", [q, k], "attn_qk"), scale], "attn_scale")
    probs = b.node(
        "Softmax", [b.node("Add", [scores, mask_bias], "attn_mask")], "attn_softmax", axis=-1
    )
    context = b.node("MatMul", [probs, v], "attn_context")
    merged = b.node("Transpose", [context], "merge_transpose", perm=[0, 2, 1, 3])
    merge_shape = b.const("merge_shape", np.array([0, 0, shape.hidden], np.int64))
    merged = b.node("Reshape", [merged, merge_shape], "merge_heads")
    return _linear(b, merged, shape.hidden, shape.hidden, "attn_output")


def _encoder_layer(b: _GraphBuilder, x: str, mask_bias: str, shape: _EncoderShape) -> str:
    attn = _self_attention(b, x, mask_bias, shape)
    x = _layer_norm(b, b.node("Add", [attn, x], "attn_residual"), shape.hidden, "attn_ln")
    ffn = _gelu(b, _linear(b, x, shape.hidden, shape.intermediate, "ffn_in"))
    ffn = _linear(b, ffn, shape.intermediate, shape.hidden, "ffn_out")
    return _layer_norm(b, b.node("Add", [ffn, x], "ffn_residual"), shape.hidden, "ffn_ln")


def _embeddings(b: _GraphBuilder, hidden: int, vocab: int, max_position: int) -> str:
    word = b.const("word_embeddings", b.normal((vocab, hidden), 0.02))
    token_type = b.const("token_type_embeddings", b.normal((2, hidden), 0.02))
    position = b.const("position_embeddings", b.normal((max_position, hidden), 0.02))
    # Position ids as Hugging Face exports them: a slice of a constant [1, max_position] buffer.
    position_ids = b.const("position_ids", np.arange(max_position, dtype=np.int64)[None, :])
    seq_len = b.node(
        "Gather",
        [b.node("Shape", ["input_ids"], "ids_shape"), b.const("one_idx", np.array([1], np.int64))],
        "seq_len",
        axis=0,
    )
    zero = b.const("zero_idx", np.array([0], np.int64))
    pos = b.node(
        "Slice", [position_ids, zero, seq_len, b.const("axis1", np.array([1], np.int64))], "pos_ids"
    )
    summed = b.node(
        "Add",
        [
            b.node("Gather", [word, "input_ids"], "word_gather"),
            b.node("Gather", [token_type, "token_type_ids"], "token_type_gather"),
        ],
        "emb_add",
    )
    summed = b.node(
        "Add", [summed, b.node("Gather", [position, pos], "position_gather")], "emb_add"
    )
    return _layer_norm(b, summed, hidden, "emb_ln")


def _mask_bias(b: _GraphBuilder) -> str:
    """``(1 - mask) * -10000`` shaped ``[batch, 1, 1, sequence]`` for the attention scores."""
    mask = b.node(
        "Unsqueeze",
        ["attention_mask", b.const("mask_axes", np.array([1, 2], np.int64))],
        "mask_unsq",
    )
    mask = b.node("Cast", [mask], "mask_cast", to=TensorProto.FLOAT)
    inverted = b.node("Sub", [b.const("mask_one", np.array(1.0, np.float32)), mask], "mask_sub")
    return b.node(
        "Mul", [inverted, b.const("mask_neg", np.array(-10000.0, np.float32))], "mask_mul"
    )


def make_minilm(
    *,
    layers: int = 2,
    hidden: int = 384,
    heads: int = 12,
    intermediate: int = 1536,
    vocab: int = 8192,
    max_position: int = 512,
    seed: int = 0,
) -> onnx.ModelProto:
    """Return a MiniLM/BERT-style encoder ``ModelProto`` (see :func:`build_minilm`)."""
    if hidden % heads:
        raise ValueError(f"hidden ({hidden}) must be a multiple of heads ({heads})")
    if min(layers, hidden, heads, intermediate, vocab, max_position) < 1:
        raise ValueError("layers, hidden, heads, intermediate, vocab and max_position must be >= 1")
    b = _GraphBuilder(np.random.default_rng(seed))
    shape = _EncoderShape(hidden=hidden, heads=heads, intermediate=intermediate)
    x = _embeddings(b, hidden, vocab, max_position)
    mask_bias = _mask_bias(b)
    for _ in range(layers):
        x = _encoder_layer(b, x, mask_bias, shape)
    b.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"], name="output"))
    inputs = [
        helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "sequence"])
        for name in ("input_ids", "attention_mask", "token_type_ids")
    ]
    output = helper.make_tensor_value_info(
        "last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", hidden]
    )
    return _finish_model(b, "minilm", inputs, [output])


def build_minilm(
    path: str | os.PathLike[str],
    *,
    layers: int = 2,
    hidden: int = 384,
    heads: int = 12,
    intermediate: int = 1536,
    vocab: int = 8192,
    max_position: int = 512,
    seed: int = 0,
) -> Path:
    """Build a MiniLM/BERT-style encoder and save it (atomically) to ``path``.

    Word/position/token-type embedding Gathers (position ids sliced from a constant buffer),
    LayerNormalization, then per layer: Q/K/V MatMul+Add, split heads (Reshape+Transpose),
    scaled QK^T, additive mask ``(1 - attention_mask) * -10000``, Softmax, context MatMul,
    merge heads, output projection, residual + LayerNorm, FFN MatMul -> erf GELU -> MatMul,
    residual + LayerNorm. Inputs ``input_ids``, ``attention_mask``, ``token_type_ids``
    (int64 ``[batch, sequence]``); output ``last_hidden_state`` float32.
    """
    model = make_minilm(
        layers=layers,
        hidden=hidden,
        heads=heads,
        intermediate=intermediate,
        vocab=vocab,
        max_position=max_position,
        seed=seed,
    )
    out = Path(path)
    _save_atomic(model, out)
    return out


# --------------------------------------------------------------------------- quantisation


class _RandomCalibration:
    """Seeded standard-normal calibration batches for every float input (symbolic dims -> 1)."""

    def __init__(self, model_path: Path, *, samples: int = 2, seed: int = 0) -> None:
        graph = onnx.load(str(model_path), load_external_data=False).graph
        initializers = {t.name for t in graph.initializer}
        rng = np.random.default_rng(seed)
        specs = [
            (vi.name, [d.dim_value or 1 for d in vi.type.tensor_type.shape.dim])
            for vi in graph.input
            if vi.name not in initializers
        ]
        self._batches = iter(
            [
                {name: rng.standard_normal(shape).astype(np.float32) for name, shape in specs}
                for _ in range(samples)
            ]
        )

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self._batches, None)


def _has_conv(model_path: Path) -> bool:
    graph = onnx.load(str(model_path), load_external_data=False).graph
    return any(node.op_type == "Conv" for node in graph.node)


def quantize_int8(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> Path:
    """Write an int8 copy of ``src`` to ``dst`` (atomically), quantised the way it is shipped.

    * Transformers (no ``Conv``): ``quantize_dynamic`` with ``QInt8`` weights on the
      ``MatMul``/``Gemm`` nodes whose weight is a constant (``MatMulConstBOnly``).
      Activations are quantised at run time by ``DynamicQuantizeLinear`` and the products
      run as ``MatMulInteger`` with float rescaling; embedding Gathers stay float.
    * CNNs (any ``Conv``): ``quantize_static`` in QOperator format (``QLinearConv``,
      ``QLinearAdd``, ``QLinearGlobalAveragePool``, ``QGemm``), per-channel ``QInt8``
      weights, ``QUInt8`` activations, calibrated on two seeded random inputs. Dynamic
      quantisation of ``Conv`` (``ConvInteger``) also runs in ORT 1.32, but about 14x
      slower than float on CPU, which no one would ship, so it is not used.

    The quantiser's "consider pre-processing" warnings are silenced.
    """
    from onnxruntime.quantization import (
        QuantFormat,
        QuantType,
        quantize_dynamic,
        quantize_static,
    )

    from pytest_inferperf.onnxrt.quantize import quiet_quantization

    source, out = Path(src), Path(dst)
    with _atomic_target(out) as tmp, quiet_quantization():
        if _has_conv(source):
            quantize_static(
                source,
                tmp,
                _RandomCalibration(source),
                quant_format=QuantFormat.QOperator,
                weight_type=QuantType.QInt8,
                activation_type=QuantType.QUInt8,
                per_channel=True,
            )
        else:
            quantize_dynamic(
                source,
                tmp,
                weight_type=QuantType.QInt8,
                op_types_to_quantize=["MatMul", "Gemm"],
                extra_options={"MatMulConstBOnly": True},
            )
    return out


# --------------------------------------------------------------------------- build all


def build_all(out_dir: str | os.PathLike[str], *, force: bool = False) -> dict[str, Path]:
    """Build the four example models into ``out_dir``; existing files are kept unless ``force``.

    Returns a mapping of model name (``mobilenet_v2``, ``mobilenet_v2_int8``, ``minilm``,
    ``minilm_int8``) to its path.
    """
    directory = Path(out_dir)
    directory.mkdir(parents=True, exist_ok=True)
    paths = {name: directory / f"{name}.onnx" for name in MODEL_NAMES}
    steps: list[tuple[str, Callable[[Path], Path]]] = [
        ("mobilenet_v2", build_mobilenet_v2),
        ("mobilenet_v2_int8", lambda p: quantize_int8(paths["mobilenet_v2"], p)),
        ("minilm", build_minilm),
        ("minilm_int8", lambda p: quantize_int8(paths["minilm"], p)),
    ]
    for name, build in steps:
        if force or not paths[name].exists():
            build(paths[name])
    return paths


def _time_one_inference(path: Path, dims: dict[str, int], repeats: int = 10) -> float:
    """Median seconds of one inference with pytest-inferperf's default session settings."""
    from pytest_inferperf.onnxrt.sessions import SessionSettings, make_inputs, make_session

    session = make_session(path, SessionSettings())
    feeds = make_inputs(path, dims)
    session.run(None, feeds)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        session.run(None, feeds)
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--out",
        type=Path,
        default=Path(__file__).resolve().parent / "models",
        help="output directory (default: models/ beside this script)",
    )
    parser.add_argument("--force", action="store_true", help="rebuild models that already exist")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    paths = build_all(args.out, force=args.force)
    elapsed = time.perf_counter() - start
    print(f"models ready in {elapsed:.1f} s; median of 10 inferences, 1 intra-op thread:")
    for path in paths.values():
        dims = {"batch": 1, "sequence": 128} if "minilm" in path.stem else {"batch": 1}
        seconds = _time_one_inference(path, dims)
        size_mb = path.stat().st_size / 1e6
        print(f"{path!s:<60} {size_mb:6.1f} MB {seconds * 1e3:8.2f} ms/inference")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
