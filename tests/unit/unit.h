/*
 * unit.h - registration of moat's CUnit suites.  Each tests/unit/test_X.c
 * defines test_X_register(), which adds its suite(s) to the registry.
 */
#ifndef MOAT_TESTS_UNIT_H
#define MOAT_TESTS_UNIT_H

#include <sys/resource.h>

#include <stddef.h>
#include <stdint.h>

#include <CUnit/CUnit.h>

#include "policy/policy.h"

void	test_addr_register(void);
void	test_config_register(void);
void	test_config_apart_register(void);
void	test_policy_register(void);
void	test_http_parse_register(void);
void	test_socks5_parse_register(void);
void	test_proto_peek_register(void);
void	test_dns_parse_register(void);
void	test_tls_parse_register(void);
void	test_certs_register(void);
void	test_audit_register(void);
void	test_secretscan_register(void);
void	test_inject_register(void);
void	test_uppool_register(void);
void	test_nsh_proto_register(void);
void	test_geo_register(void);
void	test_tunnel_register(void);
void	test_upstream_register(void);
void	test_dnsbudget_register(void);
void	test_unixfilter_register(void);
void	test_unixsuper_register(void);
void	test_refusals_register(void);
void	test_audit_tool_register(void);
void	test_metrics_register(void);
void	test_drops_register(void);
void	test_trace_register(void);
void	test_status_register(void);
void	test_quota_register(void);

/* test_config.c: the text of error vector i, or NULL past the last. */
const char	*unit_config_vector(size_t i);

/*
 * test_policy.c: decides for name and/or addr (any spelling; NULL for
 * none) at port, with method and path (NULL for none), into *d.
 */
enum policy_verdict unit_policy_decide(const struct moat_config *c,
	    const char *name, const char *addr, uint16_t port,
	    const char *method, const char *path, struct policy_decision *d);

/*
 * main.c: runs this process out of descriptors (the soft limit lowered to
 * just above the highest one open, the rest filled with /dev/null), so
 * that the next socket(2) or pipe2(2) says EMFILE; 0, or -1 if that could
 * not be arranged.  unit_fdfill_end gives everything back.
 */
struct unit_fdfill {
	struct rlimit	 saved;
	int		 fds[1024];
	size_t		 n;
};
int	unit_fdfill_start(struct unit_fdfill *f);
void	unit_fdfill_end(struct unit_fdfill *f);

#endif
