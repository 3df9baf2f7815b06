#!/usr/bin/env python3
"""dnsq.py - one DNS query over UDP or TCP, answers printed one a line.

  dnsq.py [--tcp] SERVER[:PORT] NAME [A|AAAA]

Prints "rcode=NAME" then "A 203.0.113.10 ttl=1" lines.  Exit 0 when an
answer came back (whatever its rcode), 1 on timeout or a malformed answer.
It is a check of the test world's DNS server (dns.py), not of moatd.
Python standard library only.
"""

import ipaddress
import os
import socket
import struct
import sys

TIMEOUT_S = 2
RCODES = {0: "NOERROR", 1: "FORMERR", 2: "SERVFAIL", 3: "NXDOMAIN",
          4: "NOTIMP", 5: "REFUSED"}


def skip_name(msg, pos):
    while True:
        n = msg[pos]
        if n == 0:
            return pos + 1
        if n & 0xc0 == 0xc0:
            return pos + 2
        pos += 1 + n


def main():
    args = sys.argv[1:]
    tcp = False
    if args and args[0] == "--tcp":
        tcp, args = True, args[1:]
    if len(args) not in (2, 3):
        sys.exit(__doc__)
    server, name = args[0], args[1]
    qtype = {"A": 1, "AAAA": 28}[args[2] if len(args) == 3 else "A"]
    if server.startswith("["):
        host, _, port = server[1:].partition("]")
        port = int(port[1:]) if port else 53
        fam = socket.AF_INET6
    elif server.count(":") > 1:
        host, port, fam = server, 53, socket.AF_INET6
    else:
        host, _, port = server.partition(":")
        port = int(port) if port else 53
        fam = socket.AF_INET
    qid = struct.unpack("!H", os.urandom(2))[0]
    q = struct.pack("!HHHHHH", qid, 0x0100, 1, 0, 0, 0)
    for label in name.rstrip(".").split("."):
        q += bytes([len(label)]) + label.encode()
    q += b"\0" + struct.pack("!HH", qtype, 1)
    try:
        if tcp:
            s = socket.socket(fam, socket.SOCK_STREAM)
            s.settimeout(TIMEOUT_S)
            s.connect((host, port))
            s.sendall(struct.pack("!H", len(q)) + q)
            hdr = s.recv(2, socket.MSG_WAITALL)
            n = struct.unpack("!H", hdr)[0]
            msg = s.recv(n, socket.MSG_WAITALL)
        else:
            s = socket.socket(fam, socket.SOCK_DGRAM)
            s.settimeout(TIMEOUT_S)
            s.sendto(q, (host, port))
            msg, _ = s.recvfrom(4096)
    except (OSError, struct.error) as e:
        print("error=%s" % e)
        sys.exit(1)
    rid, flags, qd, an = struct.unpack("!HHHH", msg[:8])
    if rid != qid or not flags & 0x8000:
        print("error=bad answer header")
        sys.exit(1)
    print("rcode=%s" % RCODES.get(flags & 0xf, str(flags & 0xf)))
    pos = 12
    for _ in range(qd):
        pos = skip_name(msg, pos) + 4
    for _ in range(an):
        pos = skip_name(msg, pos)
        t, c, ttl, ln = struct.unpack("!HHIH", msg[pos:pos + 10])
        data = msg[pos + 10:pos + 10 + ln]
        pos += 10 + ln
        if t == 1:
            print("A %s ttl=%d" % (ipaddress.IPv4Address(data), ttl))
        elif t == 28:
            print("AAAA %s ttl=%d" % (ipaddress.IPv6Address(data), ttl))


if __name__ == "__main__":
    main()
