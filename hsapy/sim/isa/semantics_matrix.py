"""Matrix instructions: MFMA / SMFMAC (gfx90a, gfx942) and WMMA / SWMMAC (gfx11, gfx12).

Every matrix instruction computes ``D = A x B + C`` over one wave: the elements of A (M x K),
B (K x N), C and D (M x N), for each of ``blocks`` independent products, are spread over the
lanes and registers of the operands. :func:`compile_matrix` compiles one instruction into a
closure that gathers the matrices out of the registers (index arrays computed once per
instruction), multiplies them with the precision model of that instruction, and scatters D
back.

Sources of the facts used here (the ISA guides refer to the calculator for the layouts):

- Register layouts, modifiers and which instruction takes which: AMD Matrix Instruction
  Calculator (github.com/ROCm/amd_matrix_instruction_calculator, which the CDNA3 ISA guide's
  "Matrix Arithmetic Instructions" chapter and the RDNA3/RDNA4 guides' "Wave Matrix Multiply
  Accumulate" sections point to for the per-lane layouts), its README sections "Details of the
  VOP3P-MAI ... Encoding" (CBSZ, ABID, BLGP, ACC, ACC_CD) and "Details of the VOP3P Matrix
  Multiplication Instruction Encoding in RDNA3 and RDNA4" (NEG, NEG_HI, OPSEL, CLAMP).
- Arithmetic of gfx942 (CDNA3) and gfx90a (CDNA2) floating-point MFMA: the AMD guides do not
  specify it; the bit-accurate model of MMA-Sim (P. Xie et al., "MMA-Sim: Bit-Accurate
  Reference Model of Tensor Cores and Matrix Cores", arXiv:2511.10909, validated bitwise on
  MI250 and MI300X hardware) is followed: f32/f64 are a chain of fused multiply-adds in k order;
  CDNA3 f16/bf16/xf32/fp8 sum groups of products with truncation to 24 fractional bits at the
  group's largest exponent and add C rounding down, then round to f32; CDNA2 f16/bf16 sum
  pairwise in f32 and flush denormals (as "MI200 MFMA behavior specifics" in the MIOpen
  documentation also states).
- Instructions no hardware model covers (SMFMAC, WMMA, SWMMAC with float inputs): the exact sum
  of the products and C, rounded once to the destination type (round to nearest even,
  denormals kept). Real hardware may differ from this in the last bits; the error bound of any
  implementation that accumulates in at least f32 covers both.
- 8-bit floats: gfx942 reads FP8/BF8 as E4M3FNUZ / E5M2FNUZ (HIP "FP8 numbers": gfx940-942
  support the FNUZ formats only), gfx12 as the OCP E4M3 / E5M2 formats (LLVM D106160: gfx12
  matrix instructions take the OCP formats).

The element formats and the arithmetic models are in matrix_arith.py; this module holds the
instruction table, the register layouts and the compiling.

EXEC: the simulator requires every lane of the wave to be active; a matrix instruction reached
with inactive lanes stops the queue naming it.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from hsapy.sim.isa.instruction import Instruction, Operand
from hsapy.sim.isa.matrix_arith import (
    _FP8,  # noqa: F401  (the tests read the 8-bit tables here)
    _MIN_EXP,
    BITS,
    _flush,
    _multiply,
    _round_to,
    decode_elements,
)
from hsapy.sim.isa.operand_access import NotImplementedOperand, const_bits

__all__ = ["MatrixOp", "compile_matrix", "matrix_op", "MATRIX_OPS", "TARGET_OPS", "decode_elements",
           "gfx9_layout", "gfx12_layout", "gfx11_layout"]

Closure = Callable[[Any, Any], None]


@dataclass(frozen=True)
class MatrixOp:
    """One matrix instruction: shape, element types and what its encoding lets it modify.

    ``a``/``b`` are the element types of the A and B sources, ``acc`` that of C and D.
    ``model`` names the arithmetic (see the module docstring): ``"fma"`` (a chain of fused
    multiply-adds), ``"cdna3"`` (grouped truncating sums), ``"cdna2"`` (pairwise f32 sums,
    denormals flushed), ``"round_once"`` (exact sum, one rounding) or ``"int"`` (exact).
    ``group`` is the number of k per group of the grouped models.
    """

    m: int
    n: int
    k: int
    blocks: int
    a: str
    b: str
    acc: str
    model: str
    group: int = 0
    sparse: bool = False
    blgp: bool = False        # gfx9: BLGP lane patterns of B (gfx942 f64: BLGP negates A/B/C)
    cbsz_abid: bool = False   # gfx9: CBSZ/ABID broadcast of one A block to others
    neg: bool = False         # gfx11/gfx12: NEG/NEG_HI (float: negate; integer: signedness)
    flush: bool = False       # gfx90a f16/bf16: denormal inputs and results flushed to zero


def _ops(rows: dict[str, tuple]) -> dict[str, MatrixOp]:
    return {name: MatrixOp(*row[:-1], **row[-1]) if isinstance(row[-1], dict) else MatrixOp(*row)
            for name, row in rows.items()}


_BLGP_CBSZ = {"blgp": True, "cbsz_abid": True}
_BLGP = {"blgp": True}

# gfx942 (CDNA3). Shapes, types and modifier support: the calculator's CDNA3 table; models:
# MMA-Sim's CDNA3 algorithms (group 8 for f16/bf16 (K when smaller), 4 for xf32, 16 for fp8).
_GFX942 = _ops({
    "v_mfma_f32_32x32x1_2b_f32": (32, 32, 1, 2, "f32", "f32", "f32", "fma", 0, _BLGP_CBSZ),
    "v_mfma_f32_16x16x1_4b_f32": (16, 16, 1, 4, "f32", "f32", "f32", "fma", 0, _BLGP_CBSZ),
    "v_mfma_f32_4x4x1_16b_f32": (4, 4, 1, 16, "f32", "f32", "f32", "fma", 0, _BLGP_CBSZ),
    "v_mfma_f32_32x32x2_f32": (32, 32, 2, 1, "f32", "f32", "f32", "fma", 0, _BLGP),
    "v_mfma_f32_16x16x4_f32": (16, 16, 4, 1, "f32", "f32", "f32", "fma", 0, _BLGP),
    "v_mfma_f32_16x16x8_xf32": (16, 16, 8, 1, "xf32", "xf32", "f32", "cdna3", 4),
    "v_mfma_f32_32x32x4_xf32": (32, 32, 4, 1, "xf32", "xf32", "f32", "cdna3", 4),
    "v_mfma_f32_32x32x4_2b_f16": (32, 32, 4, 2, "f16", "f16", "f32", "cdna3", 4, _BLGP_CBSZ),
    "v_mfma_f32_16x16x4_4b_f16": (16, 16, 4, 4, "f16", "f16", "f32", "cdna3", 4, _BLGP_CBSZ),
    "v_mfma_f32_4x4x4_16b_f16": (4, 4, 4, 16, "f16", "f16", "f32", "cdna3", 4, _BLGP_CBSZ),
    "v_mfma_f32_32x32x8_f16": (32, 32, 8, 1, "f16", "f16", "f32", "cdna3", 8),
    "v_mfma_f32_16x16x16_f16": (16, 16, 16, 1, "f16", "f16", "f32", "cdna3", 8),
    "v_mfma_f32_32x32x4_2b_bf16": (32, 32, 4, 2, "bf16", "bf16", "f32", "cdna3", 4, _BLGP_CBSZ),
    "v_mfma_f32_16x16x4_4b_bf16": (16, 16, 4, 4, "bf16", "bf16", "f32", "cdna3", 4, _BLGP_CBSZ),
    "v_mfma_f32_4x4x4_16b_bf16": (4, 4, 4, 16, "bf16", "bf16", "f32", "cdna3", 4, _BLGP_CBSZ),
    "v_mfma_f32_32x32x8_bf16": (32, 32, 8, 1, "bf16", "bf16", "f32", "cdna3", 8),
    "v_mfma_f32_16x16x16_bf16": (16, 16, 16, 1, "bf16", "bf16", "f32", "cdna3", 8),
    "v_mfma_i32_32x32x4_2b_i8": (32, 32, 4, 2, "i8", "i8", "i32", "int", 0, _BLGP_CBSZ),
    "v_mfma_i32_16x16x4_4b_i8": (16, 16, 4, 4, "i8", "i8", "i32", "int", 0, _BLGP_CBSZ),
    "v_mfma_i32_4x4x4_16b_i8": (4, 4, 4, 16, "i8", "i8", "i32", "int", 0, _BLGP_CBSZ),
    "v_mfma_i32_32x32x16_i8": (32, 32, 16, 1, "i8", "i8", "i32", "int"),
    "v_mfma_i32_16x16x32_i8": (16, 16, 32, 1, "i8", "i8", "i32", "int"),
    "v_mfma_f64_16x16x4_f64": (16, 16, 4, 1, "f64", "f64", "f64", "fma", 0, _BLGP),
    "v_mfma_f64_4x4x4_4b_f64": (4, 4, 4, 4, "f64", "f64", "f64", "fma", 0, _BLGP),
    **{f"v_mfma_f32_{shape}_{a}_{b}": (m, m, k, 1, a, b, "f32", "cdna3", 16)
       for shape, m, k in (("16x16x32", 16, 32), ("32x32x16", 32, 16))
       for a in ("fp8", "bf8") for b in ("fp8", "bf8")},
    # SMFMAC: D += A x B with A 4:2 sparse; CBSZ/ABID pick the set of compression indices
    "v_smfmac_f32_16x16x32_f16": (16, 16, 32, 1, "f16", "f16", "f32", "round_once", 0,
                                  {"sparse": True}),
    "v_smfmac_f32_32x32x16_f16": (32, 32, 16, 1, "f16", "f16", "f32", "round_once", 0,
                                  {"sparse": True}),
    "v_smfmac_f32_16x16x32_bf16": (16, 16, 32, 1, "bf16", "bf16", "f32", "round_once", 0,
                                   {"sparse": True}),
    "v_smfmac_f32_32x32x16_bf16": (32, 32, 16, 1, "bf16", "bf16", "f32", "round_once", 0,
                                   {"sparse": True}),
    "v_smfmac_i32_16x16x64_i8": (16, 16, 64, 1, "i8", "i8", "i32", "int", 0, {"sparse": True}),
    "v_smfmac_i32_32x32x32_i8": (32, 32, 32, 1, "i8", "i8", "i32", "int", 0, {"sparse": True}),
    **{f"v_smfmac_f32_{shape}_{a}_{b}": (m, m, k, 1, a, b, "f32", "round_once", 0,
                                         {"sparse": True})
       for shape, m, k in (("16x16x64", 16, 64), ("32x32x32", 32, 32))
       for a in ("fp8", "bf8") for b in ("fp8", "bf8")},
})

# gfx90a (CDNA2): the calculator's CDNA2 table; MMA-Sim's CDNA2 models (pairwise groups of 4,
# or 2 for the original bf16 forms, with denormals flushed).
_FLUSH4 = {"flush": True}
_GFX90A = _ops({
    "v_mfma_f32_32x32x1f32": (32, 32, 1, 2, "f32", "f32", "f32", "fma", 0, _BLGP_CBSZ),
    "v_mfma_f32_16x16x1f32": (16, 16, 1, 4, "f32", "f32", "f32", "fma", 0, _BLGP_CBSZ),
    "v_mfma_f32_4x4x1f32": (4, 4, 1, 16, "f32", "f32", "f32", "fma", 0, _BLGP_CBSZ),
    "v_mfma_f32_32x32x2f32": (32, 32, 2, 1, "f32", "f32", "f32", "fma", 0, _BLGP),
    "v_mfma_f32_16x16x4f32": (16, 16, 4, 1, "f32", "f32", "f32", "fma", 0, _BLGP),
    "v_mfma_f32_32x32x4f16": (32, 32, 4, 2, "f16", "f16", "f32", "cdna2", 4,
                              {**_BLGP_CBSZ, **_FLUSH4}),
    "v_mfma_f32_16x16x4f16": (16, 16, 4, 4, "f16", "f16", "f32", "cdna2", 4,
                              {**_BLGP_CBSZ, **_FLUSH4}),
    "v_mfma_f32_4x4x4f16": (4, 4, 4, 16, "f16", "f16", "f32", "cdna2", 4,
                            {**_BLGP_CBSZ, **_FLUSH4}),
    "v_mfma_f32_32x32x8f16": (32, 32, 8, 1, "f16", "f16", "f32", "cdna2", 4,
                              {**_BLGP, **_FLUSH4}),
    "v_mfma_f32_16x16x16f16": (16, 16, 16, 1, "f16", "f16", "f32", "cdna2", 4,
                               {**_BLGP, **_FLUSH4}),
    "v_mfma_i32_32x32x4i8": (32, 32, 4, 2, "i8", "i8", "i32", "int", 0, _BLGP_CBSZ),
    "v_mfma_i32_16x16x4i8": (16, 16, 4, 4, "i8", "i8", "i32", "int", 0, _BLGP_CBSZ),
    "v_mfma_i32_4x4x4i8": (4, 4, 4, 16, "i8", "i8", "i32", "int", 0, _BLGP_CBSZ),
    "v_mfma_i32_32x32x8i8": (32, 32, 8, 1, "i8", "i8", "i32", "int", 0, _BLGP),
    "v_mfma_i32_16x16x16i8": (16, 16, 16, 1, "i8", "i8", "i32", "int", 0, _BLGP),
    "v_mfma_f32_32x32x4bf16_1k": (32, 32, 4, 2, "bf16", "bf16", "f32", "cdna2", 4,
                                  {**_BLGP_CBSZ, **_FLUSH4}),
    "v_mfma_f32_16x16x4bf16_1k": (16, 16, 4, 4, "bf16", "bf16", "f32", "cdna2", 4,
                                  {**_BLGP_CBSZ, **_FLUSH4}),
    "v_mfma_f32_4x4x4bf16_1k": (4, 4, 4, 16, "bf16", "bf16", "f32", "cdna2", 4,
                                {**_BLGP_CBSZ, **_FLUSH4}),
    "v_mfma_f32_32x32x8bf16_1k": (32, 32, 8, 1, "bf16", "bf16", "f32", "cdna2", 4,
                                  {**_BLGP, **_FLUSH4}),
    "v_mfma_f32_16x16x16bf16_1k": (16, 16, 16, 1, "bf16", "bf16", "f32", "cdna2", 4,
                                   {**_BLGP, **_FLUSH4}),
    "v_mfma_f32_32x32x2bf16": (32, 32, 2, 2, "bf16", "bf16", "f32", "cdna2", 2,
                               {**_BLGP_CBSZ, **_FLUSH4}),
    "v_mfma_f32_16x16x2bf16": (16, 16, 2, 4, "bf16", "bf16", "f32", "cdna2", 2,
                               {**_BLGP_CBSZ, **_FLUSH4}),
    "v_mfma_f32_4x4x2bf16": (4, 4, 2, 16, "bf16", "bf16", "f32", "cdna2", 2,
                             {**_BLGP_CBSZ, **_FLUSH4}),
    "v_mfma_f32_32x32x4bf16": (32, 32, 4, 1, "bf16", "bf16", "f32", "cdna2", 2,
                               {**_BLGP, **_FLUSH4}),
    "v_mfma_f32_16x16x8bf16": (16, 16, 8, 1, "bf16", "bf16", "f32", "cdna2", 2,
                               {**_BLGP, **_FLUSH4}),
    "v_mfma_f64_16x16x4f64": (16, 16, 4, 1, "f64", "f64", "f64", "fma"),
    "v_mfma_f64_4x4x4f64": (4, 4, 4, 4, "f64", "f64", "f64", "fma"),
})

_NEG = {"neg": True}
_SPARSE_NEG = {"neg": True, "sparse": True}
# gfx11 (RDNA3): the calculator's RDNA3 table.
_GFX11 = _ops({
    "v_wmma_f32_16x16x16_f16": (16, 16, 16, 1, "f16", "f16", "f32", "round_once", 0, _NEG),
    "v_wmma_f32_16x16x16_bf16": (16, 16, 16, 1, "bf16", "bf16", "f32", "round_once", 0, _NEG),
    "v_wmma_f16_16x16x16_f16": (16, 16, 16, 1, "f16", "f16", "f16", "round_once", 0, _NEG),
    "v_wmma_bf16_16x16x16_bf16": (16, 16, 16, 1, "bf16", "bf16", "bf16", "round_once", 0, _NEG),
    "v_wmma_i32_16x16x16_iu8": (16, 16, 16, 1, "iu8", "iu8", "i32", "int", 0, _NEG),
    "v_wmma_i32_16x16x16_iu4": (16, 16, 16, 1, "iu4", "iu4", "i32", "int", 0, _NEG),
})

# gfx12 (RDNA4): the calculator's RDNA4 table: RDNA3's forms as they are (their register
# layouts differ, see gfx12_layout), and more. fp8/bf8 forms take no NEG bits.
_GFX12 = {**_GFX11, **_ops({
    "v_wmma_i32_16x16x32_iu4": (16, 16, 32, 1, "iu4", "iu4", "i32", "int", 0, _NEG),
    **{f"v_wmma_f32_16x16x16_{a}_{b}": (16, 16, 16, 1, a, b, "f32", "round_once")
       for a in ("fp8", "bf8") for b in ("fp8", "bf8")},
    "v_swmmac_f32_16x16x32_f16": (16, 16, 32, 1, "f16", "f16", "f32", "round_once", 0,
                                  _SPARSE_NEG),
    "v_swmmac_f32_16x16x32_bf16": (16, 16, 32, 1, "bf16", "bf16", "f32", "round_once", 0,
                                   _SPARSE_NEG),
    "v_swmmac_f16_16x16x32_f16": (16, 16, 32, 1, "f16", "f16", "f16", "round_once", 0,
                                  _SPARSE_NEG),
    "v_swmmac_bf16_16x16x32_bf16": (16, 16, 32, 1, "bf16", "bf16", "bf16", "round_once", 0,
                                    _SPARSE_NEG),
    "v_swmmac_i32_16x16x32_iu8": (16, 16, 32, 1, "iu8", "iu8", "i32", "int", 0, _SPARSE_NEG),
    "v_swmmac_i32_16x16x32_iu4": (16, 16, 32, 1, "iu4", "iu4", "i32", "int", 0, _SPARSE_NEG),
    "v_swmmac_i32_16x16x64_iu4": (16, 16, 64, 1, "iu4", "iu4", "i32", "int", 0, _SPARSE_NEG),
    **{f"v_swmmac_f32_16x16x32_{a}_{b}": (16, 16, 32, 1, a, b, "f32", "round_once", 0,
                                          {"sparse": True})
       for a in ("fp8", "bf8") for b in ("fp8", "bf8")},
})}

MATRIX_OPS: dict[str, dict[str, MatrixOp]] = {
    "gfx9": {**_GFX90A, **_GFX942}, "gfx11": _GFX11, "gfx12": _GFX12}
# the matrix instructions of each generation (gfx940/941 have gfx942's, gfx1200 gfx1201's)
TARGET_OPS: dict[str, dict[str, MatrixOp]] = {
    "gfx90a": _GFX90A, "gfx942": _GFX942, "gfx1100": _GFX11, "gfx1201": _GFX12}


def matrix_op(family: str, name: str) -> MatrixOp | None:
    """The :class:`MatrixOp` of mnemonic ``name`` in ISA family ``family``, or None."""
    return MATRIX_OPS.get(family, {}).get(name)


# --- layouts ----------------------------------------------------------------------------------
#
# A layout says where each element of one operand lives: ``lane`` and ``slot`` index arrays
# over the element's matrix coordinates. Slot s of a lane is bits [s*w, (s+1)*w) of the
# operand's registers read as one little-endian bit string (register r holds bits
# [32r, 32r+32)), w being the element width.


def _blgp_lane(lane: np.ndarray, blgp: int) -> np.ndarray:
    """The lane B is read from under BLGP (VOP3P-MAI encoding, BLGP): 0 as is, 1/2 broadcast
    lanes 0-31 / 32-63, 3 rotate down by 16 lanes, 4-7 broadcast lanes 16(blgp-4) + 0..15."""
    if blgp == 0:
        return lane
    if blgp == 1:
        return lane % 32
    if blgp == 2:
        return lane % 32 + 32
    if blgp == 3:
        return (lane + 16) % 64
    return lane % 16 + 16 * (blgp - 4)


def _gfx9_input(rows: int, k: int, blocks: int) -> tuple[np.ndarray, np.ndarray]:
    """A (rows = M) or B (rows = N) of an MFMA as ``(lane, slot)[block, row, k]``.

    Lane groups of ``rows`` lanes hold one column of k per block, blocks side by side; the
    columns that do not fit in 64 lanes continue in the next slots of the same lanes.
    """
    per_lane = rows * blocks * k // 64
    b, r, kk = np.meshgrid(np.arange(blocks), np.arange(rows), np.arange(k), indexing="ij")
    lane = r + rows * b + rows * blocks * (kk // per_lane)
    return lane, kk % per_lane


def _gfx9_output(m: int, n: int, blocks: int, bits: int) -> tuple[np.ndarray, np.ndarray]:
    """C/D of an MFMA as ``(lane, slot)[block, i, j]``: a register holds, lane by lane, the N
    columns of one row out of each group of 4 rows (1 row for 64-bit results), for as many
    row groups and blocks as fill 64 lanes; the next rows of a group go to the next
    registers."""
    height = 1 if bits == 64 else 4
    groups_per_reg = 64 // n
    blocks_per_reg = -(-64 // (n * m // height))
    b, i, j = np.meshgrid(np.arange(blocks), np.arange(m), np.arange(n), indexing="ij")
    slot = b * (m * n // 64) + (i // (height * groups_per_reg)) * height + i % height
    lane = (b % blocks_per_reg) * n + ((i // height) % groups_per_reg) * blocks_per_reg * n + j
    return lane, slot


def gfx9_layout(op: MatrixOp, operand: str, cbsz: int = 0, abid: int = 0,
                blgp: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``(lane, slot)`` arrays of one MFMA operand on gfx9 (64 lanes).

    ``operand`` is ``"a"`` (``[block, i, k]``; the block of A each output block reads, after
    CBSZ/ABID), ``"b"`` (``[block, k, j]``, lanes after BLGP), ``"c"`` (``[block, i, j]``) or,
    for SMFMAC, ``"a"`` over stored elements ``[block, i, k / 2]`` and ``"index"``
    (``lane, bit``)[block, i, k / 4] of each group's 4 index bits (CBSZ = 0: ABID picks the set)."""
    if operand == "c":
        return _gfx9_output(op.m, op.n, op.blocks, BITS[op.acc])
    if operand == "b":
        lane, slot = _gfx9_input(op.n, op.k, op.blocks)
        return _blgp_lane(lane, blgp).transpose(0, 2, 1), slot.transpose(0, 2, 1)
    stored = op.k // 2 if op.sparse else op.k
    lane, slot = _gfx9_input(op.m, stored, op.blocks)
    if operand == "index":
        # two index bits per stored element, in slot order; a set is 2 * (stored per lane)
        # bits wide (CDNA3 guide via the calculator README, "compression index")
        per_lane = op.m * op.blocks * stored // 64
        offset = abid * 2 * per_lane if cbsz == 0 else 0
        return lane[:, :, 0::2], offset + 2 * slot[:, :, 0::2]
    if not op.sparse and (cbsz or abid):
        source = (np.arange(op.blocks) >> cbsz << cbsz) + abid
        return lane[source], slot[source]
    return lane, slot


def _gfx12_chunk(op: MatrixOp) -> int:
    """k per chunk: the two 16-lane halves of a wave32 hold a row's k in alternating chunks of
    64 bits of elements (a sparse instruction: 64 bits of A's kept elements, so 128 bits' worth
    of k, and the same k per chunk for its dense B)."""
    per_half = op.k // 2
    bits = 128 if op.sparse else 64
    return min(per_half, bits // BITS[op.a])


def _fold(lane: np.ndarray, slot: np.ndarray, regs32: int, bits: int,
          wave: int) -> tuple[np.ndarray, np.ndarray]:
    """Wave64 from the wave32 layout: lanes 32-63 hold the second half of each lane's
    registers (one register: lanes 32-63 hold nothing)."""
    if wave == 32 or regs32 < 2:
        return lane, slot
    per_reg = 32 // bits
    reg = slot // per_reg
    half = regs32 // 2
    return lane + 32 * (reg // half), (reg % half) * per_reg + slot % per_reg


def gfx12_layout(op: MatrixOp, operand: str, wave: int,
                 opsel: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``(lane, slot)`` arrays of one WMMA/SWMMAC operand on gfx12, as :func:`gfx9_layout`
    (``"a"``: ``[0, i, k]`` or, sparse, ``[0, i, k / 2]`` stored elements; ``"b"``:
    ``[0, k, j]``; ``"c"``: ``[0, i, j]``; ``"index"``: (lane, bit) ``[0, i, k / 4]``, OPSEL
    picking the set)."""
    if operand == "c":
        bits = BITS[op.acc]
        i, j = np.meshgrid(np.arange(16), np.arange(16), indexing="ij")
        lane = j + 16 * (i // 8)
        slot = i % 8              # 32-bit: register i % 8; 16-bit: packed two rows a register
        regs32 = 8 * bits // 32
        lane, slot = _fold(lane, slot, regs32, bits, wave)
        return lane[None], slot[None]
    c = _gfx12_chunk(op)
    if operand == "b":
        bits = BITS[op.b]
        r, k = np.meshgrid(np.arange(16), np.arange(op.k), indexing="ij")
        half = (k // c) % 2
        t = (k // (2 * c)) * c + k % c
        lane, slot = _fold(r + 16 * half, t, (op.k // 2) * bits // 32, bits, wave)
        return lane.T[None], slot.T[None]
    bits = BITS[op.a]
    if not op.sparse:
        r, k = np.meshgrid(np.arange(16), np.arange(op.k), indexing="ij")
        half = (k // c) % 2
        t = (k // (2 * c)) * c + k % c
        lane, slot = _fold(r + 16 * half, t, (op.k // 2) * bits // 32, bits, wave)
        return lane[None], slot[None]
    # sparse A: stored element u of row r belongs to group u // 2 of 4 logical k
    r, u = np.meshgrid(np.arange(16), np.arange(op.k // 2), indexing="ij")
    k0 = 4 * (u // 2)
    half = (k0 // c) % 2
    t0 = (k0 // (2 * c)) * c + k0 % c           # the group's place in the lane's k stream
    stored_slot = t0 // 2 + u % 2
    regs32 = (op.k // 4) * bits // 32
    if operand == "a":
        lane, slot = _fold(r + 16 * half, stored_slot, regs32, bits, wave)
        return lane[None], slot[None]
    # index: 4 bits per group in stream order (2 per stored element), a set of k / 2 bits
    set_bits = op.k // 2
    lane = (r + 16 * half)[:, 0::2]
    bit = (2 * stored_slot)[:, 0::2]
    if wave == 64 and regs32 >= 2:
        set_bits //= 2
        lane = lane + 32 * (bit // set_bits)
        bit = bit % set_bits
    return lane[None], bit[None] + opsel * set_bits


def gfx11_layout(op: MatrixOp, operand: str, wave: int) -> tuple[np.ndarray, np.ndarray]:
    """gfx11 (RDNA3) WMMA: A and B rows whole in every lane ``16h + row`` (h = 0, 1; wave64 also
    2, 3: each lane half holds a copy), C/D rows interleaved between the lane halves (row
    ``2 * register + half``); a 16-bit C/D uses one half of each register (OPSEL[2])."""
    if operand == "c":
        i, j = np.meshgrid(np.arange(16), np.arange(16), indexing="ij")
        if wave == 32:
            return (j + 16 * (i % 2))[None], (i // 2)[None]
        return (j + 16 * (i % 4))[None], (i // 4)[None]
    r, k = np.meshgrid(np.arange(16), np.arange(op.k), indexing="ij")
    if operand == "b":
        return r.T[None], k.T[None]
    return r[None], k[None]


# --- compiling ----------------------------------------------------------------------------------

class _Unsupported(Exception):
    """An encoding of a matrix instruction whose meaning the sources above do not give."""


# inline constants / literals an operand may take: every element of C (32- and 64-bit types),
# the one element per lane of an f32 or f64 A/B, and 0 anywhere (all bits clear however it is
# spread); another constant packed into 16- or 8-bit elements has no documented meaning here
_CONST_TYPE = {"f32": "f32", "f64": "f64", "i32": "i32"}


def _raw_reader(op: Operand, bits: int, regs: int, element: str,
                whole_operand: bool) -> Callable:
    """fn(batch) -> uint64 ``[W, L, slots]``: the operand's bits split into elements.
    ``whole_operand``: a constant stands for every element (C), not for one per lane (A/B)."""
    per_reg = 32 // bits if bits < 32 else 1
    slots = regs * per_reg if bits <= 32 else regs // 2
    if op.kind == "const" and op.value == 0 and not isinstance(op.value, float):
        zeros = np.zeros((1, 1, slots), np.uint64)
        return lambda b: zeros
    if op.kind in ("const", "literal"):
        if element not in _CONST_TYPE or (slots != 1 and not whole_operand):
            raise _Unsupported(f"a constant {element} operand")
        value = np.uint64(int(const_bits(op, _CONST_TYPE[element])))
        full = np.full((1, 1, slots), value, np.uint64)
        return lambda b: full
    if op.kind not in ("vgpr", "agpr"):
        raise NotImplementedOperand(f"matrix operand of kind {op.kind}")
    first = op.index
    agpr = op.kind == "agpr"
    shifts = np.arange(0, 32, bits, dtype=np.uint32) if bits < 32 else None
    mask = np.uint32((1 << bits) - 1) if bits < 32 else None

    def read(b: Any) -> np.ndarray:
        file = b.A if agpr else b.V
        block = file[first:first + regs]                       # [regs, W, L] uint32
        if bits == 64:
            lo = block[0::2].astype(np.uint64)
            hi = block[1::2].astype(np.uint64)
            return (lo | (hi << np.uint64(32))).transpose(1, 2, 0)
        if bits == 32:
            return block.transpose(1, 2, 0).astype(np.uint64)
        parts = (block[..., None] >> shifts) & mask            # [regs, W, L, per_reg]
        return parts.transpose(1, 2, 0, 3).reshape(block.shape[1], block.shape[2], -1) \
            .astype(np.uint64)
    return read


def _flat(lane: np.ndarray, slot: np.ndarray, slots: int) -> np.ndarray:
    return (lane * slots + slot).astype(np.intp)


def _writer(op: Operand, bits: int, regs: int, flat: np.ndarray, lanes: int,
            keep_half: int = -1) -> Callable:
    """fn(batch, raw[W, elements]) writing the elements to the destination registers.
    ``keep_half`` (gfx11 16-bit results): the element goes to that half of its register and
    the other half keeps its value."""
    if op.kind not in ("vgpr", "agpr"):
        raise NotImplementedOperand(f"matrix destination of kind {op.kind}")
    first = op.index
    agpr = op.kind == "agpr"
    per_reg = 32 // bits if bits < 32 else 1
    slots = regs * per_reg if bits <= 32 else regs // 2

    def write(b: Any, raw: np.ndarray) -> None:
        file = b.A if agpr else b.V
        W = raw.shape[0]
        out = np.zeros((W, lanes * slots), np.uint64)
        out[:, flat.ravel()] = raw.reshape(W, -1)
        out = out.reshape(W, lanes, slots)
        if bits == 64:
            file[first:first + regs:2] = (out & np.uint64(0xFFFFFFFF)).astype(np.uint32) \
                .transpose(2, 0, 1)
            file[first + 1:first + regs:2] = (out >> np.uint64(32)).astype(np.uint32) \
                .transpose(2, 0, 1)
        elif keep_half >= 0:
            shift = np.uint32(16 * keep_half)
            old = file[first:first + regs]
            new = out.astype(np.uint32).transpose(2, 0, 1) << shift
            file[first:first + regs] = (old & ~(np.uint32(0xFFFF) << shift)) | new
        elif bits == 32:
            file[first:first + regs] = out.astype(np.uint32).transpose(2, 0, 1)
        else:
            parts = out.reshape(W, lanes, regs, per_reg).astype(np.uint32)
            shifts = np.arange(0, 32, bits, dtype=np.uint32)
            file[first:first + regs] = np.bitwise_or.reduce(parts << shifts, axis=3) \
                .transpose(2, 0, 1)
    return write


def compile_matrix(inst: Instruction, info: Any) -> Closure | None:
    """The closure of a matrix instruction, or None when ``inst`` is none. Raises
    :class:`~hsapy.sim.isa.operand_access.NotImplementedOperand` (the caller turns it into the
    unimplemented stub) for an encoding whose meaning is not established."""
    op = matrix_op(inst.family, inst.name)
    if op is None:
        return None
    try:
        return _compile(inst, info, op)
    except _Unsupported as exc:
        raise NotImplementedOperand(str(exc)) from None


def _compile(inst: Instruction, info: Any, op: MatrixOp) -> Closure:
    from hsapy.sim.isa.closures import NotImplementedInstruction

    f = inst.fields
    family = inst.family
    wave = info.wave_size
    if op.model != "int":
        # the sources give the float arithmetic with denormals kept and rounding to nearest
        # even (MODE's default for compute); what other MODE values do to it is not stated
        mode = getattr(info, "mode", None)
        if info.ftz32 or info.ftz64 or (mode is not None and any(
                mode.denorm_for(t) != 3 for t in ("f32", "f64"))):
            raise _Unsupported("a float matrix instruction under a MODE that flushes denormals")
        if mode is not None and any(mode.round_for(t) for t in ("f32", "f64")):
            raise _Unsupported("a float matrix instruction under a MODE that rounds other "
                               "than to nearest even")
    lanes = wave
    a_op, b_op = inst.srcs[0], inst.srcs[1]
    dst = inst.dsts[0]
    c_op = dst if op.sparse else inst.srcs[2]
    neg_a = neg_b = (False, False)      # (low halves, high halves)
    neg_c = abs_c = False
    signed_a = signed_b = True
    clamp = False
    c_half = -1
    blgp = cbsz = abid = opsel = 0
    if family == "gfx9":
        cbsz, abid, blgp = int(f.get("cbsz", 0)), int(f.get("abid", 0)), int(f.get("blgp", 0))
        if op.sparse:
            sets = 32 // (2 * (op.m * (op.k // 2) // 64))   # 2 index bits per stored element
            if cbsz == 0 and abid >= sets:
                raise _Unsupported(f"abid:{abid} with {sets} sets of compression indices")
        elif cbsz or abid:
            if not op.cbsz_abid:
                raise _Unsupported(f"cbsz:{cbsz} abid:{abid} on an instruction that takes none")
            if (1 << cbsz) > op.blocks or abid >= (1 << cbsz):
                raise _Unsupported(f"cbsz:{cbsz} abid:{abid} with {op.blocks} blocks")
        if blgp and op.a == "f64":
            if not op.blgp:
                raise _Unsupported(f"blgp:{blgp} on {inst.name}")
            # CDNA3 f64: the BLGP bits negate A, B and C (calculator README, BLGP)
            neg_a = (bool(blgp & 1),) * 2
            neg_b = (bool(blgp & 2),) * 2
            neg_c = bool(blgp & 4)
            blgp = 0
        elif blgp and not op.blgp:
            raise _Unsupported(f"blgp:{blgp} on an instruction that takes none")
        layout_a = gfx9_layout(op, "a", cbsz, abid)
        layout_b = gfx9_layout(op, "b", blgp=blgp)
        layout_c = gfx9_layout(op, "c")
        layout_i = gfx9_layout(op, "index", cbsz, abid) if op.sparse else None
    else:
        neg_lo, neg_hi = int(f.get("neg_lo", 0)), int(f.get("neg_hi", 0))
        opsel = int(f.get("op_sel", 0))
        clamp = bool(int(f.get("clamp", 0))) and op.model == "int"
        if (neg_lo or neg_hi) and not op.neg:
            raise _Unsupported(f"neg_lo:{neg_lo} neg_hi:{neg_hi} on an instruction that takes none")
        if op.model == "int":
            if neg_lo & 4 or neg_hi:
                raise _Unsupported("NEG[2] / NEG_HI on an integer matrix instruction")
            # integer forms: NEG[0] / NEG[1] say A / B are signed (calculator README, NEG)
            signed_a, signed_b = bool(neg_lo & 1), bool(neg_lo & 2)
        else:
            neg_a = (bool(neg_lo & 1), bool(neg_hi & 1))
            neg_b = (bool(neg_lo & 2), bool(neg_hi & 2))
            neg_c, abs_c = bool(neg_lo & 4), bool(neg_hi & 4)
        if family == "gfx12":
            if op.sparse:
                sets = _gfx12_sets(op, wave)
                if opsel >= sets:
                    raise _Unsupported(f"index_key:{opsel} with {sets} sets of indices")
            elif opsel:
                raise _Unsupported(f"op_sel:{opsel} on a dense WMMA")
            layout_a = gfx12_layout(op, "a", wave)
            layout_b = gfx12_layout(op, "b", wave)
            layout_c = gfx12_layout(op, "c", wave)
            layout_i = gfx12_layout(op, "index", wave, opsel) if op.sparse else None
        else:
            if opsel & 3 or (opsel & 4 and BITS[op.acc] != 16):
                raise _Unsupported(f"op_sel:{opsel} on {inst.name}")
            if BITS[op.acc] == 16:
                c_half = (opsel >> 2) & 1     # OPSEL[2]: which half of C/D (RDNA3)
            layout_a = gfx11_layout(op, "a", wave)
            layout_b = gfx11_layout(op, "b", wave)
            layout_c = gfx11_layout(op, "c", wave)
            layout_i = None
    a_bits, b_bits, c_bits = BITS[op.a], BITS[op.b], BITS[op.acc]
    read_a = _raw_reader(a_op, a_bits, a_op.count, op.a, False)
    read_b = _raw_reader(b_op, b_bits, b_op.count, op.b, False)
    c_read_bits = 32 if c_half >= 0 else c_bits
    read_c = _raw_reader(c_op, c_read_bits, dst.count, op.acc, True)
    slots_a = a_op.count * 32 // a_bits
    slots_b = b_op.count * 32 // b_bits
    slots_c = dst.count * 32 // c_read_bits
    flat_a = _flat(*layout_a, slots_a)
    flat_b = _flat(*layout_b, slots_b)
    flat_c = _flat(*layout_c, slots_c)
    write = _writer(dst, c_read_bits, dst.count, flat_c, lanes, c_half)
    # gfx11: the two (four) lane halves each hold A and B; they must agree
    copies = [16 * h for h in range(1, wave // 16)] if family == "gfx11" else []
    a_even = (np.arange(slots_a) % 2 == 0) if a_bits == 16 else None
    b_even = (np.arange(slots_b) % 2 == 0) if b_bits == 16 else None
    read_index = None
    if op.sparse:
        index_reg = inst.srcs[2]
        if index_reg.kind != "vgpr":
            raise _Unsupported(f"a compression index in {index_reg.kind}")
        index_flat = (layout_i[0] * 32 + layout_i[1]).astype(np.intp)   # lane * 32 + bit
        group_k = 4 * np.arange(op.k // 4)
        read_index = index_reg.index
    acc_signed = True
    flush = op.flush
    min_a, min_b = _MIN_EXP.get(op.a, 0), _MIN_EXP.get(op.b, 0)
    m, k = op.m, op.k

    def operand_values(raw: np.ndarray, ty: str, signed: bool, negs, even) -> np.ndarray:
        values = decode_elements(ty, raw, family, signed)
        if negs[0] or negs[1]:
            if even is None:
                sign = -1.0 if negs[0] else 1.0
                values = values * sign
            else:
                sign = np.where(even, -1.0 if negs[0] else 1.0, -1.0 if negs[1] else 1.0)
                values = values * sign
        return values

    def run(b: Any, machine: Any) -> None:
        if not b.exec_all:
            raise NotImplementedInstruction(
                f"{inst.text()} with inactive lanes: the simulator runs matrix instructions "
                f"only with every lane of the wave active")
        W = b.waves
        raw_a = read_a(b)
        raw_b = read_b(b)
        raw_c = read_c(b)
        if copies and (any((raw_a[:, c:c + 16] != raw_a[:, :16]).any() for c in copies)
                       or any((raw_b[:, c:c + 16] != raw_b[:, :16]).any() for c in copies)):
            raise NotImplementedInstruction(
                f"{inst.text()}: the lane halves hold different A or B data (RDNA3 WMMA "
                f"reads its inputs replicated in every 16 lanes)")
        va = operand_values(np.broadcast_to(raw_a, (W, lanes, slots_a)), op.a, signed_a, neg_a,
                            a_even).reshape(W, -1)[:, flat_a]
        vb = operand_values(np.broadcast_to(raw_b, (W, lanes, slots_b)), op.b, signed_b, neg_b,
                            b_even).reshape(W, -1)[:, flat_b]
        raw_c = np.broadcast_to(raw_c, (W, lanes, slots_c))
        if c_half >= 0:
            raw_c = (raw_c >> np.uint64(16 * c_half)) & np.uint64(0xFFFF)
        vc = decode_elements(op.acc, raw_c, family, acc_signed).reshape(W, -1)[:, flat_c]
        if abs_c:
            vc = np.abs(vc)
        if neg_c:
            vc = -vc
        if flush:
            va = _flush(va, min_a, False)
            vb = _flush(vb, min_b, False)
            vc = _flush(vc, -126, False)
        if read_index is not None:
            va = _desparsify(b, va, read_index, index_flat, group_k, m, k, W, inst)
        d = _multiply(op, va, vb, vc, clamp)
        if op.model == "int":
            raw_d = (d.astype(np.int64) & 0xFFFFFFFF).astype(np.uint64)
        else:
            raw_d = _round_to(np.ascontiguousarray(d, dtype=np.float64), op.acc)
        write(b, raw_d)

    return run


def _gfx12_sets(op: MatrixOp, wave: int) -> int:
    """Sets of compression indices one index VGPR holds (picked by OPSEL / index_key)."""
    set_bits = op.k // 2
    regs32 = (op.k // 4) * BITS[op.a] // 32
    if wave == 64 and regs32 >= 2:
        set_bits //= 2
    return 32 // set_bits


def _desparsify(b: Any, stored: np.ndarray, reg: int, index_flat: np.ndarray,
                group_k: np.ndarray, m: int, k: int, W: int, inst: Instruction) -> np.ndarray:
    """The dense A ``[W, blocks, M, K]`` from the stored pairs ``[W, blocks, M, K/2]`` and the
    2-bit positions in the compression index VGPR (0 elsewhere)."""
    from hsapy.sim.isa.closures import NotImplementedInstruction

    words = b.V[reg]                                               # [W, L]
    lane = index_flat // 32
    bit = (index_flat % 32).astype(np.uint32)
    nibble = (words[:, lane] >> bit) & np.uint32(0xF)              # [W, blocks, M, K/4]
    first = (nibble & np.uint32(3)).astype(np.intp)
    second = (nibble >> np.uint32(2)).astype(np.intp)
    if (first == second).any():
        raise NotImplementedInstruction(
            f"{inst.text()}: a compression index names one position twice in a group of 4")
    dense = np.zeros(stored.shape[:-1] + (k,), stored.dtype)
    rows = dense.reshape(-1, k)
    count = rows.shape[0]
    base = np.broadcast_to(group_k, stored.shape[:-1] + (k // 4,)).reshape(count, -1)
    first = first.reshape(count, -1)
    second = second.reshape(count, -1)
    pairs = stored.reshape(count, -1, 2)
    index = np.arange(count)[:, None]
    rows[index, base + first] = pairs[:, :, 0]
    rows[index, base + second] = pairs[:, :, 1]
    return dense
