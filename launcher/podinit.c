/*
 * podinit.c - `moat pod-init`: the init step of the per-pod pattern
 * (conf/kubernetes/per-pod.yaml).  A pod's containers share one network
 * namespace, so the moatd sidecar runs inside the namespace it confines:
 * this installs the table `moat attach` installs there (TCP that is not
 * to loopback redirected to moatd's transparent listener, DNS to its DNS
 * listener, everything else dropped, packet sockets' frames too), with
 * one exemption: what the sockets of moatd's uid send passes, so that
 * moatd reaches the upstreams its policy allows.  Then it exits and the
 * table stays, for the pod's lifetime.
 *
 * What it is not: a way out for the application.  The exemption is by
 * socket owner (nftables "meta skuid"), which the kernel sets from the
 * process that made the socket: the application runs as another uid, with
 * no capability (no CAP_SETUID to become moatd's uid, no CAP_NET_ADMIN to
 * change the table, no CAP_NET_RAW for packet sockets) and no_new_privs.
 * uid 0 is refused as the exempt uid.  moatd serves its own listeners on
 * the pod's loopback (its config), so nothing is registered here.
 *
 * Exit status: 0 the namespace is behind moatd; 1 it could not be (what
 * was added is removed again); 2 usage, or not root.
 */
#include "config.h"

#include <sys/ioctl.h>
#include <sys/stat.h>
#include <linux/nsfs.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "launcher/launcher.h"

#define PODINIT_NETNS		"/proc/self/ns/net"
#define PODINIT_DNS_PORT	53
#define PODINIT_TRANSPARENT_PORT 15001
#define PODINIT_EXIT_OK		0
#define PODINIT_EXIT_FAIL	1
#define PODINIT_EXIT_USAGE	2

struct podinit {
	const char	*netns;
	long long	 uid;		/* --exempt-uid, or -1 */
	unsigned	 dns_port, transparent_port;
	bool		 quiet;
};

static void	podinit_usage(FILE *f);
static int	podinit_number(const char *opt, const char *arg, long long max,
		    long long *v);
static int	podinit_parse(struct podinit *p, int argc, char *argv[]);
static int	podinit_self(int fd, bool *self, char *err, size_t errlen);

static void
podinit_usage(FILE *f)
{
	fprintf(f,
	    "usage: moat pod-init --exempt-uid UID [--dns-port N]\n"
	    "                     [--transparent-port N] [--netns PATH] [-q]\n"
	    "\n"
	    "Puts a network namespace whose moatd runs inside it (a pod's,\n"
	    "with moatd as a sidecar) behind that moatd: TCP that is not to\n"
	    "loopback goes to its transparent listener, DNS to its DNS\n"
	    "listener, everything else is dropped; the sockets of uid UID\n"
	    "(moatd's own, and nothing else) pass.  The table stays when it\n"
	    "exits.  Root only (CAP_NET_ADMIN, CAP_SETUID, CAP_SETGID,\n"
	    "CAP_SETPCAP suffice).\n"
	    "\n"
	    "  --exempt-uid UID        the uid moatd runs as (not 0)\n"
	    "  --dns-port N            its DNS listener on 127.0.0.1 and ::1\n"
	    "                          (default %d)\n"
	    "  --transparent-port N    its transparent listener on 127.0.0.1\n"
	    "                          and ::1 (default %d)\n"
	    "  --netns PATH            the namespace (default %s, the one\n"
	    "                          this runs in)\n"
	    "  -q, --quiet             print nothing when it worked\n"
	    "  -h, --help              this text\n", PODINIT_DNS_PORT,
	    PODINIT_TRANSPARENT_PORT, PODINIT_NETNS);
}

/* A decimal number 1..max of option opt.  0, or -1 (said). */
static int
podinit_number(const char *opt, const char *arg, long long max, long long *v)
{
	char	*end;

	errno = 0;
	*v = strtoll(arg, &end, 10);
	if (errno != 0 || end == arg || *end != '\0' || *v < 1 || *v > max) {
		fprintf(stderr, "moat pod-init: %s %s: not a number from 1 to "
		    "%lld\n", opt, arg, max);
		return -1;
	}
	return 0;
}

static int
podinit_parse(struct podinit *p, int argc, char *argv[])
{
	enum { OPT_UID = 256, OPT_DNS, OPT_TRANSPARENT, OPT_NETNS };
	static const struct option	opts[] = {
		{ "exempt-uid", required_argument, NULL, OPT_UID },
		{ "dns-port", required_argument, NULL, OPT_DNS },
		{ "transparent-port", required_argument, NULL,
		    OPT_TRANSPARENT },
		{ "netns", required_argument, NULL, OPT_NETNS },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	long long			v;
	int				ch;

	optind = 1;
	while ((ch = getopt_long(argc, argv, "qh", opts, NULL)) != -1) {
		switch (ch) {
		case OPT_UID:
			/* uid 0: every root process would pass; -1 is none. */
			if (podinit_number("--exempt-uid", optarg, 4294967294LL,
			    &p->uid) == -1)
				return -1;
			break;
		case OPT_DNS:
			if (podinit_number("--dns-port", optarg, 65535,
			    &v) == -1)
				return -1;
			p->dns_port = (unsigned)v;
			break;
		case OPT_TRANSPARENT:
			if (podinit_number("--transparent-port", optarg, 65535,
			    &v) == -1)
				return -1;
			p->transparent_port = (unsigned)v;
			break;
		case OPT_NETNS:
			p->netns = optarg;
			break;
		case 'q':
			p->quiet = true;
			break;
		case 'h':
			podinit_usage(stdout);
			exit(PODINIT_EXIT_OK);
		default:
			podinit_usage(stderr);
			return -1;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "moat pod-init: unexpected argument %s\n",
		    argv[optind]);
		return -1;
	}
	if (p->uid == -1) {
		fprintf(stderr, "moat pod-init: --exempt-uid UID is required: "
		    "the uid moatd runs as in the pod\n");
		podinit_usage(stderr);
		return -1;
	}
	if (p->dns_port == p->transparent_port) {
		fprintf(stderr, "moat pod-init: --dns-port and "
		    "--transparent-port must differ\n");
		return -1;
	}
	if (geteuid() != 0) {
		fprintf(stderr, "moat pod-init: needs root (it programs the "
		    "namespace's nftables)\n");
		return -1;
	}
	return 0;
}

/* Whether fd is the network namespace this process runs in. */
static int
podinit_self(int fd, bool *self, char *err, size_t errlen)
{
	struct stat	a, b;

	if (stat(PODINIT_NETNS, &a) == -1 || fstat(fd, &b) == -1) {
		snprintf(err, errlen, "%s: %s", PODINIT_NETNS, strerror(errno));
		return -1;
	}
	*self = a.st_dev == b.st_dev && a.st_ino == b.st_ino;
	return 0;
}

int
podinit_main(int argc, char *argv[])
{
	struct podinit		 p;
	struct nsh_client	*nsh = NULL;
	char			 err[MOAT_ERR_MAX], e2[MOAT_ERR_MAX];
	bool			 self;
	int			 fd = -1, rc = PODINIT_EXIT_FAIL;

	memset(&p, 0, sizeof(p));
	p.netns = PODINIT_NETNS;
	p.uid = -1;
	p.dns_port = PODINIT_DNS_PORT;
	p.transparent_port = PODINIT_TRANSPARENT_PORT;
	if (podinit_parse(&p, argc, argv) == -1)
		return PODINIT_EXIT_USAGE;
	if ((fd = open(p.netns, O_RDONLY | O_CLOEXEC)) == -1) {
		snprintf(err, sizeof(err), "%s: %s", p.netns, strerror(errno));
		goto fail;
	}
	if (ioctl(fd, NS_GET_NSTYPE) != CLONE_NEWNET) {
		snprintf(err, sizeof(err), "%s is not a network namespace",
		    p.netns);
		goto fail;
	}
	if (podinit_self(fd, &self, err, sizeof(err)) == -1 ||
	    (nsh = nsh_client_spawn(err, sizeof(err))) == NULL)
		goto fail;
	if (nsh_client_pod(nsh, fd, self, (uint16_t)p.dns_port,
	    (uint16_t)p.transparent_port, (uint32_t)p.uid, err,
	    sizeof(err)) == -1) {
		/* Nothing half done stays: the namespace is as it was. */
		if (nsh_client_teardown(nsh, e2, sizeof(e2)) == -1)
			fprintf(stderr, "moat pod-init: teardown: %s\n", e2);
		goto fail;
	}
	if (!p.quiet)
		printf("moat pod-init: %s is behind moatd: TCP to port %u, DNS "
		    "to port %u of its loopback, uid %lld exempt\n", p.netns,
		    p.transparent_port, p.dns_port, p.uid);
	rc = PODINIT_EXIT_OK;
	goto out;
 fail:
	fprintf(stderr, "moat pod-init: %s\n", err);
 out:
	nsh_client_close(nsh);
	if (fd != -1)
		close(fd);
	return rc;
}
