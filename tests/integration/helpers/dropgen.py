#!/usr/bin/env python3
"""dropgen.py - packets a sandbox's firewall should drop, for t_drops.sh.
Each attempt prints KEY=VALUE lines and never raises: the test judges
what the counters, the audit log and the other side saw, not what the
sender was told.  Python standard library; every wait is bounded.

usage: dropgen.py ATTEMPT ARGS...

  udp ADDR PORT [COUNT [TAG]]
        COUNT (default 1, at most 100000) UDP datagrams of TAG to
        ADDR:PORT, in a loop; sent=N and errors=N, first=ERRNO of the
        first refusal
  ping ADDR
        one ICMP or ICMPv6 echo request (a raw socket: CAP_NET_RAW, else
        a ping socket if ping_group_range allows it); result=...
  raw PROTO ADDR
        one IPv4 packet of IP protocol PROTO (a number: 132 sctp, 47
        gre) with a short payload, through a raw socket; result=...
  tcp ADDR PORT
        a TCP connection; result=ok|ECONNREFUSED|..., ms=how long it took
"""
import errno
import socket
import struct
import sys
import time

TIMEOUT = 3
COUNT_MAX = 100000


def ename(e):
    return errno.errorcode.get(getattr(e, "errno", None) or 0,
                               type(e).__name__)


def family(addr):
    return socket.AF_INET6 if ":" in addr else socket.AF_INET


def udp(addr, port, count=1, tag="drop"):
    n = min(int(count), COUNT_MAX)
    s = socket.socket(family(addr), socket.SOCK_DGRAM)
    sent = errors = 0
    first = ""
    for _ in range(n):
        try:
            s.sendto(tag.encode(), (addr, int(port)))
            sent += 1
        except OSError as e:
            errors += 1
            first = first or ename(e)
    print("sent=%d" % sent)
    print("errors=%d" % errors)
    print("first=%s" % (first or "none"))


def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff


def ping(addr):
    v6 = family(addr) == socket.AF_INET6
    proto = socket.IPPROTO_ICMPV6 if v6 else socket.IPPROTO_ICMP
    msg = struct.pack("!BBHHH", 128 if v6 else 8, 0, 0, 0x6d6f, 1)
    msg += b"moat-drops"
    if not v6:
        msg = msg[:2] + struct.pack("!H", csum(msg)) + msg[4:]
    for kind in (socket.SOCK_RAW, socket.SOCK_DGRAM):
        try:
            s = socket.socket(family(addr), kind, proto)
        except OSError as e:
            err = e
            continue
        try:
            s.sendto(msg, (addr, 0))
            print("result=ok")
        except OSError as e:
            print("result=%s" % ename(e))
        print("socket=%s" % ("raw" if kind == socket.SOCK_RAW else "ping"))
        return
    print("result=%s" % ename(err))
    print("socket=none")


def raw(proto, addr):
    try:
        s = socket.socket(socket.AF_INET, socket.SOCK_RAW, int(proto))
        s.sendto(b"\x13\x88\x0b\x59moat-drops!!", (addr, 0))
        print("result=ok")
    except OSError as e:
        print("result=%s" % ename(e))


def tcp(addr, port):
    s = socket.socket(family(addr), socket.SOCK_STREAM)
    s.settimeout(TIMEOUT)
    t0 = time.monotonic()
    try:
        s.connect((addr, int(port)))
        print("result=ok")
    except OSError as e:
        print("result=%s" % ename(e))
    print("ms=%d" % ((time.monotonic() - t0) * 1000))


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    fn = {"udp": udp, "ping": ping, "raw": raw, "tcp": tcp}.get(sys.argv[1])
    if fn is None:
        sys.exit(__doc__)
    fn(*sys.argv[2:])


if __name__ == "__main__":
    main()
