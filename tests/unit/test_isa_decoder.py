"""The table-driven ISA decoder on hand-checked instruction words.

The expected texts come from llvm-objdump-19 / llvm-mc-19 -show-encoding; the operand structure
is what the executor relies on (hsapy/sim/isa/instruction.py documents the contract).
"""
from __future__ import annotations

import struct

import pytest

from hsapy.errors import HsapyError
from hsapy.sim.isa import DecodeError, Operand, decode
from hsapy.sim.isa.decoder import family_of


def _code(*words: int) -> bytes:
    return struct.pack(f"<{len(words)}I", *words)


def _one(target: str, *words: int):
    insts = decode(_code(*words), target)
    assert len(insts) == 1
    return insts[0]


# (target, words, LLVM text, encoding, name, suffix)
CASES = [
    ("gfx942", (0xC00200C0, 0x00000018), "s_load_dword s3, s[0:1], 0x18", "SMEM", "s_load_dword", ""),
    ("gfx942", (0xD1FD0000, 0x04011002), "v_lshl_add_u32 v0, s2, 8, v0", "VOP3", "v_lshl_add_u32", ""),
    ("gfx942", (0x7D880003,), "v_cmp_gt_i32_e32 vcc, s3, v0", "VOPC", "v_cmp_gt_i32", "_e32"),
    ("gfx942", (0xBE82206A,), "s_and_saveexec_b64 s[2:3], vcc", "SOP1", "s_and_saveexec_b64", ""),
    ("gfx942", (0xDC508000, 0x067F0004), "global_load_dword v6, v[4:5], off", "GLOBAL",
     "global_load_dword", ""),
    ("gfx942", (0x02040F06,), "v_add_f32_e32 v2, v6, v7", "VOP2", "v_add_f32", "_e32"),
    ("gfx942", (0xD81A0000, 0x00000301), "ds_write_b32 v1, v3", "DS", "ds_write_b32", ""),
    ("gfx942", (0xD8700200, 0x02000001), "ds_read2st64_b32 v[2:3], v1 offset1:2", "DS",
     "ds_read2st64_b32", ""),
    ("gfx942", (0xBF8CC07F,), "s_waitcnt lgkmcnt(0)", "SOPP", "s_waitcnt", ""),
    ("gfx942", (0x7E0202FF, 0x3F800000), "v_mov_b32_e32 v1, 1.0", "VOP1", "v_mov_b32", "_e32"),
    ("gfx942", (0x7E0A02FA, 0xFC091807),
     "v_mov_b32_dpp v5, v7 row_shr:8 row_mask:0xf bank_mask:0xc bound_ctrl:1", "VOP1", "v_mov_b32", "_dpp"),
    ("gfx942", (0x4C1018F9, 0x0601060C),
     "v_add_u16_sdwa v8, v12, v12 dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:BYTE_1 src1_sel:DWORD",
     "VOP2", "v_add_u16", "_sdwa"),
    ("gfx942", (0xD3B24002, 0x18020902), "v_pk_add_f32 v[2:3], v[2:3], v[4:5]", "VOP3P",
     "v_pk_add_f32", ""),
    ("gfx942", (0xDE539FF0, 0x057F0002), "global_load_dword v5, v[2:3], off offset:-16 sc0 nt sc1",
     "GLOBAL", "global_load_dword", ""),
    ("gfx1201", (0xF4000080, 0xF8000018), "s_load_b32 s2, s[0:1], 0x18", "SMEM", "s_load_b32", ""),
    ("gfx1201", (0xD6460000, 0x04011075), "v_lshl_add_u32 v0, ttmp9, 8, v0", "VOP3",
     "v_lshl_add_u32", ""),
    ("gfx1201", (0xBFB60003,), "s_sendmsg sendmsg(MSG_DEALLOC_VGPRS)", "SOPP", "s_sendmsg", ""),
    ("gfx1201", (0xEE05007C, 0x00000002, 0x00000002), "global_load_b32 v2, v[2:3], off", "GLOBAL",
     "global_load_b32", ""),
    ("gfx1201", (0xD7006A02, 0x00020004), "v_add_co_u32 v2, vcc_lo, s4, v0", "VOP3SD",
     "v_add_co_u32", ""),
    ("gfx1201", (0xCA080102, 0x05060903), "v_dual_mov_b32 v5, v2 :: v_dual_add_f32 v6, v3, v4",
     "VOPD", "v_dual_mov_b32", ""),
]


@pytest.mark.parametrize("target,words,text,encoding,name,suffix", CASES)
def test_decodes_like_llvm(target, words, text, encoding, name, suffix):
    inst = _one(target, *words)
    assert inst.words == tuple(words)
    assert inst.size == 4 * len(words)
    assert (inst.encoding, inst.name, inst.suffix) == (encoding, name, suffix)
    if text is not None:
        assert inst.text() == text


def test_vop3_input_modifiers_and_output_modifiers():
    # llvm-mc-19 -mcpu=gfx1201: v_add_f32_e64 v5, -v2, |s3| clamp mul:2
    inst = _one("gfx1201", 0xD5038205, 0x28000702)
    assert inst.text() == "v_add_f32_e64 v5, -v2, |s3| clamp mul:2"
    assert inst.srcs[0] == Operand("vgpr", 2, 1, None, "", neg=True)
    assert inst.srcs[1] == Operand("sgpr", 3, 1, None, "", abs=True)
    assert inst.fields["clamp"] == 1 and inst.fields["omod"] == 1


def test_operands_of_a_load_and_a_store():
    load = _one("gfx942", 0xC00200C0, 0x00000018)
    assert load.dsts == (Operand("sgpr", 3, 1, None, ""),)
    assert load.srcs == (Operand("sgpr", 0, 2, None, ""), Operand("imm", 0, 1, 0x18, ""))
    store = _one("gfx942", 0xDC708000, 0x007F0200)  # global_store_dword v[0:1], v2, off
    assert store.text() == "global_store_dword v[0:1], v2, off"
    assert store.dsts == ()
    assert store.srcs[:2] == (Operand("vgpr", 0, 2, None, ""), Operand("vgpr", 2, 1, None, ""))
    assert store.srcs[2] == Operand("imm", 0, 1, 0, "")


def test_vop3_sd_has_two_destinations_and_a_64_bit_source():
    # v_mad_u64_u32 v[2:3], s[0:1], v4, v5, v[6:7] (gfx942 VOP3B)
    inst = _one("gfx942", 0xD1E80002, 0x041A0B04)
    assert inst.encoding == "VOP3SD"
    assert inst.dsts == (Operand("vgpr", 2, 2, None, ""), Operand("sgpr", 0, 2, None, ""))
    assert [op.count for op in inst.srcs] == [1, 1, 2]


def test_implicit_vcc_is_a_destination_of_vopc_and_a_source_of_cndmask():
    cmp = _one("gfx942", 0x7D880003)
    assert cmp.dsts == (Operand("special", 106, 2, None, "vcc"),)
    cnd = _one("gfx942", 0x00000503)  # v_cndmask_b32_e32 v0, v3, v2, vcc
    assert cnd.text() == "v_cndmask_b32_e32 v0, v3, v2, vcc"
    assert cnd.srcs[-1].name == "vcc"


def test_inline_constants_and_literals_carry_values():
    inst = _one("gfx942", 0x7E0202F8)  # v_mov_b32 v1, 1/(2*pi)
    assert inst.srcs[0].kind == "const"
    assert inst.srcs[0].value == pytest.approx(0.15915494309189535)
    lit = _one("gfx942", 0x7E0202FF, 0x12345678)
    assert lit.srcs[0] == Operand("literal", 0, 1, 0x12345678, "")
    assert lit.text() == "v_mov_b32_e32 v1, 0x12345678"
    neg = _one("gfx942", 0x7E0202C1)  # inline -1
    assert neg.srcs[0] == Operand("const", 0, 1, -1, "")


def test_branch_target_is_a_label_relative_to_the_next_instruction():
    # s_nop 0 ; s_cbranch_execz 2 -> target = 4 + 4 + 2 * 4
    insts = decode(_code(0xBF800000, 0xBF880002), "gfx942", base_offset=0x1900)
    branch = insts[1]
    assert branch.offset == 0x1904
    assert branch.text() == "s_cbranch_execz 2"
    assert branch.srcs == (Operand("label", 0, 1, 0x1904 + 4 + 8, ""),)
    back = decode(_code(0xBF82FFFF), "gfx942")[0]  # s_branch -1: to itself
    assert back.srcs[0].value == 0


def test_vopd_pair_holds_the_y_half():
    inst = _one("gfx1201", 0xCA080102, 0x05060903)
    assert inst.dsts == (Operand("vgpr", 5, 1, None, ""),)
    assert inst.srcs == (Operand("vgpr", 2, 1, None, ""),)
    assert inst.pair is not None and inst.pair.name == "v_dual_add_f32"
    assert inst.pair.dsts == (Operand("vgpr", 6, 1, None, ""),)
    assert inst.pair.srcs == (Operand("vgpr", 3, 1, None, ""), Operand("vgpr", 4, 1, None, ""))


def test_unknown_encoding_raises_naming_target_offset_words_and_format():
    code = _code(0xBF800000, 0xBF800000, 0xFFFFFFFF)
    with pytest.raises(DecodeError) as info:
        decode(code, "gfx942")
    err = info.value
    assert isinstance(err, HsapyError)
    assert err.offset == 8 and err.words[0] == 0xFFFFFFFF
    text = str(err)
    assert "gfx942" in text and "0x8" in text and "FFFFFFFF" in text and "nearest format" in text


def test_truncated_instruction_raises():
    with pytest.raises(DecodeError, match="past the end"):
        decode(_code(0xC00200C0), "gfx942")  # an SMEM needs two dwords


def test_unknown_target_is_a_value_error():
    with pytest.raises(ValueError, match="gfx1030"):
        decode(b"\0\0\x80\xbf", "gfx1030")


def test_decode_is_cached_per_bytes_and_target():
    code = _code(0x02040F06, 0xBF810000)
    first = decode(code, "gfx942")
    assert decode(bytes(code), "gfx942") is first
    assert decode(code, "gfx90a") is not first


@pytest.mark.parametrize("target,family", [("gfx942", "gfx9"), ("gfx90a", "gfx9"),
                                           ("gfx1201", "gfx12"), ("gfx942:xnack-", "gfx9")])
def test_family_of(target, family):
    assert family_of(target) == family


def test_wave64_gfx12_code_names_64_bit_lane_masks():
    # v_cmp_gt_i32_e32 ..., s2, v0 and v_add_co_u32 v2, <carry>, s4, v0 (gfx1201)
    cmp32 = _one("gfx1201", 0x7C880002)
    assert cmp32.text() == "v_cmp_gt_i32_e32 vcc_lo, s2, v0"
    assert cmp32.dsts == (Operand("special", 106, 1, None, "vcc_lo"),)
    cmp64 = decode(_code(0x7C880002), "gfx1201", wavefront_size=64)[0]
    assert cmp64.text() == "v_cmp_gt_i32_e32 vcc, s2, v0"
    assert cmp64.dsts == (Operand("special", 106, 2, None, "vcc"),)
    add64 = decode(_code(0xD7006A02, 0x00020004), "gfx1201", wavefront_size=64)[0]
    assert add64.text() == "v_add_co_u32 v2, vcc, s4, v0"
    assert add64.dsts[1].count == 2


def test_wave32_is_rejected_on_gfx9():
    with pytest.raises(ValueError, match="wavefront size 32"):
        decode(_code(0xBF810000), "gfx942", wavefront_size=32)


def test_reserved_operand_code_is_a_decode_error():
    # v_mov_b32_e32 v1, <code 209>: 209..239 are reserved source codes on gfx942
    with pytest.raises(DecodeError, match="reserved"):
        decode(_code(0x7E0202D1), "gfx942")


@pytest.mark.parametrize("ctrl,text", [(0x1B, "quad_perm:[3,2,1,0]"), (0x111, "row_shr:1"),
                                       (0x138, "wave_shr:1"), (0x143, "row_bcast:31"),
                                       (0x155, "row_newbcast:5")])
def test_dpp_controls_on_gfx942(ctrl, text):
    inst = _one("gfx942", 0x7E0A02FA, 0xFF000007 | ctrl << 8)
    assert inst.text() == f"v_mov_b32_dpp v5, v7 {text} row_mask:0xf bank_mask:0xf"
    assert inst.fields["dpp_ctrl"] == ctrl and inst.srcs[0] == Operand("vgpr", 7, 1, None, "")


def test_reserved_dpp_control_is_a_decode_error():
    with pytest.raises(DecodeError, match="DPP control"):
        decode(_code(0x7E0A02FA, 0xFF000007 | 0x131 << 8), "gfx942")
    with pytest.raises(DecodeError, match="DPP control"):
        decode(_code(0x7E0A02FA, 0xFF000007 | 0x130 << 8), "gfx1201")  # wave_shl: gfx9 only
