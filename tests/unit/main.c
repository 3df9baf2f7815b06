/*
 * main.c - runs every CUnit suite of moat.  With arguments, runs only the
 * suites whose names are given.  Exit status 0 only if every test passed.
 */
#include <sys/resource.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <CUnit/Basic.h>

#include "policyio/policyio.h"
#include "tests/unit/unit.h"

/*
 * Lowers the soft descriptor limit to just above the highest descriptor
 * open, then opens /dev/null until EMFILE.  Returns 0 when the process is
 * out of descriptors, -1 if that could not be arranged.
 */
int
unit_fdfill_start(struct unit_fdfill *f)
{
	struct rlimit	 rl;
	struct dirent	*de;
	DIR		*d;
	int		 fd, top = 0;

	f->n = 0;
	if (getrlimit(RLIMIT_NOFILE, &f->saved) == -1 ||
	    (d = opendir("/proc/self/fd")) == NULL)
		return -1;
	while ((de = readdir(d)) != NULL)
		if ((fd = atoi(de->d_name)) > top)
			top = fd;	/* includes the DIR's own: freed below */
	closedir(d);
	rl = f->saved;
	rl.rlim_cur = (rlim_t)top + 1;
	if (rl.rlim_cur > f->saved.rlim_cur || setrlimit(RLIMIT_NOFILE,
	    &rl) == -1)
		return -1;
	while (f->n < sizeof(f->fds) / sizeof(f->fds[0])) {
		if ((fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) == -1)
			return errno == EMFILE ? 0 : -1;
		f->fds[f->n++] = fd;
	}
	return -1;
}

void
unit_fdfill_end(struct unit_fdfill *f)
{
	while (f->n > 0)
		close(f->fds[--f->n]);
	(void)setrlimit(RLIMIT_NOFILE, &f->saved);
}

int
main(int argc, char *argv[])
{
	unsigned int	failed;
	int		i;

	if (CU_initialize_registry() != CUE_SUCCESS) {
		fprintf(stderr, "unit: cannot initialise CUnit: %s\n",
		    CU_get_error_msg());
		return 1;
	}
	/* As moatd does before it loads a config: IDNA names are tested. */
	if (policyio_idn_load() == -1) {
		fprintf(stderr, "unit: cannot load libidn2 (IDNA)\n");
		return 1;
	}
	test_addr_register();
	test_config_register();
	test_config_apart_register();
	test_policy_register();
	test_http_parse_register();
	test_socks5_parse_register();
	test_proto_peek_register();
	test_dns_parse_register();
	test_tls_parse_register();
	test_certs_register();
	test_audit_register();
	test_secretscan_register();
	test_inject_register();
	test_uppool_register();
	test_nsh_proto_register();
	test_geo_register();
	test_tunnel_register();
	test_dnsbudget_register();
	test_quota_register();
	test_upstream_register();
	test_unixfilter_register();
	test_unixsuper_register();
	test_refusals_register();
	test_audit_tool_register();
	test_metrics_register();
	test_drops_register();
	test_trace_register();
	test_status_register();
	if (CU_get_error() != CUE_SUCCESS) {
		fprintf(stderr, "unit: cannot register suites: %s\n",
		    CU_get_error_msg());
		CU_cleanup_registry();
		return 1;
	}

	CU_basic_set_mode(CU_BRM_NORMAL);
	if (argc == 1)
		CU_basic_run_tests();
	for (i = 1; i < argc; i++) {
		CU_pSuite s = CU_get_suite(argv[i]);

		if (s == NULL) {
			fprintf(stderr, "unit: no suite named %s\n", argv[i]);
			CU_cleanup_registry();
			return 2;
		}
		CU_basic_run_suite(s);
	}
	failed = CU_get_number_of_failures() +
	    CU_get_number_of_tests_failed() + CU_get_number_of_suites_failed();
	CU_cleanup_registry();
	return failed == 0 ? 0 : 1;
}
