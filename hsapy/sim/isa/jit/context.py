"""The block of 64-bit words the generated code and its Python caller share.

One ``numpy.int64`` array per call: the caller fills the inputs (addresses of the batch's
arrays, sizes, the machine's LDS and the allocation table), the generated code writes the
outputs. Field numbers are the index of the word.
"""
from __future__ import annotations

# inputs
S = 0             # Batch.S: uint32[W, 128]
V = 1             # Batch.V: uint32[NV, W, L]
A = 2             # Batch.A: uint32[NA, W, L] (0 when the batch has no AGPRs)
EXEC = 3          # Batch.exec: bool[W, L]
SCC = 4           # Batch.scc: bool[W]
WAVES = 5         # W
ENTRY = 6         # which entry (segment) of the unit to start at
STOP_AT = 7       # stop before running code at or past this byte address (merge point)
BUDGET = 8        # return (to poll) once this many batch-instructions have run
WG = 9            # Batch.wg: int64[W] (batch-local workgroup of each wave)
LDS = 10          # machine.lds: uint8[workgroups * stride + 16]
LDS_STRIDE = 11
LDS_SIZE = 12     # LDS bytes a workgroup may address
ALLOC_STARTS = 13  # uint64[n] sorted allocation starts
ALLOC_ENDS = 14   # uint64[n] one past each allocation
ALLOC_AGENT = 15  # uint8[n]: 1 when the executing agent may access the allocation
ALLOC_COUNT = 16
CTL = 17          # int64[W]: per-wave next byte address (written at a divergent branch or a
                  # hand-back)
SCRATCH = 18      # Batch.scratch: uint8[W * L, private bytes] (0 when none)
SCRATCH_ROW = 19  # bytes per scratch row
NVGPRS = 20       # rows of V
NAGPRS = 21       # rows of A
SHARED_HI = 22    # high 32 bits of flat addresses in the shared (LDS) aperture
PRIVATE_HI = 23   # high 32 bits of flat addresses in the private aperture
# outputs
STATUS = 24
OUT_PC = 25       # CONTINUE / INTERPRET: where the batch goes on
BAIL_WAVE = 26    # BAIL: the wave that went back to the interpreter
BAIL_PC = 27      # BAIL: the instruction it goes back at
SEG_START = 28    # BAIL: where the waves after BAIL_WAVE are (the segment's first instruction)
SEG_END = 29      # BAIL: where the waves before BAIL_WAVE are (when CTL is not used)
LANES = 30        # lane-instructions executed (EXEC lanes after each instruction, summed)
WAVE_INSTS = 31   # wave-instructions executed
STEPS = 32        # batch-instructions executed
BAIL_CTL = 33     # BAIL: 1 when the waves before BAIL_WAVE have their next address in CTL
# the generated code's own
ALLOC_LAST = 34   # 1 + the allocation the last lookup found (0: none yet)
# input again
WHOLE = 35        # 1 when the batch holds every live wave of its chunk: a barrier releases at
                  # once (the interpreter's scheduler would find nothing else to run first)
RELEASED = 36     # output: barriers the compiled code released (batch-instructions)
SIZE = 40

# STATUS values
CONTINUE = 0      # the batch continues at OUT_PC (an instruction the unit does not run, a
                  # merge point, the end of the unit or the budget)
SPLIT = 1         # the waves continue at the addresses in CTL
BAIL = 2          # some waves are handed back to the interpreter (BAIL_* fields)
INTERPRET = 3     # the segment at OUT_PC must be interpreted (a merge point inside it)
