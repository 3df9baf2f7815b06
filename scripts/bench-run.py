#!/usr/bin/env python3
"""bench-run.py - `moat run -- /bin/true` beside bwrap, interleaved run by run.

    python3 scripts/bench-run.py [-n RUNS] [--moat DIR] [--skip N]

hyperfine runs one command's block after the other's, and this machine's
speed drifts from minute to minute; alternating the two commands run by
run (moat, bwrap; bwrap, moat; ...) puts the drift on both.  Between two
runs it pauses (--gap-ms, default 50): the kernel frees a network
namespace after the process that held it is gone, in a worker thread,
and without the pause each run would pay for the previous command's
clean-up (bwrap, run right after moat, would pay for moat's).  Prints
the median wall time of each and their ratio.

--moat DIR is a build directory (default build/bench, which
scripts/bench.sh makes); its moatd and moat-netns are used through
MOAT_MOATD and MOAT_NETNS.  Needs root (moat run's default network) and
bwrap.  Every run is bounded (30 s, by SIGALRM: subprocess's own
timeout polls in sleeps that doubled the figures) and the count is fixed.
"""
import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time


def main():
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-n", type=int, default=150, help="runs of each")
    ap.add_argument("--moat", default=os.path.join(here, "build", "bench"),
                    help="build directory with moat, moatd, moat-netns")
    ap.add_argument("--skip", type=int, default=5,
                    help="first runs of each left out (warm-up)")
    ap.add_argument("--gap-ms", type=int, default=50,
                    help="pause between runs, untimed (0: none)")
    a = ap.parse_args()
    moat = os.path.join(a.moat, "launcher", "moat")
    if not os.access(moat, os.X_OK):
        sys.exit(f"bench-run.py: no {moat} (run scripts/bench.sh, or "
                 "give --moat DIR)")
    if shutil.which("bwrap") is None:
        sys.exit("bench-run.py: bwrap is not installed (apt-get install "
                 "bubblewrap)")
    if a.n <= a.skip:
        sys.exit("bench-run.py: -n must be larger than --skip")
    env = dict(os.environ,
               MOAT_MOATD=os.path.join(a.moat, "proxy", "moatd"),
               MOAT_NETNS=os.path.join(a.moat, "netns-helper", "moat-netns"))
    cmds = {
        "moat run": [moat, "run", "--no-tty", "--", "/bin/true"],
        "bwrap": ["bwrap", "--unshare-all", "--die-with-parent",
                  "--ro-bind", "/", "/", "true"],
    }
    runs = {k: [] for k in cmds}
    names = list(cmds)

    def hung(signum, frame):
        sys.exit("bench-run.py: a run took more than 30 s")

    signal.signal(signal.SIGALRM, hung)
    for i in range(a.n):
        for k in (names if i % 2 == 0 else names[::-1]):
            signal.alarm(30)
            t = time.perf_counter()
            r = subprocess.run(cmds[k], env=env, stdout=subprocess.DEVNULL)
            runs[k].append((time.perf_counter() - t) * 1e3)
            signal.alarm(0)
            if r.returncode != 0:
                sys.exit(f"bench-run.py: {k} exited with {r.returncode}")
            if a.gap_ms > 0:
                time.sleep(a.gap_ms / 1000)
        if (i + 1) % 50 == 0:
            print(f"  {i + 1}/{a.n}", file=sys.stderr)
    med = {k: statistics.median(v[a.skip:]) for k, v in runs.items()}
    n = a.n - a.skip
    for k in names:
        print(f"{k:9} median {med[k]:6.2f} ms  (n={n})")
    print(f"ratio     {med['moat run'] / med['bwrap']:.2f} x bwrap")


if __name__ == "__main__":
    main()
