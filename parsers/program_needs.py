"""What a program needs from the runner that runs it, from the program alone.

Its method pool (planned buffers outside the fast pool, unplanned inputs, an estimate of
Method::init's own allocations), the ETDump debug buffer that keeps every kernel call's
outputs, the Cortex-M backend's CMSIS-NN scratch, and which kernel library registers each
operator. The fit check (:mod:`etu.parsers.fit`) holds these against a firmware; the
runner build (``runner/build_plan.py``) sizes its pools from them. Pure.
"""

from __future__ import annotations

from etu.parsers.pte import Program, Tensor

FAST_MEMORY_ID = 3  # the runner puts planned buffer mem_id 3 in its fast memory pool


def method_pool_need(program: Program) -> tuple[int, int]:
    """(planned bytes outside the fast pool, bytes of unplanned inputs the runner allocates)."""
    planned = unplanned_inputs = 0
    for plan in program.plans:
        planned += sum(
            size
            for mem_id, size in enumerate(plan.non_const_buffer_sizes)
            if mem_id and mem_id != FAST_MEMORY_ID
        )
        for index in plan.inputs:
            value = plan.values[index]
            if isinstance(value, Tensor) and value.storage == "input":
                unplanned_inputs += value.nbytes
    return planned, unplanned_inputs


DEBUG_ENTRY_ALIGN = 64  # ETDump's buffer data sink aligns each tensor it keeps
ETDUMP_EVENT_BYTES = 512  # an upper bound of one instruction's events in the ETDump itself


def intermediate_output_bytes(program: Program) -> int:
    """The debug buffer that holds every kernel call's outputs (ETDump with intermediate
    outputs): an out-variant call's returns are its last argument, a tensor or a list of
    them; each is kept aligned."""
    total = 1024
    for plan in program.plans:
        values = plan.values
        for instruction in plan.instructions:
            args = getattr(instruction, "args", ())
            last = values[args[-1]] if args and 0 <= args[-1] < len(values) else None
            if isinstance(last, Tensor):
                outputs = [last]
            elif last is not None and last.kind == "TensorList":
                outputs = [values[int(i)] for i in last.payload or () if 0 <= int(i) < len(values)]
            else:
                outputs = []
            for tensor in outputs:
                if isinstance(tensor, Tensor):
                    aligned = -(-tensor.nbytes // DEBUG_ENTRY_ALIGN) * DEBUG_ENTRY_ALIGN
                    total += aligned + DEBUG_ENTRY_ALIGN
    return total


def intermediate_pool_bytes(program: Program) -> tuple[int, int]:
    """(the debug buffer, what it takes from the method pool): the runner also takes its
    base64 text from that pool when it prints the buffer and the ETDump."""
    debug = intermediate_output_bytes(program)
    events = sum(ETDUMP_EVENT_BYTES * len(plan.instructions) for plan in program.plans) + 4096
    return debug, debug + (4 * max(debug, events) + 2) // 3 + 1024


def metadata_estimate(program: Program) -> int:
    """A rough upper bound of what Method::init allocates besides the buffers (estimate)."""
    total = 1024
    for plan in program.plans:
        total += 16 * len(plan.values) + 16 * len(plan.instructions) + 64 * len(plan.delegates)
        total += sum(96 + 16 * len(v.sizes) for v in plan.values if isinstance(v, Tensor))
    return total


CORTEX_M_PREFIX = "cortex_m::"
CORTEX_M_BUILD_FLAG = "-DEXECUTORCH_BUILD_CORTEX_M=ON"
# The Cortex-M backend's scratch tensors (CMSIS-NN's context buffers): argument positions in
# backends/cortex_m/ops/operators.yaml (the same in the pinned source and executorch 1.5.1;
# each _nhwc variant takes its base operator's). Planned tensors: part of the method pool.
CORTEX_M_SCRATCH_ARGUMENTS = {
    "quantized_conv2d": (12,),
    "quantized_depthwise_conv2d": (13,),
    "quantized_transpose_conv2d": (13, 14),
    "quantized_avg_pool2d": (8,),
    "quantized_batch_matmul": (7,),
}


def kernel_library(name: str) -> str:
    """Which kernel library registers operator ``name`` (``ns::op.overload``) in a runner:
    ``cmsis-nn`` (the Cortex-M backend's cortex_m_kernels, on CMSIS-NN), ``quantized``,
    ``prim`` or ``portable``."""
    if name.startswith(CORTEX_M_PREFIX):
        return "cmsis-nn"
    if name.startswith("quantized_decomposed::"):
        return "quantized"
    if name.startswith(("executorch_prim::", "aten::sym_")):
        return "prim"
    return "portable"


def cortex_m_scratch(program: Program) -> int:
    """Bytes of CMSIS-NN scratch the program's cortex_m kernel calls are given (each call's
    own planned tensor; the method pool holds them)."""
    from etu.parsers.pte import KernelCall

    total = 0
    for plan in program.plans:
        for instruction in plan.instructions:
            if not isinstance(instruction, KernelCall):
                continue
            if not 0 <= instruction.op_index < len(plan.operators):
                continue
            name = plan.operators[instruction.op_index].name
            if not name.startswith(CORTEX_M_PREFIX):
                continue
            base = name.removeprefix(CORTEX_M_PREFIX).removesuffix("_nhwc")
            for position in CORTEX_M_SCRATCH_ARGUMENTS.get(base, ()):
                if position < len(instruction.args) and 0 <= instruction.args[position] < len(
                    plan.values
                ):
                    value = plan.values[instruction.args[position]]
                    if isinstance(value, Tensor):
                        total += value.nbytes
    return total
