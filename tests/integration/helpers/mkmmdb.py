#!/usr/bin/env python3
"""mkmmdb.py - write tiny MaxMind DB (MMDB format v2) files for moat's tests.

Debian ships libmaxminddb and mmdblookup, but no tool to *write* a database,
so this is a small stdlib-only writer, written from the format specification
at https://maxmind.github.io/MaxMind-DB/.  It produces GeoLite2-Country or
GeoLite2-ASN shaped records, which is all moat reads.

    python3 mkmmdb.py --type country OUT.mmdb 198.51.100.0/24=KP 2001:db8::/32=US
    python3 mkmmdb.py --type asn OUT.mmdb 203.0.113.0/24=64500

or from Python:  write_db(path, "country", [("198.51.100.0/24", "KP")])

The database is always ip_version 6.  IPv4 networks are stored at
::a.b.c.d/(96+len), where libmaxminddb looks IPv4 addresses up.  Overlapping
networks are allowed: the most specific one wins (for two identical networks,
the last one given wins).  Output is deterministic; build_epoch comes from
SOURCE_DATE_EPOCH, or a fixed date when that is unset.
"""

import argparse
import ipaddress
import os
import re
import struct
import sys

METADATA_MARKER = b"\xab\xcd\xefMaxMind.com"
DEFAULT_EPOCH = 1577836800  # 2020-01-01T00:00:00Z


class Uint16(int):
    pass


class Uint64(int):
    pass


# ---------------------------------------------------------------- data section
# Plain int is encoded as uint32; wrap in Uint16/Uint64 for the other widths.

def _control(type_num, size):
    """Control byte(s): type in the top 3 bits, size in the low 5 bits."""
    if size < 29:
        lo, ext = size, b""
    elif size < 29 + 256:
        lo, ext = 29, bytes([size - 29])
    elif size < 285 + 65536:
        lo, ext = 30, struct.pack(">H", size - 285)
    else:
        lo, ext = 31, struct.pack(">I", size - 65821)[1:]
    if type_num <= 7:
        return bytes([(type_num << 5) | lo]) + ext
    # Extended type: type field 0, then a byte holding (type - 7).
    return bytes([lo, type_num - 7]) + ext


def _uint(type_num, value, nbytes):
    if not 0 <= value < 1 << (8 * nbytes):
        raise ValueError("%d does not fit in %d bytes" % (value, nbytes))
    raw = value.to_bytes(nbytes, "big").lstrip(b"\0")  # minimal length
    return _control(type_num, len(raw)) + raw


def encode(value):
    if isinstance(value, bool):
        return _control(14, int(value))
    if isinstance(value, Uint16):
        return _uint(5, value, 2)
    if isinstance(value, Uint64):
        return _uint(9, value, 8)
    if isinstance(value, int):
        return _uint(6, value, 4)
    if isinstance(value, str):
        raw = value.encode("utf-8")
        return _control(2, len(raw)) + raw
    if isinstance(value, dict):
        out = _control(7, len(value))
        for key, val in value.items():
            out += encode(str(key)) + encode(val)
        return out
    if isinstance(value, (list, tuple)):
        return _control(11, len(value)) + b"".join(encode(v) for v in value)
    raise TypeError("cannot encode %r" % (value,))


# ---------------------------------------------------------------- search tree

class Node:
    def __init__(self, left=None, right=None):
        self.child = [left, right]  # None = no data, Node, or Leaf


class Leaf:
    def __init__(self, data):
        self.data = data


def _bits(cidr):
    """Return (128-bit integer, prefix length) in the IPv6 tree for a CIDR."""
    net = ipaddress.ip_network(cidr.strip())
    if net.version == 4:
        return int(net.network_address), 96 + net.prefixlen
    return int(net.network_address), net.prefixlen


def build_tree(entries):
    """entries: list of (cidr, data).  Shorter prefixes are inserted first,
    so a longer prefix always splits the leaf of a shorter one below it."""
    nets = [_bits(c) + (d,) for c, d in entries]
    nets.sort(key=lambda n: n[1])  # stable: equal prefixes keep their order
    root = Node()
    for addr, plen, data in nets:
        if plen == 0:
            root.child = [Leaf(data), Leaf(data)]
            continue
        node = root
        for depth in range(plen - 1):
            bit = (addr >> (127 - depth)) & 1
            nxt = node.child[bit]
            if not isinstance(nxt, Node):  # empty or covering leaf: split it
                nxt = node.child[bit] = Node(nxt, nxt)
            node = nxt
        bit = (addr >> (128 - plen)) & 1
        assert not isinstance(node.child[bit], Node), "unsorted insert"
        node.child[bit] = Leaf(data)
    return root


def _number_nodes(root):
    order = [root]  # breadth-first; the root must be node 0
    for node in order:
        order.extend(c for c in node.child if isinstance(c, Node))
    return order


def _pack_node(left, right, record_size):
    if record_size == 24:
        return struct.pack(">I", left)[1:] + struct.pack(">I", right)[1:]
    if record_size == 28:
        middle = ((left >> 24) << 4) | (right >> 24)
        return (struct.pack(">I", left & 0xFFFFFF)[1:] + bytes([middle]) +
                struct.pack(">I", right & 0xFFFFFF)[1:])
    return struct.pack(">II", left, right)


def serialize(root, db_type, epoch=None, record_size=None):
    nodes = _number_nodes(root)
    index = {id(n): i for i, n in enumerate(nodes)}
    node_count = len(nodes)

    data, offsets = b"", {}  # identical records are stored once
    for node in nodes:
        for c in node.child:
            if isinstance(c, Leaf):
                blob = encode(c.data)
                if blob not in offsets:
                    offsets[blob] = len(data)
                    data += blob
                c.offset = offsets[blob]

    def record(c):
        if c is None:
            return node_count
        if isinstance(c, Node):
            return index[id(c)]
        return node_count + 16 + c.offset

    biggest = node_count + 16 + len(data)
    if record_size is None:  # smallest record size that fits
        record_size = next((s for s in (24, 28, 32) if biggest < 1 << s), 32)
    if record_size not in (24, 28, 32) or biggest >= 1 << record_size:
        raise ValueError("database too large for %d-bit records" % record_size)
    tree = b"".join(_pack_node(record(n.child[0]), record(n.child[1]),
                               record_size) for n in nodes)

    if epoch is None:
        epoch = int(os.environ.get("SOURCE_DATE_EPOCH", DEFAULT_EPOCH))
    metadata = {
        "node_count": node_count,
        "record_size": Uint16(record_size),
        "ip_version": Uint16(6),
        "database_type": db_type,
        "languages": ["en"],
        "binary_format_major_version": Uint16(2),
        "binary_format_minor_version": Uint16(0),
        "build_epoch": Uint64(epoch),
        "description": {"en": "moat test database"},
    }
    return tree + b"\0" * 16 + data + METADATA_MARKER + encode(metadata)


# ---------------------------------------------------------------- record shapes

def country_record(code):
    if not re.fullmatch(r"[A-Za-z]{2}", code):
        raise ValueError("not an ISO 3166-1 alpha-2 code: %r" % code)
    code = code.upper()
    return {"country": {"iso_code": code, "names": {"en": code}},
            "registered_country": {"iso_code": code}}


def asn_record(asn):
    if not re.fullmatch(r"[0-9]+", str(asn)) or int(asn) >= 1 << 32:
        raise ValueError("not an AS number (0..4294967295): %r" % (asn,))
    asn = int(asn)
    return {"autonomous_system_number": asn,
            "autonomous_system_organization": "AS%d test" % asn}


TYPES = {"country": (country_record, "moat-test-Country"),
         "asn": (asn_record, "moat-test-ASN")}


def write_db(path, db_type, entries):
    """Write an MMDB file.  db_type is "country" or "asn"; entries is a
    list of (cidr_string, value) with an alpha-2 code or an AS number."""
    make, type_name = TYPES[db_type]
    root = build_tree([(cidr, make(value)) for cidr, value in entries])
    blob = serialize(root, type_name)
    with open(path, "wb") as f:
        f.write(blob)


def main(argv=None):
    ap = argparse.ArgumentParser(description="Write a tiny MaxMind DB file.")
    ap.add_argument("--type", required=True, choices=sorted(TYPES))
    ap.add_argument("out", help="output .mmdb path")
    ap.add_argument("entries", nargs="*", metavar="CIDR=VALUE")
    args = ap.parse_args(argv)
    entries = []
    for item in args.entries:
        cidr, sep, value = item.partition("=")
        if not sep or not value:
            ap.error("expected CIDR=VALUE, got %r" % item)
        entries.append((cidr, value))
    try:
        write_db(args.out, args.type, entries)
    except ValueError as e:
        ap.error(str(e))
    return 0


if __name__ == "__main__":
    sys.exit(main())
