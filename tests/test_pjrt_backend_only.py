"""scripts/pjrt_backend_only.py: what can be checked without a GPU."""

from __future__ import annotations

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from tests.script_modules import load_script

pjrt = load_script("pjrt_backend_only")


def _compile_options_classes() -> tuple[type, type]:
    """The two fields of xla/pjrt/proto/compile_options.proto that matter:
    CompileOptionsProto.executable_build_options (3) and, in it,
    device_ordinal (1) and run_backend_only (11)."""
    file = descriptor_pb2.FileDescriptorProto(name="co_test.proto", package="co_test")
    build = file.message_type.add(name="ExecutableBuildOptionsProto")
    build.field.add(name="device_ordinal", number=1, type=3, label=1)  # int64
    build.field.add(name="run_backend_only", number=11, type=8, label=1)  # bool
    options = file.message_type.add(name="CompileOptionsProto")
    options.field.add(
        name="executable_build_options",
        number=3,
        type=11,
        label=1,
        type_name=".co_test.ExecutableBuildOptionsProto",
    )
    options.field.add(name="profile_version", number=5, type=3, label=1)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    get = message_factory.GetMessageClass
    return (
        get(pool.FindMessageTypeByName("co_test.CompileOptionsProto")),
        get(pool.FindMessageTypeByName("co_test.ExecutableBuildOptionsProto")),
    )


def test_backend_only_sets_the_flag_and_keeps_every_other_option():
    compile_options, _ = _compile_options_classes()
    given = compile_options(profile_version=7)
    given.executable_build_options.device_ordinal = 3
    read = compile_options.FromString(pjrt.backend_only(given.SerializeToString()))
    assert read.executable_build_options.run_backend_only
    assert read.executable_build_options.device_ordinal == 3
    assert read.profile_version == 7


def test_backend_only_of_no_options_is_the_flag_alone():
    compile_options, _ = _compile_options_classes()
    read = compile_options.FromString(pjrt.backend_only(b""))
    assert read.executable_build_options.run_backend_only
    assert read.executable_build_options.device_ordinal == 0


def test_named_values_carry_each_type():
    values = pjrt._named_values({"platform_name": "cuda", "preallocate": False, "n": 4, "f": 0.5})
    by_name = {v.name.decode(): v for v in values}
    assert by_name["platform_name"].type == pjrt._STRING
    assert by_name["platform_name"].string_value == b"cuda"
    assert by_name["platform_name"].value_size == 4
    assert by_name["preallocate"].type == pjrt._BOOL and by_name["preallocate"].bool_value is False
    assert by_name["n"].type == pjrt._INT64 and by_name["n"].int64_value == 4
    assert by_name["f"].type == pjrt._FLOAT and by_name["f"].float_value == 0.5
