#!/usr/bin/env python3
"""gitsrv.py - a git smart-HTTP origin over TLS for moat's integration tests.

What it is: `git http-backend` (the CGI program git ships) behind a small
threaded HTTPS server, so that clone, fetch and push through moatd's
interception can be tested against the real protocol.  Every request is
logged as one JSON line (method, path, query, status, the Host and
Authorization headers it got), so a test can show that a denied push never arrived.

What it is not: a general CGI server.  Python standard library and git.

  gitsrv.py --listen ADDR:PORT --cert PEM --key PEM --root DIR --log FILE
            [--ready-fd N] [--lifetime S]

Repositories are the directories under --root; pushes are enabled
(http.receivepack), so only moatd's policy stands between a client and a
write.
"""

import argparse
import http.server
import json
import os
import signal
import ssl
import subprocess
import sys
import threading

BODY_MAX_BYTES = 64 * 1024 * 1024  # a request body longer is refused
CGI_TIMEOUT_S = 30  # git http-backend may not take longer


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def record(self, status):
        with self.server.lock:
            with open(self.server.args.log, "a") as f:
                f.write(json.dumps({"event": "request",
                    "method": self.command, "target": self.path,
                    "status": status,
                    "host": self.headers.get("Host", ""),
                    "auth": self.headers.get("Authorization", "")}) + "\n")

    def serve(self):
        path, _, query = self.path.partition("?")
        n = int(self.headers.get("Content-Length") or 0)
        if n < 0 or n > BODY_MAX_BYTES:
            self.send_error(413)
            self.record(413)
            return
        body = self.rfile.read(n) if n else b""
        env = {
            "GIT_PROJECT_ROOT": self.server.args.root,
            "GIT_HTTP_EXPORT_ALL": "1",
            "REQUEST_METHOD": self.command,
            "PATH_INFO": path,
            "QUERY_STRING": query,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "REMOTE_USER": "moat-test",
            "REMOTE_ADDR": self.client_address[0],
            "GIT_CONFIG_COUNT": "1",
            "GIT_CONFIG_KEY_0": "http.receivepack",
            "GIT_CONFIG_VALUE_0": "true",
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        }
        proto = self.headers.get("Git-Protocol")
        if proto:
            env["GIT_PROTOCOL"] = proto
        try:
            out = subprocess.run(["git", "http-backend"], input=body,
                env=env, capture_output=True, timeout=CGI_TIMEOUT_S).stdout
        except (OSError, subprocess.TimeoutExpired):
            self.send_error(500)
            self.record(500)
            return
        head, _, payload = out.partition(b"\r\n\r\n")
        if not _:
            head, _, payload = out.partition(b"\n\n")
        status = 200
        headers = []
        for line in head.decode("latin-1").splitlines():
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.strip().split()[0])
            elif name:
                headers.append((name, value.strip()))
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)
        self.record(status)

    do_GET = serve
    do_POST = serve


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--listen", required=True)
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--ready-fd", type=int, default=1)
    ap.add_argument("--lifetime", type=float, default=60.0)
    args = ap.parse_args()
    host, _, port = args.listen.rpartition(":")
    srv = http.server.ThreadingHTTPServer((host, int(port)), Handler)
    srv.daemon_threads = True
    srv.args = args
    srv.lock = threading.Lock()
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(args.cert, args.key)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    signal.signal(signal.SIGALRM, lambda *a: os._exit(0))
    signal.alarm(max(1, int(args.lifetime)))
    os.write(args.ready_fd, b"ready\n")
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
