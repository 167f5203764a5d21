"""Wave state for the ISA interpreter: a batch of waves that share one program counter.

A :class:`Batch` holds the architectural state of ``W`` waves of ``L`` lanes each, laid out so
that one instruction runs as one numpy operation over the whole batch:

- ``S``: scalar registers, ``uint32[W, 128]`` indexed by the hardware operand code (s0..s105,
  vcc_lo/hi at 106/107, ttmp0..15 at 108..123, m0 at 124 on gfx9 / 125 on gfx12). Pairs are read
  through the ``uint64`` view ``S64`` (64-bit SGPR operands are even-aligned).
- ``V``: vector registers, ``uint32[NV, W, L]`` (register-major, so one register of every lane
  of every wave is one contiguous array); ``A`` the same for gfx90a/gfx942 AGPRs.
- ``exec``: the EXEC lane mask as ``bool[W, L]``; the EXEC SGPRs are derived from it on read.
- ``scc``: ``bool[W]``.
- ``wg``: the batch-local workgroup index of each wave (rows of the LDS array), ``wave_id`` the
  wave's index in the dispatch chunk.
- ``mode``: the MODE hardware register (float rounding and denormal controls,
  ``hsapy.sim.isa.float_mode``), one value for the whole batch: waves whose MODE differs run
  as separate batches, each with the program compiled for its value.

All waves of a batch execute the same instruction; a scalar branch that goes both ways splits
the batch (:meth:`Batch.take`), and batches that meet at one PC merge (:func:`merge`).
"""
from __future__ import annotations

import numpy as np

__all__ = ["Batch", "merge", "pack_mask", "unpack_mask", "NSREG", "WaveSizeMismatch"]

NSREG = 128
VCC_LO = 106
EXEC_LO = 126
TTMP0 = 108


class WaveSizeMismatch(Exception):
    """A wave ran code for the other wave size: a wave32 wave set EXEC bits 32-63 (lanes it
    does not have), as wave64 code does. The executor stops the queue naming the instruction."""


def pack_mask(mask: np.ndarray) -> np.ndarray:
    """Lane mask ``bool[W, L]`` -> ``uint64[W]`` (bit i = lane i)."""
    width = mask.shape[1]
    packed = np.packbits(mask, axis=1, bitorder="little")
    if width == 64:
        return np.ascontiguousarray(packed).view("<u8")[:, 0]
    padded = np.zeros((mask.shape[0], 8), np.uint8)
    padded[:, : packed.shape[1]] = packed
    return padded.view("<u8")[:, 0]


def unpack_mask(bits: np.ndarray, lanes: int) -> np.ndarray:
    """``uint64[W]`` (or a scalar) -> lane mask ``bool[W, L]``."""
    words = np.ascontiguousarray(np.asarray(bits, dtype="<u8").reshape(-1))
    raw = np.unpackbits(words.view(np.uint8).reshape(-1, 8), axis=1, bitorder="little")
    return raw[:, :lanes].astype(bool)


class Batch:
    """The state of a set of waves that execute in lock-step (see the module docstring)."""

    __slots__ = ("pc", "S", "S64", "V", "A", "exec", "scc", "wg", "wave_id", "lanes",
                 "exec_all", "_active", "scratch", "status", "mode", "jit_arrays")

    def __init__(self, pc: int, S: np.ndarray, V: np.ndarray, A: np.ndarray | None,
                 exec_mask: np.ndarray, scc: np.ndarray, wg: np.ndarray, wave_id: np.ndarray,
                 scratch: np.ndarray | None = None, mode: int = 0,
                 exec_all: bool | None = None) -> None:
        """``exec_all``: whether every lane of ``exec_mask`` is set, when the caller knows
        (else it is computed)."""
        self.pc = pc
        self.S = S
        self.S64 = S.view(np.uint64)
        self.V = V
        self.A = A
        self.exec = exec_mask
        self.scc = scc
        self.wg = wg
        self.wave_id = wave_id
        self.lanes = exec_mask.shape[1]
        self.scratch = scratch
        self.status = 0
        self.mode = mode
        self.jit_arrays = None      # the compiled engine's cache of the arrays' addresses
        if exec_all is None:
            self.exec_changed()
        else:
            self.exec_all = exec_all
            self._active = -1

    @property
    def waves(self) -> int:
        """Number of waves in the batch."""
        return self.S.shape[0]

    def exec_changed(self) -> None:
        """Recompute the cached facts about EXEC after it was written."""
        self.exec_all = bool(self.exec.all())
        self._active = -1

    @property
    def active_lanes(self) -> int:
        """Number of set EXEC bits over the batch (cached until EXEC changes)."""
        if self._active < 0:
            self._active = self.exec.size if self.exec_all else int(np.count_nonzero(self.exec))
        return self._active

    # --- EXEC and VCC as scalar values ---------------------------------------------------------
    def exec_bits(self) -> np.ndarray:
        """EXEC as ``uint64[W]``."""
        return pack_mask(self.exec)

    def set_exec_bits(self, bits: np.ndarray) -> None:
        """Write EXEC from ``uint64[W]`` (or a scalar). A wave32 wave has no lanes 32-63:
        setting those bits is wave64 code running as wave32, never a truncated mask."""
        bits = np.broadcast_to(np.asarray(bits, np.uint64), (self.waves,))
        if self.lanes < 64 and (bits >> np.uint64(self.lanes)).any():
            high = int((bits >> np.uint64(self.lanes)).max())
            raise WaveSizeMismatch(
                f"sets EXEC bits 32-63 ({high:#x} << 32) in a wave32 wave: this is wave64 code, "
                "but the kernel descriptor launches wave32 waves (kernel_code_properties bit 10 "
                "set); build the whole code object with one wave size (-mwavefrontsize64 or not)")
        mask = unpack_mask(bits, self.lanes)
        self.exec = mask
        self.exec_changed()

    def set_exec(self, mask: np.ndarray) -> None:
        """Write EXEC from a lane mask ``bool[W, L]``."""
        self.exec = np.ascontiguousarray(mask, dtype=bool)
        self.exec_changed()

    # --- splitting and merging ----------------------------------------------------------------
    def take(self, waves: np.ndarray, pc: int) -> Batch:
        """A new batch holding copies of the selected waves (boolean or index array) at ``pc``."""
        waves = np.asarray(waves)
        index = np.flatnonzero(waves) if waves.dtype == bool else waves.astype(np.intp, copy=False)
        # np.take along the wave axis copies each (row, wave) run of lanes in one piece and
        # gives a C-contiguous result; boolean indexing of the middle axis goes element by
        # element and leaves a layout that needs another copy
        A = None if self.A is None else np.take(self.A, index, axis=1)
        scratch = None
        if self.scratch is not None:
            lanes = np.repeat(index, self.lanes) * self.lanes \
                + np.tile(np.arange(self.lanes), index.size)
            scratch = self.scratch[lanes]
        return Batch(pc, self.S[index], np.take(self.V, index, axis=1), A,
                     self.exec[index], self.scc[index], self.wg[index], self.wave_id[index],
                     scratch, self.mode)


def merge(batches: list[Batch]) -> Batch:
    """One batch from several at the same PC and MODE (waves kept in dispatch order)."""
    if len(batches) == 1:
        return batches[0]
    order = np.argsort(np.concatenate([b.wave_id for b in batches]), kind="stable")
    A = None
    if batches[0].A is not None:
        A = np.take(np.concatenate([b.A for b in batches], axis=1), order, axis=1)
    scratch = None
    if any(b.scratch is not None for b in batches):
        size = max(b.scratch.shape[1] for b in batches if b.scratch is not None)
        rows = [b.scratch if b.scratch is not None
                else np.zeros((b.waves * b.lanes, size), np.uint8) for b in batches]
        lanes = batches[0].lanes
        scratch = np.concatenate(rows).reshape(-1, lanes, size)[order].reshape(-1, size)
    return Batch(
        batches[0].pc,
        np.concatenate([b.S for b in batches])[order],
        np.take(np.concatenate([b.V for b in batches], axis=1), order, axis=1),
        A,
        np.concatenate([b.exec for b in batches])[order],
        np.concatenate([b.scc for b in batches])[order],
        np.concatenate([b.wg for b in batches])[order],
        np.concatenate([b.wave_id for b in batches])[order],
        scratch,
        batches[0].mode,
    )
