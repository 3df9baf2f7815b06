#!/usr/bin/env python3
"""soakload.py - mixed, bounded load on moatd for a soak run.

Runs --threads threads for --seconds seconds; each thread loops over the
kinds of traffic a sandbox makes: keep-alive forward HTTP requests (allowed
and denied), a CONNECT tunnel with TLS inside, a SOCKS5 tunnel with a plain
HTTP request, a streamed 1 MB body, a request with a body.  It counts what
each kind got (status codes, errors) and writes one JSON object to --out:
{"kind": {"outcome": count}}, plus "requests" (forward requests moatd
answered) for checking audit counts.

Python standard library only.
"""

import argparse
import json
import socket
import ssl
import struct
import threading
import time


def http_exchange(f, s, req):
    s.sendall(req)
    line = f.readline()
    if not line:
        return "closed", b""
    status = line.split()[1].decode()
    length, chunked = 0, False
    while True:
        h = f.readline()
        if h in (b"\r\n", b""):
            break
        k, _, v = h.decode("latin-1").partition(":")
        k = k.strip().lower()
        if k == "content-length":
            length = int(v)
        elif k == "transfer-encoding" and "chunked" in v.lower():
            chunked = True
    body = b""
    if chunked:
        while True:
            n = int(f.readline().split(b";")[0], 16)
            body += f.read(n)
            f.readline()
            if n == 0:
                f.readline()
                break
    else:
        body = f.read(length)
    return status, body


def kind_http(proxy, n):
    s = socket.create_connection(proxy, timeout=15)
    f = s.makefile("rb")
    got = []
    try:
        for i in range(n):
            host = "origin.test" if i % 5 else "denied.test"
            st, _ = http_exchange(f, s, (
                "GET http://%s/soak-%d HTTP/1.1\r\nHost: %s\r\n\r\n" %
                (host, i, host)).encode())
            got.append(st)
            if st == "closed":
                break
            if st == "403":
                # a denial may close a keep-alive connection: start over
                s.close()
                s = socket.create_connection(proxy, timeout=15)
                f = s.makefile("rb")
    finally:
        s.close()
    return got


def kind_body(proxy):
    s = socket.create_connection(proxy, timeout=15)
    f = s.makefile("rb")
    try:
        st, body = http_exchange(f, s, (
            b"GET http://origin.test/bytes/1048576 HTTP/1.1\r\n"
            b"Host: origin.test\r\n\r\n"))
        if st == "200" and len(body) != 1048576:
            st = "short"
        data = b"x" * 65536
        st2, _ = http_exchange(f, s, (
            b"POST http://origin.test/post HTTP/1.1\r\nHost: origin.test\r\n"
            b"Content-Length: %d\r\n\r\n" % len(data)) + data)
    finally:
        s.close()
    return [st, st2]


def kind_connect(proxy):
    s = socket.create_connection(proxy, timeout=15)
    try:
        s.sendall(b"CONNECT origin.test:443 HTTP/1.1\r\nHost: origin.test:443\r\n\r\n")
        head = b""
        while b"\r\n\r\n" not in head:
            d = s.recv(4096)
            if not d:
                return ["closed"]
            head += d
        st = head.split()[1].decode()
        if st != "200":
            return ["connect-" + st]
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        t = ctx.wrap_socket(s, server_hostname="origin.test")
        f = t.makefile("rb")
        st, _ = http_exchange(f, t, b"GET /tls HTTP/1.1\r\nHost: origin.test\r\nConnection: close\r\n\r\n")
        return ["tls-" + st]
    finally:
        s.close()


def kind_socks(socks):
    s = socket.create_connection(socks, timeout=15)
    try:
        s.sendall(b"\x05\x01\x00")
        if s.recv(2) != b"\x05\x00":
            return ["greeting"]
        name = b"origin.test"
        s.sendall(b"\x05\x01\x00\x03" + bytes([len(name)]) + name + struct.pack("!H", 80))
        rep = s.recv(4096)
        if len(rep) < 2 or rep[1] != 0:
            return ["socks-%d" % (rep[1] if len(rep) > 1 else -1)]
        f = s.makefile("rb")
        st, _ = http_exchange(f, s, b"GET /socks HTTP/1.1\r\nHost: origin.test\r\nConnection: close\r\n\r\n")
        return ["socks-" + st]
    finally:
        s.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--proxy", required=True)
    ap.add_argument("--socks", required=True)
    ap.add_argument("--seconds", type=float, required=True)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    if not 0 < args.seconds <= 3600 or not 0 < args.threads <= 32:
        raise SystemExit("soakload: --seconds 1..3600, --threads 1..32")
    hp = lambda a: (a.rpartition(":")[0], int(a.rpartition(":")[2]))
    proxy, socks = hp(args.proxy), hp(args.socks)
    end = time.monotonic() + args.seconds
    counts = {}
    lock = threading.Lock()

    def add(kind, outcomes):
        with lock:
            d = counts.setdefault(kind, {})
            for o in outcomes:
                d[o] = d.get(o, 0) + 1

    def loop():
        i = 0
        while time.monotonic() < end:
            i += 1
            for kind, fn in (("http", lambda: kind_http(proxy, 20)),
                             ("body", lambda: kind_body(proxy)),
                             ("connect", lambda: kind_connect(proxy)),
                             ("socks", lambda: kind_socks(socks))):
                try:
                    add(kind, fn())
                except Exception as e:  # counted, the run goes on
                    add(kind, ["error:" + type(e).__name__])

    ths = [threading.Thread(target=loop) for _ in range(args.threads)]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    with open(args.out, "w") as f:
        json.dump(counts, f, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
