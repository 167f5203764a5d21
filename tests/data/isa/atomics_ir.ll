; LLVM IR for what HIP source reaches awkwardly: float atomics (fadd/fmin/fmax) in global and
; LDS memory with agent and workgroup scopes, 64-bit compare-exchange, an s_sleep/s_setprio
; sequence and a uniform (scalar) loop. Built with clang-19 -x ir for each corpus target.
target triple = "amdgcn-amd-amdhsa"

@lds = internal addrspace(3) global [64 x float] poison, align 4

declare i32 @llvm.amdgcn.workitem.id.x()
declare void @llvm.amdgcn.s.sleep(i32)
declare void @llvm.amdgcn.s.barrier()

define amdgpu_kernel void @float_atomics(ptr addrspace(1) %g, ptr addrspace(1) %out, i32 %n) {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %f = uitofp i32 %tid to float
  %slot = and i32 %tid, 63
  %lp = getelementptr [64 x float], ptr addrspace(3) @lds, i32 0, i32 %slot
  store float 0.0, ptr addrspace(3) %lp, align 4
  call void @llvm.amdgcn.s.barrier()
  %a0 = atomicrmw fadd ptr addrspace(1) %g, float %f syncscope("agent") monotonic, align 4
  %g1 = getelementptr float, ptr addrspace(1) %g, i64 1
  %a1 = atomicrmw fmax ptr addrspace(1) %g1, float %f syncscope("agent") monotonic, align 4
  %g2 = getelementptr float, ptr addrspace(1) %g, i64 2
  %a2 = atomicrmw fmin ptr addrspace(1) %g2, float %f syncscope("agent") monotonic, align 4
  %l0 = atomicrmw fadd ptr addrspace(3) %lp, float %f syncscope("workgroup") monotonic, align 4
  %l1 = atomicrmw fmax ptr addrspace(3) %lp, float %a0 syncscope("workgroup") monotonic, align 4
  %g3 = getelementptr i64, ptr addrspace(1) %g, i64 4
  %cx = cmpxchg ptr addrspace(1) %g3, i64 0, i64 7 syncscope("agent") monotonic monotonic, align 8
  %cv = extractvalue { i64, i1 } %cx, 0
  %g4 = getelementptr i32, ptr addrspace(1) %g, i64 12
  %inc = atomicrmw uinc_wrap ptr addrspace(1) %g4, i32 100 syncscope("agent") monotonic, align 4
  %s0 = fadd float %a0, %a1
  %s1 = fadd float %s0, %a2
  %s2 = fadd float %s1, %l0
  %s3 = fadd float %s2, %l1
  %ci = trunc i64 %cv to i32
  %ci2 = add i32 %ci, %inc
  %cf = sitofp i32 %ci2 to float
  %s4 = fadd float %s3, %cf
  call void @llvm.amdgcn.s.sleep(i32 1)
  br label %loop

loop:                                   ; uniform loop: SALU induction variable
  %i = phi i32 [ 0, %entry ], [ %i.next, %loop ]
  %acc = phi float [ %s4, %entry ], [ %acc.next, %loop ]
  %fi = uitofp i32 %i to float
  %acc.next = call float @llvm.fma.f32(float %acc, float 0.5, float %fi)
  %i.next = add i32 %i, 1
  %done = icmp uge i32 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  %o = getelementptr float, ptr addrspace(1) %out, i32 %tid
  store float %acc.next, ptr addrspace(1) %o, align 4
  ret void
}

declare float @llvm.fma.f32(float, float, float)

!llvm.module.flags = !{!0}
!0 = !{i32 1, !"amdhsa_code_object_version", i32 500}
