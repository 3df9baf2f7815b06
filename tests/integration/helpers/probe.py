#!/usr/bin/env python3
"""probe.py - one network or privilege probe from inside a sandbox, for
the moat run / attach / boundary tests.  Prints KEY=VALUE lines (KEY
prefixed with --tag TAG_ if given); never raises; every socket operation
has a timeout.  Python standard library only.

usage: probe.py [--tag TAG] PROBE ARGS...

  proxyget URL            urllib GET through the proxy variables:
                          status=, origin= (X-Origin-Name), reason=
                          (X-Moat-Reason)
  raw HOST PORT [HOSTHDR] plain TCP, ignoring any proxy: HTTP GET with
                          Host: HOSTHDR; status=, origin=, error=
  connect HOST PORT       TCP connect only: result=ok|<errno name>
  resolve NAME            getaddrinfo: result=ok addrs=... | error
  udp HOST PORT           sendto one datagram: result=ok|<errno name>
  ping HOST               an ICMP echo (ping socket, else raw socket):
                          result=ok|<errno name>|timeout
  rawsock                 socket(AF_INET, SOCK_RAW): result=ok|<errno>
  packetsock              socket(AF_PACKET, SOCK_RAW): result=...
  unixconnect PATH        connect to a Unix socket: result=...
  status                  uid=, nonewprivs=, capeff= (of this process)
  env                     the proxy variables: http_proxy= ...
"""
import errno
import os
import socket
import struct
import sys
import urllib.request

TIMEOUT = 5


def out(key, val):
    print("%s%s=%s" % (TAG, key, val))


def ename(e):
    return errno.errorcode.get(e.errno, str(e.errno)) if getattr(
        e, "errno", None) else type(e).__name__


def p_proxyget(url):
    try:
        r = urllib.request.urlopen(url, timeout=TIMEOUT)
        out("status", r.status)
        out("origin", r.headers.get("X-Origin-Name", ""))
    except urllib.error.HTTPError as e:
        out("status", e.code)
        out("reason", e.headers.get("X-Moat-Reason", ""))
    except Exception as e:  # noqa: BLE001 - any failure is a result
        out("status", "none")
        out("error", ename(getattr(e, "reason", e)) if isinstance(
            getattr(e, "reason", None), OSError) else type(e).__name__)


def p_raw(host, port, hosthdr=None):
    try:
        s = socket.create_connection((host, int(port)), timeout=TIMEOUT)
        s.sendall(("GET /probe HTTP/1.1\r\nHost: %s\r\nConnection: close"
                   "\r\n\r\n" % (hosthdr or host)).encode())
        data = b""
        while len(data) < 65536:
            b = s.recv(65536)
            if not b:
                break
            data += b
        s.close()
    except OSError as e:
        out("status", "none")
        out("error", ename(e))
        return
    head = data.partition(b"\r\n\r\n")[0].decode("latin-1").split("\r\n")
    parts = head[0].split(" ")
    out("status", parts[1] if len(parts) > 1 else "none")
    for line in head[1:]:
        k, _, v = line.partition(":")
        if k.lower() == "x-origin-name":
            out("origin", v.strip())
        if k.lower() == "x-moat-reason":
            out("reason", v.strip())


def p_connect(host, port):
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.settimeout(TIMEOUT)
    try:
        s.connect((host, int(port)))
        out("result", "ok")
    except socket.timeout:
        out("result", "timeout")
    except OSError as e:
        out("result", ename(e))
    finally:
        s.close()


def p_resolve(name):
    try:
        addrs = sorted({a[4][0] for a in socket.getaddrinfo(
            name, 80, type=socket.SOCK_STREAM)})
        out("result", "ok")
        out("addrs", ",".join(addrs))
    except socket.gaierror as e:
        out("result", "gaierror")
        out("error", e.strerror)


def p_udp(host, port):
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_DGRAM)
    try:
        s.sendto(b"moat-probe", (host, int(port)))
        out("result", "ok")
    except OSError as e:
        out("result", ename(e))
    finally:
        s.close()


def p_ping(host):
    pkt = struct.pack("!BBHHH", 8, 0, 0, 0x6d6f, 1) + b"moat-probe"
    for typ in (socket.SOCK_DGRAM, socket.SOCK_RAW):
        try:
            s = socket.socket(socket.AF_INET, typ, socket.IPPROTO_ICMP)
        except OSError as e:
            last = ename(e)
            continue
        s.settimeout(2)
        try:
            s.sendto(pkt, (host, 0))
            s.recv(1024)
            out("result", "ok")
        except socket.timeout:
            out("result", "timeout")
        except OSError as e:
            out("result", ename(e))
        finally:
            s.close()
        return
    out("result", last)


def p_sock(fam, typ, proto=0):
    try:
        s = socket.socket(fam, typ, proto)
        s.close()
        out("result", "ok")
    except OSError as e:
        out("result", ename(e))


def p_unixconnect(path):
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    except OSError as e:    # moat run's filter: EPERM
        out("result", ename(e))
        return
    s.settimeout(TIMEOUT)
    try:
        s.connect(path)
        out("result", "ok")
    except OSError as e:
        out("result", ename(e))
    finally:
        s.close()


def p_status():
    out("uid", os.getuid())
    with open("/proc/self/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k == "NoNewPrivs":
                out("nonewprivs", v.strip())
            if k == "CapEff":
                out("capeff", v.strip())


def p_env():
    for k in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy",
              "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy"):
        out(k, os.environ.get(k, ""))


def main():
    global TAG
    args = sys.argv[1:]
    TAG = ""
    if args[:1] == ["--tag"]:
        TAG, args = args[1] + "_", args[2:]
    if not args:
        sys.exit(__doc__)
    probe, rest = args[0], args[1:]
    table = {
        "proxyget": p_proxyget, "raw": p_raw, "connect": p_connect,
        "resolve": p_resolve, "udp": p_udp, "ping": p_ping,
        "unixconnect": p_unixconnect, "status": p_status, "env": p_env,
        "rawsock": lambda: p_sock(socket.AF_INET, socket.SOCK_RAW,
                                  socket.IPPROTO_ICMP),
        "packetsock": lambda: p_sock(socket.AF_PACKET, socket.SOCK_RAW),
    }
    if probe not in table:
        sys.exit("probe.py: unknown probe %s" % probe)
    table[probe](*rest)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
