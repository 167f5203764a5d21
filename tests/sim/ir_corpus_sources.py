"""The LLVM IR sources of the IR fidelity corpus (tests/sim/test_ir_corpus.py): kernels written
the way a user of ``hsapy.toolchain.build_ir`` writes them, as IR text or through
``llvmlite.ir``'s builders, grouped into a few modules so that each target builds each module
once. A source that depends on the build (the wave size, gfx12-only intrinsics) is a function of
the target and the wave size; the others ignore them.

Every kernel takes its element count ``n`` last and runs one work-item per element in
workgroups of 64 (:data:`GLOBAL_ID`), writing one row of ``COLS`` words per element.
"""
from __future__ import annotations

# The global id %i (and %i64) of a 1-D launch in workgroups of 64; items past %n branch to %done.
GLOBAL_ID = """
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %wg = call i32 @llvm.amdgcn.workgroup.id.x()
  %base = mul i32 %wg, 64
  %i = add i32 %base, %tid
  %live = icmp ult i32 %i, %n
  br i1 %live, label %body, label %done
body:
  %i64 = zext i32 %i to i64
"""

ID_DECLARATIONS = """
declare i32 @llvm.amdgcn.workitem.id.x()
declare i32 @llvm.amdgcn.workgroup.id.x()
"""


def store_row(out: str, ty: str, columns: list[str], width: int) -> str:
    """Store ``columns`` (values of ``ty``) as row %i64 of ``width`` elements of ``out``."""
    lines = [f"  %row = mul i64 %i64, {width}",
             f"  %rp = getelementptr {ty}, ptr addrspace(1) {out}, i64 %row"]
    for index, value in enumerate(columns):
        lines.append(f"  %rp{index} = getelementptr {ty}, ptr addrspace(1) %rp, i64 {index}")
        lines.append(f"  store {ty} {value}, ptr addrspace(1) %rp{index}")
    return "\n".join(lines) + "\n"


# --- integer intrinsics of every width, i128 division and shifts --------------------------------

INT_COLUMNS = ["%fr32z", "%fl64", "%fr64", "%counts", "%ssum", "%flags", "%fixabs", "%abs64",
               "%minmax32", "%minmax64", "%q_lo", "%q_hi", "%r_lo", "%uq", "%ur", "%shl_lo",
               "%ashr_hi", "%lshr_lo"]

INTS = """
declare i32 @llvm.fshr.i32(i32, i32, i32)
declare i64 @llvm.fshl.i64(i64, i64, i64)
declare i64 @llvm.fshr.i64(i64, i64, i64)
declare i64 @llvm.ctpop.i64(i64)
declare i16 @llvm.ctpop.i16(i16)
declare i64 @llvm.ctlz.i64(i64, i1)
declare i64 @llvm.cttz.i64(i64, i1)
declare {i64, i1} @llvm.sadd.with.overflow.i64(i64, i64)
declare {i32, i1} @llvm.uadd.with.overflow.i32(i32, i32)
declare {i32, i1} @llvm.smul.with.overflow.i32(i32, i32)
declare {i64, i1} @llvm.usub.with.overflow.i64(i64, i64)
declare {i64, i1} @llvm.umul.with.overflow.i64(i64, i64)
declare i32 @llvm.smul.fix.sat.i32(i32, i32, i32)
declare i32 @llvm.abs.i32(i32, i1)
declare i64 @llvm.abs.i64(i64, i1)
declare i32 @llvm.smax.i32(i32, i32)
declare i32 @llvm.umin.i32(i32, i32)
declare i64 @llvm.smin.i64(i64, i64)
declare i64 @llvm.umax.i64(i64, i64)

define amdgpu_kernel void @ints(ptr addrspace(1) %xs, ptr addrspace(1) %out, i32 %n) {
entry:
""" + GLOBAL_ID + """
  %pa = getelementptr i64, ptr addrspace(1) %xs, i64 %i64
  %a = load i64, ptr addrspace(1) %pa
  %j = add i64 %i64, 1
  %pb = getelementptr i64, ptr addrspace(1) %xs, i64 %j
  %b = load i64, ptr addrspace(1) %pb
  %alo = trunc i64 %a to i32
  %blo = trunc i64 %b to i32
  %bhi64 = lshr i64 %b, 32
  %bhi = trunc i64 %bhi64 to i32
  %fr32 = call i32 @llvm.fshr.i32(i32 %alo, i32 %blo, i32 %bhi)
  %fr32z = zext i32 %fr32 to i64
  %fl64 = call i64 @llvm.fshl.i64(i64 %a, i64 %b, i64 %b)
  %fr64 = call i64 @llvm.fshr.i64(i64 %a, i64 %b, i64 %a)
  %pop = call i64 @llvm.ctpop.i64(i64 %a)
  %lz = call i64 @llvm.ctlz.i64(i64 %b, i1 false)
  %tz = call i64 @llvm.cttz.i64(i64 %a, i1 false)
  %a16 = trunc i64 %a to i16
  %pop16 = call i16 @llvm.ctpop.i16(i16 %a16)
  %pop16z = zext i16 %pop16 to i64
  %lz8 = shl i64 %lz, 8
  %tz16 = shl i64 %tz, 16
  %p16s = shl i64 %pop16z, 24
  %c0 = or i64 %pop, %lz8
  %c1 = or i64 %c0, %tz16
  %counts = or i64 %c1, %p16s
  %sa = call {i64, i1} @llvm.sadd.with.overflow.i64(i64 %a, i64 %b)
  %ssum = extractvalue {i64, i1} %sa, 0
  %so = extractvalue {i64, i1} %sa, 1
  %ua = call {i32, i1} @llvm.uadd.with.overflow.i32(i32 %alo, i32 %blo)
  %uav = extractvalue {i32, i1} %ua, 0
  %uao = extractvalue {i32, i1} %ua, 1
  %sm = call {i32, i1} @llvm.smul.with.overflow.i32(i32 %alo, i32 %blo)
  %smv = extractvalue {i32, i1} %sm, 0
  %smo = extractvalue {i32, i1} %sm, 1
  %us = call {i64, i1} @llvm.usub.with.overflow.i64(i64 %a, i64 %b)
  %uso = extractvalue {i64, i1} %us, 1
  %um = call {i64, i1} @llvm.umul.with.overflow.i64(i64 %a, i64 %b)
  %umo = extractvalue {i64, i1} %um, 1
  %f0 = zext i1 %so to i64
  %f1z = zext i1 %uao to i64
  %f1 = shl i64 %f1z, 1
  %f2z = zext i1 %smo to i64
  %f2 = shl i64 %f2z, 2
  %f3z = zext i1 %uso to i64
  %f3 = shl i64 %f3z, 3
  %f4z = zext i1 %umo to i64
  %f4 = shl i64 %f4z, 4
  %vx = xor i32 %uav, %smv
  %vxz = zext i32 %vx to i64
  %vxs = shl i64 %vxz, 32
  %g0 = or i64 %f0, %f1
  %g1 = or i64 %g0, %f2
  %g2 = or i64 %g1, %f3
  %g3 = or i64 %g2, %f4
  %flags = or i64 %g3, %vxs
  %fix = call i32 @llvm.smul.fix.sat.i32(i32 %alo, i32 %blo, i32 16)
  %fixz = zext i32 %fix to i64
  %abs32 = call i32 @llvm.abs.i32(i32 %alo, i1 false)
  %abs32z = zext i32 %abs32 to i64
  %abs32s = shl i64 %abs32z, 32
  %fixabs = or i64 %fixz, %abs32s
  %abs64 = call i64 @llvm.abs.i64(i64 %a, i1 false)
  %smax = call i32 @llvm.smax.i32(i32 %alo, i32 %blo)
  %umin = call i32 @llvm.umin.i32(i32 %alo, i32 %blo)
  %smaxz = zext i32 %smax to i64
  %uminz = zext i32 %umin to i64
  %umins = shl i64 %uminz, 32
  %minmax32 = or i64 %smaxz, %umins
  %smin64 = call i64 @llvm.smin.i64(i64 %a, i64 %b)
  %umax64 = call i64 @llvm.umax.i64(i64 %a, i64 %b)
  %minmax64 = xor i64 %smin64, %umax64
  ; i128: a signed product divided by a 33-bit odd divisor, an unsigned one by a, and shifts
  %as = sext i64 %a to i128
  %bs = sext i64 %b to i128
  %p = mul i128 %as, %bs
  %bl33 = and i64 %b, 8589934591
  %bodd = or i64 %bl33, 1
  %d = sext i64 %bodd to i128
  %dn = sub i128 0, %d
  %bneg = trunc i64 %a to i1
  %dv = select i1 %bneg, i128 %dn, i128 %d
  %q = sdiv i128 %p, %dv
  %r = srem i128 %p, %dv
  %q_lo = trunc i128 %q to i64
  %qh = lshr i128 %q, 64
  %q_hi = trunc i128 %qh to i64
  %r_lo = trunc i128 %r to i64
  %az = zext i64 %a to i128
  %bz = zext i64 %b to i128
  %up = mul i128 %az, %bz
  %aodd = or i128 %az, 1
  %uqw = udiv i128 %up, %aodd
  %urw = urem i128 %up, %aodd
  %uq = trunc i128 %uqw to i64
  %ur = trunc i128 %urw to i64
  %amt = and i128 %bz, 127
  %shl = shl i128 %p, %amt
  %shl_lo = trunc i128 %shl to i64
  %ashr = ashr i128 %p, %amt
  %ashrh = lshr i128 %ashr, 64
  %ashr_hi = trunc i128 %ashrh to i64
  %lshr = lshr i128 %up, %amt
  %lshr_lo = trunc i128 %lshr to i64
""" + store_row("%out", "i64", INT_COLUMNS, len(INT_COLUMNS)) + """
  br label %done
done:
  ret void
}
"""

# --- float intrinsics, fast-math flags, saturating conversions, half and bfloat -----------------

FPCLASS_BITS = 10     # llvm.is.fpclass test bits: sNaN, qNaN, -inf, -normal, ..., +normal, +inf


def _fpclass_ir() -> str:
    lines = []
    previous = "0"
    for bit in range(FPCLASS_BITS):
        lines.append(f"  %cls{bit} = call i1 @llvm.is.fpclass.f32(float %a, i32 {1 << bit})")
        lines.append(f"  %clz{bit} = zext i1 %cls{bit} to i32")
        lines.append(f"  %cla{bit} = shl i32 %clz{bit}, {bit}")
        lines.append(f"  %clo{bit} = or i32 {previous}, %cla{bit}")
        previous = f"%clo{bit}"
    return "\n".join(lines) + f"\n  %classes = or i32 {previous}, 0\n"


FLOAT_COLUMNS = ["%fma_b", "%fmuladd_b", "%ldexp_b", "%mant_b", "%exp", "%classes", "%rne_b",
                 "%rint_b", "%ceil_b", "%nearby_b", "%sqrt_b", "%sqrt_afn_b", "%div_arcp_b",
                 "%sat_i32", "%sat_u8z", "%sat_i16z", "%half_div_fma", "%half_sqrt_min",
                 "%bf_mul_add", "%conversions", "%ldexp64_lo", "%ldexp64_hi"]

FLOATS = """
declare float @llvm.fma.f32(float, float, float)
declare float @llvm.fmuladd.f32(float, float, float)
declare float @llvm.ldexp.f32.i32(float, i32)
declare double @llvm.ldexp.f64.i32(double, i32)
declare { float, i32 } @llvm.frexp.f32.i32(float)
declare i1 @llvm.is.fpclass.f32(float, i32 immarg)
declare float @llvm.roundeven.f32(float)
declare float @llvm.rint.f32(float)
declare float @llvm.ceil.f32(float)
declare float @llvm.nearbyint.f32(float)
declare float @llvm.sqrt.f32(float)
declare float @llvm.fabs.f32(float)
declare i32 @llvm.fptosi.sat.i32.f32(float)
declare i8 @llvm.fptoui.sat.i8.f32(float)
declare i16 @llvm.fptosi.sat.i16.f32(float)
declare half @llvm.fma.f16(half, half, half)
declare half @llvm.sqrt.f16(half)
declare half @llvm.fabs.f16(half)
declare half @llvm.minnum.f16(half, half)

define amdgpu_kernel void @floats(ptr addrspace(1) %xs, ptr addrspace(1) %ks,
                                  ptr addrspace(1) %out, i32 %n) {
entry:
""" + GLOBAL_ID + """
  %pa = getelementptr float, ptr addrspace(1) %xs, i64 %i64
  %a = load float, ptr addrspace(1) %pa
  %j = add i64 %i64, 1
  %pb = getelementptr float, ptr addrspace(1) %xs, i64 %j
  %b = load float, ptr addrspace(1) %pb
  %j2 = add i64 %i64, 2
  %pc = getelementptr float, ptr addrspace(1) %xs, i64 %j2
  %c = load float, ptr addrspace(1) %pc
  %pk = getelementptr i32, ptr addrspace(1) %ks, i64 %i64
  %k = load i32, ptr addrspace(1) %pk
  %fma = call float @llvm.fma.f32(float %a, float %b, float %c)
  %fma_b = bitcast float %fma to i32
  %fmuladd = call float @llvm.fmuladd.f32(float %a, float %b, float %c)
  %fmuladd_b = bitcast float %fmuladd to i32
  %ldexp = call float @llvm.ldexp.f32.i32(float %a, i32 %k)
  %ldexp_b = bitcast float %ldexp to i32
  %fx = call { float, i32 } @llvm.frexp.f32.i32(float %a)
  %mant = extractvalue { float, i32 } %fx, 0
  %mant_b = bitcast float %mant to i32
  %exp = extractvalue { float, i32 } %fx, 1
""" + _fpclass_ir() + """
  %rne = call float @llvm.roundeven.f32(float %a)
  %rne_b = bitcast float %rne to i32
  %rint = call float @llvm.rint.f32(float %a)
  %rint_b = bitcast float %rint to i32
  %ceil = call float @llvm.ceil.f32(float %a)
  %ceil_b = bitcast float %ceil to i32
  %nearby = call float @llvm.nearbyint.f32(float %a)
  %nearby_b = bitcast float %nearby to i32
  %mag = call float @llvm.fabs.f32(float %a)
  %sqrt = call float @llvm.sqrt.f32(float %mag)
  %sqrt_b = bitcast float %sqrt to i32
  %sqrt_afn = call afn float @llvm.sqrt.f32(float %mag)
  %sqrt_afn_b = bitcast float %sqrt_afn to i32
  %div_arcp = fdiv arcp float %a, %b
  %div_arcp_b = bitcast float %div_arcp to i32
  %sat_i32 = call i32 @llvm.fptosi.sat.i32.f32(float %a)
  %sat_u8 = call i8 @llvm.fptoui.sat.i8.f32(float %a)
  %sat_u8z = zext i8 %sat_u8 to i32
  %sat_i16 = call i16 @llvm.fptosi.sat.i16.f32(float %a)
  %sat_i16z = sext i16 %sat_i16 to i32
  ; half: a correctly rounded division, a fused multiply-add, sqrt and minnum
  %ha = fptrunc float %a to half
  %hb = fptrunc float %b to half
  %hc = fptrunc float %c to half
  %hdiv = fdiv half %ha, %hb
  %hfma = call half @llvm.fma.f16(half %ha, half %hb, half %hc)
  %hv0 = insertelement <2 x half> poison, half %hdiv, i32 0
  %hv1 = insertelement <2 x half> %hv0, half %hfma, i32 1
  %half_div_fma = bitcast <2 x half> %hv1 to i32
  %hmag = call half @llvm.fabs.f16(half %ha)
  %hsqrt = call half @llvm.sqrt.f16(half %hmag)
  %hmin = call half @llvm.minnum.f16(half %ha, half %hb)
  %hw0 = insertelement <2 x half> poison, half %hsqrt, i32 0
  %hw1 = insertelement <2 x half> %hw0, half %hmin, i32 1
  %half_sqrt_min = bitcast <2 x half> %hw1 to i32
  ; bfloat: product and sum of a and b rounded to bfloat
  %ba = fptrunc float %a to bfloat
  %bb = fptrunc float %b to bfloat
  %bmul = fmul bfloat %ba, %bb
  %badd = fadd bfloat %ba, %bb
  %bv0 = insertelement <2 x bfloat> poison, bfloat %bmul, i32 0
  %bv1 = insertelement <2 x bfloat> %bv0, bfloat %badd, i32 1
  %bf_mul_add = bitcast <2 x bfloat> %bv1 to i32
  ; conversions: bfloat -> half, a small integer -> half and -> bfloat, half -> i32
  %bext = fpext bfloat %ba to float
  %bh = fptrunc float %bext to half
  %kh = sitofp i32 %k to half
  %kpos = and i32 %k, 255
  %kb = uitofp i32 %kpos to bfloat
  %kbh = fpext bfloat %kb to float
  %kbh16 = fptrunc float %kbh to half
  %hsum = fadd half %kh, %kbh16
  %cv0 = insertelement <2 x half> poison, half %bh, i32 0
  %cv1 = insertelement <2 x half> %cv0, half %hsum, i32 1
  %conversions = bitcast <2 x half> %cv1 to i32
  %ad = fpext float %a to double
  %k2 = mul i32 %k, 7
  %ldexp64 = call double @llvm.ldexp.f64.i32(double %ad, i32 %k2)
  %ld64 = bitcast double %ldexp64 to i64
  %ld64lo = trunc i64 %ld64 to i32
  %ld64s = lshr i64 %ld64, 32
  %ld64hi = trunc i64 %ld64s to i32
  %ldexp64_lo = or i32 %ld64lo, 0
  %ldexp64_hi = or i32 %ld64hi, 0
""" + store_row("%out", "i32", FLOAT_COLUMNS, len(FLOAT_COLUMNS)) + """
  br label %done
done:
  ret void
}
"""

# A signalling NaN narrowed to half (and widened to double) comes out quiet on the hardware, which
# LLVM relies on: it feeds the conversion straight to v_min_f16 without canonicalising it.
SNAN = """
define amdgpu_kernel void @snan(ptr addrspace(1) %xs, ptr addrspace(1) %out, i32 %n) {
entry:
""" + GLOBAL_ID + """
  %pa = getelementptr float, ptr addrspace(1) %xs, i64 %i64
  %a = load float, ptr addrspace(1) %pa
  %j = add i64 %i64, 1
  %pb = getelementptr float, ptr addrspace(1) %xs, i64 %j
  %b = load float, ptr addrspace(1) %pb
  %ha = fptrunc float %a to half
  %hb = fptrunc float %b to half
  %hmin = call half @llvm.minnum.f16(half %ha, half %hb)
  %hv0 = insertelement <2 x half> poison, half %ha, i32 0
  %hv1 = insertelement <2 x half> %hv0, half %hmin, i32 1
  %halves = bitcast <2 x half> %hv1 to i32
  %ad = fpext float %a to double
  %adb = bitcast double %ad to i64
  %adh = lshr i64 %adb, 32
  %wide_hi = trunc i64 %adh to i32
""" + store_row("%out", "i32", ["%halves", "%wide_hi"], 2) + """
  br label %done
done:
  ret void
}
"""

ARITH = ID_DECLARATIONS + INTS + FLOATS + SNAN


# --- atomics: float and double, 64-bit, wrapping, every scope and ordering; cmpxchg loops ------

def _rmw(op: str, ty: str, space: str, base: str, offset: int, value: str, scope: str,
         order: str, name: str) -> str:
    scope_text = f' syncscope("{scope}")' if scope else ""
    return (f"  %{name}p = getelementptr i8, ptr addrspace({space}) {base}, i64 {offset}\n"
            f"  %{name} = atomicrmw {op} ptr addrspace({space}) %{name}p, {ty} {value}"
            f"{scope_text} {order}\n")


# (operation, type, byte offset in %g, scope, ordering): every item of every workgroup
GLOBAL_RMW = [("fadd", "float", 0, "agent", "monotonic"),
              ("fsub", "float", 4, "agent-one-as", "monotonic"),
              ("fmax", "float", 8, "one-as", "seq_cst"),
              ("fmin", "float", 12, "agent", "acquire"),
              ("fadd", "double", 16, "agent", "acq_rel"),
              ("fsub", "double", 24, "agent", "monotonic"),
              ("fmax", "double", 32, "agent", "release"),
              ("fmin", "double", 40, "one-as", "monotonic"),
              ("add", "i64", 48, "", "seq_cst"),
              ("umax", "i64", 56, "agent", "acquire"),
              ("and", "i64", 64, "agent", "release"),
              ("xor", "i64", 72, "one-as", "monotonic")]
# (operation, type, byte offset in @slds): every item of one workgroup
LDS_RMW = [("fadd", "float", 0), ("fmax", "float", 4), ("fadd", "double", 8),
           ("fmin", "double", 16), ("add", "i64", 24)]
# (operation, scope, ordering) on the item's own word of %own
OWN_RMW = [("nand", "wavefront", "monotonic"), ("xchg", "workgroup-one-as", "acquire"),
           ("uinc_wrap", "wavefront-one-as", "monotonic"), ("udec_wrap", "agent", "seq_cst")]
CAS_COUNTER = 80          # byte offset in %g of the counter the cmpxchg loops add to
LDS_RESULTS = 128         # byte offset in %g of workgroup w's copy of @slds (64 bytes each)


def _value_of(ty: str) -> str:
    return {"float": "%vf", "double": "%vd", "i64": "%v64"}[ty]


def _atomics_ir() -> str:
    body = []
    for k, (op, ty, offset, scope, order) in enumerate(GLOBAL_RMW):
        body.append(_rmw(op, ty, "1", "%g", offset, _value_of(ty), scope, order, f"g{k}"))
    for k, (op, ty, offset) in enumerate(LDS_RMW):
        body.append(_rmw(op, ty, "3", "@slds", offset, _value_of(ty), "workgroup", "monotonic",
                         f"l{k}"))
    olds = []
    for k, (op, scope, order) in enumerate(OWN_RMW):
        body.append(f"  %ow{k} = add i64 %own_base, {4 * k}\n")
        body.append(_rmw(op, "i32", "1", "%own", 0, "%vsmall", scope, order, f"o{k}")
                    .replace(", i64 0\n", f", i64 %ow{k}\n"))
        olds.append(f"%o{k}")
    copy = []
    for word in range(9):       # the 36 bytes of @slds in use
        copy.append(f"""
  %cs{word} = getelementptr i8, ptr addrspace(3) @slds, i32 {4 * word}
  %cv{word} = load i32, ptr addrspace(3) %cs{word}
  %co{word} = add i64 %lds_out, {4 * word}
  %cd{word} = getelementptr i8, ptr addrspace(1) %g, i64 %co{word}
  store i32 %cv{word}, ptr addrspace(1) %cd{word}""")
    return """
@slds = internal addrspace(3) global [64 x i8] poison, align 8

define amdgpu_kernel void @atomics(ptr addrspace(1) %g, ptr addrspace(1) %own,
                                   ptr addrspace(1) %out, i32 %n) {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %wg = call i32 @llvm.amdgcn.workgroup.id.x()
  %base = mul i32 %wg, 64
  %i = add i32 %base, %tid
  %i64 = zext i32 %i to i64
  %first = icmp eq i32 %tid, 0
  br i1 %first, label %init, label %ready
init:
  call void @llvm.memset.p3.i64(ptr addrspace(3) align 8 @slds, i8 0, i64 64, i1 false)
  %pmax = getelementptr i8, ptr addrspace(3) @slds, i32 4
  store float -65536.0, ptr addrspace(3) %pmax
  %pmin = getelementptr i8, ptr addrspace(3) @slds, i32 16
  store double 1.0e300, ptr addrspace(3) %pmin
  br label %ready
ready:
  fence syncscope("workgroup") release
  call void @llvm.amdgcn.s.barrier()
  fence syncscope("workgroup") acquire
  %if = uitofp i32 %i to float
  %vf = fmul float %if, 0.25
  %vd = fpext float %vf to double
  %v64a = mul i64 %i64, 2654435761
  %v64 = xor i64 %v64a, 81985529216486895
  %vsmall = and i32 %i, 15
  %own_base = mul i64 %i64, 16
""" + "".join(body) + """
  ; a cmpxchg weak loop adding i + 1 to a global counter, retried until it succeeds
  %cp = getelementptr i8, ptr addrspace(1) %g, i64 """ + str(CAS_COUNTER) + """
  %start = load atomic i32, ptr addrspace(1) %cp syncscope("agent") monotonic, align 4
  %inc = add i32 %i, 1
  br label %retry
retry:
  %seen = phi i32 [ %start, %ready ], [ %now, %retry ]
  %tries = phi i32 [ 1, %ready ], [ %tries1, %retry ]
  %want = add i32 %seen, %inc
  %cx = cmpxchg weak ptr addrspace(1) %cp, i32 %seen, i32 %want syncscope("agent") acq_rel monotonic
  %now = extractvalue {i32, i1} %cx, 0
  %ok = extractvalue {i32, i1} %cx, 1
  %tries1 = add i32 %tries, 1
  br i1 %ok, label %claimed, label %retry
claimed:
  ; a strong cmpxchg in LDS: exactly one item of the workgroup replaces 0 by its tid + 1
  %wp = getelementptr i8, ptr addrspace(3) @slds, i32 32
  %mine = add i32 %tid, 1
  %wx = cmpxchg ptr addrspace(3) %wp, i32 0, i32 %mine syncscope("workgroup") seq_cst seq_cst
  %won = extractvalue {i32, i1} %wx, 1
  %wonz = zext i1 %won to i32
  %okz = zext i1 %ok to i32
  %okw = shl i32 %okz, 1
  %flags = or i32 %wonz, %okw
  %flagrow = mul i64 %i64, 5
  %flagrow4 = add i64 %flagrow, 4
  %flagp = getelementptr i32, ptr addrspace(1) %out, i64 %flagrow4
  store atomic i32 %flags, ptr addrspace(1) %flagp syncscope("agent") release, align 4
""" + store_row("%out", "i32", olds, 5) + """
  fence syncscope("workgroup") release
  call void @llvm.amdgcn.s.barrier()
  fence syncscope("workgroup") acquire
  br i1 %first, label %copy, label %end
copy:
  %wg64 = zext i32 %wg to i64
  %lds_off = mul i64 %wg64, 64
  %lds_out = add i64 %lds_off, """ + str(LDS_RESULTS) + "".join(copy) + """
  br label %end
end:
  ret void
}
"""


SYNC = (ID_DECLARATIONS + """
declare void @llvm.amdgcn.s.barrier()
declare void @llvm.memset.p3.i64(ptr addrspace(3), i8, i64, i1)
""" + _atomics_ir())


# --- cross-lane intrinsics, work-item geometry, hidden arguments and the dispatch packet --------

LANE_COLUMNS = ["%lane", "%ballot_lo", "%ballot_hi", "%read5", "%written", "%below",
                "%row_shr", "%quad", "%xrow"]


def lanes(target: str, wave: int) -> str:
    """The cross-lane kernel for one wave size (ballot and icmp return an i{wave} mask);
    permlanex16 exists on gfx12 only (elsewhere its column is 0)."""
    mask = f"i{wave}"
    if wave == 64:
        high = "  %bhi64 = lshr i64 %ballot, 32\n  %ballot_hi = trunc i64 %bhi64 to i32\n"
        low = "  %ballot_lo = trunc i64 %ballot to i32\n  %below = trunc i64 %cmp to i32\n"
    else:
        high = "  %ballot_hi = or i32 0, 0\n"
        low = "  %ballot_lo = or i32 %ballot, 0\n  %below = or i32 %cmp, 0\n"
    if target.startswith("gfx12"):
        xrow = ("  %xrow = call i32 @llvm.amdgcn.permlanex16.i32(i32 0, i32 %val, "
                "i32 1985229328, i32 -19088744, i1 false, i1 false)\n")
        declare_x = "declare i32 @llvm.amdgcn.permlanex16.i32(i32, i32, i32, i32, i1, i1)\n"
    else:
        xrow, declare_x = "  %xrow = or i32 0, 0\n", ""
    return ID_DECLARATIONS + declare_x + f"""
declare i32 @llvm.amdgcn.mbcnt.lo(i32, i32)
declare i32 @llvm.amdgcn.mbcnt.hi(i32, i32)
declare {mask} @llvm.amdgcn.ballot.{mask}(i1)
declare {mask} @llvm.amdgcn.icmp.{mask}.i32(i32, i32, i32 immarg)
declare i32 @llvm.amdgcn.readlane.i32(i32, i32)
declare i32 @llvm.amdgcn.writelane.i32(i32, i32, i32)
declare i32 @llvm.amdgcn.update.dpp.i32(i32, i32, i32 immarg, i32 immarg, i32 immarg, i1 immarg)
declare i32 @llvm.amdgcn.mov.dpp.i32(i32, i32 immarg, i32 immarg, i32 immarg, i1 immarg)

define amdgpu_kernel void @lanes(ptr addrspace(1) %xs, ptr addrspace(1) %out, i32 %n) {{
entry:
""" + GLOBAL_ID + f"""
  %pv = getelementptr i32, ptr addrspace(1) %xs, i64 %i64
  %val = load i32, ptr addrspace(1) %pv
  %lo = call i32 @llvm.amdgcn.mbcnt.lo(i32 -1, i32 0)
  %lane = call i32 @llvm.amdgcn.mbcnt.hi(i32 -1, i32 %lo)
  %odd = trunc i32 %val to i1
  %ballot = call {mask} @llvm.amdgcn.ballot.{mask}(i1 %odd)
  %cmp = call {mask} @llvm.amdgcn.icmp.{mask}.i32(i32 %val, i32 1073741824, i32 36)
""" + low + high + """
  %read5 = call i32 @llvm.amdgcn.readlane.i32(i32 %val, i32 5)
  %written = call i32 @llvm.amdgcn.writelane.i32(i32 77, i32 3, i32 %val)
  ; DPP row_shr:1 keeping -1 where the source lane is outside the row; quad_perm [1,0,3,2]
  %row_shr = call i32 @llvm.amdgcn.update.dpp.i32(i32 -1, i32 %val, i32 273, i32 15, i32 15,
                                                  i1 false)
  %quad = call i32 @llvm.amdgcn.mov.dpp.i32(i32 %val, i32 177, i32 15, i32 15, i1 true)
""" + xrow + store_row("%out", "i32", LANE_COLUMNS, len(LANE_COLUMNS)) + """
  br label %done
done:
  ret void
}
""" + GEOMETRY


# One word per item of a 3-D grid of partial workgroups: ids, and what the hidden arguments
# (code object v5: block counts at 0, group sizes at 12, remainders at 18) and the dispatch
# packet (workgroup_size_z at 8, grid_size_y at 16) say.
GEOMETRY = """
declare i32 @llvm.amdgcn.workitem.id.y()
declare i32 @llvm.amdgcn.workitem.id.z()
declare i32 @llvm.amdgcn.workgroup.id.y()
declare i32 @llvm.amdgcn.workgroup.id.z()
declare ptr addrspace(4) @llvm.amdgcn.implicitarg.ptr()
declare ptr addrspace(4) @llvm.amdgcn.dispatch.ptr()

define amdgpu_kernel void @geometry(ptr addrspace(1) %out, i32 %gx, i32 %gy) {
entry:
  %tx = call i32 @llvm.amdgcn.workitem.id.x()
  %ty = call i32 @llvm.amdgcn.workitem.id.y()
  %tz = call i32 @llvm.amdgcn.workitem.id.z()
  %bx = call i32 @llvm.amdgcn.workgroup.id.x()
  %by = call i32 @llvm.amdgcn.workgroup.id.y()
  %bz = call i32 @llvm.amdgcn.workgroup.id.z()
  %hidden = call ptr addrspace(4) @llvm.amdgcn.implicitarg.ptr()
  %countx = load i32, ptr addrspace(4) %hidden
  %psx = getelementptr i8, ptr addrspace(4) %hidden, i64 12
  %sizex16 = load i16, ptr addrspace(4) %psx
  %sizex = zext i16 %sizex16 to i32
  %prx = getelementptr i8, ptr addrspace(4) %hidden, i64 18
  %remx16 = load i16, ptr addrspace(4) %prx
  %remx = zext i16 %remx16 to i32
  %packet = call ptr addrspace(4) @llvm.amdgcn.dispatch.ptr()
  %pwz = getelementptr i8, ptr addrspace(4) %packet, i64 8
  %wz16 = load i16, ptr addrspace(4) %pwz
  %wz = zext i16 %wz16 to i32
  %pgy = getelementptr i8, ptr addrspace(4) %packet, i64 16
  %gridy = load i32, ptr addrspace(4) %pgy
  %x0 = mul i32 %bx, %sizex
  %x = add i32 %x0, %tx
  %y0 = mul i32 %by, 2
  %y = add i32 %y0, %ty
  %z0 = mul i32 %bz, %wz
  %z = add i32 %z0, %tz
  %l0 = mul i32 %z, %gy
  %l1 = add i32 %l0, %y
  %l2 = mul i32 %l1, %gx
  %linear = add i32 %l2, %x
  %ids0 = shl i32 %tz, 28
  %ids1 = shl i32 %ty, 24
  %ids2 = shl i32 %tx, 20
  %ids3 = shl i32 %bz, 12
  %ids4 = shl i32 %by, 6
  %a0 = or i32 %ids0, %ids1
  %a1 = or i32 %a0, %ids2
  %a2 = or i32 %a1, %ids3
  %a3 = or i32 %a2, %ids4
  %ids = or i32 %a3, %bx
  %h0 = shl i32 %countx, 24
  %h1 = shl i32 %sizex, 16
  %h2 = shl i32 %remx, 8
  %h3 = or i32 %h0, %h1
  %h4 = or i32 %h3, %h2
  %info = or i32 %h4, %gridy
  %l64 = zext i32 %linear to i64
  %row = mul i64 %l64, 2
  %p0 = getelementptr i32, ptr addrspace(1) %out, i64 %row
  store i32 %ids, ptr addrspace(1) %p0
  %p1 = getelementptr i32, ptr addrspace(1) %p0, i64 1
  store i32 %info, ptr addrspace(1) %p1
  ret void
}
"""


# --- address spaces: LDS tiles and tables, constant tables, scratch, flat pointers -------------

SPACE_COLUMNS = ["%transposed", "%gathered", "%ctab_word", "%cdbl_lo", "%cdbl_hi", "%priv",
                 "%rec_bytes", "%rec_dbl", "%where", "%via_flat", "%via_cast"]

# The constant tables, in the order of the IR initialisers (the test builds its reference from
# these too).
CONST_WORDS = [(k * 2654435761 + 12345) & 0xFFFFFFFF for k in range(16)]
CONST_HALFWORDS = [(k * 40503 + 7) & 0xFFFF for k in range(16)]
CONST_DOUBLES = [0.1 * k - 0.35 for k in range(8)]
PRIVATE_WORDS = 24        # the private array of words
PRIVATE_RECORDS = 6       # the private array of {i8, double, i16} records


def _table(ty: str, values: list) -> str:
    return ", ".join(f"{ty} {v!r}" if ty == "double" else f"{ty} {v}" for v in values)


SPACES = """
%Words = type [""" + str(PRIVATE_WORDS) + """ x i32]
%Records = type [""" + str(PRIVATE_RECORDS) + """ x {i8, double, i16}]

declare void @llvm.amdgcn.s.barrier()
declare i1 @llvm.amdgcn.is.shared(ptr)
declare i1 @llvm.amdgcn.is.private(ptr)

@tile = internal addrspace(3) global [8 x [9 x i32]] poison, align 4
@slots = internal addrspace(3) global [64 x i32] poison, align 4
@flatlds = internal addrspace(3) global [64 x i32] poison, align 4
@ctab = internal addrspace(4) constant [16 x i32] [""" + _table("i32", CONST_WORDS) + """]
@ctab16 = internal addrspace(4) constant [16 x i16] [""" + _table("i16", CONST_HALFWORDS) + """]
@cdbl = internal addrspace(4) constant [8 x double] [""" + _table("double", CONST_DOUBLES) + """]

; Every item of whole workgroups of 64 (barriers): %perm holds a permutation of 0..63 per
; workgroup, %g is written through a flat pointer by the items that choose global memory.
define amdgpu_kernel void @spaces(ptr addrspace(1) %xs, ptr addrspace(1) %perm,
                                  ptr addrspace(1) %g, ptr addrspace(1) %out, i32 %n) {
entry:
  %words = alloca %Words, align 4, addrspace(5)
  %recs = alloca %Records, align 8, addrspace(5)
  %mine = alloca i32, align 4, addrspace(5)
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %wg = call i32 @llvm.amdgcn.workgroup.id.x()
  %base = mul i32 %wg, 64
  %i = add i32 %base, %tid
  %i64 = zext i32 %i to i64
  %px = getelementptr i32, ptr addrspace(1) %xs, i64 %i64
  %x = load i32, ptr addrspace(1) %px
  %pp = getelementptr i32, ptr addrspace(1) %perm, i64 %i64
  %p = load i32, ptr addrspace(1) %pp
  ; an 8 x 8 tile (rows padded to 9) written by rows and read by columns
  %tx = and i32 %tid, 7
  %ty = lshr i32 %tid, 3
  %tw = getelementptr [8 x [9 x i32]], ptr addrspace(3) @tile, i32 0, i32 %ty, i32 %tx
  store i32 %x, ptr addrspace(3) %tw
  ; a scatter to a data-chosen LDS slot
  %sv = xor i32 %x, %tid
  %sw = getelementptr [64 x i32], ptr addrspace(3) @slots, i32 0, i32 %p
  store i32 %sv, ptr addrspace(3) %sw
  call void @llvm.amdgcn.s.barrier()
  %tr = getelementptr [8 x [9 x i32]], ptr addrspace(3) @tile, i32 0, i32 %tx, i32 %ty
  %transposed = load i32, ptr addrspace(3) %tr
  %gi = and i32 %x, 63
  %sr = getelementptr [64 x i32], ptr addrspace(3) @slots, i32 0, i32 %gi
  %gathered = load i32, ptr addrspace(3) %sr
  ; constant tables indexed by data
  %c0 = and i32 %x, 15
  %cp0 = getelementptr [16 x i32], ptr addrspace(4) @ctab, i32 0, i32 %c0
  %cw = load i32, ptr addrspace(4) %cp0
  %c1s = lshr i32 %x, 4
  %c1 = and i32 %c1s, 15
  %cp1 = getelementptr [16 x i16], ptr addrspace(4) @ctab16, i32 0, i32 %c1
  %ch = load i16, ptr addrspace(4) %cp1
  %chz = zext i16 %ch to i32
  %chs = shl i32 %chz, 16
  %ctab_word = xor i32 %cw, %chs
  %c2s = lshr i32 %x, 8
  %c2 = and i32 %c2s, 7
  %cp2 = getelementptr [8 x double], ptr addrspace(4) @cdbl, i32 0, i32 %c2
  %cd = load double, ptr addrspace(4) %cp2
  %cdb = bitcast double %cd to i64
  %cdbl_lo = trunc i64 %cdb to i32
  %cdh = lshr i64 %cdb, 32
  %cdbl_hi = trunc i64 %cdh to i32
  ; private arrays: words[k] = x * (k + 1) + k, one overwritten at a data index, one read at
  ; another; records[k] = {x + k, x + k / 2, x * k}
  br label %fill
fill:
  %k = phi i32 [ 0, %entry ], [ %k1, %fill ]
  %k1 = add i32 %k, 1
  %wv0 = mul i32 %x, %k1
  %wv = add i32 %wv0, %k
  %wp = getelementptr %Words, ptr addrspace(5) %words, i32 0, i32 %k
  store i32 %wv, ptr addrspace(5) %wp
  %more = icmp ult i32 %k1, """ + str(PRIVATE_WORDS) + """
  br i1 %more, label %fill, label %fill_records
fill_records:
  %r = phi i32 [ 0, %fill ], [ %r1, %fill_records ]
  %r1 = add i32 %r, 1
  %ra = getelementptr %Records, ptr addrspace(5) %recs, i32 0, i32 %r, i32 0
  %rb = getelementptr %Records, ptr addrspace(5) %recs, i32 0, i32 %r, i32 1
  %rc = getelementptr %Records, ptr addrspace(5) %recs, i32 0, i32 %r, i32 2
  %xr = add i32 %x, %r
  %xr8 = trunc i32 %xr to i8
  store i8 %xr8, ptr addrspace(5) %ra
  %xd = uitofp i32 %x to double
  %rd = uitofp i32 %r to double
  %rh = fmul double %rd, 0.5
  %xrd = fadd double %xd, %rh
  store double %xrd, ptr addrspace(5) %rb
  %xm = mul i32 %x, %r
  %xm16 = trunc i32 %xm to i16
  store i16 %xm16, ptr addrspace(5) %rc
  %rmore = icmp ult i32 %r1, """ + str(PRIVATE_RECORDS) + """
  br i1 %rmore, label %fill_records, label %private_read
private_read:
  %ws = lshr i32 %x, 20
  %wo = urem i32 %ws, """ + str(PRIVATE_WORDS) + """
  %wop = getelementptr %Words, ptr addrspace(5) %words, i32 0, i32 %wo
  store i32 7777, ptr addrspace(5) %wop
  %wrs = lshr i32 %x, 12
  %wr = urem i32 %wrs, """ + str(PRIVATE_WORDS) + """
  %wrp = getelementptr %Words, ptr addrspace(5) %words, i32 0, i32 %wr
  %priv = load i32, ptr addrspace(5) %wrp
  %rrs = lshr i32 %x, 16
  %rr = urem i32 %rrs, """ + str(PRIVATE_RECORDS) + """
  %rra = getelementptr %Records, ptr addrspace(5) %recs, i32 0, i32 %rr, i32 0
  %rrb = getelementptr %Records, ptr addrspace(5) %recs, i32 0, i32 %rr, i32 1
  %rrc = getelementptr %Records, ptr addrspace(5) %recs, i32 0, i32 %rr, i32 2
  %v8 = load i8, ptr addrspace(5) %rra
  %vd = load double, ptr addrspace(5) %rrb
  %v16 = load i16, ptr addrspace(5) %rrc
  %v8z = zext i8 %v8 to i32
  %v16z = zext i16 %v16 to i32
  %v16s = shl i32 %v16z, 16
  %rec_bytes = or i32 %v8z, %v16s
  %vd2 = fmul double %vd, 2.0
  %rec_dbl64 = fptoui double %vd2 to i64
  %rec_dbl = trunc i64 %rec_dbl64 to i32
  ; a flat pointer to global memory, LDS or scratch chosen per item by x & 3 (0: LDS,
  ; 1 and 3: global, 2: scratch); stored and loaded through, then cast back by its aperture
  %gp = getelementptr i32, ptr addrspace(1) %g, i64 %i64
  %gflat = addrspacecast ptr addrspace(1) %gp to ptr
  %lp = getelementptr [64 x i32], ptr addrspace(3) @flatlds, i32 0, i32 %tid
  %lflat = addrspacecast ptr addrspace(3) %lp to ptr
  %pflat = addrspacecast ptr addrspace(5) %mine to ptr
  %sel = and i32 %x, 3
  %odd = trunc i32 %x to i1
  %is2 = icmp eq i32 %sel, 2
  %notglobal = select i1 %is2, ptr %pflat, ptr %lflat
  %fp = select i1 %odd, ptr %gflat, ptr %notglobal
  %fv = add i32 %x, 1
  store i32 %fv, ptr %fp
  ; a second flat pointer, into data the other accesses wrote: x itself, the gathered LDS slot
  ; or the private word read above (0: LDS, 2: scratch, else global)
  %xflat = addrspacecast ptr addrspace(1) %px to ptr
  %sflat = addrspacecast ptr addrspace(3) %sr to ptr
  %wflat = addrspacecast ptr addrspace(5) %wrp to ptr
  %is0 = icmp eq i32 %sel, 0
  %notx = select i1 %is2, ptr %wflat, ptr %sflat
  %isnotx = or i1 %is0, %is2
  %readp = select i1 %isnotx, ptr %notx, ptr %xflat
  %via_flat = load i32, ptr %readp
  %shared = call i1 @llvm.amdgcn.is.shared(ptr %fp)
  %private = call i1 @llvm.amdgcn.is.private(ptr %fp)
  %shz = zext i1 %shared to i32
  %prz = zext i1 %private to i32
  %prs = shl i32 %prz, 1
  %where = or i32 %shz, %prs
  br i1 %shared, label %as_local, label %not_local
as_local:
  %back_l = addrspacecast ptr %fp to ptr addrspace(3)
  %vl = load i32, ptr addrspace(3) %back_l
  %vlm = add i32 %vl, 256
  br label %joined
not_local:
  br i1 %private, label %as_private, label %as_global
as_private:
  %back_p = addrspacecast ptr %fp to ptr addrspace(5)
  %vp = load i32, ptr addrspace(5) %back_p
  %vpm = add i32 %vp, 512
  br label %joined
as_global:
  %back_g = addrspacecast ptr %fp to ptr addrspace(1)
  %vg = load i32, ptr addrspace(1) %back_g
  br label %joined
joined:
  %via_cast = phi i32 [ %vlm, %as_local ], [ %vpm, %as_private ], [ %vg, %as_global ]
""" + store_row("%out", "i32", SPACE_COLUMNS, len(SPACE_COLUMNS)) + """
  ret void
}
"""

# A struct passed by reference in the kernarg segment (padding after the i8, the i16 and the
# <2 x float>) followed by arguments of mixed widths passed by value.
STRUCT_ARG_COLUMNS = ["%s_ints", "%s_dbl_lo", "%s_dbl_hi", "%s_vec", "%s_tail", "%v_ints",
                      "%v_mix"]

STRUCT_ARG = """
%Args = type { i8, i16, double, <2 x float>, i8, i32 }

define amdgpu_kernel void @struct_args(ptr addrspace(1) %out,
                                       ptr addrspace(4) byref(%Args) align 8 %s, i8 %c,
                                       i16 %h, double %d, <2 x float> %v, i32 %n) {
entry:
""" + GLOBAL_ID + """
  %pa = getelementptr %Args, ptr addrspace(4) %s, i32 0, i32 0
  %sa = load i8, ptr addrspace(4) %pa
  %pb = getelementptr %Args, ptr addrspace(4) %s, i32 0, i32 1
  %sb = load i16, ptr addrspace(4) %pb
  %pd = getelementptr %Args, ptr addrspace(4) %s, i32 0, i32 2
  %sd = load double, ptr addrspace(4) %pd
  %pv = getelementptr %Args, ptr addrspace(4) %s, i32 0, i32 3
  %sv = load <2 x float>, ptr addrspace(4) %pv
  %pe = getelementptr %Args, ptr addrspace(4) %s, i32 0, i32 4
  %se = load i8, ptr addrspace(4) %pe
  %pf = getelementptr %Args, ptr addrspace(4) %s, i32 0, i32 5
  %sf = load i32, ptr addrspace(4) %pf
  %saz = zext i8 %sa to i32
  %sbs = sext i16 %sb to i32
  %si0 = add i32 %saz, %sbs
  %s_ints = add i32 %si0, %i
  %idf = uitofp i32 %i to double
  %sdi = fmul double %sd, %idf
  %sdb = bitcast double %sdi to i64
  %s_dbl_lo = trunc i64 %sdb to i32
  %sdh = lshr i64 %sdb, 32
  %s_dbl_hi = trunc i64 %sdh to i32
  %v0 = extractelement <2 x float> %sv, i32 0
  %v1 = extractelement <2 x float> %sv, i32 1
  %iff = uitofp i32 %i to float
  %vm = fmul float %v1, %iff
  %va = fadd float %v0, %vm
  %s_vec = bitcast float %va to i32
  %sez = sext i8 %se to i32
  %st = mul i32 %sf, %sez
  %s_tail = add i32 %st, %i
  %cz = sext i8 %c to i32
  %hz = zext i16 %h to i32
  %hs = shl i32 %hz, 8
  %v_ints = xor i32 %cz, %hs
  %df = fptrunc double %d to float
  %w1 = extractelement <2 x float> %v, i32 1
  %w0 = extractelement <2 x float> %v, i32 0
  %dm = fmul float %df, %w1
  %dma = fadd float %dm, %w0
  %v_mix = bitcast float %dma to i32
""" + store_row("%out", "i32", STRUCT_ARG_COLUMNS, len(STRUCT_ARG_COLUMNS)) + """
  br label %done
done:
  ret void
}
"""

MEMORY = ID_DECLARATIONS + SPACES + STRUCT_ARG


# --- vectors: odd widths, half and bfloat lanes, shuffles, dynamic lanes, reductions -----------

VECTOR_COLUMNS = ["%tri0", "%tri1", "%tri2", "%hv0", "%hv1", "%hv2", "%hv3", "%sh0", "%sh1",
                  "%sh2", "%sh3", "%bf", "%picked", "%repicked", "%radd", "%rumax", "%rand",
                  "%rfadd_b", "%rfre_b"]

VECTORS = """
declare i32 @llvm.vector.reduce.add.v4i32(<4 x i32>)
declare i32 @llvm.vector.reduce.umax.v8i32(<8 x i32>)
declare i32 @llvm.vector.reduce.and.v4i32(<4 x i32>)
declare float @llvm.vector.reduce.fadd.v4f32(float, <4 x float>)

; Item i reads the words xs[i .. i + 8) (the test gives n + 8).
define amdgpu_kernel void @vectors(ptr addrspace(1) %xs, ptr addrspace(1) %out, i32 %n) {
entry:
""" + GLOBAL_ID + """
  %p = getelementptr i32, ptr addrspace(1) %xs, i64 %i64
  %w8 = load <8 x i32>, ptr addrspace(1) %p, align 4
  ; <3 x i32> loaded as such: (a * b + (a << [1, 2, 3])) ^ b
  %p3 = getelementptr i32, ptr addrspace(1) %p, i64 3
  %a3 = load <3 x i32>, ptr addrspace(1) %p, align 4
  %b3 = load <3 x i32>, ptr addrspace(1) %p3, align 4
  %m3 = mul <3 x i32> %a3, %b3
  %s3 = shl <3 x i32> %a3, <i32 1, i32 2, i32 3>
  %t3 = add <3 x i32> %m3, %s3
  %r3 = xor <3 x i32> %t3, %b3
  %tri0 = extractelement <3 x i32> %r3, i32 0
  %tri1 = extractelement <3 x i32> %r3, i32 1
  %tri2 = extractelement <3 x i32> %r3, i32 2
  ; <8 x half>: h * g + h, each operation rounded to half
  %lo4 = shufflevector <8 x i32> %w8, <8 x i32> poison, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  %hi4 = shufflevector <8 x i32> %w8, <8 x i32> poison, <4 x i32> <i32 4, i32 5, i32 6, i32 7>
  %h = bitcast <4 x i32> %lo4 to <8 x half>
  %g = bitcast <4 x i32> %hi4 to <8 x half>
  %hm = fmul <8 x half> %h, %g
  %hr = fadd <8 x half> %hm, %h
  %hw = bitcast <8 x half> %hr to <4 x i32>
  %hv0 = extractelement <4 x i32> %hw, i32 0
  %hv1 = extractelement <4 x i32> %hw, i32 1
  %hv2 = extractelement <4 x i32> %hw, i32 2
  %hv3 = extractelement <4 x i32> %hw, i32 3
  ; a shuffle of both: [hr7, h0, hr1, h2, hr7, h4, hr3, h6] (indices 8.. are %h's)
  %sh = shufflevector <8 x half> %hr, <8 x half> %h,
                      <8 x i32> <i32 7, i32 8, i32 1, i32 10, i32 7, i32 12, i32 3, i32 14>
  %shw = bitcast <8 x half> %sh to <4 x i32>
  %sh0 = extractelement <4 x i32> %shw, i32 0
  %sh1 = extractelement <4 x i32> %shw, i32 1
  %sh2 = extractelement <4 x i32> %shw, i32 2
  %sh3 = extractelement <4 x i32> %shw, i32 3
  ; <2 x bfloat>: b * c + b, each operation rounded to bfloat
  %w0 = extractelement <8 x i32> %w8, i32 0
  %w1 = extractelement <8 x i32> %w8, i32 1
  %bv = bitcast i32 %w0 to <2 x bfloat>
  %cv = bitcast i32 %w1 to <2 x bfloat>
  %bm = fmul <2 x bfloat> %bv, %cv
  %ba = fadd <2 x bfloat> %bm, %bv
  %bf = bitcast <2 x bfloat> %ba to i32
  ; lanes chosen by data: extract w[w2 & 7], insert 57005 at w[w3 & 7], extract at w[w4 & 7]
  %w2 = extractelement <8 x i32> %w8, i32 2
  %w3 = extractelement <8 x i32> %w8, i32 3
  %w4 = extractelement <8 x i32> %w8, i32 4
  %e0 = and i32 %w2, 7
  %picked = extractelement <8 x i32> %w8, i32 %e0
  %e1 = and i32 %w3, 7
  %ins = insertelement <8 x i32> %w8, i32 57005, i32 %e1
  %e2 = and i32 %w4, 7
  %repicked = extractelement <8 x i32> %ins, i32 %e2
  ; reductions
  %radd = call i32 @llvm.vector.reduce.add.v4i32(<4 x i32> %lo4)
  %rumax = call i32 @llvm.vector.reduce.umax.v8i32(<8 x i32> %w8)
  %ors = or <4 x i32> %lo4, %hi4
  %rand = call i32 @llvm.vector.reduce.and.v4i32(<4 x i32> %ors)
  ; fadd ordered: ((((h4 + h0 * 2^12) + h1) + h2 * 2^-12) + h3) in float, the order seen
  %hx = fpext <8 x half> %h to <8 x float>
  %f4 = shufflevector <8 x float> %hx, <8 x float> poison, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  %fs = fmul <4 x float> %f4, <float 4096.0, float 1.0, float 0x3F30000000000000, float 1.0>
  %start = extractelement <8 x float> %hx, i32 4
  %rfadd = call float @llvm.vector.reduce.fadd.v4f32(float %start, <4 x float> %fs)
  %rfadd_b = bitcast float %rfadd to i32
  ; fadd reassoc of small integers (exact in any order)
  %small = and <4 x i32> %hi4, <i32 65535, i32 65535, i32 65535, i32 65535>
  %sf = uitofp <4 x i32> %small to <4 x float>
  %rfre = call reassoc float @llvm.vector.reduce.fadd.v4f32(float -0.0, <4 x float> %sf)
  %rfre_b = bitcast float %rfre to i32
""" + store_row("%out", "i32", VECTOR_COLUMNS, len(VECTOR_COLUMNS)) + """
  br label %done
done:
  ret void
}
"""


# --- intrinsics: bit reversal, sign and NaN-propagating min/max, rounding, getpc, bpermute -----

INTRINSIC_COLUMNS = ["%rev32", "%rev64_lo", "%rev64_hi", "%csign_b", "%csign64_hi", "%minimum_b",
                     "%maximum_b", "%round_b", "%trunc_b", "%floor_b", "%hsat", "%pc_lo",
                     "%pc_hi", "%permuted"]

INTRINSICS = """
declare i32 @llvm.bitreverse.i32(i32)
declare i64 @llvm.bitreverse.i64(i64)
declare float @llvm.copysign.f32(float, float)
declare double @llvm.copysign.f64(double, double)
declare float @llvm.minimum.f32(float, float)
declare float @llvm.maximum.f32(float, float)
declare float @llvm.round.f32(float)
declare float @llvm.trunc.f32(float)
declare float @llvm.floor.f32(float)
declare i8 @llvm.fptoui.sat.i8.f16(half)
declare i32 @llvm.fptoui.sat.i32.f16(half)
declare i64 @llvm.amdgcn.s.getpc()
declare i32 @llvm.amdgcn.ds.bpermute(i32, i32)

define amdgpu_kernel void @intrinsics(ptr addrspace(1) %xs, ptr addrspace(1) %out, i32 %n) {
entry:
""" + GLOBAL_ID + """
  %pa = getelementptr float, ptr addrspace(1) %xs, i64 %i64
  %a = load float, ptr addrspace(1) %pa
  %j = add i64 %i64, 1
  %pb = getelementptr float, ptr addrspace(1) %xs, i64 %j
  %b = load float, ptr addrspace(1) %pb
  %wa = bitcast float %a to i32
  %wb = bitcast float %b to i32
  %rev32 = call i32 @llvm.bitreverse.i32(i32 %wa)
  %wa64 = zext i32 %wa to i64
  %wb64 = zext i32 %wb to i64
  %wbs = shl i64 %wb64, 32
  %wab = or i64 %wa64, %wbs
  %rev64 = call i64 @llvm.bitreverse.i64(i64 %wab)
  %rev64_lo = trunc i64 %rev64 to i32
  %rev64s = lshr i64 %rev64, 32
  %rev64_hi = trunc i64 %rev64s to i32
  %csign = call float @llvm.copysign.f32(float %a, float %b)
  %csign_b = bitcast float %csign to i32
  %ad = fpext float %a to double
  %bd = fpext float %b to double
  %cs64 = call double @llvm.copysign.f64(double %ad, double %bd)
  %cs64b = bitcast double %cs64 to i64
  %cs64s = lshr i64 %cs64b, 32
  %csign64_hi = trunc i64 %cs64s to i32
  %minimum = call float @llvm.minimum.f32(float %a, float %b)
  %minimum_b = bitcast float %minimum to i32
  %maximum = call float @llvm.maximum.f32(float %a, float %b)
  %maximum_b = bitcast float %maximum to i32
  %round = call float @llvm.round.f32(float %a)
  %round_b = bitcast float %round to i32
  %trunc = call float @llvm.trunc.f32(float %a)
  %trunc_b = bitcast float %trunc to i32
  %floor = call float @llvm.floor.f32(float %a)
  %floor_b = bitcast float %floor to i32
  %ha = fptrunc float %a to half
  %hs8 = call i8 @llvm.fptoui.sat.i8.f16(half %ha)
  %hs32 = call i32 @llvm.fptoui.sat.i32.f16(half %ha)
  %hs8z = zext i8 %hs8 to i32
  %hs32s = shl i32 %hs32, 8
  %hsat = or i32 %hs8z, %hs32s
  %pc = call i64 @llvm.amdgcn.s.getpc()
  %pc_lo = trunc i64 %pc to i32
  %pcs = lshr i64 %pc, 32
  %pc_hi = trunc i64 %pcs to i32
  ; each lane pulls b's bits from lane (wa / 4) mod the wave size
  %permuted = call i32 @llvm.amdgcn.ds.bpermute(i32 %wa, i32 %wb)
""" + store_row("%out", "i32", INTRINSIC_COLUMNS, len(INTRINSIC_COLUMNS)) + """
  br label %done
done:
  ret void
}
"""

VECTOR_INTRINSICS = ID_DECLARATIONS + VECTORS + INTRINSICS


# --- control flow: sparse switch, multi-exit and per-lane loops, early returns, irreducible ----

# (case value of x & 63, IR computing %c<value> from %y = x >> 6); the default is y + x
SWITCH_CASES = [(0, "add i32 %y, 1"), (3, "mul i32 %y, 3"), (7, "xor i32 %y, 85"),
                (12, "lshr i32 %y, 2"), (19, "sub i32 %y, 1000"), (28, "or i32 %y, 256"),
                (33, "mul i32 %y, %y"), (41, "shl i32 %y, 3"), (50, "and i32 %y, 255"),
                (63, "sub i32 0, %y")]
FLOW_COLUMNS = ["%search", "%trips", "%chain", "%irreducible"]
SEARCH_KEYS = 32          # words of %keys the search loop reads
IRREDUCIBLE_STEPS = 12


def _switch_ir() -> str:
    table = " ".join(f"i32 {v}, label %case{v}" for v, _ in SWITCH_CASES)
    lines = [f"  switch i32 %sel, label %case_default [ {table} ]"]
    incoming = []
    for v, op in SWITCH_CASES:
        lines += [f"case{v}:", f"  %c{v} = {op}", "  br label %switched"]
        incoming.append(f"[ %c{v}, %case{v} ]")
    lines += ["case_default:", "  %cd = add i32 %y, %x", "  br label %switched", "switched:",
              f"  %sw = phi i32 {', '.join(incoming)}, [ %cd, %case_default ]"]
    return "\n".join(lines) + "\n"


FLOW = """
; Items with x % 5 == 0 return early, writing only %early[i]; the others write their row.
define amdgpu_kernel void @flow(ptr addrspace(1) %xs, ptr addrspace(1) %keys,
                                ptr addrspace(1) %early, ptr addrspace(1) %out, i32 %n) {
entry:
""" + GLOBAL_ID + """
  %px = getelementptr i32, ptr addrspace(1) %xs, i64 %i64
  %x = load i32, ptr addrspace(1) %px
  %y = lshr i32 %x, 6
  %sel = and i32 %x, 63
""" + _switch_ir() + """
  %r5 = urem i32 %x, 5
  %leave = icmp eq i32 %r5, 0
  br i1 %leave, label %early_return, label %search_loop
early_return:
  %pe = getelementptr i32, ptr addrspace(1) %early, i64 %i64
  store i32 %sw, ptr addrspace(1) %pe
  ret void
search_loop:
  ; find x % 40 among the keys (exit 1), stop once their running sum passes x >> 20 (exit 2),
  ; or run out of keys (exit 3)
  %target = urem i32 %x, 40
  %limit = lshr i32 %x, 20
  br label %search_key
search_key:
  %j = phi i32 [ 0, %search_loop ], [ %j1, %next_key ]
  %acc = phi i32 [ 0, %search_loop ], [ %acc1, %next_key ]
  %pk = getelementptr i32, ptr addrspace(1) %keys, i32 %j
  %key = load i32, ptr addrspace(1) %pk
  %hit = icmp eq i32 %key, %target
  br i1 %hit, label %found, label %check_sum
check_sum:
  %acc1 = add i32 %acc, %key
  %over = icmp ugt i32 %acc1, %limit
  br i1 %over, label %overflowed, label %next_key
next_key:
  %j1 = add i32 %j, 1
  %more = icmp ult i32 %j1, """ + str(SEARCH_KEYS) + """
  br i1 %more, label %search_key, label %exhausted
found:
  %fcode = or i32 %j, 65536
  br label %searched
overflowed:
  %ocode = or i32 %j, 131072
  br label %searched
exhausted:
  br label %searched
searched:
  %search = phi i32 [ %fcode, %found ], [ %ocode, %overflowed ], [ 196640, %exhausted ]
  ; x % 37 trips of t = t * 3 + k
  %trip_count = urem i32 %x, 37
  %none = icmp eq i32 %trip_count, 0
  br i1 %none, label %tripped, label %trip
trip:
  %k = phi i32 [ 0, %searched ], [ %k1, %trip ]
  %t = phi i32 [ 1, %searched ], [ %t2, %trip ]
  %t1 = mul i32 %t, 3
  %t2 = add i32 %t1, %k
  %k1 = add i32 %k, 1
  %again = icmp ult i32 %k1, %trip_count
  br i1 %again, label %trip, label %tripped
tripped:
  %trips = phi i32 [ 1, %searched ], [ %t2, %trip ]
  ; selects and a chain of diamonds joined by phis
  %bit1 = and i32 %x, 2
  %has1 = icmp ne i32 %bit1, 0
  %sx = xor i32 %x, 61680
  %s7 = add i32 %x, 7
  %s1 = select i1 %has1, i32 %sx, i32 %s7
  %bit2 = and i32 %s1, 4
  %has2 = icmp ne i32 %bit2, 0
  br i1 %has2, label %times5, label %halve
times5:
  %p5 = mul i32 %s1, 5
  br label %joined1
halve:
  %ph = lshr i32 %s1, 1
  br label %joined1
joined1:
  %p = phi i32 [ %p5, %times5 ], [ %ph, %halve ]
  %bit3 = and i32 %p, 8
  %has3 = icmp ne i32 %bit3, 0
  br i1 %has3, label %plus, label %test4
test4:
  %bit4 = and i32 %p, 16
  %has4 = icmp ne i32 %bit4, 0
  br i1 %has4, label %minus, label %joined2
plus:
  %qp = add i32 %p, %s1
  br label %joined2
minus:
  %qm = sub i32 %p, 3
  br label %joined2
joined2:
  %q = phi i32 [ %qp, %plus ], [ %qm, %minus ], [ %p, %test4 ]
  %bigger = icmp ugt i32 %q, %s1
  %qs = select i1 %bigger, i32 %q, i32 %s1
  %chain = xor i32 %qs, %sw
  ; two entries into one loop: odd x enter at %loop_b, even x at %loop_a
  %odd = trunc i32 %x to i1
  br i1 %odd, label %loop_b, label %loop_a
loop_a:
  %va = phi i32 [ %x, %joined2 ], [ %vb1, %b_to_a ]
  %ca = phi i32 [ 0, %joined2 ], [ %cb1, %b_to_a ]
  %va0 = mul i32 %va, 3
  %va1 = add i32 %va0, 1
  %ca1 = add i32 %ca, 1
  %a_done = icmp uge i32 %ca1, """ + str(IRREDUCIBLE_STEPS) + """
  br i1 %a_done, label %irreducible_exit, label %loop_b
loop_b:
  %vb = phi i32 [ %x, %joined2 ], [ %va1, %loop_a ], [ %vb1, %b_again ]
  %cb = phi i32 [ 0, %joined2 ], [ %ca1, %loop_a ], [ %cb1, %b_again ]
  %vbs = lshr i32 %vb, 1
  %vb1 = xor i32 %vbs, %cb
  %cb1 = add i32 %cb, 1
  %b_done = icmp uge i32 %cb1, """ + str(IRREDUCIBLE_STEPS) + """
  br i1 %b_done, label %irreducible_exit, label %b_choose
b_choose:
  %bit = and i32 %vb1, 2
  %to_a = icmp ne i32 %bit, 0
  br i1 %to_a, label %b_to_a, label %b_again
b_to_a:
  br label %loop_a
b_again:
  br label %loop_b
irreducible_exit:
  %irr_v = phi i32 [ %va1, %loop_a ], [ %vb1, %loop_b ]
  %irr_c = phi i32 [ %ca1, %loop_a ], [ %cb1, %loop_b ]
  %irr_from_a = phi i32 [ 1, %loop_a ], [ 0, %loop_b ]
  %irr_tag = shl i32 %irr_from_a, 31
  %irreducible = xor i32 %irr_v, %irr_tag
""" + store_row("%out", "i32", FLOW_COLUMNS, len(FLOW_COLUMNS)) + """
  br label %done
done:
  ret void
}
"""

CONTROL = ID_DECLARATIONS + FLOW
