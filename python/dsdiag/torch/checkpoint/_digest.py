"""The content digest of a checkpoint file: the `h` of a `ckpt` record, which
checkpoint-mismatch compares across ranks (ranks that loaded different content loaded
different checkpoints, whatever the paths say).

torch.save's zip format (the default since torch 1.6) names every entry after the file
(`ckpt-1/data.pkl`, `ckpt-1/data/0`, ...), so the same state saved as ckpt-0.pt and as
ckpt-1.pt differs in its bytes. For a zip the digest is therefore taken over its central
directory: each entry's name without that first component, its size and the CRC-32 that
torch computed while writing it — the whole content, for the cost of reading the directory.

Otherwise (the legacy format, or a zip whose CRCs were switched off: torch >= 2.5's
set_crc32_options(False)) the file's bytes are hashed by the C++ core (xxHash3, GIL
released) in 8 MiB chunks, read back once per save or load (from the page cache, just after
torch wrote or read them); the digest is the hash of the size and the chunks' hashes. Up to
256 MiB the whole file is hashed; beyond, the cost is bounded: the first and last 32 MiB and
64 pieces of 1 MiB evenly spaced between them (128 MiB read, whatever the size). Two such
big files that differ only outside those pieces look alike — checkpoints of different steps
differ in every weight, so in every piece.
"""

import array
import ctypes
import os
import zipfile

from dsdiag import _core

CHUNK = 8 << 20
FULL_LIMIT = 256 << 20
EDGE = 32 << 20
PIECES = 64
PIECE = 1 << 20


def file_digest(path):
    """(size in bytes, 64-bit digest) of the checkpoint file at `path`. Raises OSError when
    it cannot be read (the caller's guard turns that into "no record")."""
    size = os.path.getsize(path)
    digest = zip_digest(path)
    return size, digest if digest is not None else bytes_digest(path, size)


def zip_digest(path):
    """The digest of a zip's entries (name past its first component, size, CRC-32), or None
    when the file is no zip or its CRCs are not there."""
    if not zipfile.is_zipfile(path):
        return None
    try:
        with zipfile.ZipFile(path) as archive:
            entries = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError):
        return None
    lines = []
    for e in entries:
        if e.CRC == 0 and e.file_size > 0:  # written without CRCs
            return None
        name = e.filename.split("/", 1)[-1]
        lines.append("%s\0%d\0%08x\n" % (name, e.file_size, e.CRC))
    return _hash_bytes(bytearray("".join(lines).encode("utf-8", "surrogateescape")))


def bytes_digest(path, size):
    """The digest of the file's bytes (sampled past FULL_LIMIT)."""
    ranges = spans(size)
    hashes = array.array("Q", [size])
    # A small file needs a small buffer (zeroing 8 MiB costs more than hashing 20 KB).
    chunk = max(1, min(CHUNK, max(length for _, length in ranges)))
    buffer = bytearray(chunk)
    view = memoryview(buffer)
    address = _address(buffer)
    with open(path, "rb") as f:
        for start, length in ranges:
            f.seek(start)
            while length > 0:
                n = f.readinto(view[:min(chunk, length)])
                if not n:
                    break
                hashes.append(_core.fingerprint(address, n))
                length -= n
    start, count = hashes.buffer_info()
    return _core.fingerprint(start, count * hashes.itemsize)


def spans(size):
    """The (offset, length) ranges hashed for a file of `size` bytes."""
    if size <= FULL_LIMIT:
        return [(0, size)]
    middle = size - 2 * EDGE
    step = middle // PIECES
    pieces = [(EDGE + i * step + (step - PIECE) // 2, PIECE) for i in range(PIECES)]
    return [(0, EDGE)] + pieces + [(size - EDGE, EDGE)]


def _address(buffer):
    """The core hashes memory in place: a bytearray's address, through ctypes."""
    return ctypes.addressof((ctypes.c_char * len(buffer)).from_buffer(buffer)) if buffer else 0


def _hash_bytes(buffer):
    return _core.fingerprint(_address(buffer), len(buffer))
