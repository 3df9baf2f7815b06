#!/bin/bash
# t_run_veth.sh - `moat run --mode veth` (root): the checks of
# t_run_held.sh with a veth gateway instead of held sockets.  The
# sandbox's eth0 (10.203.X.2) routes everything to the host side
# (10.203.X.1, in the moat namespace), whose table hands TCP and DNS to
# moatd's listeners there and drops the rest; after the run neither the
# veth nor either table remains.
MT_RUN_MODE=veth
. "$(dirname "$0")/t_run_held.sh"
