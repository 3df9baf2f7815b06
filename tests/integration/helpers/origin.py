#!/usr/bin/env python3
"""origin.py - an HTTP/1.1 origin server for moat's integration tests.

What it is: a real peer for moatd to talk to.  It listens on one or more
addresses (plain TCP, optionally TLS), serves keep-alive HTTP/1.1, and logs
EVERY connection and every request it receives as one JSON line, so a test
can prove that a blocked request never reached it ("the log is empty").
It is deliberately lenient when reading: whatever bytes arrive are logged,
even when they are not HTTP, because the point is to see what got through.

What it is not: a general web server.  Python standard library only.

Endpoints (any method; HEAD gets no body):
  /bytes/N         N bytes (a fixed pattern), with Content-Length
  /slow/MS         waits MS milliseconds (at most 30000), then the echo
  /stall/N         a head with Content-Length N, 64 KiB of body, then
                   nothing: it waits (at most 30 s) for the peer to close
  /status/CODE     an empty answer with that status
  /close           the echo, then the connection is closed
  /reflect         the request's Authorization header back, in a header
                   (X-Reflect) and the body (then the request body): what
                   an upstream that echoes a credential does
  /reason          401 with the request's Authorization in the status
                   line's reason phrase ("Invalid API key ...")
  /PATH            with --root DIR, GET or HEAD of a file under DIR (a
                   directory: its index.html or index.json): served
                   with Content-Length, the query ignored: a package
                   index, a registry stub, a dumb-HTTP git repository
  /store/NAME      PUT or POST: keeps the body in memory under NAME (201);
                   other methods: serves it (404 if none), honouring a
                   single "Range: bytes=A-B" with 206: what a service that
                   stores what it is given and serves it back does; with
                   the query "chunked", chunked (pieces of 1000 bytes)
  anything else    the echo: a JSON object describing the request (method,
                   target, headers, body length and SHA-256, connection id)
                   or, for "/" with --banner, that text.

Log lines (--log FILE), "event" is one of:
  accept    a connection was accepted          (conn, local, peer)
  request   a whole request head was read      (method, target, path,
            version, host, headers, body_len, body_sha256, body (as
            latin-1 text, up to 64 KiB), error if the body could not be
            read)
  sent      a /bytes/N answer ended            (bytes, complete)
  stall     a /stall/N answer ended            (bytes, held_ms: how long
            it waited after its last byte, peer_closed: the peer closed
            within the 30 s)
  garbage   bytes that were not a request head (bytes, sample)
  close     the connection ended               (requests)
  tls-error the TLS handshake failed           (error)

It writes "ready" to --ready-fd once every listener is bound, and exits by
itself after --lifetime seconds.
"""

import argparse
import hashlib
import json
import mimetypes
import os
import signal
import socket
import ssl
import sys
import threading
import time

HEAD_MAX_BYTES = 65536  # a request head longer than this is garbage
BODY_LOG_MAX_BYTES = 65536  # bodies up to this size are logged whole
BODY_MAX_BYTES = 256 * 1024 * 1024  # a request body longer is refused
CHUNK_LINE_MAX_BYTES = 4096  # one chunk-size line
IO_TIMEOUT_S = 30  # a peer silent for this long is dropped
SLOW_MAX_MS = 30000  # cap for /slow/MS
SEND_BLOCK_BYTES = 65536  # /bytes/N is written in blocks of this size
PATTERN = bytes(range(32, 127)) * 700  # printable, easy to check

STATUS_TEXT = {
    200: "OK", 201: "Created", 204: "No Content", 206: "Partial Content", 301: "Moved Permanently",
    400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
    413: "Content Too Large", 500: "Internal Server Error",
    502: "Bad Gateway", 503: "Service Unavailable",
}


class BadRequest(Exception):
    """The peer sent something we cannot frame."""


class Log:
    """Thread-safe JSON-lines log; one flushed line per event."""

    def __init__(self, path, name):
        self.lock = threading.Lock()
        self.name = name
        self.f = open(path, "a", buffering=1) if path else None

    def write(self, **fields):
        if self.f is None:
            return
        rec = {"ts": round(time.time(), 6), "server": self.name}
        rec.update(fields)
        line = json.dumps(rec, sort_keys=True)
        with self.lock:
            self.f.write(line + "\n")
            self.f.flush()


def fmt_addr(sa):
    """('2001:db8::1', 80, 0, 0) -> '[2001:db8::1]:80'."""
    host, port = sa[0], sa[1]
    if ":" in host:
        return "[%s]:%d" % (host, port)
    return "%s:%d" % (host, port)


def parse_listen(text):
    """'1.2.3.4:80' or '[::1]:80' -> (family, host, port)."""
    if text.startswith("["):
        end = text.find("]:")
        if end < 0:
            raise ValueError("bad listen address %r" % text)
        return socket.AF_INET6, text[1:end], int(text[end + 2:])
    host, sep, port = text.rpartition(":")
    if not sep or not host:
        raise ValueError("bad listen address %r" % text)
    return socket.AF_INET, host, int(port)


class Reader:
    """Buffered reader over a socket with byte caps."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = b""
        self.eof = False

    def fill(self):
        if self.eof:
            return False
        data = self.sock.recv(65536)
        if not data:
            self.eof = True
            return False
        self.buf += data
        return True

    def read_head(self):
        """Returns the head (without the blank line), b"" at a clean EOF,
        or raises BadRequest with what arrived."""
        while True:
            end = self.buf.find(b"\r\n\r\n")
            if end >= 0:
                head = self.buf[:end]
                self.buf = self.buf[end + 4:]
                return head
            if len(self.buf) > HEAD_MAX_BYTES:
                raise BadRequest("head longer than %d bytes"
                    % HEAD_MAX_BYTES)
            if not self.fill():
                if self.buf:
                    raise BadRequest("EOF inside a head")
                return b""

    def read_exact(self, n):
        while len(self.buf) < n:
            if not self.fill():
                raise BadRequest("EOF inside a body (%d of %d bytes)"
                    % (len(self.buf), n))
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def read_line(self):
        while True:
            end = self.buf.find(b"\r\n")
            if end >= 0:
                line = self.buf[:end]
                self.buf = self.buf[end + 2:]
                return line
            if len(self.buf) > CHUNK_LINE_MAX_BYTES:
                raise BadRequest("chunk line too long")
            if not self.fill():
                raise BadRequest("EOF inside a chunk line")


def parse_head(head):
    """Lenient split of a request head into its parts."""
    lines = head.split(b"\r\n")
    parts = lines[0].decode("latin-1").split(" ")
    if len(parts) != 3:
        raise BadRequest("request line %r" % lines[0][:200])
    method, target, version = parts
    headers = []
    for raw in lines[1:]:
        name, sep, value = raw.decode("latin-1").partition(":")
        if not sep:
            raise BadRequest("header line %r" % raw[:200])
        headers.append([name.strip(), value.strip()])
    return method, target, version, headers


def header(headers, name):
    """All values of a header, case-insensitively."""
    return [v for n, v in headers if n.lower() == name]


def read_body(rd, headers):
    """Reads the body framed by Transfer-Encoding or Content-Length."""
    te = ",".join(header(headers, "transfer-encoding")).lower()
    if te:
        if te.replace(" ", "").split(",")[-1] != "chunked":
            raise BadRequest("transfer-encoding %r" % te)
        body = b""
        while True:
            line = rd.read_line()
            size_txt = line.split(b";", 1)[0].strip()
            try:
                size = int(size_txt, 16)
            except ValueError:
                raise BadRequest("chunk size %r" % line[:100])
            if size < 0:
                raise BadRequest("chunk size %r" % line[:100])
            if size == 0:
                break
            if len(body) + size > BODY_MAX_BYTES:
                raise BadRequest("body too large")
            body += rd.read_exact(size)
            if rd.read_exact(2) != b"\r\n":
                raise BadRequest("chunk not followed by CRLF")
        while rd.read_line() != b"":  # trailers
            pass
        return body
    cls = header(headers, "content-length")
    if not cls:
        return b""
    if len(set(cls)) != 1 or not cls[0].isdigit():
        raise BadRequest("content-length %r" % cls)
    n = int(cls[0])
    if n > BODY_MAX_BYTES:
        raise BadRequest("body too large")
    return rd.read_exact(n)


class Origin:
    def __init__(self, args):
        self.args = args
        self.log = Log(args.log, args.name)
        self.conn_seq = 0
        self.lock = threading.Lock()
        self.store = {}
        self.tls = None
        if args.tls_listen:
            if not args.cert or not args.key:
                sys.exit("origin.py: --tls-listen needs --cert and --key")
            self.tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self.tls.load_cert_chain(args.cert, args.key)

    def next_conn(self):
        with self.lock:
            self.conn_seq += 1
            return self.conn_seq

    def bind(self, text):
        family, host, port = parse_listen(text)
        s = socket.socket(family, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        s.bind((host, port))
        s.listen(128)
        return s

    def accept_loop(self, lsock, tls):
        while True:
            try:
                c, peer = lsock.accept()
            except OSError:
                return
            t = threading.Thread(target=self.serve, args=(c, peer, tls),
                daemon=True)
            t.start()

    def serve(self, c, peer, tls):
        conn = self.next_conn()
        local = fmt_addr(c.getsockname())
        self.log.write(event="accept", conn=conn, local=local,
            peer=fmt_addr(peer), tls=tls)
        c.settimeout(IO_TIMEOUT_S)
        nreq = 0
        try:
            if tls:
                try:
                    c = self.tls.wrap_socket(c, server_side=True)
                except (ssl.SSLError, OSError) as e:
                    self.log.write(event="tls-error", conn=conn,
                        error=str(e))
                    return
            rd = Reader(c)
            while True:
                keep = self.one_request(c, rd, conn, nreq + 1, local,
                    peer)
                if keep is None:
                    break
                nreq += 1
                if not keep:
                    break
        except (OSError, ssl.SSLError) as e:
            self.log.write(event="io-error", conn=conn, error=str(e))
        finally:
            self.log.write(event="close", conn=conn, requests=nreq)
            try:
                c.close()
            except OSError:
                pass

    def one_request(self, c, rd, conn, seq, local, peer):
        """Serves one request.  Returns True to keep the connection,
        False to close it after this answer, None if none was read."""
        try:
            head = rd.read_head()
        except BadRequest as e:
            self.log.write(event="garbage", conn=conn,
                bytes=len(rd.buf), error=str(e),
                sample=rd.buf[:200].decode("latin-1"))
            return None
        if not head:
            return None
        try:
            method, target, version, headers = parse_head(head)
        except BadRequest as e:
            self.log.write(event="garbage", conn=conn, bytes=len(head),
                error=str(e), sample=head[:200].decode("latin-1"))
            self.respond(c, 400, b"bad request\n", close=True)
            return False
        path, _, query = target.partition("?")
        rec = {"event": "request", "conn": conn, "seq": seq,
            "local": local, "peer": fmt_addr(peer), "method": method,
            "target": target, "path": path, "query": query,
            "version": version, "headers": headers,
            "host": ",".join(header(headers, "host"))}
        try:
            body = read_body(rd, headers)
        except BadRequest as e:
            rec["error"] = str(e)
            rec["body_len"] = None
            self.log.write(**rec)
            self.respond(c, 400, b"bad body\n", close=True)
            return False
        rec["body_len"] = len(body)
        rec["body_sha256"] = hashlib.sha256(body).hexdigest()
        if len(body) <= BODY_LOG_MAX_BYTES:
            rec["body"] = body.decode("latin-1")
        self.log.write(**rec)
        rec["_body"] = body

        conn_hdr = ",".join(header(headers, "connection")).lower()
        close = ("close" in conn_hdr or
            (version == "HTTP/1.0" and "keep-alive" not in conn_hdr))
        head_only = method == "HEAD"
        return self.route(c, rec, close, head_only)

    def route(self, c, rec, close, head_only):
        path = rec["path"]
        parts = path.split("/")
        if self.args.root and rec["method"] in ("GET", "HEAD"):
            f = self.root_file(path)
            if f is not None:
                with open(f, "rb") as fh:
                    body = fh.read()
                ctype = mimetypes.guess_type(f)[0] or \
                    "application/octet-stream"
                self.respond(c, 200, body, close, head_only, ctype=ctype)
                return not close
        if len(parts) == 3 and parts[1] == "bytes" and parts[2].isdigit():
            return self.send_bytes(c, rec, int(parts[2]), close,
                head_only)
        if len(parts) == 3 and parts[1] == "status" and \
            parts[2].isdigit() and 200 <= int(parts[2]) <= 599:
            self.respond(c, int(parts[2]), b"", close, head_only)
            return not close
        if len(parts) == 3 and parts[1] == "stall" and parts[2].isdigit():
            return self.stall(c, rec, int(parts[2]))
        if len(parts) == 3 and parts[1] == "slow" and parts[2].isdigit():
            time.sleep(min(int(parts[2]), SLOW_MAX_MS) / 1000.0)
        if path == "/close":
            close = True
        if path == "/reflect":
            auth = ",".join(header(rec["headers"], "authorization"))
            body = ("auth=" + auth + "\n").encode("latin-1") + rec["_body"]
            self.respond(c, 200, body, close, head_only,
                ctype="text/plain", extra=["X-Reflect: " + auth])
            return not close
        if path == "/reason":
            auth = ",".join(header(rec["headers"], "authorization"))
            self.respond(c, 401, b"unauthorized\n", close, head_only,
                reason="Invalid API key " + auth)
            return not close
        if len(parts) == 3 and parts[1] == "store" and parts[2]:
            return self.stored(c, rec, parts[2], close, head_only)
        if path == "/" and self.args.banner:
            body = (self.args.banner + "\n").encode()
            self.respond(c, 200, body, close, head_only,
                ctype="text/plain; charset=utf-8")
            return not close
        echo = {k: rec[k] for k in ("conn", "seq", "local", "method",
            "target", "path", "query", "headers", "body_len",
            "body_sha256")}
        echo["server"] = self.args.name
        body = (json.dumps(echo, sort_keys=True) + "\n").encode()
        self.respond(c, 200, body, close, head_only,
            ctype="application/json", conn=rec["conn"])
        return not close

    def root_file(self, path):
        """The file under --root that path names (a directory: its
        index.html or index.json), or None; nothing outside --root."""
        root = os.path.realpath(self.args.root)
        f = os.path.realpath(os.path.join(root, path.lstrip("/")))
        if f != root and not f.startswith(root + os.sep):
            return None
        if os.path.isdir(f):
            for index in ("index.html", "index.json"):
                if os.path.isfile(os.path.join(f, index)):
                    return os.path.join(f, index)
            return None
        return f if os.path.isfile(f) else None

    def stored(self, c, rec, name, close, head_only):
        if rec["method"] in ("PUT", "POST"):
            with self.lock:
                self.store[name] = rec["_body"]
            self.respond(c, 201, b"stored\n", close, head_only)
            return not close
        with self.lock:
            body = self.store.get(name)
        if body is None:
            self.respond(c, 404, b"no such object\n", close, head_only)
            return not close
        rng = ",".join(header(rec["headers"], "range")).strip()
        a, _, b = rng[len("bytes="):].partition("-") if \
            rng.startswith("bytes=") else ("", "", "")
        if a.isdigit() and b.isdigit() and int(a) <= int(b) < len(body):
            part = body[int(a):int(b) + 1]
            self.respond(c, 206, part, close, head_only,
                ctype="application/octet-stream", extra=[
                "Content-Range: bytes %s-%s/%d" % (a, b, len(body))])
            return not close
        if rec["query"] == "chunked":
            self.respond_chunked(c, body, close, head_only)
            return not close
        self.respond(c, 200, body, close, head_only,
            ctype="application/octet-stream", extra=["Accept-Ranges: bytes"])
        return not close

    def respond_chunked(self, c, body, close, head_only):
        lines = ["HTTP/1.1 200 OK", "Server: moat-test-origin",
            "X-Origin-Name: %s" % self.args.name,
            "Content-Type: application/octet-stream",
            "Transfer-Encoding: chunked"]
        if close:
            lines.append("Connection: close")
        out = ("\r\n".join(lines) + "\r\n\r\n").encode()
        if not head_only:
            for i in range(0, len(body), 1000):
                part = body[i:i + 1000]
                out += b"%x\r\n" % len(part) + part + b"\r\n"
            out += b"0\r\n\r\n"
        c.sendall(out)

    def respond(self, c, status, body, close, head_only=False,
        ctype="text/plain", conn=None, extra=(), reason=None):
        if reason is None:
            reason = STATUS_TEXT.get(status, "Status")
        lines = ["HTTP/1.1 %d %s" % (status, reason),
            "Server: moat-test-origin",
            "X-Origin-Name: %s" % self.args.name,
            "Content-Type: %s" % ctype,
            "Content-Length: %d" % len(body)]
        if conn is not None:
            lines.append("X-Origin-Conn: %d" % conn)
        lines.extend(extra)
        if close:
            lines.append("Connection: close")
        out = ("\r\n".join(lines) + "\r\n\r\n").encode()
        if not head_only:
            out += body
        c.sendall(out)

    def stall(self, c, rec, n):
        """Promises n bytes, sends 64 KiB of them, then waits for the
        peer to give up (what a stuck upstream does)."""
        k = min(SEND_BLOCK_BYTES, n)
        c.sendall(("HTTP/1.1 200 OK\r\nServer: moat-test-origin\r\n"
            "X-Origin-Name: %s\r\nContent-Type: application/octet-stream"
            "\r\nContent-Length: %d\r\n\r\n" % (self.args.name, n))
            .encode() + PATTERN[:k])
        t0 = time.monotonic()
        closed = False
        c.settimeout(0.2)
        while time.monotonic() - t0 < SLOW_MAX_MS / 1000.0:
            try:
                if c.recv(65536) == b"":
                    closed = True
                    break
            except socket.timeout:
                continue
            except OSError:
                closed = True
                break
        self.log.write(event="stall", conn=rec["conn"], seq=rec["seq"],
            bytes=k, peer_closed=closed,
            held_ms=int((time.monotonic() - t0) * 1000))
        return False

    def send_bytes(self, c, rec, n, close, head_only):
        lines = ["HTTP/1.1 200 OK", "Server: moat-test-origin",
            "X-Origin-Name: %s" % self.args.name,
            "Content-Type: application/octet-stream",
            "Content-Length: %d" % n]
        if close:
            lines.append("Connection: close")
        c.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        if head_only:
            return not close
        sent = 0
        try:
            while sent < n:
                k = min(SEND_BLOCK_BYTES, n - sent)
                off = sent % 95
                c.sendall(PATTERN[off:off + k])
                sent += k
        finally:
            self.log.write(event="sent", conn=rec["conn"],
                seq=rec["seq"], bytes=sent, complete=(sent == n))
        return not close


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--listen", action="append", default=[],
        help="ADDR:PORT or [V6]:PORT to serve plain HTTP on (repeatable)")
    ap.add_argument("--tls-listen", action="append", default=[],
        help="ADDR:PORT to serve HTTPS on (repeatable; needs --cert/--key)")
    ap.add_argument("--cert", help="PEM certificate chain for TLS")
    ap.add_argument("--key", help="PEM private key for TLS")
    ap.add_argument("--log", help="JSON-lines log file (appended)")
    ap.add_argument("--name", default="origin",
        help="name in log lines and X-Origin-Name")
    ap.add_argument("--banner", help="text served for GET /")
    ap.add_argument("--root", help="serve GET and HEAD of files under DIR")
    ap.add_argument("--lifetime", type=float, default=60.0,
        help="exit after this many seconds (default 60)")
    ap.add_argument("--ready-fd", type=int, default=1,
        help="write 'ready' on this fd once bound (default 1)")
    args = ap.parse_args()
    if not args.listen and not args.tls_listen:
        ap.error("at least one --listen or --tls-listen is needed")
    if not 0 < args.lifetime <= 3600:
        ap.error("--lifetime must be in (0, 3600]")

    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    origin = Origin(args)
    socks = []
    try:
        socks += [(origin.bind(a), False) for a in args.listen]
        socks += [(origin.bind(a), True) for a in args.tls_listen]
    except (OSError, ValueError) as e:
        sys.exit("origin.py: cannot listen: %s" % e)
    for s, tls in socks:
        threading.Thread(target=origin.accept_loop, args=(s, tls),
            daemon=True).start()
    os.write(args.ready_fd, b"ready\n")
    if args.ready_fd > 2:
        os.close(args.ready_fd)
    time.sleep(args.lifetime)
    os._exit(0)


if __name__ == "__main__":
    main()
