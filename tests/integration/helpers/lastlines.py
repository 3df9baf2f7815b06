#!/usr/bin/env python3
"""lastlines.py - a private moatd's last audit lines survive a late SIGTERM.

What it is: the end of `moat run` with a private moatd, done RUNS times with
the SIGTERM at a different moment each time.  Each round it starts
`MOATD -q -c CONF --admin-fd 3` (CONF: no listener, audit to a file), says
hello on the admin socketpair, registers a sandbox with one listening
socket (passed with SCM_RIGHTS), then closes the admin connection, as moat
run does, waits 0 to --max-us microseconds (spread over the rounds) and
sends SIGTERM.  moatd must have written the sandbox's "registered" and
"unregistered" lines and ended by exit 0 or by that SIGTERM.

moatd used to free its signal events (which gives SIGTERM back its default
action) before writing its queued audit lines: a SIGTERM arriving in that
window ended it with "unregistered" still queued (seen in CI, and here at
300-500 us: 10 of 85 rounds).

Prints one line per round that went wrong and a summary; exit 1 if any did.
Every round is bounded (10 s); loopback only.  Python standard library only.
"""

import argparse
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time


def send(sock, obj, fds=()):
    body = json.dumps(obj).encode()
    msg = struct.pack(">I", len(body)) + body
    if fds:
        socket.send_fds(sock, [msg], list(fds))
    else:
        sock.sendall(msg)


def recv(sock):
    hdr = b""
    while len(hdr) < 4:
        chunk = sock.recv(4 - len(hdr))
        if not chunk:
            raise EOFError("moatd closed the admin connection")
        hdr += chunk
    (n,) = struct.unpack(">I", hdr)
    body = b""
    while len(body) < n:
        chunk = sock.recv(n - len(body))
        if not chunk:
            raise EOFError("moatd closed the admin connection")
        body += chunk
    return json.loads(body)


def one_round(moatd, conf, audit, delay_us):
    """Returns None, or what went wrong."""
    if os.path.exists(audit):
        os.unlink(audit)
    ours, theirs = socket.socketpair()
    lst = socket.socket()
    lst.bind(("127.0.0.1", 0))
    lst.listen(8)
    p = subprocess.Popen(
        [moatd, "-q", "-c", conf, "--admin-fd", str(theirs.fileno())],
        pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL)
    theirs.close()
    try:
        ours.settimeout(10)
        send(ours, {"op": "hello", "version": 1})
        ans = recv(ours)
        if not ans.get("ok", True) or ans.get("error"):
            return "hello refused: %s" % ans
        send(ours, {"op": "register", "sandbox": "last",
                    "config": {"policy": {"rules": [
                        {"action": "allow", "hosts": ["a.test"]}]}},
                    "listeners": [{"proto": "http", "fd": 0}]},
             [lst.fileno()])
        ans = recv(ours)
        if ans.get("sandbox") != "last":
            return "register refused: %s" % ans
    except (OSError, EOFError, ValueError) as e:
        p.kill()
        p.wait()
        return "admin exchange failed: %s" % e
    finally:
        lst.close()
    ours.close()
    if delay_us > 0:
        time.sleep(delay_us / 1e6)
    try:
        p.send_signal(signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        rc = p.wait(timeout=10)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        return "moatd did not end within 10 s"
    if rc not in (0, -signal.SIGTERM):
        return "moatd ended with %d" % rc
    try:
        with open(audit) as f:
            lines = [json.loads(x) for x in f if x.strip()]
    except (OSError, ValueError) as e:
        return "audit unreadable: %s" % e
    got = [x.get("detail") for x in lines
           if x.get("event") == "sandbox" and x.get("sandbox") == "last"]
    if got != ["registered", "unregistered"]:
        return "audit has %s (rc %d)" % (got, rc)
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--moatd", required=True)
    ap.add_argument("--runs", type=int, default=120)
    ap.add_argument("--max-us", type=int, default=1200)
    ap.add_argument("--seconds", type=float, default=25,
                    help="stop starting rounds after this long (the "
                    "delays are spread over the rounds done so far)")
    args = ap.parse_args()
    if not 0 < args.runs <= 1000:
        sys.exit("lastlines.py: --runs must be 1..1000")
    with tempfile.TemporaryDirectory(prefix="moat-lastlines.") as d:
        conf = os.path.join(d, "moatd.json")
        audit = os.path.join(d, "audit.log")
        with open(conf, "w") as f:
            json.dump({"listen": [],
                       "policy": {"rules": [{"name": "unused",
                                             "action": "deny",
                                             "hosts": ["unused.invalid"]}]},
                       "audit": {"path": audit}}, f)
        bad = done = 0
        end = time.monotonic() + args.seconds
        # Delays in a shuffled order (a fixed stride through the range),
        # so that rounds cut short by the time bound still cover it.
        stride = 7 if args.runs % 7 else 11
        for i in range(args.runs):
            if time.monotonic() > end:
                break
            k = (i * stride) % args.runs
            delay = args.max_us * k // max(args.runs - 1, 1)
            what = one_round(args.moatd, conf, audit, delay)
            done += 1
            if what is not None:
                bad += 1
                print("round %d (SIGTERM after %d us): %s" % (i, delay, what),
                      flush=True)
        print("lastlines: %d of %d rounds lost lines or went wrong%s"
              % (bad, done, "" if done == args.runs else
                 " (time bound: %d of %d rounds run)" % (done, args.runs)),
              flush=True)
    return 1 if bad or done == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
