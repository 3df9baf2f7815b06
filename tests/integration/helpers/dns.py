#!/usr/bin/env python3
"""dns.py - a small authoritative DNS server for moat's integration tests.

What it is: the only name server of the test world.  It answers A and AAAA
queries over UDP and TCP from a JSON zone file, answers NXDOMAIN for names it
does not know, and logs every query (name, type, answer) as one JSON line, so
a test can tell what moatd asked and when.

What it is not: a resolver.  It never forwards, never recurses, and only
knows the names in its zone.  Python standard library only.

Zone file: a JSON object, name -> one of
  [ {"type": "A", "data": "203.0.113.10", "ttl": 1}, ... ]
      the answer set (type "A" or "AAAA"; ttl defaults to 1);
  {"sequence": [ [records...], [records...], ... ]}
      the first query of a given type gets set 1, the second set 2, and so
      on; the last set repeats (DNS rebinding tests);
  {"rcode": "SERVFAIL" | "REFUSED" | "NXDOMAIN"}
      that error for every query of the name;
  {"drop": true}
      no answer at all (resolver timeouts).
A key "*.example.test" answers for every name below example.test that has
no entry of its own.  Names are matched case-insensitively, without the
final dot.  The zone is re-read on SIGHUP (sequence counters are kept).

Queries for a known name and another type (MX, HTTPS, ...) get NOERROR with
no answer; malformed queries get FORMERR, other opcodes NOTIMP.
"""

import argparse
import ipaddress
import json
import os
import signal
import socket
import struct
import sys
import threading
import time

TYPE_A = 1
TYPE_AAAA = 28
CLASS_IN = 1
TYPE_NAMES = {1: "A", 2: "NS", 5: "CNAME", 6: "SOA", 12: "PTR", 15: "MX",
              16: "TXT", 28: "AAAA", 33: "SRV", 41: "OPT", 64: "SVCB",
              65: "HTTPS", 255: "ANY"}
RCODES = {"NOERROR": 0, "FORMERR": 1, "SERVFAIL": 2, "NXDOMAIN": 3,
          "NOTIMP": 4, "REFUSED": 5}
RCODE_NAMES = {v: k for k, v in RCODES.items()}
UDP_MAX_BYTES = 512          # classic DNS over UDP (we never send EDNS)
TCP_MSG_MAX_BYTES = 65535    # a DNS message over TCP
TCP_IDLE_S = 10              # a TCP client silent this long is dropped


class Zone:
    """The zone: names -> answers, with per-(name, type) query counters."""

    def __init__(self, path):
        self.path = path
        self.lock = threading.Lock()
        self.counts = {}
        self.entries = {}
        self.load()

    def load(self):
        with open(self.path) as f:
            raw = json.load(f)
        if not isinstance(raw, dict):
            raise ValueError("zone must be a JSON object")
        entries = {}
        for name, spec in raw.items():
            entries[canon(name)] = self.check_spec(name, spec)
        with self.lock:
            self.entries = entries

    @staticmethod
    def check_spec(name, spec):
        def records(lst):
            if not isinstance(lst, list):
                raise ValueError("%s: answer set must be a list" % name)
            out = []
            for r in lst:
                t = r.get("type")
                if t == "A":
                    data = ipaddress.IPv4Address(r["data"]).packed
                elif t == "AAAA":
                    data = ipaddress.IPv6Address(r["data"]).packed
                else:
                    raise ValueError("%s: type %r unsupported" % (name, t))
                ttl = int(r.get("ttl", 1))
                if not 0 <= ttl < 2 ** 31:
                    raise ValueError("%s: bad ttl" % name)
                out.append((t, data, ttl, r["data"]))
            return out

        if isinstance(spec, list):
            return ("static", records(spec))
        if isinstance(spec, dict) and "sequence" in spec:
            seq = [records(s) for s in spec["sequence"]]
            if not seq:
                raise ValueError("%s: empty sequence" % name)
            return ("sequence", seq)
        if isinstance(spec, dict) and spec.get("rcode") in RCODES:
            return ("rcode", RCODES[spec["rcode"]])
        if isinstance(spec, dict) and spec.get("drop") is True:
            return ("drop", None)
        raise ValueError("%s: unknown zone entry %r" % (name, spec))

    def lookup(self, name, qtype):
        """Returns (rcode, [records]) or None to drop the query."""
        with self.lock:
            entry = self.entries.get(name)
            labels = name.split(".")
            for i in range(1, len(labels)):
                if entry is not None:
                    break
                entry = self.entries.get("*." + ".".join(labels[i:]))
            if entry is None:
                return RCODES["NXDOMAIN"], []
            kind, val = entry
            if kind == "drop":
                return None
            if kind == "rcode":
                return val, []
            if kind == "sequence":
                key = (name, qtype)
                n = self.counts.get(key, 0)
                self.counts[key] = n + 1
                val = val[min(n, len(val) - 1)]
            want = {TYPE_A: "A", TYPE_AAAA: "AAAA"}.get(qtype)
            return 0, [r for r in val if r[0] == want]


def canon(name):
    return name.rstrip(".").lower()


class FormErr(Exception):
    pass


def parse_query(msg):
    """Returns (id, flags, qname, qtype, qclass, question_bytes)."""
    if len(msg) < 12:
        raise FormErr("short header")
    qid, flags, qd, an, ns, ar = struct.unpack("!HHHHHH", msg[:12])
    if flags & 0x8000:
        raise FormErr("not a query")
    if qd != 1:
        raise FormErr("qdcount %d" % qd)
    pos = 12
    labels = []
    while True:
        if pos >= len(msg):
            raise FormErr("truncated name")
        n = msg[pos]
        if n == 0:
            pos += 1
            break
        if n & 0xc0:
            raise FormErr("compressed or extended label in question")
        if pos + 1 + n > len(msg):
            raise FormErr("truncated label")
        labels.append(msg[pos + 1:pos + 1 + n])
        pos += 1 + n
    if pos + 4 > len(msg):
        raise FormErr("truncated question")
    qtype, qclass = struct.unpack("!HH", msg[pos:pos + 4])
    name = b".".join(labels).decode("latin-1").lower()
    return qid, flags, name, qtype, qclass, msg[12:pos + 4]


def build_answer(qid, qflags, rcode, question, records):
    opcode = (qflags >> 11) & 0xf
    rd = qflags & 0x0100
    # QR, AA, RA; opcode and RD copied from the query.
    flags = 0x8000 | (opcode << 11) | 0x0400 | rd | 0x0080 | rcode
    out = struct.pack("!HHHHHH", qid, flags, 1 if question else 0,
                      len(records), 0, 0)
    out += question
    for t, data, ttl, _ in records:
        rtype = TYPE_A if t == "A" else TYPE_AAAA
        # 0xc00c: a pointer to the name in the question.
        out += struct.pack("!HHHIH", 0xc00c, rtype, CLASS_IN, ttl, len(data))
        out += data
    return out


class Server:
    def __init__(self, args):
        self.zone = Zone(args.zone)
        self.log_lock = threading.Lock()
        self.logf = open(args.log, "a", buffering=1) if args.log else None

    def log(self, **fields):
        if self.logf is None:
            return
        rec = {"ts": round(time.time(), 6)}
        rec.update(fields)
        with self.log_lock:
            self.logf.write(json.dumps(rec, sort_keys=True) + "\n")
            self.logf.flush()

    def handle(self, msg, proto, client):
        """Returns the answer bytes, or None to send nothing."""
        try:
            qid, qflags, name, qtype, qclass, question = parse_query(msg)
        except FormErr as e:
            self.log(proto=proto, client=client, error=str(e))
            if len(msg) < 12:
                return None
            qid, qflags = struct.unpack("!HH", msg[:4])
            return build_answer(qid, qflags, RCODES["FORMERR"], b"", [])
        tname = TYPE_NAMES.get(qtype, str(qtype))
        if (qflags >> 11) & 0xf != 0:
            rcode, records = RCODES["NOTIMP"], []
        elif qclass != CLASS_IN:
            rcode, records = RCODES["REFUSED"], []
        else:
            res = self.zone.lookup(name, qtype)
            if res is None:
                self.log(proto=proto, client=client, id=qid, name=name,
                         type=tname, rcode="DROPPED", answers=[])
                return None
            rcode, records = res
        self.log(proto=proto, client=client, id=qid, name=name, type=tname,
                 rcode=RCODE_NAMES.get(rcode, str(rcode)),
                 answers=["%s %s %d" % (r[0], r[3], r[2]) for r in records])
        out = build_answer(qid, qflags, rcode, question, records)
        if proto == "udp" and len(out) > UDP_MAX_BYTES:
            # Truncated: header and question only, TC set.
            out = build_answer(qid, qflags, rcode, question, [])
            out = out[:2] + bytes([out[2] | 0x02]) + out[3:]
        return out

    def udp_loop(self, s):
        while True:
            try:
                msg, peer = s.recvfrom(4096)
            except OSError:
                return
            out = self.handle(msg, "udp", fmt_addr(peer))
            if out is not None:
                try:
                    s.sendto(out, peer)
                except OSError:
                    pass

    def tcp_loop(self, s):
        while True:
            try:
                c, peer = s.accept()
            except OSError:
                return
            threading.Thread(target=self.tcp_conn, args=(c, peer),
                             daemon=True).start()

    def tcp_conn(self, c, peer):
        c.settimeout(TCP_IDLE_S)
        try:
            while True:
                hdr = recv_exact(c, 2)
                if hdr is None:
                    return
                n = struct.unpack("!H", hdr)[0]
                msg = recv_exact(c, n)
                if msg is None:
                    return
                out = self.handle(msg, "tcp", fmt_addr(peer))
                if out is not None:
                    c.sendall(struct.pack("!H", len(out)) + out)
        except OSError:
            pass
        finally:
            c.close()


def recv_exact(c, n):
    buf = b""
    while len(buf) < n:
        data = c.recv(n - len(buf))
        if not data:
            return None
        buf += data
    return buf


def fmt_addr(sa):
    if ":" in sa[0]:
        return "[%s]:%d" % (sa[0], sa[1])
    return "%s:%d" % (sa[0], sa[1])


def parse_listen(text):
    """'1.2.3.4', '1.2.3.4:5353', '[2001:db8::53]:53' -> (family, host, port)."""
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port = int(rest[1:]) if rest.startswith(":") else 53
        return socket.AF_INET6, host, port
    if text.count(":") > 1:
        return socket.AF_INET6, text, 53
    host, sep, port = text.partition(":")
    return socket.AF_INET, host, int(port) if sep else 53


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--listen", action="append", required=True,
                    help="ADDR[:PORT] or [V6][:PORT] (UDP and TCP; repeatable)")
    ap.add_argument("--zone", required=True, help="JSON zone file")
    ap.add_argument("--log", help="JSON-lines query log (appended)")
    ap.add_argument("--lifetime", type=float, default=60.0,
                    help="exit after this many seconds (default 60)")
    ap.add_argument("--ready-fd", type=int, default=1,
                    help="write 'ready' on this fd once bound (default 1)")
    args = ap.parse_args()
    if not 0 < args.lifetime <= 3600:
        ap.error("--lifetime must be in (0, 3600]")
    try:
        srv = Server(args)
    except (OSError, ValueError, KeyError) as e:
        sys.exit("dns.py: bad zone %s: %s" % (args.zone, e))

    def reload(*_):
        try:
            srv.zone.load()
            srv.log(event="reload")
        except (OSError, ValueError, KeyError) as e:
            srv.log(event="reload", error=str(e))

    signal.signal(signal.SIGHUP, reload)
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    threads = []
    try:
        for text in args.listen:
            family, host, port = parse_listen(text)
            u = socket.socket(family, socket.SOCK_DGRAM)
            t = socket.socket(family, socket.SOCK_STREAM)
            t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                u.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                t.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            u.bind((host, port))
            t.bind((host, port))
            t.listen(64)
            threads.append(threading.Thread(target=srv.udp_loop, args=(u,),
                                            daemon=True))
            threads.append(threading.Thread(target=srv.tcp_loop, args=(t,),
                                            daemon=True))
    except (OSError, ValueError) as e:
        sys.exit("dns.py: cannot listen: %s" % e)
    for th in threads:
        th.start()
    os.write(args.ready_fd, b"ready\n")
    if args.ready_fd > 2:
        os.close(args.ready_fd)
    deadline = time.monotonic() + args.lifetime
    # Sleep in steps so SIGHUP handlers run promptly on the main thread.
    while time.monotonic() < deadline:
        time.sleep(min(0.5, max(0.0, deadline - time.monotonic())))
    os._exit(0)


if __name__ == "__main__":
    main()
