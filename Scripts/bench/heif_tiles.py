#!/usr/bin/env python3
"""Extracts the HEVC tiles of a HEIF file's primary image, for the bare-decode benchmark.

Independent of attachd's own HEIF reader on purpose: the benchmark compares our decoder with
libavcodec alone, fed the same bytes. Reads ftyp/meta (pitm, iinf, iloc, iref dimg, iprp
ipco/ipma, idat); the primary item is `hvc1` (one picture) or `grid` (tiles in raster order).

Output formats:
  samples  "HVCS", u32 hvcC length, the hvcC record, u32 tile count, then per tile u32 length +
           the sample (length-prefixed NAL units, as HEIF stores them). All integers big-endian.
           Read by Scripts/bench/hevc-bare.c and `attachd bench-hevc`.
  annexb   one Annex-B stream: per tile, the hvcC parameter sets and then the tile's NAL units,
           each after a 00 00 00 01 start code (`ffmpeg -f hevc -i FILE` reads it).

Usage: heif_tiles.py [--format samples|annexb] [--item alpha] IN.heic OUT
       heif_tiles.py --info IN.heic      # item type, grid, tile count and sizes
"""
import argparse
import struct
import sys


ALPHA_URNS = (b"urn:mpeg:mpegB:cicp:systems:auxiliary:alpha", b"urn:mpeg:hevc:2015:auxid:1")


class HEIF:
    def __init__(self, data):
        self.data = data
        self.types, self.locations, self.refs = {}, {}, []
        self.properties, self.assoc, self.idat = [], {}, (0, 0)
        meta = next((b for b in self.boxes(0, len(data)) if b[0] == b"meta"), None)
        if meta is None:
            raise SystemExit("heif_tiles: no meta box")
        for kind, start, end in self.boxes(meta[1] + 4, meta[2]):
            if kind == b"pitm":
                self.primary = self.uint(start + 4, 2 if data[start] == 0 else 4)
            elif kind == b"iinf":
                self.read_iinf(start, end)
            elif kind == b"iloc":
                self.read_iloc(start, end)
            elif kind == b"iref":
                self.read_iref(start, end)
            elif kind == b"iprp":
                self.read_iprp(start, end)
            elif kind == b"idat":
                self.idat = (start, end)

    def uint(self, at, size):
        return int.from_bytes(self.data[at:at + size], "big") if size else 0

    def boxes(self, start, end):
        out = []
        at = start
        while at + 8 <= end:
            size, kind, header = self.uint(at, 4), self.data[at + 4:at + 8], 8
            if size == 1:
                size, header = self.uint(at + 8, 8), 16
            elif size == 0:
                size = end - at
            if size < header or at + size > end:
                raise SystemExit(f"heif_tiles: bad box size at {at}")
            out.append((kind, at + header, at + size))
            at += size
        return out

    def read_iinf(self, start, end):
        count_size = 2 if self.data[start] == 0 else 4
        for kind, s, _ in self.boxes(start + 4 + count_size, end):
            version = self.data[s]
            if kind != b"infe" or version < 2:
                continue
            id_size = 2 if version == 2 else 4
            item = self.uint(s + 4, id_size)
            at = s + 4 + id_size + 2
            self.types[item] = self.data[at:at + 4].decode("latin-1")

    def read_iloc(self, start, end):
        version = self.data[start]
        at = start + 4
        offset_size, length_size = self.data[at] >> 4, self.data[at] & 15
        base_size, index_size = self.data[at + 1] >> 4, (self.data[at + 1] & 15) if version else 0
        at += 2
        id_size = 2 if version < 2 else 4
        count = self.uint(at, id_size)
        at += id_size
        for _ in range(count):
            item = self.uint(at, id_size)
            at += id_size
            method = 0
            if version >= 1:
                method = self.uint(at, 2) & 15
                at += 2
            at += 2
            base = self.uint(at, base_size)
            at += base_size
            extents = []
            for _ in range(self.uint(at, 2)):
                at += 2 + index_size
                offset = self.uint(at, offset_size)
                at += offset_size
                length = self.uint(at, length_size)
                at += length_size
                extents.append((method, base + offset, length))
            self.locations[item] = extents

    def read_iref(self, start, end):
        id_size = 2 if self.data[start] == 0 else 4
        for kind, s, _ in self.boxes(start + 4, end):
            source = self.uint(s, id_size)
            count = self.uint(s + id_size, 2)
            targets = [self.uint(s + id_size + 2 + i * id_size, id_size) for i in range(count)]
            self.refs.append((kind.decode("latin-1"), source, targets))

    def read_iprp(self, start, end):
        for kind, s, e in self.boxes(start, end):
            if kind == b"ipco":
                self.properties = self.boxes(s, e)
            elif kind == b"ipma":
                version, flags = self.data[s], self.uint(s + 1, 3)
                at = s + 4
                count = self.uint(at, 4)
                at += 4
                for _ in range(count):
                    id_size = 2 if version < 1 else 4
                    item = self.uint(at, id_size)
                    at += id_size
                    n = self.data[at]
                    at += 1
                    for _ in range(n):
                        if flags & 1:
                            index = self.uint(at, 2) & 0x7FFF
                            at += 2
                        else:
                            index = self.data[at] & 0x7F
                            at += 1
                        self.assoc.setdefault(item, []).append(index)

    def property(self, item, kind):
        for index in self.assoc.get(item, []):
            if 0 < index <= len(self.properties) and self.properties[index - 1][0] == kind:
                _, s, e = self.properties[index - 1]
                return self.data[s:e]
        return None

    def item_bytes(self, item):
        out = bytearray()
        for method, offset, length in self.locations[item]:
            base = self.idat[0] if method == 1 else 0
            if base + offset + length > len(self.data):
                raise SystemExit(f"heif_tiles: item {item} extends past the end of the file")
            out += self.data[base + offset:base + offset + length]
        return bytes(out)

    def alpha_item(self):
        for kind, source, targets in self.refs:
            if kind == "auxl" and self.primary in targets:
                aux = self.property(source, b"auxC")
                # MPEG-B's alpha URN, or HEVC's (auxid 1 is alpha in ISO/IEC 23008-12).
                if aux and aux[4:].rstrip(b"\0") in ALPHA_URNS:
                    return source
        raise SystemExit("heif_tiles: the primary image has no alpha")

    def tiles(self, item):
        """(hvcC, [samples], (columns, rows)) of an hvc1 or grid item."""
        kind = self.types.get(item)
        if kind == "hvc1":
            return self.property(item, b"hvcC"), [self.item_bytes(item)], (1, 1)
        if kind != "grid":
            raise SystemExit(f"heif_tiles: item {item} is {kind}, not hvc1 or grid")
        descriptor = self.item_bytes(item)
        columns, rows = descriptor[3] + 1, descriptor[2] + 1
        tiles = next(t for k, s, t in self.refs if k == "dimg" and s == item)
        records = {self.property(t, b"hvcC") for t in tiles}
        if len(records) != 1:
            raise SystemExit("heif_tiles: tiles with different hvcC records")
        return records.pop(), [self.item_bytes(t) for t in tiles], (columns, rows)


def nal_units(sample, length_size):
    at = 0
    while at < len(sample):
        length = int.from_bytes(sample[at:at + length_size], "big")
        at += length_size
        yield sample[at:at + length]
        at += length


def parameter_sets(hvcc):
    at = 23
    for _ in range(hvcc[22]):
        count = struct.unpack(">H", hvcc[at + 1:at + 3])[0]
        at += 3
        for _ in range(count):
            length = struct.unpack(">H", hvcc[at:at + 2])[0]
            yield hvcc[at + 2:at + 2 + length]
            at += 2 + length


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--format", choices=["samples", "annexb"], default="samples")
    parser.add_argument("--item", choices=["primary", "alpha"], default="primary")
    parser.add_argument("--info", action="store_true")
    parser.add_argument("input")
    parser.add_argument("output", nargs="?")
    args = parser.parse_args()
    heif = HEIF(open(args.input, "rb").read())
    item = heif.primary if args.item == "primary" else heif.alpha_item()
    hvcc, samples, grid = heif.tiles(item)
    if args.info or not args.output:
        print(f"{args.input}: item {item} {heif.types[item]}, grid {grid[0]}x{grid[1]}, "
              f"{len(samples)} tiles, {sum(map(len, samples))} bytes, hvcC {len(hvcc)} bytes")
        return
    with open(args.output, "wb") as out:
        if args.format == "samples":
            out.write(b"HVCS" + struct.pack(">I", len(hvcc)) + hvcc + struct.pack(">I", len(samples)))
            for sample in samples:
                out.write(struct.pack(">I", len(sample)) + sample)
        else:
            length_size = (hvcc[21] & 3) + 1
            headers = b"".join(b"\x00\x00\x00\x01" + unit for unit in parameter_sets(hvcc))
            for sample in samples:
                out.write(headers)
                for unit in nal_units(sample, length_size):
                    out.write(b"\x00\x00\x00\x01" + unit)


if __name__ == "__main__":
    main()
