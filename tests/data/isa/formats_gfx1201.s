// Hand-written gfx1201 instructions for encodings compilers rarely emit; the oracle test
// assembles this with llvm-mc-19 and compares hsapy's disassembly with libLLVM's.
.amdgcn_target "amdgcn-amd-amdhsa--gfx1201"
.text
formats_gfx1201:
  s_load_b32 s5, s[2:3], s7 offset:0x10
  s_load_b64 s[4:5], s[2:3], 0x10 scope:SCOPE_SYS
  s_load_b128 s[8:11], s[2:3], -0x10
  s_load_b32 s5, s[2:3], 0x0 th:TH_LOAD_NT
  s_buffer_load_b32 s5, s[4:7], 0x4
  buffer_load_b32 v1, off, s[4:7], s0
  buffer_load_b32 v1, v2, s[4:7], null offen offset:4
  buffer_load_b128 v[4:7], v[2:3], s[8:11], m0 idxen offen offset:8388607 th:TH_LOAD_NT scope:SCOPE_SYS
  buffer_load_d16_hi_u8 v1, v2, ttmp[4:7], s3 idxen
  buffer_store_b16 v1, v2, s[4:7], s3 offen scope:SCOPE_SE
  buffer_store_b96 v[4:6], off, s[4:7], s3 offset:12 th:TH_STORE_NT
  buffer_atomic_add_u32 v1, v2, s[4:7], s0 idxen th:TH_ATOMIC_RETURN
  buffer_atomic_cmpswap_b64 v[4:7], v2, s[4:7], s0 offen
  buffer_atomic_add_f32 v1, off, s[4:7], s0 scope:SCOPE_DEV
  buffer_load_format_xyzw v[4:7], v2, s[4:7], s0 idxen
  tbuffer_load_format_x v1, v2, s[4:7], s0 format:[BUF_FMT_32_FLOAT] offen
  tbuffer_store_format_xy v[4:5], off, s[4:7], s0 format:[BUF_FMT_16_16_UNORM] offset:16
  tbuffer_load_d16_format_xyzw v[4:5], v2, s[4:7], s0 format:[BUF_FMT_8_8_8_8_UINT] idxen
  s_buffer_load_b64 s[8:9], s[4:7], s3 offset:0x10
  s_buffer_load_i8 s5, s[4:7], 0x3
  s_getpc_b64 s[4:5]
  s_setpc_b64 s[4:5]
  s_mov_b32 s0, 0x12345678
  s_mov_b32 s0, -1
  s_mov_b64 s[0:1], 1.0
  s_movk_i32 s0, 0xfff0
  s_getreg_b32 s1, hwreg(HW_REG_HW_ID1, 4, 8)
  s_setreg_b32 hwreg(HW_REG_MODE, 0, 4), s3
  s_wait_loadcnt 0x3f
  s_wait_kmcnt 0x1
  s_wait_dscnt 0x2
  s_wait_storecnt 0x0
  s_wait_samplecnt 0x0
  s_wait_alu 0xfffd
  s_delay_alu instid0(SALU_CYCLE_3) | instskip(SKIP_4) | instid1(TRANS32_DEP_3)
  s_delay_alu instid0(VALU_DEP_1)
  s_sendmsg sendmsg(MSG_INTERRUPT)
  s_sleep 2
  s_setprio 3
  s_nop 7
  s_barrier_signal -1
  s_barrier_wait 0xffff
  s_cbranch_vccnz 65535
  s_branch 3
  s_clause 0x3
  s_cselect_b32 s0, -1, 0
  s_add_nc_u64 s[0:1], s[2:3], 5
  s_mul_u64 s[0:1], s[2:3], s[4:5]
  s_and_not1_b32 s1, s2, s3
  s_or_not1_saveexec_b32 s1, s2
  s_cmp_eq_u64 s[0:1], s[2:3]
  s_bitcmp1_b32 s0, 3
  v_mov_b32_e32 v1, 0x12345678
  v_mov_b32_e32 v1, src_shared_base
  v_mov_b32_e32 v1, m0
  v_mov_b32_e32 v1, null
  v_mov_b32_e32 v1, ttmp9
  v_cvt_f16_f32_e32 v1, 0.15915494
  v_cvt_f64_f32_e32 v[2:3], -4.0
  v_add_f64_e64 v[2:3], 0x40590000, v[4:5]
  v_add_f16_e32 v1, 0x1234, v2
  v_fmamk_f32 v1, v2, 0x41200000, v3
  v_fmaak_f32 v1, v2, v3, 0x41200000
  v_cndmask_b32_e64 v1, -v2, |v3|, s4
  v_add_f32_e64 v1, -|v2|, 1.0 clamp mul:4
  v_add_f32_e64 v1, v2, 0x42280000 div:2
  v_fma_f32 v1, v2, 0x3fc00000, v3
  v_fma_f16 v1, v2, v3, v4 op_sel:[1,0,0,1] clamp
  v_mad_co_u64_u32 v[2:3], s4, v2, v3, v[4:5]
  v_add_co_u32 v1, s4, v2, v3
  v_add_co_ci_u32_e32 v1, vcc_lo, v2, v3, vcc_lo
  v_div_scale_f32 v1, vcc_lo, v2, v3, v2
  v_readlane_b32 s1, v2, m0
  v_writelane_b32 v1, s2, 7
  v_cmpx_gt_u32_e32 5, v1
  v_cmpx_lt_f32_e64 v1, |v2|
  v_cmp_class_f32_e64 s2, v1, 3
  v_cmp_lt_f32_e64 s3, v1, 0x3fc00000
  v_pk_fma_f16 v5, v2, v3, v4 op_sel:[1,0,0] op_sel_hi:[0,1,1] neg_lo:[1,0,0] neg_hi:[0,1,0] clamp
  v_pk_add_f16 v1, v2, v3 op_sel_hi:[0,0]
  v_pk_mul_f16 v1, 0x3c00, v3
  v_fma_mix_f32 v5, v2, v3, v4 op_sel:[1,0,0] op_sel_hi:[0,1,1] clamp
  v_dot2_f32_f16 v1, v2, v3, v4
  v_permlane16_b32 v1, v2, s3, s4
  v_mov_b32_dpp v5, v2 quad_perm:[1,0,3,2] row_mask:0xf bank_mask:0xf
  v_mov_b32_dpp v5, v2 row_share:3 row_mask:0xf bank_mask:0xf fi:1
  v_add_f32_dpp v1, -v1, |v2| row_xmask:5 row_mask:0xa bank_mask:0x1 bound_ctrl:1
  v_add_f32_e64_dpp v5, v2, v3 row_shr:1 row_mask:0xf bank_mask:0xf
  v_add_f32_e64_dpp v5, -v2, |v3| clamp row_ror:7 row_mask:0xf bank_mask:0xf
  v_mov_b32_dpp v5, v2 dpp8:[1,0,3,2,5,4,7,6]
  v_add_f32_dpp v5, v2, v3 dpp8:[7,6,5,4,3,2,1,0] fi:1
  v_dual_mov_b32 v5, v2 :: v_dual_add_f32 v6, v3, v4
  v_dual_fmaak_f32 v5, v2, v3, 0x41200000 :: v_dual_mov_b32 v6, 0x41200000
  v_dual_cndmask_b32 v5, v2, v3 :: v_dual_mul_f32 v6, v1, v4
  v_dual_fmac_f32 v5, s2, v3 :: v_dual_sub_f32 v6, 1.0, v4
  v_dual_max_num_f32 v5, v2, v3 :: v_dual_and_b32 v6, v1, v4
  v_dual_mov_b32 v6, 2 :: v_dual_add_nc_u32 v7, v1, v3
  ds_store_2addr_b32 v1, v2, v3 offset0:4 offset1:8
  ds_load_2addr_b64 v[2:5], v1 offset0:1 offset1:255
  ds_load_b128 v[4:7], v1 offset:65535
  ds_store_b96 v1, v[4:6] offset:16
  ds_swizzle_b32 v1, v2 offset:swizzle(BROADCAST,8,3)
  ds_swizzle_b32 v1, v2 offset:swizzle(QUAD_PERM,1,2,3,0)
  ds_permute_b32 v1, v2, v3 offset:4
  ds_add_rtn_f32 v1, v2, v3
  ds_cmpstore_rtn_b64 v[2:3], v1, v[4:5], v[6:7] offset:8
  ds_nop
  global_load_b32 v5, v2, s[6:7] offset:-4096
  global_load_b96 v[4:6], v[2:3], off offset:8388607 th:TH_LOAD_NT scope:SCOPE_SYS
  global_load_b32 v5, v[2:3], off th:TH_LOAD_HT scope:SCOPE_DEV
  global_store_b32 v[2:3], v4, off th:TH_STORE_NT_WB scope:SCOPE_SE
  global_store_d16_hi_b16 v[2:3], v4, off
  global_load_d16_u8 v1, v[2:3], off
  global_atomic_cmpswap_b64 v[4:5], v[2:3], v[6:9], off th:TH_ATOMIC_RETURN
  global_atomic_add_f32 v[2:3], v4, off scope:SCOPE_DEV
  global_atomic_max_i32 v1, v2, v4, s[4:5] offset:64 th:TH_ATOMIC_RETURN
  scratch_load_b32 v5, v2, off offset:8
  scratch_store_b32 off, v5, s3 offset:8
  scratch_load_b64 v[4:5], off, s3
  scratch_store_b128 v1, v[4:7], s3 offset:-16
  flat_load_b32 v5, v[2:3] offset:4095 scope:SCOPE_SYS
  flat_atomic_swap_b32 v1, v[2:3], v4 th:TH_ATOMIC_RETURN
  flat_atomic_add_u64 v[2:3], v[4:5]
  global_inv scope:SCOPE_DEV
  global_wb scope:SCOPE_SYS
  s_endpgm
