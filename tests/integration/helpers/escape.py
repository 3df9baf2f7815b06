#!/usr/bin/env python3
"""escape.py - attempts to get a datagram out of an attached namespace
around moat's inet table, for t_escape.sh.  Each prints one KEY=VALUE line
(result=ok|<errno name>) and never raises; the test judges what reached
the other side, not what the sender was told.  Python standard library.

usage: escape.py ATTEMPT ARGS...

  frame IFNAME DSTMAC SRCIP DSTIP PORT TAG
        a hand-built Ethernet/IPv4/UDP frame through an AF_PACKET socket
        on IFNAME (needs CAP_NET_RAW, not CAP_NET_ADMIN)
  bound IFNAME DSTIP PORT TAG
        a UDP datagram from a socket bound to IFNAME (SO_BINDTODEVICE)
  pktinfo IFNAME DSTIP PORT TAG
        a UDP datagram whose output interface is chosen per message
        (IP_PKTINFO / IPV6_PKTINFO ancillary data)
  tcpbound IFNAME DSTIP PORT TAG
        a TCP connection from a socket bound to IFNAME, TAG sent on it
  rawip IFNAME SRCIP DSTIP PORT TAG
        a hand-built IPv4/UDP packet through a raw socket (IP_HDRINCL,
        needs CAP_NET_RAW) bound to IFNAME
"""
import errno
import os
import socket
import struct
import sys

TIMEOUT = 3


def out(val):
    print("result=%s" % val)


def ename(e):
    return errno.errorcode.get(getattr(e, "errno", None) or 0,
                               type(e).__name__)


def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff


def ipudp(src, dst, port, tag):
    payload = tag.encode()
    udp = struct.pack("!HHHH", 40000, int(port), 8 + len(payload), 0)
    udp += payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 1, 0, 64,
                     socket.IPPROTO_UDP, 0, socket.inet_aton(src),
                     socket.inet_aton(dst))
    ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
    return ip + udp


def frame(ifname, dstmac, src, dst, port, tag):
    mac = bytes.fromhex(dstmac.replace(":", ""))
    with open("/sys/class/net/%s/address" % ifname) as f:
        own = bytes.fromhex(f.read().strip().replace(":", ""))
    eth = mac + own + struct.pack("!H", 0x0800)
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((ifname, 0))
    s.send(eth + ipudp(src, dst, port, tag))


def rawip(ifname, src, dst, port, tag):
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, ifname.encode())
    s.sendto(ipudp(src, dst, port, tag), (dst, 0))


def family(dst):
    return socket.AF_INET6 if ":" in dst else socket.AF_INET


def bound(ifname, dst, port, tag):
    s = socket.socket(family(dst), socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, ifname.encode())
    s.sendto(tag.encode(), (dst, int(port)))


def pktinfo(ifname, dst, port, tag):
    idx = socket.if_nametoindex(ifname)
    fam = family(dst)
    s = socket.socket(fam, socket.SOCK_DGRAM)
    if fam == socket.AF_INET:
        anc = (socket.IPPROTO_IP, socket.IP_PKTINFO,
               struct.pack("@i4s4s", idx, bytes(4), bytes(4)))
    else:
        anc = (socket.IPPROTO_IPV6, socket.IPV6_PKTINFO,
               bytes(16) + struct.pack("@I", idx))
    s.sendmsg([tag.encode()], [anc], 0, (dst, int(port)))


def tcpbound(ifname, dst, port, tag):
    s = socket.socket(family(dst), socket.SOCK_STREAM)
    s.settimeout(TIMEOUT)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, ifname.encode())
    s.connect((dst, int(port)))
    s.sendall(tag.encode() + b"\r\n\r\n")


def main():
    fns = {"frame": frame, "bound": bound, "pktinfo": pktinfo,
           "tcpbound": tcpbound, "rawip": rawip}
    if len(sys.argv) < 2 or sys.argv[1] not in fns:
        sys.stderr.write(__doc__)
        return 2
    try:
        fns[sys.argv[1]](*sys.argv[2:])
        out("ok")
    except Exception as e:  # noqa: BLE001 - any failure is a result
        out(ename(e))
    return 0


if __name__ == "__main__":
    sys.exit(main())
