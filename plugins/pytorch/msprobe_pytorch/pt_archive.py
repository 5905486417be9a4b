"""The zip archive of a ``torch.save`` file, read with bounds-checked ``pread`` (never ``zipfile``).

The central directory is parsed here; members are read whole, viewed in a buffer already read, or
memory-mapped copy-on-write. Part of :mod:`.pt_reader`.
"""

from __future__ import annotations

import mmap
import os
import struct
import zlib
from typing import NamedTuple

import numpy as np

from msprobe_core.plugin import TensorReadError

_LOCAL_HEADER = struct.Struct("<IHHHHHIIIHH")
_LOCAL_MAGIC = 0x04034B50


# --------------------------------------------------------------------------- zip access
class _Member(NamedTuple):
    """One central-directory entry."""

    name: str
    flags: int
    method: int
    crc: int
    csize: int
    usize: int
    header_offset: int


_EOCD = struct.Struct("<IHHHHIIH")
_EOCD_MAGIC = 0x06054B50
_EOCD_SIG = b"PK\x05\x06"
_Z64_LOCATOR = struct.Struct("<IIQI")
_Z64_LOCATOR_MAGIC = 0x07064B50
_Z64_EOCD = struct.Struct("<IQHHIIQQQQ")
_Z64_EOCD_MAGIC = 0x06064B50
_CENTRAL = struct.Struct("<IHHHHHHIIIHHHHHII")
_CENTRAL_MAGIC = 0x02014B50
_SMALL_FILE = 1 << 20  # files up to this size are read with one read()
_MAX_MEMBERS = 4096


class _Archive:
    """Minimal, bounds-checked reader of the zip members of one torch file.

    Parses the central directory itself (zipfile's generality costs ~100 us a file, which
    matters for dumps of thousands of small tensors); small files are read in one go.
    """

    def __init__(self, fd: int, max_bytes: int | None, whole: np.ndarray | None = None) -> None:
        self.fd = fd
        self.max_bytes = max_bytes
        #: the whole file (``uint8``) when it was read in one go; storages are then views of it
        self.whole = whole
        self.buf: memoryview | None = None
        if whole is not None:
            self.file_size = whole.size
            self.buf = memoryview(whole)
        else:
            self.file_size = os.fstat(self.fd).st_size
            if self.file_size <= _SMALL_FILE:
                self.buf = memoryview(self._pread(0, self.file_size))
        self.members = self._central_directory()
        self.prefix = self._find_prefix()

    # -- raw access
    def _pread(self, offset: int, n: int) -> bytes:
        if offset < 0 or n < 0 or offset + n > self.file_size:
            raise TensorReadError("zip structure points past the end of the file (truncated file)")
        if self.buf is not None:
            return bytes(self.buf[offset:offset + n])
        parts = []
        while n > 0:
            chunk = os.pread(self.fd, min(n, 1 << 30), offset)
            if not chunk:
                raise TensorReadError("short read (truncated file)")
            parts.append(chunk)
            offset += len(chunk)
            n -= len(chunk)
        return b"".join(parts)

    def _pread_into(self, offset: int, view: memoryview) -> None:
        n = view.nbytes
        if offset < 0 or offset + n > self.file_size:
            raise TensorReadError("zip member runs past the end of the file (truncated file)")
        if self.buf is not None:
            view[:] = self.buf[offset:offset + n]
            return
        done = 0
        while done < n:
            got = os.preadv(self.fd, [view[done:done + (1 << 30)]], offset + done)
            if got <= 0:
                raise TensorReadError("short read (truncated file)")
            done += got

    # -- directory
    def _central_directory(self) -> dict[str, tuple[str, int, int, int, int, int, int]]:
        size = self.file_size
        if size < _EOCD.size:
            raise TensorReadError("file too short to be a zip archive (truncated file)")
        # torch writes no zip comment: the end record is the last 22 bytes, which is what the
        # search of the last 64 KiB below would find when no later signature overlaps them
        tail = self._pread(size - _EOCD.size, _EOCD.size)
        pos = 0 if tail.startswith(_EOCD_SIG) and tail.find(_EOCD_SIG, 1) < 0 else -1
        tail_len = _EOCD.size
        if pos < 0:
            tail_len = min(size, _EOCD.size + 65535)
            tail = self._pread(size - tail_len, tail_len)
            pos = tail.rfind(_EOCD_SIG)
        if pos < 0 or pos + _EOCD.size > len(tail):
            raise TensorReadError("zip end-of-central-directory record not found (truncated or corrupt file)")
        eocd_at = size - tail_len + pos
        _, disk, cd_disk, _, count, cd_size, cd_offset, _ = _EOCD.unpack_from(tail, pos)
        if disk != 0 or cd_disk != 0:
            raise TensorReadError("multi-disk zip archives are not supported")
        if count == 0xFFFF or cd_size == 0xFFFFFFFF or cd_offset == 0xFFFFFFFF:
            loc_at = eocd_at - _Z64_LOCATOR.size
            magic, _, z64_at, _ = _Z64_LOCATOR.unpack(self._pread(loc_at, _Z64_LOCATOR.size))
            if magic != _Z64_LOCATOR_MAGIC:
                raise TensorReadError("zip64 locator missing (corrupt zip)")
            rec = _Z64_EOCD.unpack(self._pread(z64_at, _Z64_EOCD.size))
            if rec[0] != _Z64_EOCD_MAGIC:
                raise TensorReadError("zip64 end record missing (corrupt zip)")
            count, cd_size, cd_offset = rec[7], rec[8], rec[9]
            eocd_at = z64_at
        if count > _MAX_MEMBERS:
            raise TensorReadError(f"zip archive lists {count} members; a tensor file has a handful")
        if cd_offset + cd_size > eocd_at:
            raise TensorReadError("zip central directory overlaps its end record (truncated or corrupt file)")
        cd = self._pread(cd_offset, cd_size)
        members: dict[str, tuple[str, int, int, int, int, int, int]] = {}
        at = 0
        end = len(cd)
        head, unpack = _CENTRAL.size, _CENTRAL.unpack_from
        for _ in range(count):
            if at + head > end:
                raise TensorReadError("zip central directory is cut short (corrupt zip)")
            (magic, _, _, flags, method, _, _, crc, csize, usize, nlen, elen, clen,
             _, _, _, offset) = unpack(cd, at)
            if magic != _CENTRAL_MAGIC:
                raise TensorReadError("bad zip central directory entry (corrupt zip)")
            name_at = at + head
            at = name_at + nlen + elen + clen
            if at > end:
                raise TensorReadError("zip central directory is cut short (corrupt zip)")
            if csize == 0xFFFFFFFF or usize == 0xFFFFFFFF or offset == 0xFFFFFFFF:
                extra = cd[name_at + nlen: name_at + nlen + elen]
                usize, csize, offset = _zip64_extra(extra, usize, csize, offset)
            name_b = cd[name_at: name_at + nlen]
            if name_b.isascii():  # what torch writes; cp437 and utf-8 agree on ASCII
                name = name_b.decode("ascii")
            else:
                name = name_b.decode("utf-8" if flags & 0x800 else "cp437", errors="replace")
            members[name] = (name, flags, method, crc, csize, usize, offset)  # a _Member when asked for
        return members

    def _find_prefix(self) -> str:
        names = [n for n in self.members if n.endswith("/data.pkl") and n.count("/") == 1]
        if not names:
            if "data.pkl" in self.members:
                return ""
            raise TensorReadError("zip archive has no <name>/data.pkl: not a torch.save file")
        if len(names) > 1:
            first = next(iter(self.members)).split("/", 1)[0] + "/data.pkl"
            if first not in names:
                raise TensorReadError("zip archive holds several data.pkl records")
            return first[: -len("data.pkl")]
        return names[0][: -len("data.pkl")]

    def info(self, name: str) -> _Member | None:
        entry = self.members.get(self.prefix + name)
        return None if entry is None else _Member._make(entry)

    # -- members
    def _check_limits(self, m: _Member, wanted: int, limit: int | None) -> None:
        if m.flags & 0x1:
            raise TensorReadError(f"zip member {m.name} is encrypted")
        if limit is not None and m.usize > limit:
            raise TensorReadError(
                f"zip member {m.name} declares {m.usize} bytes, over the limit of {limit}"
                " (refused before reading: possible zip bomb)"
            )
        if m.method == 0:
            if m.csize != m.usize:
                raise TensorReadError(f"zip member {m.name}: stored sizes disagree (corrupt zip)")
        elif m.method == 8:
            if m.usize > max(64 << 20, 200 * max(m.csize, 1)):
                raise TensorReadError(
                    f"zip member {m.name} expands {m.csize} -> {m.usize} bytes"
                    " (refused before reading: possible zip bomb)"
                )
        else:
            raise TensorReadError(f"zip member {m.name} uses unsupported compression method {m.method}")
        if m.usize < wanted:
            raise TensorReadError(
                f"zip member {m.name} holds {m.usize} bytes but the tensor needs {wanted}"
                " (truncated storage)"
            )

    def _data_offset(self, m: _Member) -> int:
        head = self._pread(m.header_offset, _LOCAL_HEADER.size)
        magic, _, _, _, _, _, _, _, _, name_len, extra_len = _LOCAL_HEADER.unpack(head)
        if magic != _LOCAL_MAGIC:
            raise TensorReadError(f"zip member {m.name}: bad local header (corrupt zip)")
        start = m.header_offset + _LOCAL_HEADER.size + name_len + extra_len
        if start + m.csize > self.file_size:
            raise TensorReadError(f"zip member {m.name} runs past the end of the file (truncated file)")
        return start

    def _inflate(self, m: _Member, start: int) -> bytes:
        comp = self._pread(start, m.csize)
        try:
            d = zlib.decompressobj(-15)
            data = d.decompress(comp, m.usize + 1)
        except zlib.error as exc:
            raise TensorReadError(f"zip member {m.name}: bad deflate data ({exc})") from exc
        if len(data) != m.usize:
            raise TensorReadError(f"zip member {m.name}: inflates to {len(data)} bytes, not {m.usize}")
        return data

    def read_small(self, name: str, limit: int) -> bytes:
        m = self.info(name)
        if m is None:
            raise TensorReadError(f"zip archive lacks {self.prefix}{name}")
        lim = limit if self.max_bytes is None else min(limit, self.max_bytes)
        self._check_limits(m, 0, lim)
        start = self._data_offset(m)
        data = self._pread(start, m.csize) if m.method == 0 else self._inflate(m, start)
        if zlib.crc32(data) != m.crc:
            raise TensorReadError(f"zip member {m.name}: CRC mismatch (corrupt data)")
        return data

    def map_range(self, name: str, start: int, nbytes: int, dtype: np.dtype) -> np.ndarray | None:
        """A copy-on-write memory map of bytes ``[start, start + nbytes)`` of a stored member,
        as a writable 1-D ``dtype`` array; None when the member cannot be mapped that way."""
        m = self.info(name)
        if m is None or m.method != 0 or self.buf is not None:
            return None
        self._check_limits(m, start + nbytes, self.max_bytes)
        file_at = self._data_offset(m) + start
        if file_at % dtype.alignment:
            return None
        base = file_at - file_at % mmap.ALLOCATIONGRANULARITY
        try:
            mm = mmap.mmap(self.fd, file_at - base + nbytes, access=mmap.ACCESS_COPY, offset=base)
        except (OSError, ValueError, OverflowError):
            return None
        return np.frombuffer(mm, dtype=dtype, count=nbytes // dtype.itemsize, offset=file_at - base)

    def view_range(self, name: str, start: int, nbytes: int, dtype: np.dtype) -> np.ndarray | None:
        """Bytes ``[start, start + nbytes)`` of a stored member as a 1-D ``dtype`` view of the
        whole-file buffer (no copy); None when the file was not read whole, the member is
        compressed or missing, or the bytes are not aligned for ``dtype``."""
        m = self.info(name)
        if m is None or m.method != 0 or self.whole is None:
            return None
        self._check_limits(m, start + nbytes, self.max_bytes)
        file_at = self._data_offset(m) + start
        if file_at % dtype.alignment:
            return None
        return self.whole[file_at:file_at + nbytes].view(dtype)

    def read_into(self, name: str, start: int, out: np.ndarray, *, verify_crc: bool) -> None:
        """Fill ``out`` (contiguous) with the member's bytes ``[start, start + out.nbytes)``."""
        m = self.info(name)
        if m is None:
            raise TensorReadError(f"zip archive lacks the storage record {self.prefix}{name}")
        need = start + out.nbytes
        self._check_limits(m, need, self.max_bytes)
        view = memoryview(out).cast("B")
        base = self._data_offset(m)
        if m.method == 0:
            if verify_crc:
                if self.buf is not None:
                    whole = self.buf[base:base + m.usize]
                else:
                    whole = memoryview(self._pread(base, m.usize))
                if zlib.crc32(whole) != m.crc:
                    raise TensorReadError(f"zip member {m.name}: CRC mismatch (corrupt data)")
                view[:] = whole[start:need]
            else:
                self._pread_into(base + start, view)
            return
        data = self._inflate(m, base)
        if zlib.crc32(data) != m.crc:
            raise TensorReadError(f"zip member {m.name}: CRC mismatch (corrupt data)")
        view[:] = memoryview(data)[start:need]


def _zip64_extra(extra: bytes, usize: int, csize: int, offset: int) -> tuple[int, int, int]:
    at = 0
    while at + 4 <= len(extra):
        tag, ln = struct.unpack_from("<HH", extra, at)
        body = extra[at + 4: at + 4 + ln]
        if tag == 1:
            vals = [int.from_bytes(body[i:i + 8], "little") for i in range(0, len(body) - 7, 8)]
            it = iter(vals)
            try:
                if usize == 0xFFFFFFFF:
                    usize = next(it)
                if csize == 0xFFFFFFFF:
                    csize = next(it)
                if offset == 0xFFFFFFFF:
                    offset = next(it)
            except StopIteration:
                raise TensorReadError("zip64 extra field too short (corrupt zip)") from None
            return usize, csize, offset
        at += 4 + ln
    raise TensorReadError("zip64 sizes without a zip64 extra field (corrupt zip)")


