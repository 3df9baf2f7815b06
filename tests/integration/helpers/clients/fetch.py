#!/usr/bin/env python3
"""fetch.py - one Python HTTP client library as a workload uses it, for
t_clients.sh.

  fetch.py LIB OUTDIR TAG URL AUTH [TAG URL AUTH...]

LIB is urllib, requests, httpx or aiohttp, each used the way its users
use it: default settings, no proxy or trust argument (so the proxy and
bundle variables of the environment are what it takes, or not).  For
each TAG, a GET of URL, with "Authorization: AUTH" unless AUTH is "-";
prints TAG.status=CODE and TAG.reason=X-MOAT-REASON (empty if none), or
TAG.status=ERROR and TAG.error=TEXT, and writes the body to OUTDIR/TAG.body.
The first line is version=LIB VERSION.
"""

import asyncio
import os
import sys


def out(k, v):
    print("%s=%s" % (k, str(v).replace("\n", " ")[:300]), flush=True)


def get_urllib(url, hdrs):
    import urllib.error
    import urllib.request
    req = urllib.request.Request(url, headers=hdrs)
    try:
        r = urllib.request.urlopen(req, timeout=15)
    except urllib.error.HTTPError as e:
        r = e
    return r.status, r.headers.get("X-Moat-Reason", ""), r.read()


def get_requests(url, hdrs):
    import requests
    r = requests.get(url, headers=hdrs, timeout=15)
    return r.status_code, r.headers.get("X-Moat-Reason", ""), r.content


def get_httpx(url, hdrs):
    import httpx
    with httpx.Client(timeout=15) as c:
        r = c.get(url, headers=hdrs)
    return r.status_code, r.headers.get("X-Moat-Reason", ""), r.content


def get_aiohttp(url, hdrs):
    import aiohttp

    async def one():
        t = aiohttp.ClientTimeout(total=15)
        async with aiohttp.ClientSession(timeout=t) as s:
            async with s.get(url, headers=hdrs) as r:
                return (r.status, r.headers.get("X-Moat-Reason", ""),
                        await r.read())
    return asyncio.run(one())


def version(lib):
    if lib == "urllib":
        return "Python %d.%d.%d" % sys.version_info[:3]
    return "%s %s" % (lib, __import__(lib).__version__)


def main():
    if len(sys.argv) < 3 or (len(sys.argv) - 3) % 3:
        sys.exit("usage: fetch.py LIB OUTDIR TAG URL AUTH...")
    lib, outdir = sys.argv[1], sys.argv[2]
    get = globals().get("get_" + lib)
    if get is None:
        sys.exit("fetch.py: unknown library %s" % lib)
    out("version", version(lib))
    args = sys.argv[3:]
    for i in range(0, len(args), 3):
        tag, url, auth = args[i:i + 3]
        hdrs = {} if auth == "-" else {"Authorization": auth}
        try:
            status, reason, body = get(url, hdrs)
        except Exception as e:  # what the workload would see
            out(tag + ".status", "ERROR")
            out(tag + ".error", "%s: %s" % (type(e).__name__, e))
            continue
        with open(os.path.join(outdir, tag + ".body"), "wb") as f:
            f.write(body)
        out(tag + ".status", status)
        out(tag + ".reason", reason)


if __name__ == "__main__":
    main()
