/*
 * reasons_table.c - prints policy.c's reason table, one reason a line:
 * CODE TAB HTTP-STATUS TAB SOCKS5-REPLY (0xNN) TAB SENTENCE, in enum
 * order.  HTTP status 0: the reason never ends in an HTTP reply of
 * moatd's.  tests/reasons.test holds the documentation against it.
 */
#include "config.h"

#include <stdio.h>

#include "policy/policy.h"

int
main(void)
{
	const struct policy_reason_info	*ri;
	int				 i;

	for (i = 0; i < POLICY_R__COUNT; i++) {
		ri = policy_reason_info((enum policy_reason)i);
		printf("%s\t%d\t0x%02x\t%s\n", ri->code, ri->http,
		    (unsigned)ri->socks5, ri->text);
	}
	return fflush(stdout) == 0 ? 0 : 1;
}
