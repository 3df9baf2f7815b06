#!/usr/bin/env python3
"""socks5.py - a SOCKS5 client (RFC 1928, RFC 1929) for moat's tests.

What it is: a client that says exactly what the test asks, where curl
cannot: a chosen address type (domain, IPv4, IPv6, or an unknown one) with any bytes as the
domain (e.g. "2852039166"), SOCKS5 over a Unix socket, and a report of each
step.  After a successful CONNECT it can send one HTTP/1.1 GET through the
tunnel and report the answer.

Output: KEY=VALUE lines on stdout:
  connected=1|0        the connect to the proxy succeeded
  method=0xNN          the method the proxy chose (0xff: none acceptable)
  auth=0xNN            the RFC 1929 status (0x00 success), if asked
  reply=0xNN           the CONNECT reply code (0x00 succeeded, 0x02 not
                       allowed by ruleset, ...)
  bound=ADDR:PORT      BND.ADDR/BND.PORT of the reply
  http_status=CODE     status of the GET sent through the tunnel
  http_body=...        its first 200 bytes, escaped
  error=...            what went wrong, if anything
  elapsed_ms=N

Python standard library only.
"""

import argparse
import ipaddress
import re
import socket
import struct
import sys
import time


class Short(Exception):
    pass


def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        data = s.recv(n - len(buf))
        if not data:
            raise Short("proxy closed after %d of %d bytes" % (len(buf), n))
        buf += data
    return buf


def read_reply_addr(s):
    atyp = recv_exact(s, 1)[0]
    if atyp == 1:
        host = str(ipaddress.IPv4Address(recv_exact(s, 4)))
    elif atyp == 4:
        host = "[%s]" % ipaddress.IPv6Address(recv_exact(s, 16))
    elif atyp == 3:
        n = recv_exact(s, 1)[0]
        host = recv_exact(s, n).decode("latin-1")
    else:
        raise Short("bad ATYP 0x%02x in reply" % atyp)
    port = struct.unpack("!H", recv_exact(s, 2))[0]
    return "%s:%d" % (host, port)


def run(args, rep):
    if args.unix:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        addr = args.unix
    elif args.tcp.startswith("["):
        host, _, port = args.tcp[1:].partition("]:")
        s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        addr = (host, int(port))
    else:
        host, _, port = args.tcp.rpartition(":")
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        addr = (host, int(port))
    s.settimeout(args.timeout)
    try:
        s.connect(addr)
        rep["connected"] = 1
        methods = [2] if args.user is not None else [0]
        if args.offer_both:
            methods = [0, 2]
        s.sendall(bytes([5, len(methods)] + methods))
        ver, method = recv_exact(s, 2)
        rep["method"] = "0x%02x" % method
        if ver != 5:
            rep["error"] = "version %d in method reply" % ver
            return
        if method == 0xff:
            return
        if method == 2:
            if args.user is None:
                rep["error"] = "proxy asked for a password we do not have"
                return
            u = args.user.encode()
            p = args.password.encode()
            s.sendall(bytes([1, len(u)]) + u + bytes([len(p)]) + p)
            _, status = recv_exact(s, 2)
            rep["auth"] = "0x%02x" % status
            if status != 0:
                return
        if args.atyp == "ipv4":
            a = bytes([1]) + ipaddress.IPv4Address(args.dst).packed
        elif args.atyp == "ipv6":
            a = bytes([4]) + ipaddress.IPv6Address(args.dst).packed
        elif args.atyp == "unknown":
            # ATYP 0x02 is no address type RFC 1928 knows.
            a = bytes([2]) + ipaddress.IPv4Address(args.dst).packed
        else:
            d = args.dst.encode("latin-1")
            a = bytes([3, len(d)]) + d
        s.sendall(bytes([5, args.cmd, 0]) + a + struct.pack("!H", args.port))
        ver, reply, _ = recv_exact(s, 3)
        rep["reply"] = "0x%02x" % reply
        rep["bound"] = read_reply_addr(s)
        if reply != 0 or args.http_get is None:
            return
        req = ("GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n"
               % (args.http_get, args.http_host or args.dst)).encode()
        s.sendall(req)
        data = b""
        while len(data) < 1 << 20:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        m = re.match(rb"HTTP/\d\.\d (\d{3})", data)
        rep["http_status"] = m.group(1).decode() if m else ""
        body = data.partition(b"\r\n\r\n")[2]
        rep["http_body"] = body[:200].decode("latin-1").encode(
            "unicode_escape").decode("ascii")
    finally:
        s.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--tcp", help="proxy HOST:PORT or [V6]:PORT")
    g.add_argument("--unix", help="proxy Unix socket path")
    ap.add_argument("--atyp", choices=("domain", "ipv4", "ipv6", "unknown"),
                    default="domain")
    ap.add_argument("--dst", required=True, help="destination host")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--cmd", type=int, default=1,
                    help="command: 1 CONNECT (default), 2 BIND, 3 UDP")
    ap.add_argument("--user")
    ap.add_argument("--password", default="")
    ap.add_argument("--offer-both", action="store_true",
                    help="offer no-auth and username/password")
    ap.add_argument("--http-get", metavar="PATH",
                    help="after CONNECT, GET this path through the tunnel")
    ap.add_argument("--http-host", help="Host header for --http-get")
    ap.add_argument("--timeout", type=float, default=5.0)
    args = ap.parse_args()
    rep = {"connected": 0}
    t0 = time.monotonic()
    try:
        run(args, rep)
    except (OSError, Short) as e:
        rep["error"] = str(e)
    rep["elapsed_ms"] = int((time.monotonic() - t0) * 1000)
    for k, v in rep.items():
        sys.stdout.write("%s=%s\n" % (k, v))


if __name__ == "__main__":
    main()
