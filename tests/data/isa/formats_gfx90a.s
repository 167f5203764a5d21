// Hand-written gfx90a instructions: the gfx90a spellings of the cache bits (glc/slc/scc), AGPR
// data in memory instructions (the acc bit) and MFMA, which the gfx942 file does not show.
.amdgcn_target "amdgcn-amd-amdhsa--gfx90a"
.text
formats_gfx90a:
  s_load_dwordx2 s[4:5], s[2:3], 0x10 glc
  global_load_dword v5, v[2:3], off offset:-16 glc slc scc
  global_load_dwordx4 a[4:7], v[2:3], off
  global_store_dwordx2 v[2:3], a[0:1], off offset:8 slc
  global_atomic_add v5, v[2:3], v9, off glc
  global_atomic_add_f64 v[2:3], v[4:5], off
  scratch_load_dword v5, v2, off offset:8
  scratch_load_dword v5, off, s3 offset:8 glc
  scratch_store_dword off, v5, s3 offset:8
  flat_load_dword v5, v[2:3] offset:4095 glc
  flat_atomic_swap v1, v[2:3], v4 glc
  buffer_load_dword v5, v2, s[4:7], s3 offen offset:16 glc slc
  buffer_store_dword a1, v2, s[4:7], 0 idxen
  buffer_wbl2
  buffer_invl2
  buffer_load_dword v1, off, s[0:3], s5 offset:4
  buffer_store_dword v1, v2, s[0:3], 0 offen offset:12
  buffer_load_dword v2, s[4:7], 0 offen lds
  tbuffer_store_format_x a1, v2, s[4:7], s0 format:[BUF_DATA_FORMAT_32] idxen glc slc scc
  s_atomic_cmpswap s[6:7], s[2:3], 0x8 glc
  s_buffer_atomic_add_x2 s[6:7], s[4:7], 0x8
  ds_read_b64 a[2:3], v1 offset:8
  ds_write_b32 v1, a2
  ds_read2_b32 v[2:3], v1 offset0:1 offset1:2
  v_accvgpr_write_b32 a1, v2
  v_accvgpr_read_b32 v3, a4
  v_accvgpr_mov_b32 a1, a2
  v_mfma_f32_32x32x1f32 a[0:31], v1, v2, a[0:31]
  v_mfma_f32_16x16x4f32 a[0:3], v1, v2, a[0:3] cbsz:1 abid:1 blgp:3
  v_mfma_f32_4x4x1f32 a[0:3], v1, v2, a[0:3] cbsz:2 abid:3 blgp:1
  v_mfma_f64_16x16x4f64 v[0:7], v[8:9], v[10:11], v[0:7]
  v_pk_fma_f32 v[2:3], v[4:5], v[6:7], v[8:9] op_sel_hi:[0,1,1]
  v_fmac_f64_e32 v[2:3], v[4:5], v[6:7]
  s_endpgm
