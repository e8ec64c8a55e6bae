"""Quantisation: the int8 variant of a model, as ``inferperf compare --quantize`` makes it.

Owns: :func:`quantize_dynamic` and :func:`quiet_quantization`, the context that silences
the quantiser's log lines and warnings (``examples/build_models.py`` uses it too).

Must not: measure or compare the variant (:mod:`..measure.target`, :mod:`..cli.compare`), or
parse arguments or print (``cli``). A model that cannot be quantised raises
:class:`measure.target.UsageError`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path

from ..core.errors import UsageError


@contextlib.contextmanager
def quiet_quantization() -> Iterator[None]:
    """Silence the quantiser's "consider pre-processing" log lines and warnings."""
    logger = logging.getLogger()
    previous = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logger.setLevel(previous)


def quantize_dynamic(model: str | os.PathLike[str], out: str | os.PathLike[str]) -> Path:
    """Write the dynamically quantised int8 variant of ``model`` to ``out`` (atomically).

    ``onnxruntime.quantization.quantize_dynamic`` with ``QInt8`` weights on the
    ``MatMul``/``Gemm`` nodes whose weight is a constant: activations are quantised at
    run time (``DynamicQuantizeLinear`` + ``MatMulInteger``). ``Conv`` is left in float:
    its dynamic form (``ConvInteger``) runs many times slower than float on CPU.
    """
    from onnxruntime.quantization import QuantType
    from onnxruntime.quantization import quantize_dynamic as ort_quantize_dynamic

    source, target = Path(model), Path(out)
    if not source.is_file():
        raise UsageError(f"{source} does not exist:", hint="{quantize} needs an ONNX model file.")
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.stem}.", suffix=".onnx")
    os.close(fd)
    try:
        with quiet_quantization():
            ort_quantize_dynamic(
                source,
                tmp,
                weight_type=QuantType.QInt8,
                op_types_to_quantize=["MatMul", "Gemm"],
                extra_options={"MatMulConstBOnly": True},
            )
        os.replace(tmp, target)
    except Exception as exc:  # the quantiser raises whatever its passes raise
        raise UsageError(
            f"failed on {source}: {type(exc).__name__}: {exc}", setting="quantize", value="dynamic"
        ) from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    return target
