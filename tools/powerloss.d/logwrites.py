"""Reads and replays a dm-log-writes log (the kernel's drivers/md/dm-log-writes.c format).

The log device holds, in blocks of `sectorsize` bytes (the data device's logical block size):
  block 0: the super block: u64 magic, u64 version, u64 nr_entries, u32 sectorsize (little endian);
  then one entry after another: a header block (u64 sector, u64 nr_sectors, u64 flags, u64 data_len;
  a mark's text follows the header in the same block), then, for a write, nr_sectors blocks of data.
Sectors and counts are in `sectorsize` units. The target logs a write only once a flush has covered
it, so every write before a FLUSH entry is on stable storage once that flush completes: replaying
the log up to a FLUSH (or FUA) entry gives exactly what a power cut at that moment leaves.
"""
import os
import struct

MAGIC = 0x6a736677736872
FLUSH, FUA, DISCARD, MARK, METADATA = 1, 2, 4, 8, 16
SUPER = struct.Struct("<QQQI")
ENTRY = struct.Struct("<QQQQ")


class Entry:
    __slots__ = ("index", "sector", "count", "flags", "mark", "offset")

    def __init__(self, index, sector, count, flags, mark, offset):
        self.index, self.sector, self.count, self.flags, self.mark, self.offset = index, sector, count, flags, mark, offset

    @property
    def durable_point(self):
        """A FLUSH or FUA entry: once it is replayed, the image is what a power cut leaves then."""
        return bool(self.flags & (FLUSH | FUA))


def entries(log):
    """Yields every entry of the log file object `log` (headers only; the data stays on disk)."""
    log.seek(0)
    magic, version, count, sectorsize = SUPER.unpack(log.read(SUPER.size))
    if magic != MAGIC or version != 1:
        raise ValueError(f"not a dm-log-writes log (magic {magic:#x}, version {version})")
    offset = sectorsize
    for index in range(count):
        log.seek(offset)
        header = log.read(sectorsize)
        if len(header) < sectorsize:
            raise ValueError(f"log ends inside entry {index}")
        sector, nr, flags, data_len = ENTRY.unpack_from(header)
        mark = None
        if flags & MARK:
            mark = header[ENTRY.size:ENTRY.size + data_len].decode(errors="replace")
        yield Entry(index, sector, nr, flags, mark, offset + sectorsize)
        offset += sectorsize
        if not flags & DISCARD:
            offset += nr * sectorsize


def sector_size(log):
    log.seek(0)
    return SUPER.unpack(log.read(SUPER.size))[3]


def apply(entry, log, target, sectorsize, chunk=1 << 20):
    """Writes one entry's effect to the file descriptor `target` (a discard reads back as zeros)."""
    if entry.flags & MARK or entry.count == 0:
        return
    left = entry.count * sectorsize
    at = entry.sector * sectorsize
    log.seek(entry.offset)
    while left:
        n = min(left, chunk)
        data = bytes(n) if entry.flags & DISCARD else log.read(n)
        if len(data) != n:
            raise ValueError(f"log ends inside the data of entry {entry.index}")
        os.pwrite(target, data, at)
        at += n
        left -= n
