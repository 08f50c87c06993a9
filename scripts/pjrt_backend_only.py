"""Compiles an already-optimized HLO module backend-only through a PJRT plugin.

JAX's Python API compiles StableHLO only, which drops what an optimized
module is: its schedule, its layouts and its fusions' backend configs. PJRT's
C API also takes a serialized HloModuleProto (program format "hlo"), and
`ExecutableBuildOptionsProto.run_backend_only` skips the HLO passes, so the
GPU runs the module TensorFlow 2.21's XLA scheduled, instruction for
instruction: what the deviceless prediction assigned buffers for.

The executable comes back serialized, for `jax` to load in a fresh process
(`LoadedExecutable` objects do not cross clients). Only the few PJRT_Api
entries below are used; they are addressed by their place in pjrt_c_api.h,
whose fields are only ever appended, and every argument struct carries
zeroed room for fields a newer plugin reads.
"""

from __future__ import annotations

import ctypes
from ctypes import (
    CFUNCTYPE,
    Structure,
    Union,
    c_bool,
    c_char,
    c_char_p,
    c_float,
    c_int,
    c_int64,
    c_size_t,
    c_void_p,
)

# PJRT_Api: struct_size, extension_start, PJRT_Api_Version (24 bytes), then
# one function pointer per entry, in the header's order.
_API_HEAD_BYTES = 40
_ENTRY = {
    "PJRT_Error_Destroy": 0,
    "PJRT_Error_Message": 1,
    "PJRT_Plugin_Initialize": 3,
    "PJRT_Client_Create": 10,
    "PJRT_Client_Destroy": 11,
    "PJRT_Client_Compile": 20,
    "PJRT_Executable_Destroy": 40,
    "PJRT_Executable_Serialize": 49,
    "PJRT_LoadedExecutable_Destroy": 50,
    "PJRT_LoadedExecutable_GetExecutable": 51,
}
_ROOM = ("_room", c_char * 128)  # zeroed: optional fields of newer plugins
_ENTRY_TYPE = CFUNCTYPE(c_void_p, c_void_p)  # returns a PJRT_Error*, null if none
_VOID_ENTRY_TYPE = CFUNCTYPE(None, c_void_p)  # PJRT_Error_Message, PJRT_Error_Destroy


class _ApiVersion(Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("extension_start", c_void_p),
        ("major", c_int),
        ("minor", c_int),
    ]


class _ApiHead(Structure):
    _fields_ = [("struct_size", c_size_t), ("extension_start", c_void_p), ("version", _ApiVersion)]


class _Sized(Structure):
    """An argument struct that states its own size, as the C API asks."""

    def __init__(self, **fields: object) -> None:
        super().__init__(**fields)
        self.struct_size = ctypes.sizeof(self)


def _args(name: str, fields: list[tuple[str, object]]) -> type[Structure]:
    return type(
        name,
        (_Sized,),
        {"_fields_": [("struct_size", c_size_t), ("extension_start", c_void_p), *fields, _ROOM]},
    )


_ErrorDestroy = _args("ErrorDestroy", [("error", c_void_p)])
_ErrorMessage = _args(
    "ErrorMessage", [("error", c_void_p), ("message", c_void_p), ("message_size", c_size_t)]
)
_PluginInitialize = _args("PluginInitialize", [])
_ClientCreate = _args(
    "ClientCreate",
    [
        ("create_options", c_void_p),
        ("num_options", c_size_t),
        ("kv_get_callback", c_void_p),
        ("kv_get_user_arg", c_void_p),
        ("kv_put_callback", c_void_p),
        ("kv_put_user_arg", c_void_p),
        ("client", c_void_p),
        ("kv_try_get_callback", c_void_p),
        ("kv_try_get_user_arg", c_void_p),
    ],
)
_ClientDestroy = _args("ClientDestroy", [("client", c_void_p)])
_Program = _args(
    "Program",
    [("code", c_char_p), ("code_size", c_size_t), ("format", c_char_p), ("format_size", c_size_t)],
)
_ClientCompile = _args(
    "ClientCompile",
    [
        ("client", c_void_p),
        ("program", c_void_p),
        ("compile_options", c_char_p),
        ("compile_options_size", c_size_t),
        ("executable", c_void_p),
    ],
)
_GetExecutable = _args("GetExecutable", [("loaded_executable", c_void_p), ("executable", c_void_p)])
_ExecutableDestroy = _args("ExecutableDestroy", [("executable", c_void_p)])
_LoadedDestroy = _args("LoadedDestroy", [("executable", c_void_p)])
_Serialize = _args(
    "Serialize",
    [
        ("executable", c_void_p),
        ("serialized_bytes", c_void_p),
        ("serialized_bytes_size", c_size_t),
        ("serialized_executable", c_void_p),
        ("serialized_executable_deleter", CFUNCTYPE(None, c_void_p)),
    ],
)


class _Value(Union):
    _fields_ = [
        ("string_value", c_char_p),
        ("int64_value", c_int64),
        ("float_value", c_float),
        ("bool_value", c_bool),
    ]


class _NamedValue(Structure):  # read as an array: no room added
    _anonymous_ = ("value",)
    _fields_ = [
        ("struct_size", c_size_t),
        ("extension_start", c_void_p),
        ("name", c_char_p),
        ("name_size", c_size_t),
        ("type", c_int),
        ("value", _Value),
        ("value_size", c_size_t),
    ]


_STRING, _INT64, _FLOAT, _BOOL = 0, 1, 3, 4


class PjrtError(RuntimeError):
    """An error the plugin returned, with its message."""


def _named_values(options: dict[str, str | bool | float | int]) -> ctypes.Array:
    values = (_NamedValue * len(options))()
    for value, (name, given) in zip(values, options.items(), strict=True):
        value.struct_size = ctypes.sizeof(_NamedValue)
        value.name = name.encode()
        value.name_size = len(name)
        value.value_size = 1
        if isinstance(given, bool):
            value.type, value.bool_value = _BOOL, given
        elif isinstance(given, int):
            value.type, value.int64_value = _INT64, given
        elif isinstance(given, float):
            value.type, value.float_value = _FLOAT, given
        else:
            value.type, value.string_value = _STRING, given.encode()
            value.value_size = len(given.encode())
    return values


def backend_only(compile_options: bytes) -> bytes:
    """`compile_options` (a serialized CompileOptionsProto) with
    executable_build_options.run_backend_only set: protobuf merges a repeated
    occurrence of a message field into the first."""
    build_options = bytes([11 << 3 | 0, 1])  # run_backend_only = 11: true
    return compile_options + bytes([3 << 3 | 2, len(build_options)]) + build_options


class Plugin:
    """One PJRT C API plugin library and a client on it."""

    def __init__(self, library: str, options: dict[str, str | bool | float | int]) -> None:
        self._library = ctypes.CDLL(library, mode=ctypes.RTLD_LOCAL)
        self._library.GetPjrtApi.restype = c_void_p
        self._api = self._library.GetPjrtApi()
        head = _ApiHead.from_address(self._api)
        needed = _API_HEAD_BYTES + 8 * (max(_ENTRY.values()) + 1)
        if head.struct_size < needed:
            raise PjrtError(f"{library}: PJRT_Api of {head.struct_size} bytes, need {needed}")
        self._call("PJRT_Plugin_Initialize", _PluginInitialize())
        values = _named_values(options)
        create = _ClientCreate(create_options=ctypes.addressof(values), num_options=len(options))
        self._call("PJRT_Client_Create", create)
        self._client = create.client

    def _entry(self, entry: str) -> int:
        return ctypes.c_void_p.from_address(self._api + _API_HEAD_BYTES + 8 * _ENTRY[entry]).value

    def _call(self, entry: str, args: Structure) -> None:
        error = _ENTRY_TYPE(self._entry(entry))(ctypes.addressof(args))
        if error:
            message = _ErrorMessage(error=error)
            _VOID_ENTRY_TYPE(self._entry("PJRT_Error_Message"))(ctypes.addressof(message))
            text = ctypes.string_at(message.message, message.message_size).decode(errors="replace")
            destroy = _ErrorDestroy(error=error)
            _VOID_ENTRY_TYPE(self._entry("PJRT_Error_Destroy"))(ctypes.addressof(destroy))
            raise PjrtError(f"{entry}: {text}")

    def compile_serialized(self, module_proto: bytes, compile_options: bytes) -> bytes:
        """Compiles the HloModuleProto; returns the serialized executable."""
        program = _Program(
            code=module_proto, code_size=len(module_proto), format=b"hlo", format_size=3
        )
        compiled = _ClientCompile(
            client=self._client,
            program=ctypes.addressof(program),
            compile_options=compile_options,
            compile_options_size=len(compile_options),
        )
        self._call("PJRT_Client_Compile", compiled)
        try:
            unloaded = _GetExecutable(loaded_executable=compiled.executable)
            self._call("PJRT_LoadedExecutable_GetExecutable", unloaded)
            try:
                out = _Serialize(executable=unloaded.executable)
                self._call("PJRT_Executable_Serialize", out)
                data = ctypes.string_at(out.serialized_bytes, out.serialized_bytes_size)
                out.serialized_executable_deleter(out.serialized_executable)
                return data
            finally:
                self._call(
                    "PJRT_Executable_Destroy", _ExecutableDestroy(executable=unloaded.executable)
                )
        finally:
            self._call(
                "PJRT_LoadedExecutable_Destroy", _LoadedDestroy(executable=compiled.executable)
            )

    def close(self) -> None:
        self._call("PJRT_Client_Destroy", _ClientDestroy(client=self._client))
