"""LLVM IR kernels nobody wrote for the simulator, built the way an hsapy user builds them
(``hsapy.toolchain.build_ir``: llvmlite's LLVM, O2, code object v5, ld.lld) and run through
hsapy's public API for gfx942, gfx1201 wave32 and gfx1201 wave64, each checked against numpy.

They use the IR features a front end emits and hand-written HIP rarely reaches: odd integer
widths (i1/i8/i16/i64/i128), half/bfloat/double and vector types, switch tables and phis,
bit-manipulation and overflow/saturation intrinsics, the IEEE min/max family, atomicrmw of every
operation on global and LDS memory, cmpxchg, scratch arrays indexed by data, and address-space
casts.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from corpus_cases import same
from handwritten import BUILDS, Build, Session
from ir_corpus_sources import GLOBAL_ID

from hsapy import toolchain

HEADER = """
declare i32 @llvm.amdgcn.workitem.id.x()
declare i32 @llvm.amdgcn.workgroup.id.x()
declare void @llvm.amdgcn.s.barrier()
declare i32 @llvm.amdgcn.ds.bpermute(i32, i32)
declare i32 @llvm.amdgcn.readfirstlane.i32(i32)
"""


def attributes(build: Build) -> str:
    """The function attributes a wave32/wave64 gfx12 kernel needs (gfx9 takes them too)."""
    return (f'attributes #0 = {{ "target-cpu"="{build.target}" '
            f'"target-features"="+wavefrontsize{build.wave}" '
            '"amdgpu-flat-work-group-size"="1,256" }')


def build_ir(text: str, build: Build) -> bytes:
    try:
        return toolchain.build_ir(HEADER + text + "\n" + attributes(build), build.target,
                                  wavefront_size=build.wave)
    except toolchain.ToolNotFoundError as exc:
        pytest.skip(f"building IR needs ld.lld: {exc}")


CASES: dict[str, Callable] = {}


def case(fn: Callable) -> Callable:
    CASES[fn.__name__] = fn
    return fn


# --- integers of every width, switch, overflow and bit intrinsics -------------------------------

INTEGERS = """
declare i32 @llvm.ctpop.i32(i32)
declare i32 @llvm.cttz.i32(i32, i1)
declare i32 @llvm.ctlz.i32(i32, i1)
declare i32 @llvm.fshl.i32(i32, i32, i32)
declare {i32, i1} @llvm.umul.with.overflow.i32(i32, i32)
declare i16 @llvm.sadd.sat.i16(i16, i16)
declare i8 @llvm.usub.sat.i8(i8, i8)
declare i64 @llvm.bitreverse.i64(i64)

define amdgpu_kernel void @integers(ptr addrspace(1) %xs, ptr addrspace(1) %out, i32 %n) #0 {
entry:
""" + GLOBAL_ID + """
  %px = getelementptr i32, ptr addrspace(1) %xs, i64 %i64
  %a = load i32, ptr addrspace(1) %px
  %j = add i32 %i, 1
  %j64 = zext i32 %j to i64
  %py = getelementptr i32, ptr addrspace(1) %xs, i64 %j64
  %b = load i32, ptr addrspace(1) %py
  %pop = call i32 @llvm.ctpop.i32(i32 %a)
  %tz = call i32 @llvm.cttz.i32(i32 %a, i1 false)
  %lz = call i32 @llvm.ctlz.i32(i32 %b, i1 false)
  %bits = shl i32 %tz, 16
  %bits2 = shl i32 %lz, 8
  %c0 = or i32 %pop, %bits
  %col0 = or i32 %c0, %bits2
  %amount = and i32 %b, 31
  %col1 = call i32 @llvm.fshl.i32(i32 %a, i32 %b, i32 %amount)
  %mo = call {i32, i1} @llvm.umul.with.overflow.i32(i32 %a, i32 %b)
  %prod = extractvalue {i32, i1} %mo, 0
  %ovf = extractvalue {i32, i1} %mo, 1
  %col2 = select i1 %ovf, i32 -1, i32 %prod
  %a16 = trunc i32 %a to i16
  %b16 = trunc i32 %b to i16
  %s16 = call i16 @llvm.sadd.sat.i16(i16 %a16, i16 %b16)
  %a8 = trunc i32 %a to i8
  %b8 = lshr i32 %b, 24
  %b8t = trunc i32 %b8 to i8
  %u8 = call i8 @llvm.usub.sat.i8(i8 %a8, i8 %b8t)
  %d8 = or i8 %b8t, 1
  %q8 = udiv i8 %a8, %d8
  %r8 = srem i8 %a8, %d8
  %s16z = zext i16 %s16 to i32
  %u8z = zext i8 %u8 to i32
  %q8z = zext i8 %q8 to i32
  %r8s = sext i8 %r8 to i32
  %r8m = and i32 %r8s, 255
  %hi16 = shl i32 %u8z, 16
  %c3a = or i32 %s16z, %hi16
  %q8h = shl i32 %q8z, 24
  %col3 = or i32 %c3a, %q8h
  %col4 = xor i32 %r8m, %r8s
  ; i128: (a * b) * (b + 2^33) >> 40, and a 64-bit bit reverse
  %a128 = zext i32 %a to i128
  %b128 = zext i32 %b to i128
  %ab = mul i128 %a128, %b128
  %bb = add i128 %b128, 8589934592
  %abb = mul i128 %ab, %bb
  %sh = lshr i128 %abb, 40
  %col56 = trunc i128 %sh to i64
  %ab64 = trunc i128 %ab to i64
  %rev = call i64 @llvm.bitreverse.i64(i64 %ab64)
  ; a dense switch (a jump table) feeding a phi, and an i1 chain
  %sel = and i32 %a, 7
  switch i32 %sel, label %d0 [ i32 1, label %d1
                               i32 2, label %d2
                               i32 3, label %d3
                               i32 4, label %d4
                               i32 5, label %d5
                               i32 6, label %d6 ]
d1:
  %v1 = mul i32 %b, 3
  br label %join
d2:
  %v2 = sub i32 %b, %a
  br label %join
d3:
  %v3 = xor i32 %b, 1431655765
  br label %join
d4:
  %v4 = ashr i32 %b, 3
  br label %join
d5:
  %v5 = lshr i32 %b, 5
  br label %join
d6:
  %v6 = and i32 %b, %a
  br label %join
d0:
  %v0 = add i32 %b, 17
  br label %join
join:
  %col7 = phi i32 [ %v0, %d0 ], [ %v1, %d1 ], [ %v2, %d2 ], [ %v3, %d3 ], [ %v4, %d4 ],
                  [ %v5, %d5 ], [ %v6, %d6 ]
  %lt = icmp slt i32 %a, %b
  %odd = trunc i32 %a to i1
  %both = and i1 %lt, %odd
  %bz = zext i1 %both to i32
  %col8 = add i32 %col7, %bz
  %o = mul i64 %i64, 10
  %p0 = getelementptr i32, ptr addrspace(1) %out, i64 %o
  store i32 %col0, ptr addrspace(1) %p0
  %p1 = getelementptr i32, ptr addrspace(1) %p0, i64 1
  store i32 %col1, ptr addrspace(1) %p1
  %p2 = getelementptr i32, ptr addrspace(1) %p0, i64 2
  store i32 %col2, ptr addrspace(1) %p2
  %p3 = getelementptr i32, ptr addrspace(1) %p0, i64 3
  store i32 %col3, ptr addrspace(1) %p3
  %p4 = getelementptr i32, ptr addrspace(1) %p0, i64 4
  store i32 %col4, ptr addrspace(1) %p4
  %p5 = getelementptr i32, ptr addrspace(1) %p0, i64 5
  store i64 %col56, ptr addrspace(1) %p5, align 4
  %p7 = getelementptr i32, ptr addrspace(1) %p0, i64 7
  store i32 %col8, ptr addrspace(1) %p7
  %p8 = getelementptr i32, ptr addrspace(1) %p0, i64 8
  store i64 %rev, ptr addrspace(1) %p8, align 4
  br label %done
done:
  ret void
}
"""


def _launch_grid(n: int) -> tuple[tuple[int], tuple[int]]:
    return ((n + 63) // 64 * 64,), (64,)


@case
def integers(build: Build, k) -> None:
    n = 333
    xs = k.rng.integers(0, 1 << 32, n + 1, dtype=np.uint64).astype(np.uint32)
    xs[:6] = [0, 1, 0x80000000, 0xFFFFFFFF, 7, 0x7FFF]
    out = k.output(np.uint32, 10 * n)
    k.launch("integers", [k.input(xs), out, n], *_launch_grid(n))
    got = k.read(out).reshape(n, 10)
    a = xs[:n].astype(np.int64)
    b = xs[1:n + 1].astype(np.int64)
    ai = [int(v) for v in a]
    bi = [int(v) for v in b]
    pop = np.array([bin(v).count("1") for v in ai])
    tz = np.array([(v & -v).bit_length() - 1 if v else 32 for v in ai])
    lz = np.array([32 - v.bit_length() for v in bi])
    same(got[:, 0], (pop | tz << 16 | lz << 8).astype(np.uint32), "ctpop/cttz/ctlz")
    sh = b & 31
    fshl = ((a << sh) | (b >> (32 - sh))) & 0xFFFFFFFF
    same(got[:, 1], np.where(sh == 0, a, fshl).astype(np.uint32), "fshl")
    prod = [x * y for x, y in zip(ai, bi)]
    same(got[:, 2], np.array([p if p < 1 << 32 else 0xFFFFFFFF for p in prod], np.uint32),
         "umul.with.overflow")
    s16 = np.clip(a.astype(np.uint16).astype(np.int16).astype(np.int64)
                  + b.astype(np.uint16).astype(np.int16), -32768, 32767) & 0xFFFF
    a8, b8 = a & 0xFF, b >> 24
    u8 = np.maximum(a8 - b8, 0)
    d8 = b8 | 1
    q8 = a8 // d8
    sa8 = a8.astype(np.uint8).astype(np.int8).astype(np.int64)
    sd8 = d8.astype(np.uint8).astype(np.int8).astype(np.int64)
    r8 = np.sign(sa8) * (np.abs(sa8) % np.abs(sd8))      # srem: the dividend's sign
    same(got[:, 3], (s16 | u8 << 16 | q8 << 24).astype(np.uint32), "sadd.sat/usub.sat/udiv i8")
    same(got[:, 4], ((r8 & 0xFF) ^ (r8 & 0xFFFFFFFF)).astype(np.uint32), "srem i8")
    wide = [(x * y * (y + (1 << 33)) >> 40) & (2 ** 64 - 1) for x, y in zip(ai, bi)]
    same(got[:, 5:7].copy().view(np.uint64).reshape(-1), np.array(wide, np.uint64), "i128")
    rev = [int(f"{(x * y) & (2 ** 64 - 1):064b}"[::-1], 2) for x, y in zip(ai, bi)]
    same(got[:, 8:10].copy().view(np.uint64).reshape(-1), np.array(rev, np.uint64),
         "bitreverse.i64")
    sb = b.astype(np.uint32).view(np.int32).astype(np.int64)
    sa = a.astype(np.uint32).view(np.int32).astype(np.int64)
    table = [b + 17, b * 3, b - a, b ^ 1431655765, sb >> 3, b >> 5, b & a, b + 17]
    picked = np.choose(a & 7, table) & 0xFFFFFFFF
    same(got[:, 7], ((picked + ((sa < sb) & (a & 1 == 1))) & 0xFFFFFFFF).astype(np.uint32),
         "switch table + i1")


# --- half, bfloat, double, vectors, the IEEE min/max family, rounding --------------------------

FLOATS = """
declare float @llvm.minnum.f32(float, float)
declare float @llvm.maxnum.f32(float, float)
declare float @llvm.minimum.f32(float, float)
declare float @llvm.maximum.f32(float, float)
declare float @llvm.copysign.f32(float, float)
declare float @llvm.round.f32(float)
declare float @llvm.trunc.f32(float)
declare float @llvm.floor.f32(float)
declare double @llvm.fma.f64(double, double, double)
declare <4 x float> @llvm.fma.v4f32(<4 x float>, <4 x float>, <4 x float>)

define amdgpu_kernel void @floats(ptr addrspace(1) %xs, ptr addrspace(1) %hs,
                                  ptr addrspace(1) %out, i32 %n) #0 {
entry:
""" + GLOBAL_ID + """
  %px = getelementptr float, ptr addrspace(1) %xs, i64 %i64
  %a = load float, ptr addrspace(1) %px
  %j = add i64 %i64, 1
  %py = getelementptr float, ptr addrspace(1) %xs, i64 %j
  %b = load float, ptr addrspace(1) %py
  %c0 = call float @llvm.minnum.f32(float %a, float %b)
  %c1 = call float @llvm.maxnum.f32(float %a, float %b)
  %c2 = call float @llvm.minimum.f32(float %a, float %b)
  %c3 = call float @llvm.maximum.f32(float %a, float %b)
  %c4 = call float @llvm.copysign.f32(float %a, float %b)
  %r = call float @llvm.round.f32(float %a)
  %t = call float @llvm.trunc.f32(float %a)
  %f = call float @llvm.floor.f32(float %a)
  %rt = fadd float %r, %t
  %c5 = fadd float %rt, %f
  ; bfloat: a rounded to bf16 and back; half pairs in <2 x half>
  %bf = fptrunc float %a to bfloat
  %c6 = fpext bfloat %bf to float
  %ph = getelementptr <2 x half>, ptr addrspace(1) %hs, i64 %i64
  %h = load <2 x half>, ptr addrspace(1) %ph
  %pg = getelementptr <2 x half>, ptr addrspace(1) %hs, i64 %j
  %g = load <2 x half>, ptr addrspace(1) %pg
  %hm = fmul <2 x half> %h, %g
  %hs2 = fadd <2 x half> %hm, %h
  %c7 = bitcast <2 x half> %hs2 to i32
  ; double: fma and a division
  %ad = fpext float %a to double
  %bd = fpext float %b to double
  %fd = call double @llvm.fma.f64(double %ad, double %bd, double -1.0)
  %dd = fdiv double %fd, 3.0
  ; <4 x float>: lanes built from a and b, one fused multiply-add, horizontally summed
  %v0 = insertelement <4 x float> poison, float %a, i32 0
  %v1 = insertelement <4 x float> %v0, float %b, i32 1
  %v2 = insertelement <4 x float> %v1, float 2.0, i32 2
  %v3 = insertelement <4 x float> %v2, float -0.5, i32 3
  %w = shufflevector <4 x float> %v3, <4 x float> poison, <4 x i32> <i32 3, i32 2, i32 1, i32 0>
  %vf = call <4 x float> @llvm.fma.v4f32(<4 x float> %v3, <4 x float> %w, <4 x float> %v3)
  %e0 = extractelement <4 x float> %vf, i32 0
  %e3 = extractelement <4 x float> %vf, i32 3
  %c8 = fsub float %e0, %e3
  %o = mul i64 %i64, 12
  %p = getelementptr float, ptr addrspace(1) %out, i64 %o
  store float %c0, ptr addrspace(1) %p
  %p1 = getelementptr float, ptr addrspace(1) %p, i64 1
  store float %c1, ptr addrspace(1) %p1
  %p2 = getelementptr float, ptr addrspace(1) %p, i64 2
  store float %c2, ptr addrspace(1) %p2
  %p3 = getelementptr float, ptr addrspace(1) %p, i64 3
  store float %c3, ptr addrspace(1) %p3
  %p4 = getelementptr float, ptr addrspace(1) %p, i64 4
  store float %c4, ptr addrspace(1) %p4
  %p5 = getelementptr float, ptr addrspace(1) %p, i64 5
  store float %c5, ptr addrspace(1) %p5
  %p6 = getelementptr float, ptr addrspace(1) %p, i64 6
  store float %c6, ptr addrspace(1) %p6
  %p7 = getelementptr float, ptr addrspace(1) %p, i64 7
  store i32 %c7, ptr addrspace(1) %p7
  %p8 = getelementptr float, ptr addrspace(1) %p, i64 8
  store double %dd, ptr addrspace(1) %p8, align 4
  %p10 = getelementptr float, ptr addrspace(1) %p, i64 10
  store float %c8, ptr addrspace(1) %p10
  br label %done
done:
  ret void
}
"""


def _bf16_round(x: np.ndarray) -> np.ndarray:
    """f32 -> bf16 (round to nearest even; NaN stays NaN) -> f32."""
    bits = x.view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    out = rounded.astype(np.uint32).view(np.float32)
    return np.where(np.isnan(x), x, out)


@case
def floats(build: Build, k) -> None:
    n = 200
    xs = (k.rng.standard_normal(n + 1) * 40).astype(np.float32)
    xs[:12] = [np.nan, 1.0, -0.0, 0.0, 2.5, -2.5, np.inf, -np.inf, 0.5, np.nan, -3.5, 1e-40]
    hs = (k.rng.integers(-64, 64, 2 * (n + 1)) / 8).astype(np.float16).view(np.uint32)
    out = k.output(np.uint32, 12 * n)
    k.launch("floats", [k.input(xs), k.input(hs), out, n], *_launch_grid(n))
    got = k.read(out).reshape(n, 12)
    f = got.view(np.float32)
    a, b = xs[:n], xs[1:n + 1]
    with np.errstate(all="ignore"):
        same(f[:, 0], np.fmin(a, b), "minnum (NaN loses)")
        same(f[:, 1], np.fmax(a, b), "maxnum")
        same(f[:, 2], np.minimum(a, b), "minimum (NaN wins)")
        same(f[:, 3], np.maximum(a, b), "maximum")
        # -0 < +0 for minimum/maximum (LangRef)
        zero = (a == 0) & (b == 0)
        same(np.signbit(f[zero, 2]), np.signbit(a[zero]) | np.signbit(b[zero]), "minimum -0")
        same(np.signbit(f[zero, 3]), np.signbit(a[zero]) & np.signbit(b[zero]), "maximum +0")
        same(f[:, 4], np.copysign(a, b), "copysign")
        # llvm.round: half away from zero
        rnd = np.where(np.isfinite(a), np.sign(a) * np.floor(np.abs(a) + np.float32(0.5)), a)
        same(f[:, 5], (rnd.astype(np.float32) + np.trunc(a)) + np.floor(a), "round/trunc/floor")
        same(f[:, 6], _bf16_round(a), "bfloat round trip")
        h = hs[:n].view(np.float16).reshape(n, 2)
        g = hs[1:n + 1].view(np.float16).reshape(n, 2)
        # h * g + h in two f16 roundings, or one if LLVM contracts it into an fma
        two = (h * g + h).reshape(-1).view(np.uint32)
        one = ((h.astype(np.float64) * g + h).astype(np.float16)).reshape(-1).view(np.uint32)
        assert np.all((got[:, 7] == two) | (got[:, 7] == one)), "<2 x half> mul+add"
        ad, bd = a.astype(np.float64), b.astype(np.float64)
        fd = ad * bd - 1.0          # exact: two 24-bit significands fit in 53 bits
        same(got[:, 8:10].copy().view(np.float64).reshape(-1), fd / 3.0, "fma.f64 / 3")
        # lanes (a, b, 2, -0.5) * (-0.5, 2, b, a) + (a, b, 2, -0.5): lane 0 minus lane 3
        lane0 = (ad * -0.5 + ad).astype(np.float32)
        lane3 = (-0.5 * ad - 0.5).astype(np.float32)
        same(f[:, 10], lane0 - lane3, "<4 x float> fma")


# --- atomicrmw of every integer operation (global and LDS), float atomics, cmpxchg, scratch ---

RMW_OPS = ("add", "sub", "and", "or", "xor", "max", "min", "umax", "umin", "xchg", "uinc_wrap",
           "udec_wrap")


def _atomics_ir() -> str:
    lines = []
    for k, op in enumerate(RMW_OPS):
        lines.append(f"""
  %gp{k} = getelementptr i32, ptr addrspace(1) %g, i64 {k}
  %gr{k} = atomicrmw {op} ptr addrspace(1) %gp{k}, i32 %val syncscope("agent") monotonic
  %lp{k} = getelementptr i32, ptr addrspace(3) @lds, i32 {k}
  %lr{k} = atomicrmw {op} ptr addrspace(3) %lp{k}, i32 %val syncscope("workgroup") monotonic""")
    rmw = "".join(lines)
    init = "".join(f"""
  %ip{k} = getelementptr i32, ptr addrspace(3) @lds, i32 {k}
  %iv{k} = getelementptr i32, ptr addrspace(1) %g, i64 {k}
  %ix{k} = load i32, ptr addrspace(1) %iv{k}
  store i32 %ix{k}, ptr addrspace(3) %ip{k}""" for k in range(len(RMW_OPS)))
    copy = "".join(f"""
  %cp{k} = getelementptr i32, ptr addrspace(3) @lds, i32 {k}
  %cv{k} = load i32, ptr addrspace(3) %cp{k}
  %co{k} = getelementptr i32, ptr addrspace(1) %g, i64 {k + 16}
  store i32 %cv{k}, ptr addrspace(1) %co{k}""" for k in range(len(RMW_OPS)))
    return """
@lds = internal addrspace(3) global [16 x i32] poison, align 4

define amdgpu_kernel void @atomics(ptr addrspace(1) %g, ptr addrspace(1) %vals,
                                   ptr addrspace(1) %out, i32 %n) #0 {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %first = icmp eq i32 %tid, 0
  br i1 %first, label %init, label %ready
init:""" + init + """
  br label %ready
ready:
  call void @llvm.amdgcn.s.barrier()
  %t64 = zext i32 %tid to i64
  %pv = getelementptr i32, ptr addrspace(1) %vals, i64 %t64
  %val = load i32, ptr addrspace(1) %pv
""" + rmw + """
  ; float add and max on global memory, then a compare-and-swap per item on its own word
  %fp = getelementptr float, ptr addrspace(1) %g, i64 12
  %vf = uitofp i32 %tid to float
  %fr = atomicrmw fadd ptr addrspace(1) %fp, float %vf syncscope("agent") monotonic
  %fm = getelementptr float, ptr addrspace(1) %g, i64 13
  %fr2 = atomicrmw fmax ptr addrspace(1) %fm, float %vf syncscope("agent") monotonic
  %own = add i64 %t64, 32
  %cp = getelementptr i32, ptr addrspace(1) %g, i64 %own
  %cx = cmpxchg ptr addrspace(1) %cp, i32 %tid, i32 %val syncscope("agent") monotonic monotonic
  %old = extractvalue {i32, i1} %cx, 0
  %ok = extractvalue {i32, i1} %cx, 1
  ; a private array indexed by data (scratch), reached through a flat pointer cast back
  %arr = alloca [64 x i32], align 4, addrspace(5)
  br label %fill
fill:
  %k = phi i32 [ 0, %ready ], [ %k1, %fill ]
  %slot = getelementptr [64 x i32], ptr addrspace(5) %arr, i32 0, i32 %k
  %kv = mul i32 %k, %val
  store volatile i32 %kv, ptr addrspace(5) %slot
  %k1 = add i32 %k, 1
  %more = icmp ult i32 %k1, 64
  br i1 %more, label %fill, label %filled
filled:
  %idx = and i32 %val, 63
  %flat = addrspacecast ptr addrspace(5) %arr to ptr
  %fslot = getelementptr [64 x i32], ptr %flat, i32 0, i32 %idx
  %picked = load volatile i32, ptr %fslot
  ; a flat pointer to the output cast back to global; ds_bpermute and readfirstlane
  %outflat = addrspacecast ptr addrspace(1) %out to ptr
  %outg = addrspacecast ptr %outflat to ptr addrspace(1)
  %nb = add i32 %tid, 1
  %nbm = and i32 %nb, 31
  %addr = shl i32 %nbm, 2
  %perm = call i32 @llvm.amdgcn.ds.bpermute(i32 %addr, i32 %val)
  %first_val = call i32 @llvm.amdgcn.readfirstlane.i32(i32 %val)
  %okz = zext i1 %ok to i32
  %o = mul i64 %t64, 6
  %q = getelementptr i32, ptr addrspace(1) %outg, i64 %o
  store i32 %old, ptr addrspace(1) %q
  %q1 = getelementptr i32, ptr addrspace(1) %q, i64 1
  store i32 %okz, ptr addrspace(1) %q1
  %q2 = getelementptr i32, ptr addrspace(1) %q, i64 2
  store i32 %picked, ptr addrspace(1) %q2
  %q3 = getelementptr i32, ptr addrspace(1) %q, i64 3
  store i32 %perm, ptr addrspace(1) %q3
  %q4 = getelementptr i32, ptr addrspace(1) %q, i64 4
  store i32 %first_val, ptr addrspace(1) %q4
  %q5 = getelementptr i32, ptr addrspace(1) %q, i64 5
  store i32 %gr0, ptr addrspace(1) %q5
  fence syncscope("workgroup") release
  call void @llvm.amdgcn.s.barrier()
  fence syncscope("workgroup") acquire
  br i1 %first, label %copy, label %end
copy:""" + copy + """
  br label %end
end:
  ret void
}
"""


ATOMICS = _atomics_ir()


def _rmw(op: str, old: int, v: int) -> int:
    sv, so = np.int32(np.uint32(v)), np.int32(np.uint32(old))
    return {"add": old + v, "sub": old - v, "and": old & v, "or": old | v, "xor": old ^ v,
            "max": int(max(so, sv)), "min": int(min(so, sv)), "umax": max(old, v),
            "umin": min(old, v), "xchg": v,
            "uinc_wrap": 0 if old >= v else old + 1,
            "udec_wrap": v if old == 0 or old > v else old - 1}[op] & 0xFFFFFFFF


@case
def atomics(build: Build, k) -> None:
    n = 128
    vals = k.rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
    vals[:4] = [5, 0xFFFFFFFF, 0x80000000, 3]
    g0 = np.zeros(32 + n, np.uint32)
    g0[:12] = [10, 10, 0xFFFF, 0, 0x1234, 0, 0, 0, 0xFFFFFFFF, 1, 0, 0]
    g0[12:14] = np.array([0.5, -1.0], np.float32).view(np.uint32)
    lane = np.arange(n)
    g0[32:] = np.where(lane % 4 == 0, lane, lane + 7)
    g = k.output(np.uint32, 32 + n, initial=g0)
    out = k.output(np.uint32, 6 * n)
    k.launch("atomics", [g, k.input(vals), out, n], (n,), (n,))
    mem = k.read(g)
    got = k.read(out).reshape(n, 6)
    commutative = ("add", "sub", "and", "or", "xor", "max", "min", "umax", "umin")
    for idx, op in enumerate(RMW_OPS):
        if op not in commutative:
            continue
        want = int(g0[idx])
        for v in vals:
            want = _rmw(op, want, int(v))
        same(mem[idx:idx + 1], np.array([want], np.uint32), f"global atomicrmw {op}")
        same(mem[16 + idx:17 + idx], np.array([want], np.uint32), f"LDS atomicrmw {op}")
    # xchg, uinc_wrap and udec_wrap depend on the order the items run in: the final value
    # must come from some order, checked for xchg (one of the values) and the returned olds
    # of add (a permutation of the running sums' starts, whatever the order)
    assert mem[9] in vals and mem[16 + 9] in vals, "xchg leaves one item's value"
    starts = np.sort(got[:, 5].astype(np.int64))
    assert starts[0] == 10 and len(set(starts.tolist())) == n, "add returns distinct olds"
    same(mem[12:14].view(np.float32),
         np.array([0.5 + lane.sum(), n - 1], np.float32), "float atomic add / max")
    own = g0[32:].astype(np.int64)
    swapped = own == lane
    same(got[:, 0], g0[32:], "cmpxchg returns the old value")
    same(got[:, 1], swapped.astype(np.uint32), "cmpxchg success flag")
    same(mem[32:], np.where(swapped, vals, g0[32:]).astype(np.uint32), "cmpxchg stores")
    same(got[:, 2], ((vals & 63).astype(np.int64) * vals & 0xFFFFFFFF).astype(np.uint32),
         "scratch array read through a flat pointer")
    wave = build.wave
    # the byte address picks a lane of the item's own wave: lane (tid + 1) & 31
    same(got[:, 3], vals[lane // wave * wave + ((lane + 1) & 31)], "ds.bpermute")
    same(got[:, 4], vals[lane // wave * wave], "readfirstlane")


@pytest.fixture(scope="module")
def session():
    s = Session()
    yield s
    s.close()


SOURCES = {"integers": INTEGERS, "floats": FLOATS, "atomics": ATOMICS}


@pytest.mark.parametrize("name,build", [pytest.param(name, b, id=f"{name}-{b.id}")
                                        for name in CASES for b in BUILDS])
def test_ir_kernel_matches_its_reference(name, build, session):
    k = session.run(build_ir(SOURCES[name], build), build)
    try:
        CASES[name](build, k)
    finally:
        k.close()
