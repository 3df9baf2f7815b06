#!/usr/bin/env python3
"""pypi_index.py - a PyPI simple index of one wheel, for pip in the tests.

    pypi_index.py DIR

Writes DIR/files/moat_test_pkg-1.0-py3-none-any.whl (a package
"moat-test-pkg" whose module says VALUE = 'moat') and
DIR/simple/moat-test-pkg/index.html naming it with its sha256, so that
an origin serving DIR (origin.py --root) is an index pip installs from.
"""

import base64
import hashlib
import os
import sys
import zipfile

w = sys.argv[1]
for d in ("files", os.path.join("simple", "moat-test-pkg")):
    os.makedirs(os.path.join(w, d), exist_ok=True)
whl = "moat_test_pkg-1.0-py3-none-any.whl"
files = {
    "moat_test_pkg/__init__.py": "VALUE = 'moat'\n",
    "moat_test_pkg-1.0.dist-info/METADATA":
        "Metadata-Version: 2.1\nName: moat-test-pkg\nVersion: 1.0\n",
    "moat_test_pkg-1.0.dist-info/WHEEL":
        "Wheel-Version: 1.0\nGenerator: moat-test\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
}
record = []
for name, text in files.items():
    d = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest())
    record.append("%s,sha256=%s,%d" % (name, d.rstrip(b"=").decode(),
                                       len(text)))
record.append("moat_test_pkg-1.0.dist-info/RECORD,,")
with zipfile.ZipFile(os.path.join(w, "files", whl), "w") as z:
    for name, text in files.items():
        z.writestr(name, text)
    z.writestr("moat_test_pkg-1.0.dist-info/RECORD", "\n".join(record) + "\n")
sha = hashlib.sha256(open(os.path.join(w, "files", whl), "rb").read())
with open(os.path.join(w, "simple", "moat-test-pkg", "index.html"), "w") as f:
    f.write('<!DOCTYPE html><html><body><a href="../../files/%s#sha256=%s">'
            '%s</a></body></html>\n' % (whl, sha.hexdigest(), whl))
