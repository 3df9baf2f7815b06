/*
 * policyio.h - what policy/ may not do, done for its callers: open the
 * GeoIP databases a config names and load libidn2.
 *
 * moatd, the moat CLI and the unit tests link it; the fuzzers do not call
 * it (the config fuzzer loads configs without a GeoIP loader, so it opens
 * no file).  See the contract at the top of policy/policy.h.
 */
#ifndef MOAT_POLICYIO_H
#define MOAT_POLICYIO_H

#include <stddef.h>

#include "policy/policy.h"

/*
 * The loaders moatd and moat hand to policy_config_load_opts(): each
 * GeoIP database is mapped from a private copy of its file in a memfd
 * sealed against every change, so a file truncated or rewritten in place
 * under the mapping changes nothing (no SIGBUS, no answer changing
 * between two lookups).  Only a regular file of at most 2 GiB is read.
 */
extern const struct policy_load_opts	policyio_load_opts;

/*
 * Loads libidn2 (dlopen, once per process, never unloaded) and hands it
 * to the policy (policy_idn_set()), from the main thread before any other
 * thread uses the policy.  0, or -1 if it cannot be loaded: then a name
 * that needs IDNA is refused.
 */
int	policyio_idn_load(void);
/*
 * policyio_idn_load() if text may name a host that needs IDNA
 * (policy_idn_wanted()): for moat, whose start-up a load would slow.
 */
void	policyio_idn_for(const char *text, size_t len);

#endif
