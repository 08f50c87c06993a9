"""Small HLO modules for the CLI-level tests, each with a known answer. The
hand-solved cases of the pass itself live beside it in C++ (patch_src/*_test.cc)."""

from __future__ import annotations

import re
from pathlib import Path

# Modules the C++ unit tests plan on too: one copy, in patch_src/remat_test_util.h.
_SHARED = (Path(__file__).resolve().parents[1] / "patch_src" / "remat_test_util.h").read_text()


def _shared(name: str) -> str:
    """The HLO text of `name` (kChain) in remat_test_util.h."""
    found = re.search(rf'constexpr absl::string_view {name} = R"\((.*?)\)";', _SHARED, re.S)
    if found is None:
        raise KeyError(f"{name} is not in patch_src/remat_test_util.h")
    return found.group(1)


CHAIN = _shared("kChain")
INVARIANT_STACK = _shared("kInvariantStack")

DIAMOND = """
HloModule diamond, is_scheduled=true

ENTRY main {
  p = f32[256,256]{1,0} parameter(0)
  top = f32[256,256]{1,0} exponential(p)
  left = f32[256,256]{1,0} tanh(top)
  right = f32[256,256]{1,0} negate(top)
  l2 = f32[256,256]{1,0} exponential(left)
  r2 = f32[256,256]{1,0} exponential(right)
  l3 = f32[256,256]{1,0} tanh(l2)
  r3 = f32[256,256]{1,0} tanh(r2)
  join = f32[256,256]{1,0} add(l3, r3)
  late1 = f32[256,256]{1,0} multiply(join, left)
  ROOT late2 = f32[256,256]{1,0} multiply(late1, right)
}
"""

# A residual block with a bitcast of the saved activation, as TensorFlow's CPU
# pipeline leaves them, and a broadcast (free to recompute) kept for the end.
RESIDUAL = """
HloModule residual, is_scheduled=true

ENTRY main {
  x = f32[64,1024]{1,0} parameter(0)
  w = f32[1024,1024]{1,0} parameter(1)
  zero = f32[] constant(0)
  zeros = f32[64,1024]{1,0} broadcast(zero), dimensions={}
  h = f32[64,1024]{1,0} dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  relu = f32[64,1024]{1,0} maximum(h, zeros)
  saved = f32[64,32,32]{2,1,0} bitcast(relu)
  h2 = f32[64,1024]{1,0} dot(relu, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  e2 = f32[64,1024]{1,0} exponential(h2)
  t2 = f32[64,1024]{1,0} tanh(e2)
  out = f32[64,1024]{1,0} add(t2, x)
  back = f32[64,1024]{1,0} bitcast(saved)
  mask = pred[64,1024]{1,0} compare(back, zeros), direction=GT
  ROOT grad = f32[64,1024]{1,0} select(mask, out, zeros)
}
"""

TUPLE_OUTPUT = _shared("kTupleOutput")

WHILE_LOOP = _shared("kWhileLoop")

CONDITIONAL = """
HloModule conditional, is_scheduled=true

on_true {
  x = f32[128,128]{1,0} parameter(0)
  ROOT y = f32[128,128]{1,0} exponential(x)
}

on_false {
  x = f32[128,128]{1,0} parameter(0)
  ROOT y = f32[128,128]{1,0} tanh(x)
}

ENTRY main {
  p = f32[128,128]{1,0} parameter(0)
  flag = pred[] parameter(1)
  a = f32[128,128]{1,0} exponential(p)
  b = f32[128,128]{1,0} tanh(a)
  c = f32[128,128]{1,0} conditional(flag, b, b), true_computation=on_true, false_computation=on_false
  d = f32[128,128]{1,0} exponential(c)
  e = f32[128,128]{1,0} add(d, a)
  ROOT r = f32[128,128]{1,0} add(e, p)
}
"""


SMALL_NODE = _shared("kSmallNode")

# Not scheduled: the engine must schedule it itself.
UNSCHEDULED = CHAIN.replace(", is_scheduled=true", "")

MALFORMED = """
HloModule broken

ENTRY main {
  p = f32[16]{0} parameter(0)
  ROOT q = f32[16]{0} frobnicate(p)
}
"""


# Parses, but the add's operands disagree in shape.
SHAPE_MISMATCH = """
HloModule mismatch

ENTRY main {
  p = f32[16]{0} parameter(0)
  q = f32[8]{0} parameter(1)
  ROOT r = f32[16]{0} add(p, q)
}
"""

# XLA's parser CHECK-fails (aborts) on a tuple without a tuple shape: the CLI
# must refuse it first.
TUPLE_WITHOUT_TUPLE_SHAPE = """
HloModule bad_tuple

ENTRY main {
  p = f32[4]{0} parameter(0)
  ROOT t = f32[4]{0} tuple(p)
}
"""

# The broadcast's operand dimension does not match; XLA's verifier message
# quotes the instruction with its (long) metadata.
BROADCAST_MISMATCH = """
HloModule bad_broadcast

ENTRY main {
  p = f32[4]{0} parameter(0)
  ROOT b = f32[4,3]{1,0} broadcast(p), dimensions={1}, metadata={op_name="%s" source_line=7}
}
""" % ("x" * 600)

# Scheduled, but `b` is scheduled before its operand `a`.
BAD_SCHEDULE = """
HloModule bad_schedule, is_scheduled=true

ENTRY main {
  p = f32[16]{0} parameter(0)
  b = f32[16]{0} tanh(a)
  a = f32[16]{0} exponential(p)
  ROOT r = f32[16]{0} add(a, b)
}
"""

VALUE_BYTES = 256 * 256 * 4

# A value that stores smaller on a tiled target in the other layout: f32[512,16]
# pads its minor dimension 16 to 128 (256 KiB); with the two dimensions
# swapped it pads nothing (32 KiB). Every schedule keeps `a` (read by the
# dot) waiting across three big temporaries for `r`.
COMPRESSIBLE = """
HloModule compressible, is_scheduled=true

ENTRY main {
  p = f32[512,16]{1,0} parameter(0)
  a = f32[512,16]{1,0} exponential(p)
  t1 = f32[512,512]{1,0} dot(a, a), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  t2 = f32[512,512]{1,0} tanh(t1)
  t3 = f32[512,512]{1,0} add(t2, t1)
  s = f32[512,16]{1,0} slice(t3), slice={[0:512], [0:16]}
  ROOT r = f32[512,16]{1,0} add(s, a)
}
"""

PATH_CHAIN = _shared("kPathChain")
