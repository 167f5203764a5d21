"""Every variant of the operator suite (hsapy/operators.py, kernels/*.hip) runs on the ISA
interpreter from its prebuilt gfx942 / gfx1201 code object and passes the operator's own check
against the FP64 reference. Sizes are small stand-ins (the edges the tutorial tests: partial
workgroups, odd row lengths) so the whole matrix stays quick."""
from __future__ import annotations

import numpy as np
import pytest
from isa_exec_harness import TARGETS, Device

from hsapy import operators as O

SIZES = {
    "vector_add": (1027,),
    "reduction": (1027,),
    "softmax": (6, 1025),
    "gemm": (33, 40, 24),
    "attention": (32, 65),
    "rmsnorm": (5, 257),
}


def _operators() -> list:
    ops = O.OPERATORS.values() if isinstance(O.OPERATORS, dict) else O.OPERATORS
    return [op for op in ops if op.name in SIZES]


CASES = [(target, op.name, variant.name) for target in TARGETS for op in _operators()
         for variant in op.variants]
# The other families' targets: the last (most elaborate) variant of every operator.
CASES += [(target, op.name, op.variants[-1].name) for target in ("gfx90a", "gfx1100")
          for op in _operators()]


@pytest.mark.parametrize("target,operator,variant", CASES)
def test_operator_variant_matches_reference(target, operator, variant):
    op = next(o for o in _operators() if o.name == operator)
    chosen = op.variant(variant)
    path = O.prebuilt_path(op, target)
    if not path.exists():
        pytest.skip(f"{path.name} not built (python3 kernels/build.py)")
    data = path.read_bytes()
    dev = Device(target)
    geometry = O.Device(target, dev.profile.wavefront_size, dev.profile.compute_units)
    size = SIZES[operator]
    problem = O.make_problem(op, chosen, size, op.inputs_kinds[0], geometry)
    addresses = {name: dev.buffer(buf.data.astype(np.float32))
                 for name, buf in problem.buffers.items()}
    kernels = {}
    for launch in chosen.plan(size, geometry):
        if launch.kernel not in kernels:
            kernels[launch.kernel] = dev.load(data, launch.kernel)
        args = [addresses[a] if isinstance(a, str)
                else float(a) if isinstance(a, np.floating) else int(a) for a in launch.args]
        dev.dispatch(kernels[launch.kernel], args, launch.grid, launch.block,
                     lds=launch.dynamic_lds)
    outputs = {}
    for name in problem.reference:
        shape = problem.buffers[name].data.shape
        outputs[name] = dev.read(addresses[name], np.float32, int(np.prod(shape))).reshape(shape)
    result = O.check_outputs(outputs, problem.reference, op.tolerance)
    assert result.ok, (result.worst, result.max_err, result.tolerance)
