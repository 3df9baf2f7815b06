#!/usr/bin/env python3
"""slowread.py - a client that asks for a big answer and reads it slowly.

What it is: the slow consumer of the backpressure test.  It connects to an
HTTP proxy, optionally opens a CONNECT tunnel first, sends one GET, then
reads at most --rate bytes per second for --duration seconds with a small
receive buffer, so a proxy that does not apply backpressure has to hold the
rest of the answer in its own memory.  It writes "ready" on --ready-fd once
the first bytes of the answer arrived (the transfer is under way), then keeps
reading until the duration ends, and prints KEY=VALUE lines:

  received=N     bytes read in all (head included)
  status=CODE    status of the answer (of the GET, after any CONNECT)
  error=...      if something failed

Python standard library only.
"""

import argparse
import os
import re
import socket
import sys
import time

RCVBUF_BYTES = 4096     # small, so the kernel does not soak up the answer
STEP_S = 0.05           # read pacing step


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--proxy", required=True, help="proxy HOST:PORT")
    ap.add_argument("--url", required=True,
                    help="absolute URL to GET (http://host[:port]/path)")
    ap.add_argument("--connect", metavar="HOST:PORT",
                    help="open a CONNECT tunnel to HOST:PORT first and send "
                         "the GET (origin-form) inside it")
    ap.add_argument("--rate", type=int, default=16384, help="bytes/second")
    ap.add_argument("--duration", type=float, default=3.0)
    ap.add_argument("--ready-fd", type=int, default=-1)
    args = ap.parse_args()

    rep = {"received": 0, "status": ""}
    m = re.match(r"http://([^/]+)(/.*)?$", args.url)
    if not m:
        sys.exit("slowread.py: bad --url")
    hostport, path = m.group(1), m.group(2) or "/"
    host, _, port = args.proxy.rpartition(":")
    fam = socket.AF_INET6 if host.startswith("[") else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF_BYTES)
    s.settimeout(5)
    data = b""
    try:
        s.connect((host.strip("[]"), int(port)))
        if args.connect:
            s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n"
                       % (args.connect, args.connect)).encode())
            while b"\r\n\r\n" not in data and len(data) < 65536:
                chunk = s.recv(1)
                if not chunk:
                    raise OSError("proxy closed during CONNECT")
                data += chunk
            if not re.match(rb"HTTP/1\.[01] 200", data):
                raise OSError("CONNECT refused: %r" % data[:60])
            data = b""
            req = "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (path, hostport)
        else:
            req = "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (args.url,
                                                          hostport)
        s.sendall(req.encode())
        t0 = time.monotonic()
        ready_sent = False
        total = 0
        while time.monotonic() - t0 < args.duration:
            budget = int(args.rate * STEP_S)
            chunk = s.recv(max(1, budget))
            if not chunk:
                break
            total += len(chunk)
            if len(data) < 4096:
                data += chunk
            if not ready_sent and args.ready_fd >= 0:
                os.write(args.ready_fd, b"ready\n")
                os.close(args.ready_fd)
                ready_sent = True
            time.sleep(STEP_S)
        rep["received"] = total
        m = re.match(rb"HTTP/1\.[01] (\d{3})", data)
        rep["status"] = m.group(1).decode() if m else ""
    except OSError as e:
        rep["error"] = str(e)
    finally:
        s.close()
    for k, v in rep.items():
        sys.stdout.write("%s=%s\n" % (k, v))


if __name__ == "__main__":
    main()
