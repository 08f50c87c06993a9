# ruff: noqa: E501  (HLO text: one instruction a line, as XLA prints it)
"""Small GPU-shaped HLO modules: what XLA's GPU pipeline leaves for the pass.

Convolutions are tuple-shaped cuDNN custom-calls `(result, u8[N] scratch)`
with the forward convolution's window and dim_labels on the instruction, read
through a get-tuple-element; GEMMs are tuple-shaped `__cublas$gemm` calls
`(result, u8[N] workspace)` with their dot dimension numbers in the backend
config, or Triton GEMM fusions; elementwise work is in loop fusions, some of
them multi-output. The format follows XLA's own GPU tests at the pinned
commit (e.g. xla/service/gpu/cudnn_support_utils_test.cc,
xla/service/gpu/transforms/dynamic_slice_fusion_rewriter_test.cc).

Every module has one value, `saved` (2 MiB), read at once and again at the
end, while the middle of the step holds its own peak; nothing else lives
across that peak, and no schedule can delay its producer. Recomputing that
producer next to the late use is the only way to bring the peak down by a
value.
"""

from __future__ import annotations

# f32[8,32,32,64]: 2 MiB per activation.
VALUE_BYTES = 8 * 32 * 32 * 64 * 4
SCRATCH_BYTES = 65536
# 2 x output elements x (3x3 kernel x 64 input features).
CONV_FLOPS = 2 * (8 * 32 * 32 * 64) * (3 * 3 * 64)
# f32[512,256] x f32[256,1024]: 2 x M x N x K.
GEMM_FLOPS = 2 * 512 * 1024 * 256

_CONV_CONFIG = (
    'backend_config={"operation_queue_id":"0","wait_on_operation_queues":[],'
    '"cudnn_conv_backend_config":{"activation_mode":"kNone","conv_result_scale":1,'
    '"side_input_scale":0,"leakyrelu_alpha":0},"force_earliest_schedule":false}'
)


# The middle of the step: loop fusions over a fresh activation, then a
# reduction to a scalar. Only `saved` is live across it. A fused computation
# belongs to one fusion instruction: each gets its own.
def _bodies(shape: str, dims: str) -> str:
    def unary(name: str, op: str) -> str:
        return f"""
{name} {{
  p0 = {shape} parameter(0)
  ROOT r = {shape} {op}(p0)
}}
"""

    return (
        unary("fused_exp1", "exponential")
        + unary("fused_tanh1", "tanh")
        + unary("fused_exp2", "exponential")
        + unary("fused_tanh2", "tanh")
        + f"""
fused_add {{
  p0 = {shape} parameter(0)
  p1 = {shape} parameter(1)
  ROOT a = {shape} add(p0, p1)
}}

fused_add2 {{
  p0 = {shape} parameter(0)
  p1 = {shape} parameter(1)
  ROOT a = {shape} add(p0, p1)
}}

add_f32 {{
  l = f32[] parameter(0)
  r = f32[] parameter(1)
  ROOT s = f32[] add(l, r)
}}

fused_reduce {{
  p0 = {shape} parameter(0)
  zero = f32[] constant(0)
  ROOT r = f32[] reduce(p0, zero), dimensions={{{dims}}}, to_apply=add_f32
}}

fused_scale {{
  p0 = {shape} parameter(0)
  p1 = f32[] parameter(1)
  b = {shape} broadcast(p1), dimensions={{}}
  ROOT m = {shape} multiply(p0, b)
}}
"""
    )


def _middle(shape: str, start: str, reduce_kind: str = "kInput") -> str:
    return f"""
  m1 = {shape} fusion({start}), kind=kLoop, calls=fused_exp1
  m2 = {shape} fusion(m1), kind=kLoop, calls=fused_tanh1
  m3 = {shape} fusion(m2), kind=kLoop, calls=fused_exp2
  m4 = {shape} fusion(m3, m2), kind=kLoop, calls=fused_add
  s = f32[] fusion(m4), kind={reduce_kind}, calls=fused_reduce
"""


_ACT = "f32[8,32,32,64]{3,2,1,0}"
_FUSED_BODIES = _bodies(_ACT, "0,1,2,3")
# The middle reads `saved` first: no schedule can delay its producer.
_MIDDLE = _middle(_ACT, "saved")


def _conv_module(
    name: str,
    target: str = "__cudnn$convForward",
    attrs: str = "",
    scratch: int = SCRATCH_BYTES,
    late: str = "fused_scale(saved, s)",
) -> str:
    late_body, late_args = late.rstrip(")").split("(")
    return f"""
HloModule {name}, is_scheduled=true
{_FUSED_BODIES}
ENTRY main {{
  x = f32[8,32,32,64]{{3,2,1,0}} parameter(0)
  w = f32[3,3,64,64]{{3,2,1,0}} parameter(1)
  conv = (f32[8,32,32,64]{{3,2,1,0}}, u8[{scratch}]{{0}}) custom-call(x, w), window={{size=3x3 pad=1_1x1_1}}, dim_labels=b01f_01io->b01f, custom_call_target="{target}"{attrs}, {_CONV_CONFIG}
  saved = f32[8,32,32,64]{{3,2,1,0}} get-tuple-element(conv), index=0
{_MIDDLE}
  ROOT out = f32[8,32,32,64]{{3,2,1,0}} fusion({late_args}), kind=kLoop, calls={late_body}
}}
"""


# The forward convolution's output is saved for the end of the step.
CONV_FORWARD = _conv_module("conv_forward")


def conv_with_scratch(scratch: int) -> str:
    """CONV_FORWARD whose late use also reads `m4`: where a clone would run,
    more is live than where the convolution first ran, so a clone with a
    large scratch would raise the peak."""
    return _conv_module(f"conv_scratch_{scratch}", scratch=scratch, late="fused_add2(saved, m4)")


# The same, but the call is marked as having a side effect: never recomputed.
CONV_SIDE_EFFECT = _conv_module("conv_side_effect", attrs=", custom_call_has_side_effect=true")

# The same, with a target outside the allow-list: never recomputed.
UNKNOWN_TARGET = _conv_module("unknown_target", target="__my$conv")

# Backward convolutions: the window and dim_labels describe the forward
# convolution x (*) w -> y; backward-input reads (dy, w) and writes dx,
# backward-filter reads (x, dy) and writes dw.
CONV_BACKWARD = f"""
HloModule conv_backward, is_scheduled=true
{_FUSED_BODIES}
ENTRY main {{
  x = f32[8,32,32,64]{{3,2,1,0}} parameter(0)
  w = f32[3,3,64,64]{{3,2,1,0}} parameter(1)
  dy = f32[8,32,32,64]{{3,2,1,0}} parameter(2)
  dx.t = (f32[8,32,32,64]{{3,2,1,0}}, u8[{SCRATCH_BYTES}]{{0}}) custom-call(dy, w), window={{size=3x3 pad=1_1x1_1}}, dim_labels=b01f_01io->b01f, custom_call_target="__cudnn$convBackwardInput", {_CONV_CONFIG}
  saved = f32[8,32,32,64]{{3,2,1,0}} get-tuple-element(dx.t), index=0
  dw.t = (f32[3,3,64,64]{{3,2,1,0}}, u8[{SCRATCH_BYTES}]{{0}}) custom-call(x, dy), window={{size=3x3 pad=1_1x1_1}}, dim_labels=b01f_01io->b01f, custom_call_target="__cudnn$convBackwardFilter", {_CONV_CONFIG}
  dw = f32[3,3,64,64]{{3,2,1,0}} get-tuple-element(dw.t), index=0
{_MIDDLE}
  scaled = f32[8,32,32,64]{{3,2,1,0}} fusion(saved, s), kind=kLoop, calls=fused_scale
  ROOT out = (f32[8,32,32,64]{{3,2,1,0}}, f32[3,3,64,64]{{3,2,1,0}}) tuple(scaled, dw)
}}
"""

# A multi-output loop fusion computes two activations in one pass; `early` is
# read at once, `saved` only at the end. No custom-call: XLA:CPU runs it, so
# numerics are compared.
MULTI_OUTPUT_FUSION = f"""
HloModule multi_output_fusion, is_scheduled=true
{_FUSED_BODIES}
fused_pair {{
  p0 = f32[8,32,32,64]{{3,2,1,0}} parameter(0)
  e = f32[8,32,32,64]{{3,2,1,0}} exponential(p0)
  n = f32[8,32,32,64]{{3,2,1,0}} negate(p0)
  ROOT t = (f32[8,32,32,64]{{3,2,1,0}}, f32[8,32,32,64]{{3,2,1,0}}) tuple(e, n)
}}

ENTRY main {{
  x = f32[8,32,32,64]{{3,2,1,0}} parameter(0)
  pair = (f32[8,32,32,64]{{3,2,1,0}}, f32[8,32,32,64]{{3,2,1,0}}) fusion(x), kind=kLoop, calls=fused_pair
  early = f32[8,32,32,64]{{3,2,1,0}} get-tuple-element(pair), index=0
  saved = f32[8,32,32,64]{{3,2,1,0}} get-tuple-element(pair), index=1
  e2 = f32[8,32,32,64]{{3,2,1,0}} fusion(early), kind=kLoop, calls=fused_tanh2
{_middle(_ACT, "e2", reduce_kind="kLoop")}  ROOT out = f32[8,32,32,64]{{3,2,1,0}} fusion(saved, s), kind=kLoop, calls=fused_scale
}}
"""

_GEMM_CONFIG = (
    'backend_config={"operation_queue_id":"0","wait_on_operation_queues":[],'
    '"gemm_backend_config":{"alpha_real":1,"beta":0,"dot_dimension_numbers":{'
    '"lhs_contracting_dimensions":["1"],"rhs_contracting_dimensions":["0"],'
    '"lhs_batch_dimensions":[],"rhs_batch_dimensions":[]},"alpha_imag":0,'
    '"precision_config":{"operand_precision":["DEFAULT","DEFAULT"]},'
    '"epilogue":"DEFAULT","grad_x":false,"grad_y":false},'
    '"force_earliest_schedule":false}'
)

_MAT = "f32[512,1024]{1,0}"

# A cuBLAS GEMM (as with --xla_gpu_enable_triton_gemm=false) whose f32[512,1024]
# result (2 MiB) is saved for the end.
CUBLAS_GEMM = f"""
HloModule cublas_gemm, is_scheduled=true

{_bodies(_MAT, "0,1")}
ENTRY main {{
  a = f32[512,256]{{1,0}} parameter(0)
  b = f32[256,1024]{{1,0}} parameter(1)
  gemm = (f32[512,1024]{{1,0}}, u8[{SCRATCH_BYTES}]{{0}}) custom-call(a, b), custom_call_target="__cublas$gemm", {_GEMM_CONFIG}
  saved = f32[512,1024]{{1,0}} get-tuple-element(gemm), index=0
{_middle(_MAT, "saved")}  ROOT out = f32[512,1024]{{1,0}} fusion(saved, s), kind=kLoop, calls=fused_scale
}}
"""

# The same GEMM as a Triton GEMM fusion (kind=kCustom), as the GPU pipeline
# emits by default: an array result, its FLOPs in the dot inside.
TRITON_GEMM = (
    CUBLAS_GEMM.replace("HloModule cublas_gemm", "HloModule triton_gemm")
    .replace(
        "ENTRY main {",
        """triton_gemm_body {
  p0 = f32[512,256]{1,0} parameter(0)
  p1 = f32[256,1024]{1,0} parameter(1)
  ROOT d = f32[512,1024]{1,0} dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}

ENTRY main {""",
    )
    .replace(
        f"""  gemm = (f32[512,1024]{{1,0}}, u8[{SCRATCH_BYTES}]{{0}}) custom-call(a, b), custom_call_target="__cublas$gemm", {_GEMM_CONFIG}
  saved = f32[512,1024]{{1,0}} get-tuple-element(gemm), index=0""",
        """  saved = f32[512,1024]{1,0} fusion(a, b), kind=kCustom, calls=triton_gemm_body, backend_config={"fusion_backend_config":{"kind":"__triton_gemm","triton_gemm_config":{"block_m":"64","block_n":"64","block_k":"32","split_k":"1","num_stages":"3","num_warps":"4","num_ctas":"1"}}}""",
    )
)
