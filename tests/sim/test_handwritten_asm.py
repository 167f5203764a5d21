"""Hand-written AMDGPU assembly on the simulator: kernels of the kind people write by hand and
compilers rarely emit (computed jumps and calls through s_getpc/s_setpc/s_swappc, EXEC-mask
juggling, VCC tricks, DPP and SDWA, packed 16-bit math with op_sel, scalar and buffer loads of
every width, LDS two-address forms, MODE-register changes, gfx12 VOPD and SALU floats), built
by llvm-mc-19 + ld.lld-19 through hsapy.toolchain and run through hsapy's public API for gfx942
and gfx1201, each checked against a numpy reference.

A case is a function ``(build, session)``; ``%NAME%`` tokens in a body are the spellings that
differ between gfx9 and gfx12 (:data:`SPELLING`).
"""
from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np
import pytest
from corpus_cases import same
from handwritten import (
    BUILDS,
    GFX942,
    GFX1201_W32,
    Arg,
    Build,
    Session,
    asm_kernel,
    assemble,
)

SPELLING = {
    "gfx9": {
        "LOAD32": "s_load_dword", "LOAD64": "s_load_dwordx2", "LOAD128": "s_load_dwordx4",
        "WAITK": "s_waitcnt lgkmcnt(0)", "WAITV": "s_waitcnt vmcnt(0)",
        "WAITDS": "s_waitcnt lgkmcnt(0)",
        "GLOAD": "global_load_dword", "GSTORE": "global_store_dword",
        "GSTORE64": "global_store_dwordx2",
        "WGID": "s2", "CTZ": "s_ff1_i32_b32", "ADDV": "v_add_u32",
        "LOAD256": "s_load_dwordx8", "LOAD512": "s_load_dwordx16",
        "SBUF32": "s_buffer_load_dword", "SBUF128": "s_buffer_load_dwordx4",
        "BLOAD": "buffer_load_dword", "SOFF": "0", "BARRIER": "s_barrier",
        "DSW2": "ds_write2_b32", "DSR2": "ds_read2_b32", "DSW2ST": "ds_write2st64_b32",
        "DSR2ST": "ds_read2st64_b32", "RTN": "sc0", "AADD": "global_atomic_add",
        "ACAS": "global_atomic_cmpswap", "AUMAX": "global_atomic_umax",
        "AXOR": "global_atomic_xor",
    },
    "gfx12": {
        "LOAD32": "s_load_b32", "LOAD64": "s_load_b64", "LOAD128": "s_load_b128",
        "WAITK": "s_wait_kmcnt 0", "WAITV": "s_wait_loadcnt 0", "WAITDS": "s_wait_dscnt 0",
        "GLOAD": "global_load_b32", "GSTORE": "global_store_b32",
        "GSTORE64": "global_store_b64",
        "WGID": "ttmp9", "CTZ": "s_ctz_i32_b32", "ADDV": "v_add_nc_u32",
        "LOAD256": "s_load_b256", "LOAD512": "s_load_b512",
        "SBUF32": "s_buffer_load_b32", "SBUF128": "s_buffer_load_b128",
        "BLOAD": "buffer_load_b32", "SOFF": "null",
        "BARRIER": "s_barrier_signal -1\n  s_barrier_wait -1",
        "DSW2": "ds_store_2addr_b32", "DSR2": "ds_load_2addr_b32",
        "DSW2ST": "ds_store_2addr_stride64_b32", "DSR2ST": "ds_load_2addr_stride64_b32",
        "RTN": "th:TH_ATOMIC_RETURN", "AADD": "global_atomic_add_u32",
        "ACAS": "global_atomic_cmpswap_b32", "AUMAX": "global_atomic_max_u32",
        "AXOR": "global_atomic_xor_b32",
    },
}


def spelled(body: str, build: Build) -> str:
    words = dict(SPELLING["gfx12" if build.gfx12 else "gfx9"])
    # lane masks: a wave32 names the low halves of VCC and EXEC, and its mask ops are b32
    w32 = build.wave == 32
    words.update(VCC="vcc_lo" if w32 else "vcc", EXEC="exec_lo" if w32 else "exec",
                 M="b32" if w32 else "b64")
    for key, value in words.items():
        body = body.replace(f"%{key}%", value)
    # %MASK10%: a lane mask in SGPRs from s10 (one SGPR in wave32, a pair in wave64)
    return re.sub(r"%MASK(\d+)%", lambda m: f"s{m[1]}" if w32 else
                  f"s[{m[1]}:{int(m[1]) + 1}]", body)


CASES: dict[str, tuple[Callable, tuple[Build, ...]]] = {}


def case(*builds: Build):
    def register(fn: Callable) -> Callable:
        CASES[fn.__name__] = (fn, builds or BUILDS)
        return fn
    return register


def build_and_run(session: Session, build: Build, name: str, body: str, args: list[Arg], **kw):
    source = asm_kernel(name, spelled(body, build), build, args, **kw)
    return session.run(assemble(source, build), build)


# --- SALU control flow: a loop of scalar branches, a jump table through s_setpc, a call -----

SALU_CONTROL = """
  %LOAD64% s[4:5], s[0:1], 0x0
  %LOAD32% s12, s[0:1], 0x8
  %WAITK%
  s_mov_b32 s6, 0
  s_mov_b32 s7, 0
  s_mov_b32 s8, 1
.Lloop:
  s_and_b32 s9, s6, 1
  s_cbranch_scc0 .Leven
  s_mul_i32 s9, s6, s6
  s_add_u32 s7, s7, s9
  s_branch .Lnext
.Leven:
  s_lshl_b32 s9, s6, 3
  s_xor_b32 s7, s7, s9
.Lnext:
  s_bitcmp1_b32 s6, 2
  s_cselect_b32 s10, 3, 5
  s_mul_i32 s8, s8, s10
  s_add_u32 s6, s6, 1
  s_cmp_lt_u32 s6, s12
  s_cbranch_scc1 .Lloop
  // a jump table of s_branch instructions entered through s_setpc_b64
  s_and_b32 s13, s12, 3
  s_lshl_b32 s13, s13, 2
  s_getpc_b64 s[14:15]
.Lpc:
  s_add_u32 s14, s14, .Ltable-.Lpc
  s_addc_u32 s15, s15, 0
  s_add_u32 s14, s14, s13
  s_addc_u32 s15, s15, 0
  s_setpc_b64 s[14:15]
.Ltable:
  s_branch .Lcase0
  s_branch .Lcase1
  s_branch .Lcase2
  s_branch .Lcase3
.Lcase0:
  s_mov_b32 s16, 100
  s_branch .Ljoin
.Lcase1:
  s_mov_b32 s16, 201
  s_branch .Ljoin
.Lcase2:
  s_movk_i32 s16, 0x7fff
  s_branch .Ljoin
.Lcase3:
  s_mov_b32 s16, -7
.Ljoin:
  // a call: s_swappc_b64 into a subroutine that returns through s_setpc_b64
  s_getpc_b64 s[20:21]
.Lpc2:
  s_add_u32 s20, s20, .Lsub-.Lpc2
  s_addc_u32 s21, s21, 0
  s_mov_b32 s22, s7
  s_swappc_b64 s[30:31], s[20:21]
  // a VCC-tested loop: count lanes below s12 one compare at a time
  s_mov_b32 s24, 0
  s_mov_b32 s25, 0
.Lvloop:
  v_cmp_lt_u32 %VCC%, s25, v0
  s_cbranch_vccz .Lvdone
  s_add_u32 s24, s24, 1
  s_add_u32 s25, s25, 1
  s_cmp_lt_u32 s25, s12
  s_cbranch_scc1 .Lvloop
.Lvdone:
  v_mov_b32 v10, 0
  v_mov_b32 v1, s7
  v_mov_b32 v2, s8
  v_mov_b32 v3, s16
  v_mov_b32 v4, s22
  v_mov_b32 v5, s23
  v_mov_b32 v6, s26
  v_mov_b32 v7, s24
  %GSTORE% v10, v1, s[4:5]
  %GSTORE% v10, v2, s[4:5] offset:4
  %GSTORE% v10, v3, s[4:5] offset:8
  %GSTORE% v10, v4, s[4:5] offset:12
  %GSTORE% v10, v5, s[4:5] offset:16
  %GSTORE% v10, v6, s[4:5] offset:20
  %GSTORE% v10, v7, s[4:5] offset:24
  s_endpgm
.Lsub:
  s_brev_b32 s22, s22
  s_bcnt1_i32_b32 s23, s22
  %CTZ% s26, s22
  s_setpc_b64 s[30:31]
"""


def _brev32(x: int) -> int:
    return int(f"{x & 0xFFFFFFFF:032b}"[::-1], 2)


@case()
def salu_control(build: Build, session: Session) -> None:
    k = build_and_run(session, build, "salu_control", SALU_CONTROL,
                      [Arg("out"), Arg("count", 4, pointer=False)])
    for n in (0, 1, 6, 13, 40):
        out = k.output(np.uint32, 7)
        k.launch("salu_control", [out, n], (k.wave,), (k.wave,))
        acc, prod = 0, 1
        i = 0
        while True:  # a do-while, as written: the body runs once even for n == 0
            acc = (acc + i * i) if i & 1 else acc ^ (i << 3)
            prod = prod * (3 if i & 4 else 5) & 0xFFFFFFFF
            i += 1
            if not i < n:
                break
        table = [100, 201, 0x7FFF, (-7) & 0xFFFFFFFF][n & 3]
        rev = _brev32(acc)
        ctz = (rev & -rev).bit_length() - 1 if rev else 0xFFFFFFFF
        # the VCC loop runs while some lane's id is above s25 (so at most wave - 1 times) and,
        # a do-while again, while s25 < n
        vloop = max(1, min(n, k.wave - 1))
        same(k.read(out), np.array([acc & 0xFFFFFFFF, prod, table, rev, bin(rev).count("1"),
                                    ctz, vloop], np.uint32), f"n={n}")
    k.close()


# --- EXEC juggling: if/else through saveexec, v_cmpx, a per-lane while loop, VCC carries ----

EXEC_MASKS = """
  %LOAD64% s[4:5], s[0:1], 0x0
  %LOAD64% s[6:7], s[0:1], 0x8
  %WAITK%
  s_lshl_b32 s3, %WGID%, 6
  %ADDV% v0, s3, v0
  v_lshlrev_b32 v1, 2, v0
  %GLOAD% v2, v1, s[4:5]
  %WAITV%
  v_mov_b32 v3, 0
  v_and_b32 v4, 1, v2
  v_cmp_ne_u32 %VCC%, 0, v4
  s_and_saveexec_%M% %MASK10%, %VCC%
  s_cbranch_execz .Lelse
  v_mul_lo_u32 v3, v2, 3
  s_mov_%M% %MASK12%, %EXEC%
  v_cmpx_lt_u32 %CMPXD%100, v2
  s_cbranch_execz .Lsmall
  %ADDV% v3, 0x3e8, v3
.Lsmall:
  s_mov_%M% %EXEC%, %MASK12%
.Lelse:
  %ANDN2SAVE%_%M% %MASK10%, %MASK10%
  s_cbranch_execz .Lendif
  v_lshrrev_b32 v3, 1, v2
  v_and_b32 v4, 3, v2
  v_cmp_eq_u32 %VCC%, 0, v4
  v_sub_u32 v5, 0, v3
  v_cndmask_b32 v3, v3, v5, %VCC%
.Lendif:
  s_or_saveexec_%M% %MASK14%, %MASK10%
  // a do-while per lane: halve y = (x & 63) + 1 until it is at most 1, counting
  v_and_b32 v5, 63, v2
  %ADDV% v5, 1, v5
  v_mov_b32 v6, 0
  s_mov_%M% %MASK16%, %EXEC%
.Lwhile:
  v_lshrrev_b32 v5, 1, v5
  %ADDV% v6, 1, v6
  v_cmp_lt_u32 %VCC%, 1, v5
  s_and_%M% %EXEC%, %EXEC%, %VCC%
  s_cbranch_execnz .Lwhile
  s_mov_%M% %EXEC%, %MASK16%
  // 64-bit: x * 0x9E3779B9 + 0xFFFFFFFF80000000 with the carry through VCC
  s_mov_b32 s20, 0x9e3779b9
  v_mul_lo_u32 v7, v2, s20
  v_mul_hi_u32 v8, v2, s20
  v_add_co_u32 v7, %VCC%, 0x80000000, v7
  %ADDC% v8, %VCC%, -1, v8, %VCC%
  v_lshlrev_b32 v9, 4, v0
  %GSTORE% v9, v3, s[6:7]
  %GSTORE% v9, v6, s[6:7] offset:4
  %GSTORE% v9, v7, s[6:7] offset:8
  %GSTORE% v9, v8, s[6:7] offset:12
  s_endpgm
"""


@case()
def exec_masks(build: Build, session: Session) -> None:
    words = ({"CMPXD": "", "ANDN2SAVE": "s_and_not1_saveexec", "ADDC": "v_add_co_ci_u32"}
             if build.gfx12 else
             {"CMPXD": "vcc, ", "ANDN2SAVE": "s_andn2_saveexec", "ADDC": "v_addc_co_u32"})
    body = EXEC_MASKS
    for key, value in words.items():
        body = body.replace(f"%{key}%", value)
    k = build_and_run(session, build, "exec_masks", body, [Arg("src"), Arg("out")], vgprs=16,
                      block=64)
    n = 300   # 64-lane workgroups, the last one partial
    x = k.rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
    x[:8] = [1, 2, 4, 101, 99, 0, 0xFFFFFFFF, 12]
    out = k.output(np.uint32, 4 * n)
    k.launch("exec_masks", [k.input(x), out], (n,), (64,))
    xi = x.astype(np.int64)
    odd = (xi & 1) == 1
    then = (xi * 3 + np.where(xi > 100, 1000, 0)) & 0xFFFFFFFF
    half = xi >> 1
    other = np.where((xi & 3) == 0, (-half) & 0xFFFFFFFF, half)
    counts = np.array([_halvings(int(v)) for v in (xi & 63) + 1])
    wide = x.astype(np.uint64) * np.uint64(0x9E3779B9) + np.uint64(0xFFFFFFFF80000000)
    want = np.stack([np.where(odd, then, other), counts, wide & 0xFFFFFFFF, wide >> 32], axis=1)
    same(k.read(out).reshape(n, 4), want.astype(np.uint32), "exec_masks")
    k.close()


def _halvings(y: int) -> int:
    count = 0
    while True:
        y >>= 1
        count += 1
        if y <= 1:
            return count


# --- cross-lane: DPP, readlane/writelane, ds_bpermute/ds_permute ----------------------------

CROSS_LANE_HEAD = """
  %LOAD64% s[4:5], s[0:1], 0x0
  %LOAD64% s[6:7], s[0:1], 0x8
  %WAITK%
  v_lshlrev_b32 v1, 2, v0
  %GLOAD% v2, v1, s[4:5]
  %WAITV%
  v_mov_b32 v3, 0xdead
  v_mov_b32 v4, 0xdead
  v_mov_b32 v5, 0xdead
  v_mov_b32 v6, 0xdead
  v_mov_b32 v7, 0xdead
  v_mov_b32 v8, v2
"""

CROSS_LANE_TAIL = """
  v_readlane_b32 s8, v2, 5
  s_mov_b32 m0, 9
  v_writelane_b32 v8, s8, m0
  v_readfirstlane_b32 s9, v2
  %ADDV% v8, s9, v8
  // ds_bpermute: lane l reads lane (7 l + 3) mod wave; ds_permute: lane l writes lane (l + 5)
  v_mul_u32_u24 v9, 7, v0
  %ADDV% v9, 3, v9
  v_and_b32 v9, %WAVEM1%, v9
  v_lshlrev_b32 v9, 2, v9
  %BPERM% v10, v9, v2
  %ADDV% v11, 5, v0
  v_and_b32 v11, %WAVEM1%, v11
  v_lshlrev_b32 v11, 2, v11
  %PERM% v12, v11, v2
  %WAITDS%
  v_lshlrev_b32 v13, 5, v0
  %GSTORE% v13, v3, s[6:7]
  %GSTORE% v13, v4, s[6:7] offset:4
  %GSTORE% v13, v5, s[6:7] offset:8
  %GSTORE% v13, v6, s[6:7] offset:12
  %GSTORE% v13, v7, s[6:7] offset:16
  %GSTORE% v13, v8, s[6:7] offset:20
  %GSTORE% v13, v10, s[6:7] offset:24
  %GSTORE% v13, v12, s[6:7] offset:28
  s_endpgm
"""

DPP_GFX9 = """
  v_mov_b32_dpp v3, v2 row_shr:1 row_mask:0xf bank_mask:0xf bound_ctrl:0
  v_mov_b32_dpp v4, v2 quad_perm:[3,0,0,2] row_mask:0xf bank_mask:0xf
  v_mov_b32_dpp v5, v2 row_bcast:15 row_mask:0xa bank_mask:0xf
  v_mov_b32_dpp v6, v2 wave_shr:1 row_mask:0xf bank_mask:0xf
  v_add_u32_dpp v7, v2, v2 row_ror:3 row_mask:0xf bank_mask:0xd
"""

DPP_GFX12 = """
  v_mov_b32_dpp v3, v2 row_shr:1 row_mask:0xf bank_mask:0xf bound_ctrl:1
  v_mov_b32_dpp v4, v2 quad_perm:[3,0,0,2] row_mask:0xf bank_mask:0xf
  v_mov_b32_dpp v5, v2 row_share:14 row_mask:0xa bank_mask:0xf
  v_mov_b32 v6, v2 dpp8:[7,0,6,1,5,2,4,3]
  v_add_nc_u32_dpp v7, v2, v2 row_xmask:5 row_mask:0xf bank_mask:0xd
"""


def _rows(lane: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return lane // 16 * 16, lane % 16


@case()
def cross_lane(build: Build, session: Session) -> None:
    w = build.wave
    body = CROSS_LANE_HEAD + (DPP_GFX12 if build.gfx12 else DPP_GFX9) + CROSS_LANE_TAIL
    words = {"WAVEM1": str(w - 1),
             "BPERM": "ds_bpermute_b32" if build.gfx12 else "ds_bpermute_b32",
             "PERM": "ds_permute_b32"}
    for key, value in words.items():
        body = body.replace(f"%{key}%", value)
    k = build_and_run(session, build, "cross_lane", body, [Arg("src"), Arg("out")], vgprs=16,
                      workgroup_id_x=False, block=w)
    x = k.rng.integers(1, 1 << 20, w).astype(np.uint32)
    out = k.output(np.uint32, 8 * w)
    k.launch("cross_lane", [k.input(x), out], (w,), (w,))
    lane = np.arange(w)
    row, pos = _rows(lane)
    old = np.uint32(0xDEAD)
    # row_shr:1 with bound_ctrl: the first lane of each row reads 0
    shr = np.where(pos >= 1, x[np.maximum(lane - 1, 0)], 0).astype(np.uint32)
    quad = x[lane // 4 * 4 + np.array([3, 0, 0, 2])[lane % 4]]
    # bank_mask 0xd leaves lanes 4..7 of each row (bank 1) unwritten
    bank1 = (pos // 4) == 1
    if build.gfx12:
        # row_share:14 with row_mask 0xa: rows 1 and 3 read their lane 14, rows 0 and 2 keep
        share = np.where(np.isin(lane // 16, [1, 3]), x[row + 14], old)
        spread = x[lane // 8 * 8 + np.array([7, 0, 6, 1, 5, 2, 4, 3])[lane % 8]]
        added = np.where(bank1, old, x[row + (pos ^ 5)] + x)
    else:
        # row_bcast:15 with row_mask 0xa: rows 1 and 3 read the last lane of the row before
        share = np.where(np.isin(lane // 16, [1, 3]), x[np.maximum(row - 1, 0)], old)
        # wave_shr:1 without bound_ctrl: lane 0 keeps its value
        spread = np.where(lane >= 1, x[np.maximum(lane - 1, 0)], old)
        added = np.where(bank1, old, x[row + (pos - 3) % 16] + x)
    written = x.copy()
    written[9] = x[5]
    written = written + x[0]
    bperm = x[(7 * lane + 3) % w]
    perm = np.empty(w, np.uint32)
    perm[(lane + 5) % w] = x
    want = np.stack([shr, quad, share, spread, added, written, bperm, perm], axis=1)
    same(k.read(out).reshape(w, 8), want.astype(np.uint32), "cross_lane")
    k.close()


# --- VALU modifiers: neg/abs/clamp/omod, med3, packed 16-bit math with op_sel, fma_mix, f64 ---

VALU_MODIFIERS = """
  %LOAD128% s[4:7], s[0:1], 0x0
  %LOAD64% s[8:9], s[0:1], 0x10
  %WAITK%
  v_lshlrev_b32 v1, 2, v0
  %GLOAD% v2, v1, s[4:5]
  %GLOAD% v3, v1, s[4:5] offset:1024
  %GLOAD% v4, v1, s[4:5] offset:2048
  %GLOAD% v10, v1, s[6:7]
  %GLOAD% v11, v1, s[6:7] offset:1024
  %GLOAD% v12, v1, s[6:7] offset:2048
  %WAITV%
  v_fma_f32 v5, -v2, |v3|, v4
  v_fma_f32 v6, v2, v3, -|v4| clamp
  v_mul_f32_e64 v7, v2, v3 mul:4
  %MED3% v8, v2, v3, v4
  v_pk_fma_f16 v9, v10, v11, v12 op_sel:[1,0,0] op_sel_hi:[0,1,1] neg_lo:[0,0,1]
  v_pk_add_u16 v13, v10, v11 op_sel:[0,1] op_sel_hi:[1,0]
  v_pk_max_i16 v14, v10, v11
  v_fma_mix_f32 v15, v2, v10, v11 op_sel:[0,1,0] op_sel_hi:[0,1,1]
  v_pk_mul_lo_u16 v16, v10, v12 op_sel_hi:[0,1]
  v_cvt_f64_f32 v[18:19], v2
  v_cvt_f64_f32 v[20:21], v3
  v_fma_f64 v[22:23], -v[18:19], |v[20:21]|, 0.5
  v_lshlrev_b32 v24, 6, v0
  %GSTORE% v24, v5, s[8:9]
  %GSTORE% v24, v6, s[8:9] offset:4
  %GSTORE% v24, v7, s[8:9] offset:8
  %GSTORE% v24, v8, s[8:9] offset:12
  %GSTORE% v24, v9, s[8:9] offset:16
  %GSTORE% v24, v13, s[8:9] offset:20
  %GSTORE% v24, v14, s[8:9] offset:24
  %GSTORE% v24, v15, s[8:9] offset:28
  %GSTORE% v24, v16, s[8:9] offset:32
  %GSTORE64% v24, v[22:23], s[8:9] offset:40
  s_endpgm
"""


def _halves(words: np.ndarray, dtype) -> tuple[np.ndarray, np.ndarray]:
    pairs = words.view(dtype).reshape(-1, 2)
    return pairs[:, 0], pairs[:, 1]


def _pack(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    return np.stack([lo, hi], axis=1).reshape(-1).view(np.uint32)


@case()
def valu_modifiers(build: Build, session: Session) -> None:
    body = VALU_MODIFIERS.replace("%MED3%", "v_med3_num_f32" if build.gfx12 else "v_med3_f32")
    # omod needs output denormals off (and, on gfx9, MODE.IEEE off): the CDNA3 and RDNA4
    # guides' "Output Modifiers" ignore it otherwise
    modes = ".amdhsa_float_denorm_mode_32 0\n.amdhsa_float_denorm_mode_16_64 0"
    if not build.gfx12:
        modes += "\n.amdhsa_ieee_mode 0"
    k = build_and_run(session, build, "valu_modifiers", body,
                      [Arg("floats"), Arg("halves"), Arg("out")], vgprs=32,
                      workgroup_id_x=False, directives=modes)
    n = 256
    # values k/64 and k/8 with small k: the f32 products and sums below are exact
    f = (k.rng.integers(-600, 600, 3 * n) / 64).astype(np.float32)
    a, b, c = f[:n], f[n:2 * n], f[2 * n:]
    h16 = (k.rng.integers(-60, 60, 6 * n) / 8).astype(np.float16)
    words = h16.view(np.uint32)
    h, g, e = words[:n], words[n:2 * n], words[2 * n:]
    out = k.output(np.uint32, 16 * n)
    k.launch("valu_modifiers", [k.input(f), k.input(words), out], (n,), (n,))
    got = k.read(out).reshape(n, 16)
    same(got[:, 0].view(np.float32), -a * np.abs(b) + c, "v_fma_f32 -a |b| c")
    same(got[:, 1].view(np.float32), np.clip(a * b - np.abs(c), 0, 1), "clamp")
    same(got[:, 2].view(np.float32), a * b * 4, "omod mul:4")
    same(got[:, 3].view(np.float32), np.median(np.stack([a, b, c]), axis=0).astype(np.float32),
         "med3")
    hl, hh = _halves(h, np.float16)
    gl, gh = _halves(g, np.float16)
    el, eh = _halves(e, np.float16)
    # fused: the exact f64 value rounded once to f16
    d = np.float64
    fma16 = _pack((hh.astype(d) * gl - el).astype(np.float16),
                  (hl.astype(d) * gh + eh).astype(np.float16))
    same(got[:, 4], fma16, "v_pk_fma_f16 op_sel")
    ul, uh = _halves(h, np.uint16)
    vl, vh = _halves(g, np.uint16)
    wl, wh = _halves(e, np.uint16)
    same(got[:, 5], _pack(ul + vh, uh + vl), "v_pk_add_u16 op_sel")
    sl, sh = _halves(h, np.int16)
    tl, th = _halves(g, np.int16)
    same(got[:, 6], _pack(np.maximum(sl, tl), np.maximum(sh, th)).view(np.uint32), "pk_max_i16")
    same(got[:, 7].view(np.float32), a * hh.astype(np.float32) + gl.astype(np.float32),
         "v_fma_mix_f32")
    # op_sel_hi:[0,1]: the high result takes src0's low half and src1's high half
    same(got[:, 8], _pack(ul * wl, ul * wh), "v_pk_mul_lo_u16 op_sel_hi")
    same(got[:, 10:12].copy().view(np.float64).reshape(-1),
         -a.astype(np.float64) * np.abs(b.astype(np.float64)) + 0.5, "v_fma_f64")


# --- memory forms: scalar loads of 2 to 16 dwords, s_buffer_load, buffer offen/idxen -------

SUM_SGPRS = "\n".join(f"  s_add_u32 s34, s34, s{r}" for r in [*range(8, 32), 33])

MEMORY_FORMS = """
  %LOAD128% s[4:7], s[0:1], 0x0
  %WAITK%
  %LOAD256% s[8:15], s[4:5], 0x20
  %LOAD512% s[16:31], s[4:5], 0x40
  %LOAD64% s[32:33], s[4:5], 0x8
  // a raw V# over the first 64 bytes of the table, and a structured one (8-byte records)
  s_mov_b32 s36, s4
  s_and_b32 s37, s5, 0xffff
  s_mov_b32 s38, 64
  s_mov_b32 s39, %RAW3%
  s_mov_b32 s48, s4
  s_and_b32 s49, s5, 0xffff
  s_or_b32 s49, s49, 0x80000
  s_mov_b32 s50, 8
  s_mov_b32 s51, %IDX3%
  %SBUF128% s[40:43], s[36:39], 0x30
  %SBUF32% s44, s[36:39], 0x2c
  %SBUF32% s46, s[36:39], 0x40
  %WAITK%
  s_mov_b32 s34, s32
""" + SUM_SGPRS + """
  s_add_u32 s45, s40, s41
  s_add_u32 s45, s45, s42
  s_add_u32 s45, s45, s43
  v_lshlrev_b32 v1, 2, v0
  %BLOAD% v2, v1, s[36:39], %SOFF% offen offset:8
  %BLOAD% v3, v0, s[48:51], %SOFF% idxen offset:4
  %WAITV%
  v_mov_b32 v4, s34
  v_mov_b32 v5, s45
  v_mov_b32 v6, s44
  v_mov_b32 v8, s46
  v_lshlrev_b32 v7, 5, v0
  %GSTORE% v7, v2, s[6:7]
  %GSTORE% v7, v3, s[6:7] offset:4
  %GSTORE% v7, v4, s[6:7] offset:8
  %GSTORE% v7, v5, s[6:7] offset:12
  %GSTORE% v7, v6, s[6:7] offset:16
  %GSTORE% v7, v8, s[6:7] offset:20
  s_endpgm
"""


@case()
def memory_forms(build: Build, session: Session) -> None:
    # V# word 3: gfx9 DATA_FORMAT 32 (CDNA3 guide, "Buffer Resource"); gfx12 OOB_SELECT 3
    # (raw, offset + payload > num_records) and 1 (index >= num_records)
    words = {"RAW3": hex(3 << 28) if build.gfx12 else "0x20000",
             "IDX3": hex(1 << 28) if build.gfx12 else "0x20000"}
    body = MEMORY_FORMS
    for key, value in words.items():
        body = body.replace(f"%{key}%", value)
    k = build_and_run(session, build, "memory_forms", body, [Arg("table"), Arg("out")],
                      sgprs=56, workgroup_id_x=False, block=build.wave)
    n = k.wave
    table = k.rng.integers(0, 1 << 28, 32).astype(np.uint32)
    out = k.output(np.uint32, 8 * n, initial=0)
    k.launch("memory_forms", [k.input(table), out], (n,), (n,))
    got = k.read(out).reshape(n, 8)
    t = table.astype(np.int64)
    lane = np.arange(n)
    # offen: lane i reads byte 4 i + 8; in range while that dword ends within 64 bytes
    offen = np.where(4 * lane + 8 < 64, t[np.minimum(lane + 2, 31)], 0)
    # idxen: record i (8 bytes) + 4; in range while i < 8 records
    idxen = np.where(lane < 8, t[np.minimum(2 * lane + 1, 31)], 0)
    same(got[:, 0], offen.astype(np.uint32), "buffer_load offen")
    same(got[:, 1], idxen.astype(np.uint32), "buffer_load idxen")
    scalar = (t[2:4].sum() + t[8:32].sum()) & 0xFFFFFFFF
    same(got[:, 2], np.full(n, scalar, np.uint32), "s_load x2/x8/x16")
    same(got[:, 3], np.full(n, t[12:16].sum() & 0xFFFFFFFF, np.uint32), "s_buffer_load x4")
    same(got[:, 4], np.full(n, t[11], np.uint32), "s_buffer_load")
    # past num_records: the CDNA3 and RDNA4 guides' scalar range check returns 0
    same(got[:, 5], np.zeros(n, np.uint32), "s_buffer_load out of range")


# --- LDS two-address forms and atomics that return ------------------------------------------

LDS_ATOMICS = """
  %LOAD128% s[4:7], s[0:1], 0x0
  %WAITK%
  v_lshlrev_b32 v1, 3, v0
  v_add_nc_u32_e32 v2, 0x3e8, v0
  v_mul_u32_u24 v3, 3, v0
  %DSW2% v1, v2, v3 offset1:1
  v_lshlrev_b32 v14, 2, v0
  %DSW2ST% v14, v3, v2 offset0:8 offset1:12
  v_mov_b32 v10, 0xe00
  v_mov_b32 v11, 1
  ds_add_rtn_u32 v9, v10, v11
  %WAITDS%
  %BARRIER%
  %ADDV% v4, 1, v0
  v_and_b32 v4, 0x7f, v4
  v_lshlrev_b32 v4, 3, v4
  %DSR2% v[22:23], v4 offset1:1
  %ADDV% v15, 5, v0
  v_and_b32 v15, 0x7f, v15
  v_lshlrev_b32 v15, 2, v15
  %DSR2ST% v[24:25], v15 offset0:8 offset1:12
  // global atomics returning the old value: a shared counter, per-lane compare-swaps, max, xor
  v_mov_b32 v13, 0
  %AADD% v12, v13, v11, s[4:5] %RTN%
  v_lshlrev_b32 v16, 2, v0
  %ADDV% v16, 16, v16
  v_and_b32 v26, 1, v0
  v_mov_b32 v27, v0
  %ACAS% v19, v16, v[26:27], s[4:5] %RTN%
  v_mul_u32_u24 v20, 0x9e37, v0
  %AUMAX% v13, v20, s[4:5] offset:4
  %AXOR% v13, v20, s[4:5] offset:8
  %WAITV%
  %WAITDS%
  v_lshlrev_b32 v21, 5, v0
  %GSTORE% v21, v22, s[6:7]
  %GSTORE% v21, v23, s[6:7] offset:4
  %GSTORE% v21, v24, s[6:7] offset:8
  %GSTORE% v21, v25, s[6:7] offset:12
  %GSTORE% v21, v9, s[6:7] offset:16
  %GSTORE% v21, v12, s[6:7] offset:20
  %GSTORE% v21, v19, s[6:7] offset:24
  s_endpgm
"""


@case()
def lds_atomics(build: Build, session: Session) -> None:
    body = LDS_ATOMICS
    if not build.gfx12:
        body = body.replace("v_add_nc_u32_e32", "v_add_u32_e32")
    k = build_and_run(session, build, "lds_atomics", body, [Arg("counters"), Arg("out")],
                      vgprs=32, lds=4096, workgroup_id_x=False, block=128)
    n = 128
    lane = np.arange(n)
    # counters: [0] add, [1] max, [2] xor, [3] unused, [4 + i] lane i's compare-swap word
    initial = np.zeros(4 + n, np.uint32)
    initial[1] = 5
    initial[2] = 0x0F0F0F0F
    initial[4:] = np.where(lane % 3 == 0, lane, lane + 1000)
    counters = k.output(np.uint32, 4 + n, initial=initial)
    out = k.output(np.uint32, 8 * n, initial=0)
    k.launch("lds_atomics", [counters, out], (n,), (n,))
    got = k.read(out).reshape(n, 8)
    mem = k.read(counters)
    nxt = (lane + 1) % n
    same(got[:, 0], (1000 + nxt).astype(np.uint32), "ds_read2 after ds_write2 (first)")
    same(got[:, 1], (3 * nxt).astype(np.uint32), "ds_read2 (second)")
    fifth = (lane + 5) % n
    same(got[:, 2], (3 * fifth).astype(np.uint32), "ds_read2st64 (first)")
    same(got[:, 3], (1000 + fifth).astype(np.uint32), "ds_read2st64 (second)")
    # the returned old values of one counter: every value below n exactly once
    same(np.sort(got[:, 4]), lane.astype(np.uint32), "ds_add_rtn_u32 returns")
    same(np.sort(got[:, 5]), lane.astype(np.uint32), "global_atomic_add returns")
    same(mem[0:1], np.array([n], np.uint32), "global_atomic_add total")
    same(got[:, 6], initial[4:], "global_atomic_cmpswap returns the old value")
    swapped = np.where(initial[4:] == lane, lane & 1, initial[4:])
    same(mem[4:], swapped.astype(np.uint32), "global_atomic_cmpswap swaps where equal")
    values = (lane * 0x9E37).astype(np.uint32)
    same(mem[1:3], np.array([max(5, values.max()), np.bitwise_xor.reduce(values) ^ 0x0F0F0F0F],
                            np.uint32), "umax, xor")


# --- MODE through s_getreg/s_setreg, clocks, hints; s_trap and s_sethalt stop the queue -----

MODE_AND_CLOCKS = """
  %LOAD64% s[4:5], s[0:1], 0x0
  %WAITK%
  %CLOCK% s[12:13]
  s_getreg_b32 s8, hwreg(HW_REG_MODE, 0, 10)
  v_mov_b32 v1, 1.0
  v_mov_b32 v2, 0x30800000
  v_add_f32 v3, v1, v2
  s_setreg_imm32_b32 hwreg(HW_REG_MODE, 0, 2), 1
  v_add_f32 v4, v1, v2
  s_mov_b32 s9, 2
  s_setreg_b32 hwreg(HW_REG_MODE, 0, 2), s9
  v_sub_f32 v5, -v1, v2
  s_setreg_imm32_b32 hwreg(HW_REG_MODE, 0, 2), 3
  v_sub_f32 v6, -v1, v2
  v_mov_b32 v7, 0x0d800000
  v_mul_f32 v8, v7, v7
  s_setreg_imm32_b32 hwreg(HW_REG_MODE, 4, 2), 0
  v_mul_f32 v9, v7, v7
  s_getreg_b32 s10, hwreg(HW_REG_MODE, 0, 8)
  s_sleep 2
  s_setprio 3
  s_sethalt 0
  s_setkill 0
  %CLOCK% s[14:15]
  %WAITK%
  s_sub_u32 s16, s14, s12
  s_subb_u32 s17, s15, s13
  s_cmp_lt_i32 s17, 0
  s_cselect_b32 s18, 0, 1
  v_mov_b32 v0, 0
  v_mov_b32 v10, s8
  v_mov_b32 v11, s10
  v_mov_b32 v12, s18
  %GSTORE% v0, v10, s[4:5]
  %GSTORE% v0, v3, s[4:5] offset:4
  %GSTORE% v0, v4, s[4:5] offset:8
  %GSTORE% v0, v5, s[4:5] offset:12
  %GSTORE% v0, v6, s[4:5] offset:16
  %GSTORE% v0, v8, s[4:5] offset:20
  %GSTORE% v0, v9, s[4:5] offset:24
  %GSTORE% v0, v11, s[4:5] offset:28
  %GSTORE% v0, v12, s[4:5] offset:32
  %END%
  s_endpgm
"""


def _f32(bits: int) -> np.float32:
    return np.array([bits], np.uint32).view(np.float32)[0]


@case()
def mode_and_clocks(build: Build, session: Session) -> None:
    words = ({"CLOCK": "s_sendmsg_rtn_b64", "END": "s_sendmsg sendmsg(MSG_DEALLOC_VGPRS)"}
             if build.gfx12 else {"CLOCK": "s_memrealtime", "END": ""})
    body = MODE_AND_CLOCKS
    for key, value in words.items():
        body = body.replace(f"%{key}%", value)
    if build.gfx12:
        body = body.replace("s_sendmsg_rtn_b64 s[12:13]",
                            "s_sendmsg_rtn_b64 s[12:13], sendmsg(MSG_RTN_GET_REALTIME)")
        body = body.replace("s_sendmsg_rtn_b64 s[14:15]",
                            "s_sendmsg_rtn_b64 s[14:15], sendmsg(MSG_RTN_GET_REALTIME)")
    k = build_and_run(session, build, "mode_and_clocks", body, [Arg("out")],
                      workgroup_id_x=False, block=build.wave,
                      directives=".amdhsa_float_denorm_mode_32 3")
    out = k.output(np.uint32, 9)
    k.launch("mode_and_clocks", [out], (build.wave,), (build.wave,))
    got = k.read(out)
    # the descriptor's FLOAT_MODE (round to nearest, denormals kept: 0xF0; the assembler's
    # default for f32 is 0, flush, hence the directive); gfx9 adds
    # DX10_CLAMP (bit 8) and IEEE (bit 9), both on by default
    same(got[0:1], np.array([0xF0 if build.gfx12 else 0x3F0], np.uint32), "initial MODE")
    one_up = np.nextafter(np.float32(1), np.float32(2))
    minus_down = -one_up
    f = got[1:7].view(np.float32)
    # 1 + 2^-30: nearest even gives 1, toward +inf the next float; -1 - 2^-30 toward -inf
    # gives the float below -1, toward zero -1; 2^-100 squared is a denormal, flushed once
    # FP_DENORM (f32) is 0
    same(f[:4], np.array([1.0, one_up, minus_down, -1.0], np.float32), "rounding modes")
    same(f[4:6], np.array([_f32(0x0d800000) ** 2, 0.0], np.float32), "denormal flush")
    same(got[7:8], np.array([(0xF0 & ~0x30) | 3], np.uint32), "MODE after the writes")
    same(got[8:9], np.array([1], np.uint32), "the clock does not go backwards")


@pytest.mark.parametrize("build", [GFX942, GFX1201_W32], ids=lambda b: b.id)
@pytest.mark.parametrize("stop,named", [("s_trap 2", "s_trap 2"),
                                        ("s_sethalt 1", "s_sethalt 1")])
def test_a_trap_or_halt_stops_the_queue_naming_it_and_later_packets_do_not_run(
        build, stop, named, session):
    from hsapy.errors import QueueError

    body = f"""
  %LOAD64% s[4:5], s[0:1], 0x0
  %WAITK%
  v_mov_b32 v1, 0
  v_mov_b32 v2, 7
  %GSTORE% v1, v2, s[4:5]
  {stop}
  v_mov_b32 v2, 9
  %GSTORE% v1, v2, s[4:5]
  s_endpgm
"""
    k = build_and_run(session, build, "stops", body, [Arg("out")], block=64)
    out = k.output(np.uint32, 1, initial=0)
    with pytest.raises(QueueError, match=named):
        k.launch("stops", [out], (64,), (64,))
    same(k.read(out), np.array([7], np.uint32), "stores before the stop land, none after")


# --- gfx12: SALU floats, VOPD dual issue, dot products, v_s_* and v_permlane16_var ----------

GFX12_SPECIALS = """
  s_load_b256 s[4:11], s[0:1], 0x0
  s_wait_kmcnt 0
  s_lshl_b32 s20, ttmp9, 2
  s_add_co_u32 s4, s4, s20
  s_add_co_ci_u32 s5, s5, 0
  s_load_b32 s21, s[4:5], 0x0
  s_wait_kmcnt 0
  // SALU floats: t = float(x); u = t + 0.5; u += t * t (fused); w = u * 1.5 + t (fused)
  s_cvt_f32_i32 s22, s21
  s_add_f32 s23, s22, 0.5
  s_fmac_f32 s23, s22, s22
  s_fmamk_f32 s24, s23, 0x3fc00000, s22
  s_max_num_f32 s25, s24, 0x42c80000
  s_cmp_lt_f32 s24, 0x42c80000
  s_cselect_b32 s26, 1, 0
  s_cvt_pk_rtz_f16_f32 s27, s23, s24
  s_cvt_hi_f32_f16 s28, s27
  s_and_b32 s29, s21, 7
  s_cvt_f32_u32 s29, s29
  v_s_exp_f32 s30, s29
  // per lane: VOPD (the Y half reads v10 before the X half writes it), dot products, permlane
  v_lshlrev_b32 v1, 2, v0
  s_mul_i32 s31, ttmp9, 0x80
  v_add_nc_u32_e32 v1, s31, v1
  global_load_b32 v2, v1, s[6:7]
  global_load_b32 v3, v1, s[6:7] offset:4096
  global_load_b32 v4, v1, s[6:7] offset:8192
  s_wait_loadcnt 0
  v_mov_b32 v10, 0x40400000
  v_dual_mul_f32 v10, v4, v2 :: v_dual_add_f32 v11, v10, v3
  v_dot2_f32_f16 v5, v2, v3, v4
  v_dot4_i32_iu8 v6, v2, v3, v4 neg_lo:[1,1,0]
  v_dot4_i32_iu8 v7, v2, v3, v4 neg_lo:[0,1,0]
  v_mul_u32_u24 v12, 7, v0
  v_add_nc_u32_e32 v12, 3, v12
  v_and_b32 v12, 15, v12
  v_permlane16_var_b32 v13, v2, v12
  v_mov_b32 v14, s24
  v_mov_b32 v15, s25
  v_mov_b32 v16, s26
  v_mov_b32 v17, s27
  v_mov_b32 v18, s28
  v_mov_b32 v19, s30
  v_lshlrev_b32 v20, 6, v0
  s_mul_i32 s31, ttmp9, 0x800
  v_add_nc_u32_e32 v20, s31, v20
  global_store_b32 v20, v10, s[8:9]
  global_store_b32 v20, v11, s[8:9] offset:4
  global_store_b32 v20, v5, s[8:9] offset:8
  global_store_b32 v20, v6, s[8:9] offset:12
  global_store_b32 v20, v7, s[8:9] offset:16
  global_store_b32 v20, v13, s[8:9] offset:20
  global_store_b32 v20, v14, s[8:9] offset:24
  global_store_b32 v20, v15, s[8:9] offset:28
  global_store_b32 v20, v16, s[8:9] offset:32
  global_store_b32 v20, v17, s[8:9] offset:36
  global_store_b32 v20, v18, s[8:9] offset:40
  global_store_b32 v20, v19, s[8:9] offset:44
  s_endpgm
"""


def _f16_toward_zero(x: np.ndarray) -> np.ndarray:
    """f32 -> f16 rounded toward zero: the nearest f16, stepped back when it is farther out."""
    near = x.astype(np.float16)
    over = np.abs(near.astype(np.float32)) > np.abs(x)
    return np.where(over, np.nextafter(near, np.float16(0)), near).astype(np.float16)


def _bytes(words: np.ndarray, dtype) -> np.ndarray:
    return words.view(dtype).reshape(-1, 4).astype(np.int64)


@case(GFX1201_W32)
def gfx12_specials(build: Build, session: Session) -> None:
    k = build_and_run(session, build, "gfx12_specials", GFX12_SPECIALS,
                      [Arg("xs"), Arg("lanes"), Arg("out"), Arg("unused")], vgprs=24, block=32,
                      directives=".amdhsa_float_denorm_mode_32 3")
    groups, w = 8, 32
    xs = np.array([0, 1, -3, 7, 9, -12, 100, 3], np.int32)
    n = groups * w
    # a, b: pairs of f16 quarter-integers (their bits are the int8 inputs too); c: f32
    # quarter-integers, so every dot product below is exact
    f16 = (k.rng.integers(-40, 40, 4 * n) / 4).astype(np.float16).view(np.uint32)
    words = np.concatenate([f16, (k.rng.integers(-400, 400, n) / 4).astype(np.float32)
                            .view(np.uint32)])
    out = k.output(np.uint32, 16 * n)
    lanes = np.zeros(3 * 1024, np.uint32)
    lanes[:n], lanes[1024:1024 + n], lanes[2048:2048 + n] = words[:n], words[n:2 * n], words[2 * n:]
    k.launch("gfx12_specials", [k.input(xs), k.input(lanes), out, 0], (n,), (w,))
    got = k.read(out).reshape(n, 16)
    a, b, c = words[:n], words[n:2 * n], words[2 * n:]
    fa, fb, fc = a.view(np.float32), b.view(np.float32), c.view(np.float32)
    with np.errstate(all="ignore"):
        same(got[:, 0].view(np.float32), fc * fa, "VOPD X: v_dual_mul_f32")
        same(got[:, 1].view(np.float32), np.float32(3.0) + fb, "VOPD Y reads v10 before X")
    ha, hb = a.view(np.float16).reshape(-1, 2), b.view(np.float16).reshape(-1, 2)
    dot2 = (ha.astype(np.float64) * hb).sum(axis=1) + fc.astype(np.float64)
    same(got[:, 2].view(np.float32), dot2.astype(np.float32), "v_dot2_f32_f16")
    sa, ua = _bytes(a, np.int8), _bytes(a, np.uint8)
    sb = _bytes(b, np.int8)
    ci = c.view(np.int32).astype(np.int64)
    same(got[:, 3], ((sa * sb).sum(axis=1) + ci).astype(np.uint32), "v_dot4_i32_iu8 s*s")
    same(got[:, 4], ((ua * sb).sum(axis=1) + ci).astype(np.uint32), "v_dot4_i32_iu8 u*s")
    lane = np.arange(n)
    same(got[:, 5], a[lane // 16 * 16 + (7 * lane + 3) % 16], "v_permlane16_var_b32")
    for g, x in enumerate(xs):
        t = np.float32(x)
        u = np.float32(np.float64(t) + 0.5)
        u = np.float32(np.float64(t) * t + u)
        wv = np.float32(np.float64(u) * 1.5 + t)
        row = got[g * w:(g + 1) * w]
        pk = _f16_toward_zero(np.array([u, wv], np.float32))
        want = np.array([wv.view(np.uint32), max(wv, np.float32(100)).view(np.uint32),
                         int(wv < 100), pk.view(np.uint32)[0],
                         np.float32(pk[1]).view(np.uint32),
                         np.float32(2.0 ** (x & 7)).view(np.uint32)], np.uint32)
        same(row[:, 6:12], np.tile(want, (w, 1)), f"SALU floats for x={x}")


@pytest.fixture(scope="module")
def session():
    s = Session()
    yield s
    s.close()


@pytest.mark.parametrize("name,build", [pytest.param(name, b, id=f"{name}-{b.id}")
                                        for name, (fn, builds) in CASES.items()
                                        for b in builds])
def test_handwritten_kernel_matches_its_reference(name, build, session):
    CASES[name][0](build, session)
