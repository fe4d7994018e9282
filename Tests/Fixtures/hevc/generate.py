#!/usr/bin/env python3
"""Makes the small HEVC-in-HEIF fixtures of HEVCDecoderTests (run by hand; the output is committed).

Each fixture is one still HEVC picture of four flat patches with known Y, Cb and Cr values (the
PATCHES table, mirrored in Tests/ImageCodecsTests/HEVCFixtures.swift), encoded by Debian 12's
`ffmpeg` with libx265 3.5 (`Scripts/install-deps` installs both as test dependencies) from raw
planes this script writes, then wrapped in a minimal HEIF file: ftyp, meta (hdlr, pitm, iinf,
iloc, iprp with hvcC, ispe and pixi) and mdat. The hvcC record holds the VPS/SPS/PPS; the item
holds the remaining NAL units, each preceded by a 4-byte length, as HEIF stores them.

Usage: Tests/Fixtures/hevc/generate.py [output directory, default: beside this script]
"""
import os
import struct
import subprocess
import sys

# 8-bit patch values (Y, Cb, Cr): top-left, top-right, bottom-left, bottom-right.
PATCHES_8 = [(60, 100, 200), (200, 60, 120), (120, 180, 70), (235, 128, 128)]
# 10-bit values chosen so that rounding to 8 bits differs from truncating (243/4 = 60.75 → 61).
PATCHES_10 = [(243, 403, 801), (801, 241, 479), (479, 721, 279), (940, 512, 512)]

# name, width, height, ffmpeg pixel format, chroma (horizontal, vertical) subsampling or None,
# bit depth, x265 parameters for the VUI.
FIXTURES = [
    ("hevc-420-8bit-full.heic", 64, 64, "yuv420p", (2, 2), 8,
     "range=full:colorprim=smpte432:transfer=iec61966-2-1:colormatrix=smpte170m"),
    ("hevc-420-10bit.heic", 64, 48, "yuv420p10le", (2, 2), 10,
     "range=limited:colorprim=bt2020:transfer=bt709:colormatrix=bt2020nc:chromaloc=2"),
    ("hevc-422-10bit.heic", 64, 64, "yuv422p10le", (2, 1), 10,
     "range=limited:colorprim=bt709:transfer=bt709:colormatrix=bt709"),
    ("hevc-444-8bit-odd.heic", 33, 17, "yuv444p", (1, 1), 8,
     "range=limited:colorprim=bt709:transfer=bt709:colormatrix=bt709"),
    ("hevc-400-8bit-odd.heic", 29, 35, "gray", None, 8, "range=full"),
    ("hevc-420-8bit-30x18.heic", 30, 18, "yuv420p", (2, 2), 8, ""),
    # RGB coded as 4:4:4 with the identity matrix: planes G, B, R carry the Y, Cb, Cr values.
    ("hevc-444-8bit-gbr.heic", 32, 32, "gbrp", (1, 1), 8, "range=full:colormatrix=gbr"),
    # Item 1: an IDR picture; item 2: a P picture that predicts from it (not a valid HEIF
    # image on its own: the decoder must refuse it without its reference).
    ("hevc-420-8bit-inter.heic", 64, 64, "yuv420p", (2, 2), 8, "", 2),
]


def patch_index(x, y, width, height, sub):
    # Patch edges on even sample positions, so every chroma sample lies inside one patch.
    half_w = (width // 2) & ~1 if sub else width // 2
    half_h = (height // 2) & ~1 if sub else height // 2
    return (1 if x >= half_w else 0) + (2 if y >= half_h else 0)


def raw_planes(width, height, sub, depth, shift=0):
    patches = PATCHES_8 if depth == 8 else PATCHES_10
    patches = patches[shift:] + patches[:shift]
    pack = (lambda v: bytes([v])) if depth == 8 else (lambda v: struct.pack("<H", v))
    out = bytearray()
    for y in range(height):
        for x in range(width):
            out += pack(patches[patch_index(x, y, width, height, sub)][0])
    if sub:
        cw, ch = -(-width // sub[0]), -(-height // sub[1])
        for component in (1, 2):
            for y in range(ch):
                for x in range(cw):
                    p = patches[patch_index(x * sub[0], y * sub[1], width, height, sub)]
                    out += pack(p[component])
    return bytes(out)


def encode(width, height, pix_fmt, raw, vui, frames=1):
    params = "log-level=error:info=0:keyint=1:qp=4:aud=0:repeat-headers=1"
    if frames > 1:
        params = params.replace("keyint=1", f"keyint={frames}:bframes=0:scenecut=0")
    if vui:
        params += ":" + vui
    return subprocess.run(
        ["ffmpeg", "-hide_banner", "-loglevel", "error", "-f", "rawvideo", "-pix_fmt", pix_fmt,
         "-s", f"{width}x{height}", "-i", "pipe:", "-frames:v", str(frames), "-c:v", "libx265",
         "-pix_fmt", pix_fmt, "-x265-params", params, "-f", "hevc", "pipe:"],
        input=raw, stdout=subprocess.PIPE, check=True).stdout


def nal_units(annexb):
    """Splits an Annex-B stream at its start codes."""
    starts = []
    i = 0
    while True:
        i = annexb.find(b"\x00\x00\x01", i)
        if i < 0:
            break
        starts.append(i + 3)
        i += 3
    units = []
    for n, s in enumerate(starts):
        end = starts[n + 1] - 3 if n + 1 < len(starts) else len(annexb)
        unit = annexb[s:end]
        while unit.endswith(b"\x00"):  # the zero of the next four-byte start code
            unit = unit[:-1]
        units.append(unit)
    return units


class Bits:
    def __init__(self, data):
        # Emulation prevention bytes (00 00 03) are not part of the syntax.
        rbsp = bytearray()
        zeros = 0
        for b in data:
            if zeros >= 2 and b == 3:
                zeros = 0
                continue
            rbsp.append(b)
            zeros = zeros + 1 if b == 0 else 0
        self.data, self.pos = bytes(rbsp), 0

    def u(self, n):
        v = 0
        for _ in range(n):
            v = (v << 1) | ((self.data[self.pos >> 3] >> (7 - (self.pos & 7))) & 1)
            self.pos += 1
        return v

    def ue(self):
        zeros = 0
        while self.u(1) == 0:
            zeros += 1
        return (1 << zeros) - 1 + self.u(zeros)


def hvcc(vps, sps, pps):
    """An HEVCDecoderConfigurationRecord (ISO/IEC 14496-15 8.3.3) for one VPS, SPS and PPS."""
    b = Bits(sps[2:])
    b.u(4)
    max_sub_layers = b.u(3) + 1
    b.u(1)
    ptl = b.data[b.pos // 8: b.pos // 8 + 12]  # general profile_tier_level: 12 bytes
    b.pos += 96
    assert max_sub_layers == 1, "sub-layers are not written by this generator"
    b.ue()
    chroma = b.ue()
    if chroma == 3:
        b.u(1)
    b.ue(), b.ue()
    if b.u(1):
        b.ue(), b.ue(), b.ue(), b.ue()
    depth_luma, depth_chroma = b.ue(), b.ue()
    record = bytearray([1]) + ptl[:1] + ptl[1:5] + ptl[5:11] + ptl[11:12]
    record += struct.pack(">HBBBBHB", 0xF000, 0xFC, 0xFC | chroma, 0xF8 | depth_luma,
                          0xF8 | depth_chroma, 0, 0x0F)  # one temporal layer, nested, 4-byte lengths
    arrays = [(32, vps), (33, sps), (34, pps)]
    record.append(len(arrays))
    for nal_type, unit in arrays:
        record += struct.pack(">BHH", 0x80 | nal_type, 1, len(unit)) + unit
    return bytes(record), depth_luma, chroma


def box(kind, payload):
    return struct.pack(">I", 8 + len(payload)) + kind + payload


def full_box(kind, version, flags, payload):
    return box(kind, struct.pack(">I", (version << 24) | flags) + payload)


def heif(width, height, record, samples, depth, channels):
    """A HEIF file whose item 1 (primary) holds samples[0]; items 2… hold the rest (same properties)."""
    ftyp = box(b"ftyp", b"heic" + struct.pack(">I", 0) + b"mif1heic")
    hdlr = full_box(b"hdlr", 0, 0, struct.pack(">I", 0) + b"pict" + bytes(12) + b"\x00")
    pitm = full_box(b"pitm", 0, 0, struct.pack(">H", 1))
    items = range(1, len(samples) + 1)
    infes = b"".join(full_box(b"infe", 2, 0, struct.pack(">HH", i, 0) + b"hvc1" + b"\x00") for i in items)
    iinf = full_box(b"iinf", 0, 0, struct.pack(">H", len(samples)) + infes)
    ipco = box(b"ipco", box(b"hvcC", record)
               + full_box(b"ispe", 0, 0, struct.pack(">II", width, height))
               + full_box(b"pixi", 0, 0, bytes([channels] + [depth] * channels)))
    ipma = full_box(b"ipma", 0, 0, struct.pack(">I", len(samples)) + b"".join(
        struct.pack(">HB", i, 3) + bytes([0x81, 0x02, 0x03]) for i in items))
    iprp = box(b"iprp", ipco + ipma)

    def iloc(offset):
        # version 0, 4-byte offsets and lengths, no base offset: one extent per item.
        entries = b""
        for i, sample in zip(items, samples):
            entries += struct.pack(">HHHII", i, 0, 1, offset, len(sample))
            offset += len(sample)
        return full_box(b"iloc", 0, 0, bytes([0x44, 0x00]) + struct.pack(">H", len(samples)) + entries)

    def meta(offset):
        return full_box(b"meta", 0, 0, hdlr + pitm + iinf + iloc(offset) + iprp)

    offset = len(ftyp) + len(meta(0)) + 8
    return ftyp + meta(offset) + box(b"mdat", b"".join(samples))


def split(stream):
    """The parameter sets by type, and one sample (length-prefixed NAL units) per picture."""
    by_type, samples, pending = {}, [], b""
    for unit in nal_units(stream):
        nal_type = (unit[0] >> 1) & 0x3F
        framed = struct.pack(">I", len(unit)) + unit
        if nal_type in (32, 33, 34):
            by_type.setdefault(nal_type, unit)
        elif nal_type < 32 and unit[2] & 0x80:  # first_slice_segment_in_pic_flag: a new picture
            samples.append(pending + framed)
            pending = b""
        elif nal_type in (35, 39):  # access unit delimiter, prefix SEI: before the next picture
            pending += framed
        else:
            samples[-1] += framed
    return by_type, samples


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    for name, width, height, pix_fmt, sub, depth, vui, *rest in FIXTURES:
        frames = rest[0] if rest else 1
        raw = raw_planes(width, height, sub, depth)
        # Later frames: the same patches, moved by one patch (so a P picture has something to code).
        for frame in range(1, frames):
            raw += raw_planes(width, height, sub, depth, shift=frame)
        by_type, samples = split(encode(width, height, pix_fmt, raw, vui, frames))
        assert len(samples) == frames, (name, len(samples))
        record, coded_depth, chroma = hvcc(by_type[32], by_type[33], by_type[34])
        assert coded_depth + 8 == depth, (name, coded_depth)
        data = heif(width, height, record, samples, depth, 1 if sub is None else 3)
        with open(os.path.join(out_dir, name), "wb") as f:
            f.write(data)
        print(f"{name}: {width}x{height} {pix_fmt}, chroma_format_idc {chroma}, {len(data)} bytes")


if __name__ == "__main__":
    main()
