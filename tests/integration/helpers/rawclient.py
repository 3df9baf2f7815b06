#!/usr/bin/env python3
"""rawclient.py - send exact bytes to a server and report what came back.

What it is: the client for tests that a real client cannot express: request
smuggling vectors (bytes no curl would send), half-sent heads, bytes dripped
one at a time, requests over Unix sockets.  It sends the payload exactly as
given, reads until the server closes or the deadline passes, and prints a
report of KEY=VALUE lines on stdout for the shell to read:

  connected=1           the connect succeeded (0 with error=...)
  sent=N                bytes written before the server closed or we stopped
  received=N            bytes read
  status=CODE           status code of the first response (empty if none)
  status_line=...       its first line
  header_<name>=VALUE   each header of the first response (name lower case,
                        '-' turned into '_'; repeated headers joined by ', ')
  body=...              the first 200 bytes of its body, escaped
  responses=N           how many response status lines were seen in total
  eof=1|0               the server closed the connection before the deadline
  eof_ms=N              when (ms after connect) the server closed it
  elapsed_ms=N          total time
  error=...             a socket error, if any

The payload is given with --send (Python escapes allowed: \\r \\n \\x00 ...)
or --send-file.  --drip-ms N sends it one byte every N milliseconds
(after the first --drip-after N bytes, sent at once: a head, then a body
that trickles).
--stop-after-response closes as soon as the first response is complete
(by Content-Length), without waiting for the server to close.
--read-delay-ms N waits N ms after sending before it reads anything, and
--rcvbuf N sets a small receive buffer first: together they make a late
reader, so that a proxy has the answer's end queued behind unread bytes.

Python standard library only.
"""

import argparse
import codecs
import re
import socket
import sys
import time

READ_MAX_BYTES = 16 * 1024 * 1024   # we keep at most this much of the answer


def parse_target(args):
    if args.unix:
        return socket.AF_UNIX, args.unix
    text = args.tcp
    if text.startswith("["):
        host, _, port = text[1:].partition("]:")
        return socket.AF_INET6, (host, int(port))
    host, _, port = text.rpartition(":")
    return socket.AF_INET, (host, int(port))


def first_response(data):
    """Splits the first response: (status, line, headers, body, complete)."""
    end = data.find(b"\r\n\r\n")
    if end < 0:
        return None
    lines = data[:end].decode("latin-1").split("\r\n")
    m = re.match(r"HTTP/\d\.\d (\d{3})", lines[0])
    status = m.group(1) if m else ""
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        key = name.strip().lower().replace("-", "_")
        headers[key] = (headers[key] + ", " if key in headers else "") + \
            value.strip()
    body = data[end + 4:]
    complete = False
    if "content_length" in headers and headers["content_length"].isdigit():
        complete = len(body) >= int(headers["content_length"])
    return status, lines[0], headers, body, complete


def esc(b):
    return b.decode("latin-1").encode("unicode_escape").decode("ascii")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--tcp", help="HOST:PORT or [V6]:PORT")
    g.add_argument("--unix", help="path of a Unix stream socket")
    p = ap.add_mutually_exclusive_group(required=True)
    p.add_argument("--send", help="payload, with Python escapes")
    p.add_argument("--send-file", help="payload file")
    ap.add_argument("--drip-ms", type=int, default=0,
                    help="send one byte every N ms")
    ap.add_argument("--drip-after", type=int, default=0,
                    help="with --drip-ms: send the first N bytes at once")
    ap.add_argument("--timeout", type=float, default=5.0,
                    help="deadline in seconds for the whole exchange")
    ap.add_argument("--stop-after-response", action="store_true",
                    help="stop once the first response is complete")
    ap.add_argument("--shut-wr", action="store_true",
                    help="half-close (SHUT_WR) after sending")
    ap.add_argument("--raw-out", help="write every byte received here")
    ap.add_argument("--read-delay-ms", type=int, default=0,
                    help="wait N ms after sending before reading")
    ap.add_argument("--rcvbuf", type=int, default=0,
                    help="SO_RCVBUF in bytes (0: the system's)")
    args = ap.parse_args()

    if args.send is not None:
        payload = codecs.escape_decode(args.send.encode("latin-1"))[0]
    else:
        with open(args.send_file, "rb") as f:
            payload = f.read()

    report = {"connected": 0, "sent": 0, "received": 0, "eof": 0}
    data = bytearray()
    t0 = time.monotonic()
    deadline = t0 + args.timeout
    family, addr = parse_target(args)
    s = socket.socket(family, socket.SOCK_STREAM)
    if args.rcvbuf > 0:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, args.rcvbuf)
    try:
        s.settimeout(max(0.1, deadline - time.monotonic()))
        s.connect(addr)
        report["connected"] = 1
        if args.drip_ms > 0:
            first = min(max(args.drip_after, 0), len(payload))
            if first > 0:
                s.sendall(payload[:first])
                report["sent"] = first
            for i in range(first, len(payload)):
                if time.monotonic() >= deadline:
                    break
                s.sendall(payload[i:i + 1])
                report["sent"] += 1
                # Between bytes, notice a close by the server.
                s.settimeout(args.drip_ms / 1000.0)
                try:
                    chunk = s.recv(65536)
                    if not chunk:
                        report["eof"] = 1
                        report["eof_ms"] = int((time.monotonic() - t0) * 1000)
                        break
                    data += chunk
                except socket.timeout:
                    pass
        else:
            s.sendall(payload)
            report["sent"] = len(payload)
        if args.shut_wr and not report["eof"]:
            s.shutdown(socket.SHUT_WR)
        if args.read_delay_ms > 0:
            time.sleep(min(args.read_delay_ms / 1000.0,
                           max(0.0, deadline - time.monotonic())))
        while not report["eof"]:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            if args.stop_after_response:
                fr = first_response(data)
                if fr is not None and fr[4]:
                    break
            s.settimeout(left)
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                break
            if not chunk:
                report["eof"] = 1
                report["eof_ms"] = int((time.monotonic() - t0) * 1000)
                break
            if len(data) < READ_MAX_BYTES:
                data += chunk
    except ConnectionResetError as e:
        report["eof"] = 1
        report["eof_ms"] = int((time.monotonic() - t0) * 1000)
        report["error"] = "reset: %s" % e
    except OSError as e:
        report["error"] = str(e)
    finally:
        s.close()
    report["elapsed_ms"] = int((time.monotonic() - t0) * 1000)
    report["received"] = len(data)
    if args.raw_out:
        with open(args.raw_out, "wb") as f:
            f.write(data)
    report["responses"] = len(re.findall(rb"(?:^|\r\n)HTTP/\d\.\d \d{3} ",
                                         data))
    fr = first_response(data)
    if fr is not None:
        status, line, headers, body, _ = fr
        report["status"] = status
        report["status_line"] = line
        for k, v in headers.items():
            report["header_" + k] = v
        report["body"] = esc(body[:200])
    else:
        report["status"] = ""
    for k, v in report.items():
        v = str(v).replace("\n", "\\n").replace("\r", "\\r")
        sys.stdout.write("%s=%s\n" % (k, v))


if __name__ == "__main__":
    main()
