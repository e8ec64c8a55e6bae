"""What input generation and the weight-type pass read from an ONNX graph, without onnx.

Owns: :func:`read_graph`, a reader of the protobuf wire format
(https://protobuf.dev/programming-guides/encoding/) for the few fields of
``onnx/onnx.proto`` (the field numbers below are that file's, onnx 1.23) that
:func:`pytest_inferperf.onnxrt.sessions.make_inputs`, ``default_dims``, the command line's shape
options and :func:`pytest_inferperf.onnxrt.precision.stored_weight_types` use: the graph's
inputs (name, element type, shape), its initializers (name, data type, dims; never
their data) and its nodes (name, op type, inputs, outputs, integer attributes, the
dims of a tensor attribute). ``import onnx`` costs 0.8 s of start-up here (mostly its
ml_dtypes) and over 4 s under valgrind, in every process that makes inputs: each
xdist worker, each simulation child. ``onnx.load`` also parses every weight of a
multi-GB model into memory; this walks over them in a memory map.

Must not: import onnx, numpy or a module of the package other than ``errors``; build or
change a model.
"""

from __future__ import annotations

import mmap
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..core.errors import InferperfError

#: ``TensorProto.DataType`` names, for messages (onnx.proto, enum DataType).
ELEMENT_TYPE_NAMES = {
    1: "FLOAT",
    2: "UINT8",
    3: "INT8",
    4: "UINT16",
    5: "INT16",
    6: "INT32",
    7: "INT64",
    8: "STRING",
    9: "BOOL",
    10: "FLOAT16",
    11: "DOUBLE",
    12: "UINT32",
    13: "UINT64",
    14: "COMPLEX64",
    15: "COMPLEX128",
    16: "BFLOAT16",
    17: "FLOAT8E4M3FN",
    18: "FLOAT8E4M3FNUZ",
    19: "FLOAT8E5M2",
    20: "FLOAT8E5M2FNUZ",
    21: "UINT4",
    22: "INT4",
    23: "FLOAT4E2M1",
    24: "FLOAT8E8M0",
    25: "UINT2",
    26: "INT2",
    27: "FLOAT6E2M3",
    28: "FLOAT6E3M2",
}

# Wire types (the protobuf encoding guide): 3 and 4 are groups, which onnx.proto never uses.
_VARINT, _FIXED64, _LEN, _FIXED32 = 0, 1, 2, 5
_BREAKS = "its protobuf encoding breaks at byte"


class GraphFormatError(InferperfError, ValueError):
    """The bytes are not a protobuf message onnx.proto's ModelProto could be read from."""


#: C90 identifier syntax, which ONNX's IR spec asks of every name (dimension variables too).
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Dim:
    """One axis of a shape: a fixed ``value``, a symbolic ``param``, or neither (unnamed)."""

    value: int | None = None
    param: str | None = None

    @property
    def fixed(self) -> int | None:
        """The axis' size where the model fixes it (a positive ``dim_value``)."""
        return self.value if self.value is not None and self.value > 0 else None

    def key(self, input_name: str, axis: int) -> str:
        """The name a caller sizes this axis by: its ``dim_param``, else ``<input>:<axis>``.

        A ``dim_param`` that is no identifier (Paddle2ONNX writes ``"?"`` for every free
        axis) is a placeholder, not a name: ONNX's IR spec ("Names Within a Graph") holds
        names, dimension variables among them, to C90 identifier syntax, and two axes
        that share a real name must share their size, which two ``"?"`` axes (a text
        line's height and width) do not. Such an axis is sized by ``<input>:<axis>``."""
        if self.param and _IDENTIFIER.fullmatch(self.param):
            return self.param
        return f"{input_name}:{axis}"


@dataclass(frozen=True)
class TensorType:
    """``TypeProto.Tensor``: ``shape`` is None where the model states no shape at all."""

    elem_type: int = 0
    shape: tuple[Dim, ...] | None = None


@dataclass(frozen=True)
class ValueInfo:
    """A graph input: ``tensor`` is None where its type is not a tensor (sequence, map...)."""

    name: str
    tensor: TensorType | None


@dataclass(frozen=True)
class Tensor:
    """An initializer's (or a tensor attribute's) header: its data is never read."""

    name: str = ""
    data_type: int = 0
    dims: tuple[int, ...] = ()


@dataclass(frozen=True)
class Attribute:
    name: str
    i: int | None = None  # field ``i`` (INT attributes)
    tensor: Tensor | None = None  # field ``t`` (TENSOR attributes: a Constant's value)


@dataclass(frozen=True)
class Node:
    name: str
    op_type: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    attributes: tuple[Attribute, ...] = ()

    def int_attribute(self, name: str, default: int) -> int:
        return next((a.i for a in self.attributes if a.name == name and a.i is not None), default)

    def tensor_attribute(self, name: str) -> Tensor | None:
        return next((a.tensor for a in self.attributes if a.name == name and a.tensor), None)


@dataclass(frozen=True)
class Graph:
    """The main graph of a model, as far as this module reads it."""

    inputs: tuple[ValueInfo, ...] = ()
    initializers: tuple[Tensor, ...] = ()  # sparse initializers too (their values' header)
    nodes: tuple[Node, ...] = ()

    def fed_inputs(self) -> tuple[ValueInfo, ...]:
        """Inputs the caller must feed (old models also list initializers as inputs)."""
        constant = {t.name for t in self.initializers}
        return tuple(vi for vi in self.inputs if vi.name not in constant)


def read_graph(model: str | os.PathLike[str] | bytes | bytearray | memoryview | Any) -> Graph:
    """The main graph of a model: a file path, serialized ModelProto bytes, or an
    ``onnx.ModelProto`` (its caller has onnx imported already; it is serialized first).

    Raises :class:`GraphFormatError` for bytes that are not a protobuf message, or a
    message without a graph; ``OSError`` where the file cannot be read.
    """
    if hasattr(model, "SerializeToString"):
        model = model.SerializeToString()
    if isinstance(model, (bytes, bytearray, memoryview)):
        return _model(bytes(model))
    with open(os.fspath(model), "rb") as handle:
        if os.fstat(handle.fileno()).st_size == 0:
            raise GraphFormatError("the file is empty")
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            return _model(data)


# -- the wire format ------------------------------------------------------------------
Buffer = bytes | mmap.mmap


def _varint(buf: Buffer, pos: int, end: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= end:
            raise GraphFormatError(f"{_BREAKS} {pos}: a number is cut off")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise GraphFormatError(f"{_BREAKS} {pos}: a number longer than 10 bytes")


def _signed(value: int) -> int:
    """int32/int64 fields: a negative value is sent as its 64-bit two's complement."""
    value &= (1 << 64) - 1
    return value - (1 << 64) if value >= 1 << 63 else value


def _fields(buf: Buffer, start: int, end: int) -> Iterator[tuple[int, int, int, int]]:
    """``(field number, wire type, value or start, end)`` of each field in ``[start, end)``.

    A varint's value comes as the third item; a length-delimited field's bytes are
    ``buf[third:fourth]``; fixed-width fields are skipped over (nothing read uses them).
    """
    pos = start
    while pos < end:
        key, pos = _varint(buf, pos, end)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise GraphFormatError(f"{_BREAKS} {pos}: field number 0")
        if wire == _VARINT:
            value, pos = _varint(buf, pos, end)
            yield number, wire, value, pos
        elif wire == _LEN:
            length, pos = _varint(buf, pos, end)
            if pos + length > end:
                raise GraphFormatError(
                    f"{_BREAKS} {pos}: field {number} claims {length} bytes, {end - pos} remain"
                )
            yield number, wire, pos, pos + length
            pos += length
        elif wire in (_FIXED64, _FIXED32):
            pos += 8 if wire == _FIXED64 else 4
            if pos > end:
                raise GraphFormatError(f"{_BREAKS} {end}: field {number} is cut off")
        else:
            raise GraphFormatError(f"{_BREAKS} {pos}: wire type {wire} (field {number})")


def _text(buf: Buffer, start: int, end: int) -> str:
    return bytes(buf[start:end]).decode("utf-8", errors="replace")


def _ints(buf: Buffer, wire: int, a: int, b: int, into: list[int]) -> None:
    """A repeated int64 field: one varint, or a packed run of them."""
    if wire == _VARINT:
        into.append(_signed(a))
        return
    if wire != _LEN:
        raise GraphFormatError(f"{_BREAKS} {b}: an integer list with wire type {wire}")
    pos = a
    while pos < b:
        value, pos = _varint(buf, pos, b)
        into.append(_signed(value))


# -- the messages (onnx.proto field numbers) ---------------------------------------------
def _model(buf: Buffer) -> Graph:
    inputs: list[ValueInfo] = []
    initializers: list[Tensor] = []
    nodes: list[Node] = []
    found = False
    for number, wire, a, b in _fields(buf, 0, len(buf)):
        if number == 7 and wire == _LEN:  # ModelProto.graph (repeats merge, as protobuf does)
            found = True
            _graph(buf, a, b, inputs, initializers, nodes)
    if not found:
        raise GraphFormatError("it has no graph (ModelProto field 7)")
    return Graph(tuple(inputs), tuple(initializers), tuple(nodes))


def _graph(
    buf: Buffer,
    start: int,
    end: int,
    inputs: list[ValueInfo],
    initializers: list[Tensor],
    nodes: list[Node],
) -> None:
    for number, wire, a, b in _fields(buf, start, end):
        if wire != _LEN:
            continue
        if number == 1:  # node
            nodes.append(_node(buf, a, b))
        elif number == 5:  # initializer
            initializers.append(_tensor(buf, a, b))
        elif number == 11:  # input
            inputs.append(_value_info(buf, a, b))
        elif number == 15:  # sparse_initializer: SparseTensorProto.values (1), dims (3)
            values, dims = Tensor(), list[int]()
            for n2, w2, a2, b2 in _fields(buf, a, b):
                if n2 == 1 and w2 == _LEN:
                    values = _tensor(buf, a2, b2)
                elif n2 == 3:
                    _ints(buf, w2, a2, b2, dims)
            initializers.append(Tensor(values.name, values.data_type, tuple(dims)))


def _tensor(buf: Buffer, start: int, end: int) -> Tensor:
    name, data_type, dims = "", 0, list[int]()
    for number, wire, a, b in _fields(buf, start, end):
        if number == 1:  # dims
            _ints(buf, wire, a, b, dims)
        elif number == 2 and wire == _VARINT:  # data_type
            data_type = _signed(a)
        elif number == 8 and wire == _LEN:  # name
            name = _text(buf, a, b)
    return Tensor(name, data_type, tuple(dims))


def _node(buf: Buffer, start: int, end: int) -> Node:
    inputs: list[str] = []
    outputs: list[str] = []
    attributes: list[Attribute] = []
    name = op_type = ""
    for number, wire, a, b in _fields(buf, start, end):
        if wire != _LEN:
            continue
        if number == 1:
            inputs.append(_text(buf, a, b))
        elif number == 2:
            outputs.append(_text(buf, a, b))
        elif number == 3:
            name = _text(buf, a, b)
        elif number == 4:
            op_type = _text(buf, a, b)
        elif number == 5:
            attributes.append(_attribute(buf, a, b))
    return Node(name, op_type, tuple(inputs), tuple(outputs), tuple(attributes))


def _attribute(buf: Buffer, start: int, end: int) -> Attribute:
    name, value, tensor = "", None, None
    for number, wire, a, b in _fields(buf, start, end):
        if number == 1 and wire == _LEN:
            name = _text(buf, a, b)
        elif number == 3 and wire == _VARINT:  # i
            value = _signed(a)
        elif number == 5 and wire == _LEN:  # t
            tensor = _tensor(buf, a, b)
    return Attribute(name, value, tensor)


def _value_info(buf: Buffer, start: int, end: int) -> ValueInfo:
    name, tensor = "", None
    for number, wire, a, b in _fields(buf, start, end):
        if number == 1 and wire == _LEN:
            name = _text(buf, a, b)
        elif number == 2 and wire == _LEN:  # type: TypeProto.tensor_type (1)
            tensor = None
            for n2, w2, a2, b2 in _fields(buf, a, b):
                if n2 == 1 and w2 == _LEN:
                    tensor = _tensor_type(buf, a2, b2)
    return ValueInfo(name, tensor)


def _tensor_type(buf: Buffer, start: int, end: int) -> TensorType:
    elem_type, shape = 0, None
    for number, wire, a, b in _fields(buf, start, end):
        if number == 1 and wire == _VARINT:
            elem_type = _signed(a)
        elif number == 2 and wire == _LEN:  # shape: TensorShapeProto.dim (1)
            dims = list(shape or ())
            for n2, w2, a2, b2 in _fields(buf, a, b):
                if n2 == 1 and w2 == _LEN:
                    dims.append(_dim(buf, a2, b2))
            shape = tuple(dims)
    return TensorType(elem_type, shape)


def _dim(buf: Buffer, start: int, end: int) -> Dim:
    value: int | None = None
    param: str | None = None
    for number, wire, a, b in _fields(buf, start, end):  # oneof: the last one set wins
        if number == 1 and wire == _VARINT:
            value, param = _signed(a), None
        elif number == 2 and wire == _LEN:
            value, param = None, _text(buf, a, b)
    return Dim(value, param)
