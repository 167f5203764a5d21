// Hand-written gfx9 (gfx942) instructions for encodings compilers rarely emit; the oracle test
// assembles this with llvm-mc-19 and compares hsapy's disassembly with libLLVM's.
.amdgcn_target "amdgcn-amd-amdhsa--gfx942"
.text
formats_gfx9:
  s_load_dword s5, s[2:3], s7
  s_load_dwordx2 s[4:5], s[2:3], 0x10 glc
  s_load_dwordx4 s[8:11], s[2:3], s7 offset:0x20
  s_buffer_load_dword s5, s[4:7], 0x4
  s_store_dword s5, s[2:3], 0x8
  s_dcache_wb
  s_memtime s[4:5]
  s_getpc_b64 s[4:5]
  s_setpc_b64 s[4:5]
  s_swappc_b64 s[6:7], s[4:5]
  s_mov_b32 s0, 0x12345678
  s_mov_b32 s0, -1
  s_mov_b32 s0, 0.5
  s_mov_b64 s[0:1], 1.0
  s_mov_b64 s[0:1], 0xffffffff
  s_movk_i32 s0, 0xfff0
  s_cmpk_eq_u32 s1, 0x40
  s_addk_i32 s2, 0x7fff
  s_setreg_b32 hwreg(HW_REG_MODE, 0, 4), s3
  s_setreg_imm32_b32 hwreg(HW_REG_MODE, 4, 4), 0x3
  s_getreg_b32 s1, hwreg(HW_REG_HW_ID)
  s_waitcnt vmcnt(0) expcnt(0) lgkmcnt(0)
  s_waitcnt vmcnt(63) expcnt(7) lgkmcnt(15)
  s_waitcnt vmcnt(3) lgkmcnt(1)
  s_sendmsg sendmsg(MSG_INTERRUPT)
  s_sleep 2
  s_setprio 3
  s_trap 2
  s_nop 7
  s_cbranch_vccnz 65535
  s_branch 3
  s_bitset1_b32 s3, s4
  s_bfe_u32 s1, s2, 0x80008
  s_lshl1_add_u32 s1, s2, s3
  s_pack_ll_b32_b16 s1, s2, s3
  s_abs_i32 s1, s2
  s_cselect_b64 s[0:1], -1, 0
  s_cmp_eq_u64 s[0:1], s[2:3]
  s_bitcmp1_b32 s0, 3
  v_mov_b32_e32 v1, 0x12345678
  v_mov_b32_e32 v1, src_shared_base
  v_mov_b32_e32 v1, m0
  v_mov_b32_e32 v1, exec_hi
  v_mov_b32_e32 v1, ttmp9
  v_mov_b32_e32 v1, src_scc
  v_cvt_f16_f32_e32 v1, 0.15915494
  v_cvt_f64_f32_e32 v[2:3], -4.0
  v_add_f64 v[2:3], 0.15915494309189532, v[4:5]
  v_add_f16_e32 v1, 0x1234, v2
  v_add_u16_e32 v1, 0x1234, v2
  v_mul_lo_u16_e32 v1, -1, v2
  v_fmamk_f32 v1, v2, 0x41200000, v3
  v_fmaak_f32 v1, v2, v3, 0x41200000
  v_cndmask_b32_e64 v1, -v2, |v3|, s[4:5]
  v_add_f32_e64 v1, -|v2|, 1.0 clamp mul:4
  v_add_f32_e64 v1, v2, v3 div:2
  v_fma_f16 v1, v2, v3, v4 op_sel:[1,0,0,1] clamp
  v_mad_u64_u32 v[2:3], s[4:5], v2, v3, v[4:5]
  v_add_co_u32_e64 v1, s[4:5], v2, v3
  v_addc_co_u32_e32 v1, vcc, v2, v3, vcc
  v_div_scale_f32 v1, vcc, v2, v3, v2
  v_readlane_b32 s1, v2, m0
  v_writelane_b32 v1, s2, 7
  v_readfirstlane_b32 s3, v4
  v_cmpx_gt_u32_e32 vcc, 5, v1
  v_cmpx_lt_f32_e64 s[2:3], v1, |v2|
  v_cmp_class_f32_e64 s[2:3], v1, 3
  v_pk_fma_f16 v5, v2, v3, v4 op_sel:[1,0,0] op_sel_hi:[0,1,1] neg_lo:[1,0,0] neg_hi:[0,1,0] clamp
  v_pk_add_f16 v1, v2, v3 op_sel_hi:[0,0]
  v_pk_mul_f32 v[2:3], v[4:5], v[6:7] op_sel_hi:[0,1]
  v_pk_fma_f32 v[2:3], v[4:5], v[6:7], v[8:9] neg_lo:[0,0,1]
  v_fma_mix_f32 v5, v2, v3, v4 op_sel:[1,0,0] op_sel_hi:[0,1,1] clamp
  v_fma_mixhi_f16 v5, v2, v3, v4 op_sel_hi:[1,1,1]
  v_dot2_f32_f16 v1, v2, v3, v4
  v_accvgpr_write_b32 a1, v2
  v_accvgpr_read_b32 v3, a4
  v_accvgpr_mov_b32 a1, a2
  v_mov_b32_dpp v1, v2 quad_perm:[0,1,2,3] row_mask:0x1 bank_mask:0x2
  v_add_f32_dpp v1, -v1, |v1| row_bcast:15 row_mask:0xa bank_mask:0x1
  v_add_u32_dpp v1, v2, v3 wave_ror:1 row_mask:0xf bank_mask:0xf
  v_add_u32_dpp v1, v2, v3 row_mirror row_mask:0xf bank_mask:0xf bound_ctrl:1
  v_add_u16_sdwa v8, v12, sext(v12) clamp dst_sel:WORD_1 dst_unused:UNUSED_PRESERVE src0_sel:BYTE_1 src1_sel:DWORD
  v_cmp_lt_f32_sdwa s[2:3], v1, -|v2| src0_sel:WORD_1 src1_sel:DWORD
  v_cmp_eq_u32_sdwa vcc, v1, v2 src0_sel:BYTE_0 src1_sel:BYTE_2
  v_mov_b32_sdwa v1, v2 dst_sel:BYTE_0 dst_unused:UNUSED_SEXT src0_sel:WORD_1
  v_cvt_f32_f16_sdwa v1, -v2 clamp mul:2 dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:WORD_1
  v_add_f32_sdwa v1, s2, v3 dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:DWORD src1_sel:WORD_0
  ds_write2_b32 v1, v2, v3 offset0:4 offset1:8
  ds_read2_b64 v[2:5], v1 offset0:1 offset1:255
  ds_read_b128 v[4:7], v1 offset:65535
  ds_write_b96 v1, v[4:6] offset:16
  ds_swizzle_b32 v1, v2 offset:swizzle(BROADCAST,8,3)
  ds_swizzle_b32 v1, v2 offset:swizzle(REVERSE,16)
  ds_swizzle_b32 v1, v2 offset:swizzle(BITMASK_PERM,"01pip")
  ds_permute_b32 v1, v2, v3 offset:4
  ds_add_rtn_f32 v1, v2, v3
  ds_cmpst_rtn_b64 v[2:3], v1, v[4:5], v[6:7] offset:8
  ds_nop
  global_load_dword v5, v2, s[6:7] offset:-4096
  global_load_dwordx3 v[4:6], v[2:3], off offset:4095 nt
  global_store_short_d16_hi v[2:3], v4, off
  global_load_ubyte_d16 v1, v[2:3], off
  global_atomic_cmpswap_x2 v[4:5], v[2:3], v[6:9], off sc0
  global_atomic_add_f64 v[2:3], v[4:5], off
  global_atomic_pk_add_f16 v1, v[2:3], v4, off sc0
  scratch_load_dword v5, v2, off offset:8
  scratch_store_dword off, v5, s3 offset:8
  scratch_load_dwordx2 v[4:5], off, s3
  scratch_store_dwordx4 v1, v[4:7], s3 offset:-16 sc1
  flat_load_dword v5, v[2:3] offset:4095 sc0 sc1
  flat_atomic_swap v1, v[2:3], v4 sc0
  flat_atomic_add_x2 v[2:3], v[4:5]
  buffer_load_dword v5, v2, s[4:7], s3 offen offset:16
  buffer_store_dwordx2 v[4:5], v2, s[8:11], 0 idxen
  buffer_load_ubyte v1, off, s[4:7], 0 offset:4095 sc0 nt
  buffer_atomic_add v1, v2, s[4:7], s5 offen sc0
  buffer_wbl2 sc0 sc1
  buffer_inv sc0
  buffer_load_dword v2, s[4:7], 0 offen lds
  buffer_load_ubyte off, s[4:7], s3 offset:8 lds
  buffer_load_format_xy v[4:5], v[2:3], s[4:7], s3 idxen offen
  buffer_atomic_cmpswap_x2 v[4:7], v2, s[4:7], 0 idxen sc0
  buffer_atomic_add_f32 v1, v2, s[4:7], 0 offen
  tbuffer_load_format_x v1, v2, s[4:7], 0 format:[BUF_DATA_FORMAT_32,BUF_NUM_FORMAT_FLOAT] offen
  tbuffer_store_format_xyzw v[4:7], off, s[4:7], s3 format:[BUF_DATA_FORMAT_8_8_8_8,BUF_NUM_FORMAT_UNORM] offset:4 sc1
  s_buffer_load_dwordx2 s[8:9], s[4:7], s3
  s_buffer_store_dword s5, s[4:7], 0x4
  s_atomic_add s5, s[2:3], 0x0 glc
  s_store_dword s5, s[2:3], s4
  s_endpgm
