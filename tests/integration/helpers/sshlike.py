#!/usr/bin/env python3
"""sshlike.py - a server-first line server, and a client that tunnels to
it through an HTTP proxy's CONNECT, for moat's protocol tests.

  sshlike.py server --listen ADDR:PORT [--banner TEXT] --log FILE
                    [--ready-fd N] [--lifetime S]
      Accepts connections; sends TEXT + CRLF at once (server-first, as an
      SSH server sends "SSH-2.0-..."); then answers each line it gets
      with "echo: LINE" + CRLF.  Logs JSON lines: accept, data, close.

  sshlike.py client --proxy HOST:PORT --target HOST:PORT
                    [--send TEXT] [--read-first] [--timeout S]
      CONNECT HOST:PORT, then (with --read-first) reads what the server
      says first, sends TEXT (Python escapes allowed), and reads until
      EOF or the deadline.  Prints KEY=VALUE lines: connect_status,
      first (what came before sending, escaped), reply (what came after,
      escaped), eof (1 if the other end closed), error.

Python standard library only.  It connects only where the test says.
"""

import argparse
import json
import os
import select
import socket
import sys
import threading
import time


def esc(b):
    return b.decode("latin-1").encode("unicode_escape").decode("ascii")


def split_hostport(s):
    host, _, port = s.rpartition(":")
    return host.strip("[]"), int(port)


def serve(args):
    host, port = split_hostport(args.listen)
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    ls = socket.socket(fam, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((host, port))
    ls.listen(16)
    lock = threading.Lock()
    logf = open(args.log, "a")

    def log(**kw):
        kw["ts"] = time.time()
        with lock:
            logf.write(json.dumps(kw, sort_keys=True) + "\n")
            logf.flush()

    def handle(s, peer, n):
        log(event="accept", conn=n, peer="%s:%d" % peer[:2])
        try:
            s.settimeout(30)
            if args.banner:
                s.sendall(args.banner.encode() + b"\r\n")
            buf = b""
            while True:
                d = s.recv(4096)
                if not d:
                    break
                log(event="data", conn=n, data=esc(d))
                buf += d
                while b"\n" in buf:
                    line, _, buf = buf.partition(b"\n")
                    s.sendall(b"echo: " + line.rstrip(b"\r") + b"\r\n")
        except OSError:
            pass
        finally:
            log(event="close", conn=n)
            s.close()

    if args.ready_fd is not None:
        os.write(args.ready_fd, b"ready\n")
    deadline = time.monotonic() + args.lifetime
    n = 0
    while time.monotonic() < deadline:
        r, _, _ = select.select([ls], [], [], 0.5)
        if not r:
            continue
        s, peer = ls.accept()
        n += 1
        threading.Thread(target=handle, args=(s, peer, n),
                         daemon=True).start()


def read_until(s, deadline):
    data = b""
    eof = False
    while time.monotonic() < deadline and len(data) < 65536:
        r, _, _ = select.select([s], [], [], max(0, deadline -
                                                 time.monotonic()))
        if not r:
            break
        d = s.recv(4096)
        if not d:
            eof = True
            break
        data += d
    return data, eof


def client(args, rep):
    host, port = split_hostport(args.proxy)
    s = socket.create_connection((host, port), timeout=args.timeout)
    s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" %
               (args.target, args.target)).encode())
    head = b""
    while b"\r\n\r\n" not in head and len(head) < 8192:
        d = s.recv(1)
        if not d:
            break
        head += d
    line = head.split(b"\r\n", 1)[0].split()
    rep["connect_status"] = line[1].decode() if len(line) > 1 else ""
    if rep["connect_status"] != "200":
        return
    if args.read_first:
        # Enough for a banner line; ends early at its CRLF.
        end = time.monotonic() + args.first_wait
        first = b""
        while b"\n" not in first:
            d, eof = read_until(s, min(end, time.monotonic() + 0.2))
            first += d
            if eof or time.monotonic() >= end:
                break
        rep["first"] = esc(first)
    if args.send is not None:
        try:
            s.sendall(args.send.encode().decode("unicode_escape")
                      .encode("latin-1"))
        except OSError as e:
            rep["error"] = str(e)
    data, eof = read_until(s, time.monotonic() + args.timeout)
    rep["reply"] = esc(data)
    rep["eof"] = 1 if eof else 0
    s.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="mode", required=True)
    sv = sub.add_parser("server")
    sv.add_argument("--listen", required=True)
    sv.add_argument("--banner", default="")
    sv.add_argument("--log", required=True)
    sv.add_argument("--ready-fd", type=int)
    sv.add_argument("--lifetime", type=float, default=150)
    cl = sub.add_parser("client")
    cl.add_argument("--proxy", required=True)
    cl.add_argument("--target", required=True)
    cl.add_argument("--send")
    cl.add_argument("--read-first", action="store_true")
    cl.add_argument("--first-wait", type=float, default=3.0)
    cl.add_argument("--timeout", type=float, default=3.0)
    args = ap.parse_args()
    if args.mode == "server":
        serve(args)
        return
    rep = {}
    try:
        client(args, rep)
    except OSError as e:
        rep["error"] = str(e)
    for k, v in rep.items():
        sys.stdout.write("%s=%s\n" % (k, v))


if __name__ == "__main__":
    main()
