/*
 * moat-ca - the `moat ca` commands (creating moatd's CA), a program of
 * their own so that moat, which starts every sandbox, does not load
 * OpenSSL.  moat runs it from beside itself or from libexecdir, with
 * argv[0] "ca"; see certs_cmd_ca() and moat(1).
 */
#include "config.h"

#include "certs/certs.h"

int
main(int argc, char *argv[])
{
	return certs_cmd_ca(argc, argv);
}
