"""The Chakra execution-trace messages, built with protobuf's descriptor API.

The schema is MLCommons Chakra's ``schema/protobuf/et_def.proto`` (package ``ChakraProtoMsg``,
as of mlcommons/chakra commit 21585d8, May 2026; traces say ``1.0.0`` in their
``GlobalMetadata.version``). Only what a trace needs is declared, with the published field
numbers and types: ``AttributeProto`` (every ``oneof value`` member), the ``*List`` messages,
``GlobalMetadata``, ``Node`` and ``IOInfo``; ``Tensor`` (not written by any trace wormsim reads)
is left out. Wire compatibility is all that matters: a trace written by Chakra's own
``_pb2`` decodes with these classes and vice versa.
"""

from __future__ import annotations

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

__all__ = [
    "GlobalMetadata",
    "Node",
    "AttributeProto",
    "NODE_TYPES",
    "COLLECTIVE_TYPES",
    "LIST_VALUES",
]

#: ``NodeType`` enum: name -> number.
NODE_TYPES = {
    "INVALID_NODE": 0, "METADATA_NODE": 1, "MEM_LOAD_NODE": 2, "MEM_STORE_NODE": 3,
    "COMP_NODE": 4, "COMM_SEND_NODE": 5, "COMM_RECV_NODE": 6, "COMM_COLL_NODE": 7,
}  # fmt: skip
#: ``CollectiveCommType`` enum: name -> number.
COLLECTIVE_TYPES = {
    "ALL_REDUCE": 0, "REDUCE": 1, "ALL_GATHER": 2, "GATHER": 3, "SCATTER": 4, "BROADCAST": 5,
    "ALL_TO_ALL": 6, "REDUCE_SCATTER": 7, "REDUCE_SCATTER_BLOCK": 8, "BARRIER": 9,
}  # fmt: skip

_F = descriptor_pb2.FieldDescriptorProto
#: Scalar kinds of AttributeProto's oneof, in field-number order (3, 5, ..., 31); each is
#: followed by its list message (4, 6, ..., 32).
LIST_VALUES = (
    ("double", _F.TYPE_DOUBLE), ("float", _F.TYPE_FLOAT), ("int32", _F.TYPE_INT32),
    ("int64", _F.TYPE_INT64), ("uint32", _F.TYPE_UINT32), ("uint64", _F.TYPE_UINT64),
    ("sint32", _F.TYPE_SINT32), ("sint64", _F.TYPE_SINT64), ("fixed32", _F.TYPE_FIXED32),
    ("fixed64", _F.TYPE_FIXED64), ("sfixed32", _F.TYPE_SFIXED32),
    ("sfixed64", _F.TYPE_SFIXED64), ("bool", _F.TYPE_BOOL), ("string", _F.TYPE_STRING),
    ("bytes", _F.TYPE_BYTES),
)  # fmt: skip
_PKG = "ChakraProtoMsg"


def _field(msg, name: str, number: int, ftype: int, *, repeated: bool = False, type_name=""):
    f = msg.field.add(name=name, number=number, type=ftype)
    f.label = _F.LABEL_REPEATED if repeated else _F.LABEL_OPTIONAL
    if type_name:
        f.type_name = f".{_PKG}.{type_name}"
    return f


def _list_name(kind: str) -> str:
    return kind.capitalize() + "List"


def _file() -> descriptor_pb2.FileDescriptorProto:
    fd = descriptor_pb2.FileDescriptorProto(name="wormsim_et_def.proto", package=_PKG)
    fd.syntax = "proto3"
    attr = fd.message_type.add(name="AttributeProto")
    _field(attr, "name", 1, _F.TYPE_STRING)
    _field(attr, "doc_string", 2, _F.TYPE_STRING)
    attr.oneof_decl.add(name="value")
    for i, (kind, ftype) in enumerate(LIST_VALUES):
        lst = fd.message_type.add(name=_list_name(kind))
        _field(lst, "values", 1, ftype, repeated=True)
        scalar = _field(attr, f"{kind}_val", 3 + 2 * i, ftype)
        listed = _field(attr, f"{kind}_list", 4 + 2 * i, _F.TYPE_MESSAGE, type_name=lst.name)
        scalar.oneof_index = listed.oneof_index = 0
    meta = fd.message_type.add(name="GlobalMetadata")
    _field(meta, "version", 1, _F.TYPE_STRING)
    _field(meta, "attr", 2, _F.TYPE_MESSAGE, repeated=True, type_name="AttributeProto")
    for enum_name, values in (("NodeType", NODE_TYPES), ("CollectiveCommType", COLLECTIVE_TYPES)):
        enum = fd.enum_type.add(name=enum_name)
        for name, number in values.items():
            enum.value.add(name=name, number=number)
    io = fd.message_type.add(name="IOInfo")
    for number, name in enumerate(("values", "shapes", "types"), 1):
        _field(io, name, number, _F.TYPE_STRING)
    node = fd.message_type.add(name="Node")
    _field(node, "id", 1, _F.TYPE_UINT64)
    _field(node, "name", 2, _F.TYPE_STRING)
    _field(node, "type", 3, _F.TYPE_ENUM, type_name="NodeType")
    _field(node, "ctrl_deps", 4, _F.TYPE_UINT64, repeated=True)
    _field(node, "data_deps", 5, _F.TYPE_UINT64, repeated=True)
    _field(node, "start_time_micros", 6, _F.TYPE_UINT64)
    _field(node, "duration_micros", 7, _F.TYPE_UINT64)
    _field(node, "inputs", 8, _F.TYPE_MESSAGE, type_name="IOInfo")
    _field(node, "outputs", 9, _F.TYPE_MESSAGE, type_name="IOInfo")
    _field(node, "attr", 10, _F.TYPE_MESSAGE, repeated=True, type_name="AttributeProto")
    return fd


_POOL = descriptor_pool.DescriptorPool()
_POOL.Add(_file())


def _cls(name: str):
    return message_factory.GetMessageClass(_POOL.FindMessageTypeByName(f"{_PKG}.{name}"))


#: ``ChakraProtoMsg.GlobalMetadata``, the first message of a trace.
GlobalMetadata = _cls("GlobalMetadata")
#: ``ChakraProtoMsg.Node``, every message after the first.
Node = _cls("Node")
#: ``ChakraProtoMsg.AttributeProto``, a node's named attribute.
AttributeProto = _cls("AttributeProto")
