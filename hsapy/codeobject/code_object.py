"""The code object: :class:`CodeObject` parses an AMDHSA ELF completely (see hsapy.codeobject)."""
from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping
from typing import Any

import msgpack

from hsapy._checks import check_int
from hsapy.codeobject.bundle import (
    BUNDLE_MAGIC,
    CCOB_MAGIC,
    bundle_entries,
    extract_for_target,
    is_bundle,
)
from hsapy.codeobject.descriptor import KERNEL_DESCRIPTOR_SIZE, KernelDescriptor
from hsapy.codeobject.elf import (
    ABI_VERSIONS,
    EHDR,
    EHDR_SIZE,
    ELF_MAGIC,
    ELFOSABI_AMDGPU_HSA,
    EM_AMDGPU,
    ET_DYN,
    ET_REL,
    NOTE_HEADER,
    NT_AMDGPU_METADATA,
    OLD_ABI_VERSIONS,
    PHDR,
    PHDR_SIZE,
    PT_DYNAMIC,
    PT_LOAD,
    PT_NOTE,
    RELA,
    RELA_SIZE,
    SHDR,
    SHDR_SIZE,
    SHT_DYNSYM,
    SHT_NOBITS,
    SHT_NOTE,
    SHT_RELA,
    SHT_SYMTAB,
    SYM,
    SYM_SIZE,
    SYMBOL_BINDINGS,
    SYMBOL_TYPES,
    SYMBOL_VISIBILITIES,
    CodeObjectError,
    Note,
    Relocation,
    Section,
    Segment,
    Symbol,
    cstring,
    input_bytes,
    parse_struct,
    read_code_object_file,
)
from hsapy.codeobject.metadata import ArgInfo, KernelInfo, meta_get, meta_int, parse_arg
from hsapy.codeobject.targets import Target
from hsapy.errors import HsapyTypeError


class CodeObject:
    """A parsed AMDHSA code object (ELF64, v4/v5/v6). Build with :meth:`from_bytes`.

    Attributes: ``data`` (the bytes), ``target`` (:class:`Target`), ``version`` (4, 5, 6),
    ``e_flags``, ``elf_type``, ``program_headers`` (all), ``segments`` (PT_LOAD), ``sections``,
    ``symbols`` (name -> :class:`Symbol`, dynamic symbols first), ``relocations`` (dynamic),
    ``notes``, ``metadata`` (the decoded NT_AMDGPU_METADATA map, {} if absent) and ``kernels``
    (name -> :class:`KernelInfo`, in metadata order).
    """

    def __init__(self) -> None:  # use from_bytes
        self.data = b""
        self.target = Target("gfx000")
        self.version = 0
        self.e_flags = 0
        self.elf_type = 0
        self.program_headers: list[Segment] = []
        self.segments: list[Segment] = []
        self.sections: list[Section] = []
        self.symbols: dict[str, Symbol] = {}
        self.relocations: list[Relocation] = []
        self.notes: list[Note] = []
        self.metadata: dict[str, Any] = {}
        self.kernels: dict[str, KernelInfo] = {}

    def __repr__(self) -> str:
        return (f"<CodeObject {self.target} v{self.version}, {len(self.kernels)} kernel(s): "
                f"{', '.join(self.kernels)}>")

    # -- entry points --------------------------------------------------------------------------

    @classmethod
    def from_bytes(cls, data: bytes | bytearray | memoryview) -> CodeObject:
        """Parse an ELF code object. Bundles go through :func:`extract_for_target` first."""
        data = input_bytes(data, "CodeObject.from_bytes")
        if data.startswith(BUNDLE_MAGIC) or data.startswith(CCOB_MAGIC):
            raise CodeObjectError(
                "this is a clang offload bundle, not an ELF code object; pick the entry for "
                "your agent with hsapy.codeobject.extract_for_target(data, 'gfx942')"
            )
        co = cls()
        co.data = data
        co._parse_header()
        co._parse_program_headers()
        co._parse_sections()
        co._parse_symbols()
        co._parse_relocations()
        co._parse_notes()
        co._parse_metadata()
        co._parse_kernels()
        return co

    @classmethod
    def from_file(cls, path: str, target: Target | str | None = None) -> CodeObject:
        """Read ``path``; bundles need ``target`` (or hold exactly one AMDGPU entry)."""
        data = read_code_object_file(path)
        if is_bundle(data):
            if target is None:
                entries = [e for e in bundle_entries(data) if e.target is not None]
                if len(entries) != 1:
                    names = ", ".join(str(e.target) for e in entries) or "none"
                    raise CodeObjectError(
                        f"{path} is an offload bundle with AMDGPU entries for {names}; "
                        "name the target to pick one"
                    )
                return cls.from_bytes(entries[0].data)
            return cls.from_bytes(extract_for_target(data, target))
        return cls.from_bytes(data)

    # -- address helpers -----------------------------------------------------------------------

    def read_vaddr(self, vaddr: int, size: int, what: str = "data") -> bytes:
        """File bytes backing ``[vaddr, vaddr + size)`` (zero-filled in a segment's bss part)."""
        vaddr = check_int(vaddr, "CodeObject.read_vaddr: vaddr", 0, (1 << 64) - 1)
        size = check_int(size, "CodeObject.read_vaddr: size", 0, (1 << 64) - 1)
        for seg in self.segments:
            if seg.vaddr <= vaddr and vaddr + size <= seg.vaddr + seg.memsz:
                start = vaddr - seg.vaddr
                in_file = max(0, min(size, seg.filesz - start))
                first = seg.offset + start
                chunk = self.data[first:first + in_file] if in_file else b""
                if len(chunk) != in_file:
                    raise CodeObjectError(
                        f"{what} at address {vaddr:#x} lies past the end of the file",
                                          seg.offset + start, f"{size} bytes of {what}")
                return chunk + bytes(size - in_file)
        raise CodeObjectError(
            f"{what} at address {vaddr:#x} (+{size}) is not inside any PT_LOAD segment", None,
        )

    @property
    def load_size(self) -> int:
        """Bytes of device memory needed to map every PT_LOAD segment (from vaddr 0)."""
        end = 0
        for seg in self.segments:
            end = max(end, seg.vaddr + seg.memsz)
        return end

    @property
    def load_align(self) -> int:
        """Largest PT_LOAD alignment (at least 4096)."""
        align = 4096
        for seg in self.segments:
            if seg.align > align:
                align = seg.align
        return align

    def kernel(self, name: str) -> KernelInfo:
        """The kernel ``name`` (``name.kd`` accepted), or CodeObjectError listing the kernels."""
        if not isinstance(name, str):
            raise HsapyTypeError(f"a kernel name is a str, not {type(name).__name__}")
        if name in self.kernels:
            return self.kernels[name]
        if name.endswith(".kd") and name[:-3] in self.kernels:
            return self.kernels[name[:-3]]
        raise CodeObjectError(f"no kernel named {name!r} in this code object"
                              f"{_suggestions(name, list(self.kernels))}")

    # -- parsing steps -------------------------------------------------------------------------

    def _parse_header(self) -> None:
        data = self.data
        if len(data) < 4 or data[:4] != ELF_MAGIC:
            raise CodeObjectError("not an ELF file", 0, "the ELF magic 7f 45 4c 46")
        hdr = parse_struct(EHDR, EHDR_SIZE, data, 0, "ELF header")
        if hdr.ei_class != 2:
            raise CodeObjectError(f"ELF class {hdr.ei_class}", 4, "ELFCLASS64 (2)")
        if hdr.ei_data != 1:
            raise CodeObjectError(f"ELF data encoding {hdr.ei_data}", 5, "little-endian (1)")
        if hdr.e_machine != EM_AMDGPU:
            raise CodeObjectError(f"e_machine {hdr.e_machine} is not AMDGPU", 0x12,
                                  "EM_AMDGPU (224)")
        if hdr.ei_osabi != ELFOSABI_AMDGPU_HSA:
            raise CodeObjectError(f"OS ABI {hdr.ei_osabi} is not AMDGPU HSA", 7,
                                  "ELFOSABI_AMDGPU_HSA (64); PAL/Mesa objects are not HSA "
                                  "code objects")
        version = ABI_VERSIONS.get(hdr.ei_abiversion)
        if version is None:
            old = OLD_ABI_VERSIONS.get(hdr.ei_abiversion)
            if old is not None:
                raise CodeObjectError(
                    f"code object v{old} is not supported (hsapy reads v4, v5 and v6); "
                    "rebuild with "
                    "-mcode-object-version=5", 8, "EI_ABIVERSION 2, 3 or 4",
                )
            raise CodeObjectError(
                f"unsupported code object ABI version {hdr.ei_abiversion}", 8,
                "EI_ABIVERSION 2 (v4), 3 (v5) or 4 (v6)",
            )
        if hdr.e_type == ET_REL:
            raise CodeObjectError(
                "this is a relocatable object (.o), not a loadable code object; link it with "
                "`ld.lld -shared x.o -o x.hsaco`", 0x10, "ET_DYN (3)",
            )
        if hdr.e_type != ET_DYN:
            raise CodeObjectError(f"ELF type {hdr.e_type}", 0x10, "ET_DYN (3), a shared object")
        self.version = version
        self.e_flags = hdr.e_flags
        self.elf_type = hdr.e_type
        self.target = Target.from_e_flags(hdr.e_flags)
        self._hdr = hdr

    def _table_bounds(self, offset: int, count: int, entsize: int, minimum: int, what: str,
                      where: int) -> None:
        if count and entsize < minimum:
            raise CodeObjectError(f"{what} entry size {entsize}", where, f"at least {minimum}")
        end = offset + count * entsize
        if count and (offset <= 0 or end > len(self.data)):
            raise CodeObjectError(
                f"{what} table ({count} x {entsize} bytes at {offset:#x}) runs past the end of the "
                f"file ({len(self.data)} bytes)", where, "a table inside the file",
            )

    def _parse_program_headers(self) -> None:
        hdr = self._hdr
        self._table_bounds(hdr.e_phoff, hdr.e_phnum, hdr.e_phentsize, PHDR_SIZE,
                           "program header", 0x20)
        headers = []
        for i in range(hdr.e_phnum):
            off = hdr.e_phoff + i * hdr.e_phentsize
            ph = parse_struct(PHDR, PHDR_SIZE, self.data, off, f"program header {i}")
            seg = Segment(ph.p_type, ph.p_offset, ph.p_vaddr, ph.p_filesz, ph.p_memsz,
                          ph.p_flags, ph.p_align)
            if ph.p_type in (PT_LOAD, PT_NOTE, PT_DYNAMIC):
                if ph.p_offset + ph.p_filesz > len(self.data):
                    raise CodeObjectError(
                        f"segment {i} ({seg.type_name}) file range "
                        f"{ph.p_offset:#x}+{ph.p_filesz:#x} "
                        "runs past the end of the file", off + 8, "a range inside the file",
                    )
                if ph.p_type == PT_LOAD and ph.p_filesz > ph.p_memsz:
                    raise CodeObjectError(f"segment {i} has filesz > memsz", off + 32,
                                          "p_filesz <= p_memsz")
                if ph.p_type == PT_LOAD and ph.p_vaddr + ph.p_memsz > 1 << 40:
                    raise CodeObjectError(f"segment {i} ends at {ph.p_vaddr + ph.p_memsz:#x}",
                                          off + 16, "a load address below 1 TiB")
            headers.append(seg)
        self.program_headers = headers
        self.segments = [s for s in headers if s.type == PT_LOAD]

    def _parse_sections(self) -> None:
        hdr = self._hdr
        if hdr.e_shnum == 0:
            self.sections = []
            return
        self._table_bounds(hdr.e_shoff, hdr.e_shnum, hdr.e_shentsize, SHDR_SIZE,
                           "section header", 0x28)
        raw = []
        for i in range(hdr.e_shnum):
            off = hdr.e_shoff + i * hdr.e_shentsize
            sh = parse_struct(SHDR, SHDR_SIZE, self.data, off, f"section header {i}")
            if sh.sh_type != SHT_NOBITS and sh.sh_offset + sh.sh_size > len(self.data):
                raise CodeObjectError(
                    f"section {i} ({sh.sh_offset:#x}+{sh.sh_size:#x}) runs past the end of "
                    "the file",
                    off + 0x18, "a range inside the file",
                )
            raw.append((off, sh))
        names = b""
        if hdr.e_shstrndx:
            if hdr.e_shstrndx >= len(raw):
                raise CodeObjectError(f"section name table index {hdr.e_shstrndx}", 0x3E,
                                      f"an index below e_shnum ({len(raw)})")
            strtab = raw[hdr.e_shstrndx][1]
            names = self.data[strtab.sh_offset:strtab.sh_offset + strtab.sh_size]
            names_offset = strtab.sh_offset
        sections = []
        for _offset, sh in raw:
            name = cstring(names, sh.sh_name, names_offset, "section") if names else ""
            sections.append(Section(name, sh.sh_type, sh.sh_flags, sh.sh_addr, sh.sh_offset,
                                    sh.sh_size, sh.sh_link, sh.sh_info, sh.sh_addralign,
                                    sh.sh_entsize))
        self.sections = sections

    def _section_bytes(self, section: Section) -> bytes:
        if section.type == SHT_NOBITS:
            return b""
        return self.data[section.offset:section.offset + section.size]

    def _read_symbol_table(self, section: Section) -> list[tuple[str, Symbol]]:
        if section.link >= len(self.sections):
            raise CodeObjectError(f"symbol table {section.name} links to section {section.link}",
                                  section.offset, "a valid string table index")
        strtab = self.sections[section.link]
        strings = self._section_bytes(strtab)
        entsize = section.entsize or SYM_SIZE
        if entsize < SYM_SIZE:
            raise CodeObjectError(f"symbol entry size {entsize}", section.offset,
                                  f"at least {SYM_SIZE}")
        out = []
        for i in range(section.size // entsize):
            off = section.offset + i * entsize
            sym = parse_struct(SYM, SYM_SIZE, self.data, off, f"symbol {i} of {section.name}")
            name = cstring(strings, sym.st_name, strtab.offset, "symbol")
            out.append((name, Symbol(
                name=name,
                value=sym.st_value,
                size=sym.st_size,
                type=SYMBOL_TYPES.get(sym.st_info & 0xF, str(sym.st_info & 0xF)),
                binding=SYMBOL_BINDINGS.get(sym.st_info >> 4, str(sym.st_info >> 4)),
                section=sym.st_shndx,
                visibility=SYMBOL_VISIBILITIES[sym.st_other & 3],
            )))
        return out

    def _parse_symbols(self) -> None:
        self._symbol_tables: dict[int, list[tuple[str, Symbol]]] = {}
        symbols: dict[str, Symbol] = {}
        # .dynsym first: it is what the loader resolves; .symtab adds local names.
        ordered = sorted(
            (i for i, s in enumerate(self.sections) if s.type in (SHT_DYNSYM, SHT_SYMTAB)),
            key=lambda i: 0 if self.sections[i].type == SHT_DYNSYM else 1,
        )
        for index in ordered:
            table = self._read_symbol_table(self.sections[index])
            self._symbol_tables[index] = table
            for name, sym in table:
                if name and name not in symbols:
                    symbols[name] = sym
        self.symbols = symbols

    def _parse_relocations(self) -> None:
        relocations = []
        for section in self.sections:
            # Dynamic relocations only: a RELA section with a target section (sh_info) holds
            # static relocations kept by --emit-relocs, which loaders skip (ROCr does too).
            if section.type != SHT_RELA or section.info != 0:
                continue
            entsize = section.entsize or RELA_SIZE
            if entsize < RELA_SIZE:
                raise CodeObjectError(f"relocation entry size {entsize}", section.offset,
                                      f"at least {RELA_SIZE}")
            table = self._symbol_tables.get(section.link)
            if table is None and section.link < len(self.sections) and section.link:
                linked = self.sections[section.link]
                if linked.type in (SHT_DYNSYM, SHT_SYMTAB):
                    table = self._read_symbol_table(linked)
            for i in range(section.size // entsize):
                off = section.offset + i * entsize
                rela = parse_struct(RELA, RELA_SIZE, self.data, off,
                              f"relocation {i} of {section.name}")
                sym_index = rela.r_info >> 32
                name, value = "", 0
                if sym_index:
                    if table is None or sym_index >= len(table):
                        raise CodeObjectError(
                            f"relocation {i} of {section.name} names symbol {sym_index}", off + 8,
                            "a symbol index inside the linked symbol table",
                        )
                    name, sym = table[sym_index]
                    value = sym.value
                relocations.append(Relocation(rela.r_offset, rela.r_info & 0xFFFFFFFF, name, value,
                                              rela.r_addend, sym_index))
        self.relocations = relocations

    def _iter_notes(self, start: int, size: int) -> Iterator[Note]:
        pos, end = start, start + size
        while pos + 12 <= end:
            header = parse_struct(NOTE_HEADER, 12, self.data, pos, "note header")
            name_start = pos + 12
            desc_start = name_start + ((header.namesz + 3) & ~3)
            next_pos = desc_start + ((header.descsz + 3) & ~3)
            if desc_start + header.descsz > end:
                raise CodeObjectError(
                    f"note of {header.descsz} bytes runs past its section", pos,
                    f"a note inside {start:#x}..{end:#x}",
                )
            name = self.data[name_start:name_start + header.namesz].rstrip(b"\0")
            yield Note(name.decode("utf-8", errors="replace"), header.type,
                       self.data[desc_start:desc_start + header.descsz], pos)
            pos = next_pos

    def _parse_notes(self) -> None:
        notes: list[Note] = []
        ranges = [(s.offset, s.size) for s in self.sections if s.type == SHT_NOTE]
        if not ranges:
            ranges = [(p.offset, p.filesz) for p in self.program_headers if p.type == PT_NOTE]
        for start, size in ranges:
            notes.extend(self._iter_notes(start, size))
        self.notes = notes

    def _parse_metadata(self) -> None:
        self.metadata = {}
        self._metadata_offset = 0
        for note in self.notes:
            if note.name == "AMDGPU" and note.type == NT_AMDGPU_METADATA:
                try:
                    doc = msgpack.unpackb(note.desc, raw=False, strict_map_key=False)
                except Exception as exc:  # msgpack raises several unrelated types
                    raise CodeObjectError(
                        f"the NT_AMDGPU_METADATA note is not valid msgpack ({type(exc).__name__}: "
                        f"{exc})", note.offset, "a msgpack map",
                    ) from None
                if not isinstance(doc, dict):
                    raise CodeObjectError(f"the metadata note holds a {type(doc).__name__}",
                                          note.offset, "a msgpack map")
                self.metadata = doc
                self._metadata_offset = note.offset
                return

    def _parse_kernels(self) -> None:
        kernels: dict[str, KernelInfo] = {}
        where_offset = self._metadata_offset
        entries = meta_get(self.metadata, "amdhsa.kernels", (list,), "amdhsa", where_offset, [])
        for index, raw in enumerate(entries):
            where = f"amdhsa.kernels[{index}]"
            if not isinstance(raw, dict):
                raise CodeObjectError(f"metadata {where} is {type(raw).__name__}", where_offset,
                                      "a map")
            name = meta_get(raw, ".name", (str,), where, where_offset)
            symbol_name = meta_get(raw, ".symbol", (str,), where, where_offset)
            where = f"kernel {name}"
            raw_args = meta_get(raw, ".args", (list,), where, where_offset, [])
            args = tuple(parse_arg(a, f"{where} .args[{i}]", where_offset)
                         for i, a in enumerate(raw_args))
            kernarg_size = meta_int(raw, ".kernarg_segment_size", where, where_offset)
            for arg in args:
                if arg.offset + arg.size > kernarg_size:
                    raise CodeObjectError(
                        f"{where}: argument at {arg.offset}+{arg.size} ({arg.value_kind}) lies "
                        f"outside the {kernarg_size}-byte kernarg segment", where_offset,
                        "arguments inside .kernarg_segment_size",
                    )
            kernels[name] = self._kernel_info(
                name, symbol_name, raw, args, kernarg_size, where, where_offset)
        if not kernels and not self.metadata:
            # No metadata note (assembly without .amdgpu_metadata): kernels from `.kd` symbols.
            for symbol_name, sym in self.symbols.items():
                if symbol_name.endswith(".kd") and sym.type == "OBJECT" and sym.size == 64:
                    name = symbol_name[:-3]
                    kernels[name] = self._kernel_info(name, symbol_name, {}, (), None, name, 0)
        self.kernels = kernels

    def _kernel_info(self, name: str, symbol_name: str, raw: Mapping[str, Any],
                     args: tuple[ArgInfo, ...], kernarg_size: int | None, where: str,
                     where_offset: int) -> KernelInfo:
        symbol = self.symbols.get(symbol_name)
        if symbol is None:
            raise CodeObjectError(
                f"{where}: its descriptor symbol {symbol_name!r} is not in the symbol table",
                where_offset, f"a symbol {symbol_name}",
            )
        descriptor_bytes = self.read_vaddr(symbol.value, KERNEL_DESCRIPTOR_SIZE,
                                           f"kernel descriptor {symbol_name}")
        descriptor = KernelDescriptor.from_bytes(descriptor_bytes, self.target.name)
        entry = symbol.value + descriptor.kernel_code_entry_byte_offset
        if kernarg_size is None:
            kernarg_size = descriptor.kernarg_size
        wave = meta_int(raw, ".wavefront_size", where, where_offset, descriptor.wavefront_size)
        return KernelInfo(
            name=name,
            symbol=symbol_name,
            descriptor=descriptor,
            args=args,
            kernarg_segment_size=kernarg_size,
            kernarg_segment_align=meta_int(raw, ".kernarg_segment_align", where, where_offset, 8),
            group_segment_fixed_size=meta_int(
                raw, ".group_segment_fixed_size", where, where_offset,
                descriptor.group_segment_fixed_size),
            private_segment_fixed_size=meta_int(
                raw, ".private_segment_fixed_size", where, where_offset,
                descriptor.private_segment_fixed_size),
            wavefront_size=wave,
            sgpr_count=meta_int(raw, ".sgpr_count", where, where_offset, 0),
            vgpr_count=meta_int(raw, ".vgpr_count", where, where_offset, 0),
            agpr_count=meta_int(raw, ".agpr_count", where, where_offset, 0),
            max_flat_workgroup_size=meta_int(raw, ".max_flat_workgroup_size", where, where_offset,
                                              1024),
            uses_dynamic_stack=meta_get(raw, ".uses_dynamic_stack", (bool,), where, where_offset,
                                         False),
            descriptor_vaddr=symbol.value,
            entry_vaddr=entry,
            metadata=raw,
            code_object_version=self.version,
            target=self.target,
        )

    # -- views -----------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able summary (what ``hsapy inspect --json`` prints)."""
        kernels = []
        for info in self.kernels.values():
            kernels.append({
                "name": info.name,
                "symbol": info.symbol,
                "descriptor_vaddr": info.descriptor_vaddr,
                "entry_vaddr": info.entry_vaddr,
                "kernarg_segment_size": info.kernarg_segment_size,
                "kernarg_segment_align": info.kernarg_segment_align,
                "group_segment_fixed_size": info.group_segment_fixed_size,
                "private_segment_fixed_size": info.private_segment_fixed_size,
                "wavefront_size": info.wavefront_size,
                "max_flat_workgroup_size": info.max_flat_workgroup_size,
                "uses_dynamic_stack": info.uses_dynamic_stack,
                "resources": {
                    "vgpr_count": info.vgpr_count,
                    "agpr_count": info.agpr_count,
                    "sgpr_count": info.sgpr_count,
                    "allocated_vgprs": info.descriptor.allocated_vgprs,
                    "allocated_sgprs": info.descriptor.allocated_sgprs,
                    "accum_offset": info.descriptor.accum_offset,
                    "lds_bytes": info.group_segment_fixed_size,
                    "scratch_bytes_per_workitem": info.private_segment_fixed_size,
                },
                "args": [a.to_dict() for a in info.args],
                "descriptor": info.descriptor.to_dict(),
            })
        return {
            "target": str(self.target),
            "target_xnack": self.target.xnack,
            "target_sramecc": self.target.sramecc,
            "code_object_version": self.version,
            "e_flags": self.e_flags,
            "segments": [
                {"vaddr": s.vaddr, "memsz": s.memsz, "filesz": s.filesz, "offset": s.offset,
                 "flags": s.flags_text.replace(" ", "")}
                for s in self.segments
            ],
            "relocations": [
                {"offset": r.offset, "type": r.type_name, "symbol": r.symbol_name,
                 "addend": r.addend}
                for r in self.relocations
            ],
            "kernels": kernels,
        }


def _suggestions(name: str, kernels: list[str], listed: int = 20) -> str:
    """What to say after "no kernel named ...": the close names first (a typo, or a C++ name
    whose mangled form contains the one asked for: ``_Z10vector_addPfS_S_i``), then the
    kernels, at most ``listed`` of them."""
    if not kernels:
        return " (it has no kernels)"
    close = [k for k in kernels if name and name in k and k != name]
    folded = {k.lower(): k for k in kernels}
    close += [folded[k] for k in difflib.get_close_matches(name.lower(), list(folded), n=3,
                                                           cutoff=0.6) if folded[k] not in close]
    hint = f"; did you mean {' or '.join(repr(k) for k in close[:3])}?" if close else ""
    shown = ", ".join(kernels[:listed])
    more = f" and {len(kernels) - listed} more" if len(kernels) > listed else ""
    return f"{hint} (kernels: {shown}{more})"
