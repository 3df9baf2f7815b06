#!/usr/bin/env python3
"""dnsprobe.py - DNS queries against moatd's DNS listener, for the tests.

  dnsprobe.py [--tcp] SERVER[:PORT] NAME TYPE      one query; prints
      rcode=NAME tc=0|1 then one "TYPE DATA ttl=N" line per answer record
  dnsprobe.py --raw HEX SERVER[:PORT]               sends the bytes as given
      (a malformed query); prints rcode=... of the answer, or "none"
  dnsprobe.py --flood N SERVER[:PORT] NAME          sends N A queries as fast
      as possible over UDP, then counts answers by rcode for 2 s; prints
      sent=N NOERROR=.. REFUSED=.. ...

TYPE is A, AAAA, MX, TXT, HTTPS, ANY or a number.  Exit 0 when an answer
came back (whatever its rcode), 1 on timeout.  Python standard library only.
"""

import ipaddress
import os
import socket
import struct
import sys
import time

RCODES = {0: "NOERROR", 1: "FORMERR", 2: "SERVFAIL", 3: "NXDOMAIN",
          4: "NOTIMP", 5: "REFUSED"}
TYPES = {"A": 1, "NS": 2, "CNAME": 5, "MX": 15, "TXT": 16, "AAAA": 28,
         "HTTPS": 65, "ANY": 255, "AXFR": 252}
TIMEOUT_S = 3


def server_addr(text):
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        return socket.AF_INET6, host, int(rest[1:] or 53)
    host, _, port = text.partition(":")
    return socket.AF_INET, host, int(port or 53)


def query(name, qtype, qid):
    q = struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0)
    for label in name.split("."):
        q += bytes([len(label)]) + label.encode()
    return q + b"\0" + struct.pack(">HH", qtype, 1)


def skip_name(msg, pos):
    while True:
        n = msg[pos]
        if n == 0:
            return pos + 1
        if n & 0xc0 == 0xc0:
            return pos + 2
        pos += 1 + n


def decode(msg):
    qid, flags, qd, an, ns, ar = struct.unpack(">HHHHHH", msg[:12])
    out = ["rcode=%s" % RCODES.get(flags & 0xf, flags & 0xf),
           "tc=%d" % (1 if flags & 0x200 else 0)]
    pos = 12
    for _ in range(qd):
        pos = skip_name(msg, pos) + 4
    for _ in range(an):
        pos = skip_name(msg, pos)
        rtype, _, ttl, rdlen = struct.unpack(">HHIH", msg[pos:pos + 10])
        pos += 10
        data = msg[pos:pos + rdlen]
        pos += rdlen
        if rtype == 1:
            out.append("A %s ttl=%d" % (ipaddress.IPv4Address(data), ttl))
        elif rtype == 28:
            out.append("AAAA %s ttl=%d" % (ipaddress.IPv6Address(data), ttl))
        else:
            out.append("TYPE%d %s ttl=%d" % (rtype, data.hex(), ttl))
    return qid, out


def ask(server, payload, tcp):
    fam, host, port = server_addr(server)
    s = socket.socket(fam, socket.SOCK_STREAM if tcp else socket.SOCK_DGRAM)
    s.settimeout(TIMEOUT_S)
    try:
        if tcp:
            s.connect((host, port))
            s.sendall(struct.pack(">H", len(payload)) + payload)
            hdr = b""
            while len(hdr) < 2:
                b = s.recv(2 - len(hdr))
                if not b:
                    return None
                hdr += b
            n = struct.unpack(">H", hdr)[0]
            msg = b""
            while len(msg) < n:
                b = s.recv(n - len(msg))
                if not b:
                    return None
                msg += b
            return msg
        s.sendto(payload, (host, port))
        return s.recv(65535)
    except OSError:
        return None
    finally:
        s.close()


def flood(n, server, name):
    """Sends n queries in chunks of 50 within about a second, reading the
    answers as they come, so neither side's socket buffer drops them."""
    fam, host, port = server_addr(server)
    s = socket.socket(fam, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    s.setblocking(False)
    counts = {}

    def drain():
        while True:
            try:
                msg = s.recv(65535)
            except OSError:
                return
            rc = RCODES.get(struct.unpack(">H", msg[2:4])[0] & 0xf, "?")
            counts[rc] = counts.get(rc, 0) + 1

    sent = 0
    start = time.time()
    while sent < n and time.time() - start < 3:
        for _ in range(min(50, n - sent)):
            try:
                s.sendto(query(name, 1, sent & 0xffff), (host, port))
                sent += 1
            except BlockingIOError:
                break
        time.sleep(0.01)
        drain()
    end = time.time() + 1
    while time.time() < end:
        time.sleep(0.05)
        drain()
    print("sent=%d %s" % (sent, " ".join("%s=%d" % kv
                                         for kv in sorted(counts.items()))))
    return 0


def main():
    a = sys.argv[1:]
    if a[:1] == ["--flood"]:
        return flood(int(a[1]), a[2], a[3])
    if a[:1] == ["--raw"]:
        msg = ask(a[2], bytes.fromhex(a[1]), False)
        if msg is None or len(msg) < 12:
            print("none")
            return 1
        print("rcode=%s" % RCODES.get(msg[3] & 0xf, msg[3] & 0xf))
        return 0
    tcp = a[:1] == ["--tcp"]
    if tcp:
        a = a[1:]
    server, name, t = a
    qtype = TYPES[t] if t in TYPES else int(t)
    qid = struct.unpack(">H", os.urandom(2))[0]
    msg = ask(server, query(name, qtype, qid), tcp)
    if msg is None:
        print("timeout")
        return 1
    rid, lines = decode(msg)
    if rid != qid:
        print("wrong-id")
        return 1
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
