/*
 * attach.c - `moat attach`: put an existing network namespace (a Docker
 * container's, a gVisor or microVM sandbox's, one made with `ip netns`)
 * behind a running moatd, until told to stop.
 *
 * What it is: the same network set-up as `moat run`, minus the process
 * creation.  moat-netns joins the namespace named by --netns (a path such
 * as /proc/PID/ns/net or /run/netns/NAME), installs moat's table there
 * (everything that is not loopback or redirected to moatd is dropped; the
 * namespace's own interfaces stay as they are) and, in held mode, creates
 * the listening sockets inside it; moat attach registers them with moatd
 * and waits.  On SIGTERM, SIGINT or SIGHUP it unregisters and removes
 * everything it added.
 *
 * Fail closed: if moatd goes away, moat attach exits and leaves the
 * namespace's table in place (no network at all); if moat attach is
 * killed, the same.  `moat-netns cleanup --netns PATH` removes a table
 * whose owner is gone.
 *
 * With --listen instead of --netns there is no namespace to program:
 * moat attach makes the sockets itself (a Unix socket, or a loopback
 * port, where it runs: attach_listen.c) and registers them, for a
 * program that relays its sandbox's traffic to moatd (srt's mitmProxy,
 * parentProxy or httpProxyPort).  It removes its Unix sockets at exit.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <linux/nsfs.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "launcher/launcher.h"
#include "launcher/refusals.h"

#define ATTACH_DEFAULT_ADMIN	"/run/moat/admin.sock"
#define ATTACH_LISTEN_MAX	8		/* --listen sockets */
#define ATTACH_LISTEN_MODE	0600		/* --listen-mode default */
#define ATTACH_LISTEN_PROTO	"http+socks5"	/* what they serve */

struct attach {
	struct runconf		 rc;
	const char		*netns;		/* --netns PATH */
	int			 ready_fd;	/* --ready-fd, or -1 */
	const char		*env_file;	/* --env-file, or NULL */
	const char		*bundle_file;	/* --trust-bundle, or NULL */
	struct attach_listen	 listen[ATTACH_LISTEN_MAX]; /* --listen */
	size_t			 nlisten;
	int			 listen_mode;	/* --listen-mode */
	bool			 mode_given;
	uid_t			 uid;		/* --owner, or (uid_t)-1 */
	gid_t			 gid;
	const char		*connect_refusal; /* --connect-refusal, or
						   NULL: moatd's default */
	const char		*store_file;	/* --trust-store, or NULL */
	bool			 verbose;	/* -v: allowed traffic too */
	bool			 quiet;		/* -q: no refusal lines */
	int			 nsfd;
	int			 sfd;
	unsigned		 veth_index;	/* --mode veth: its subnet */
	char			 veth_ifname[NSH_IFNAME_MAX];
	struct nsh_client	*nsh;
	struct admin_client	*admin;
	struct refusals		*rf;		/* prints the refusals */
	bool			 watching;	/* moatd sends them */
};

static void	attach_usage(FILE *f);
static int	attach_parse(struct attach *a, int argc, char *argv[]);
static int	attach_listen_only(const struct attach *a);
static int	attach_setup(struct attach *a, char *err, size_t errlen);
static int	attach_wait(struct attach *a);
static void	attach_free(struct attach *a);

static void
attach_usage(FILE *f)
{
	fprintf(f,
	    "usage: moat attach --netns PATH [OPTIONS]\n"
	    "       moat attach --listen ADDR [--listen ADDR...] [OPTIONS]\n"
	    "\n"
	    "Puts the network namespace PATH (/proc/PID/ns/net,\n"
	    "/run/netns/NAME) behind a running moatd until SIGTERM, SIGINT\n"
	    "or SIGHUP, then removes what it added (root only); or, with\n"
	    "--listen, serves sockets of its own through moatd, for a relay\n"
	    "such as srt (no namespace, no root needed beyond moatd's admin\n"
	    "socket).\n"
	    "\n"
	    "  --netns PATH           the namespace\n"
	    "  --mode held|veth       listening sockets inside the namespace\n"
	    "                         (default) or a veth gateway to this one\n"
	    "  --listen ADDR          serve unix:/PATH or a loopback\n"
	    "                         127.0.0.1:PORT or [::1]:PORT (HTTP proxy,\n"
	    "                         CONNECT and SOCKS5 on one socket), instead\n"
	    "                         of --netns; a Unix socket is removed at\n"
	    "                         exit\n"
	    "  --listen-mode MODE     a --listen Unix socket's permissions\n"
	    "                         (default 0600)\n"
	    "  --owner USER[:GROUP]   owner of the --listen Unix sockets and of\n"
	    "                         the --env-file and --trust-bundle files\n"
	    "  --connect-refusal status|in-tunnel\n"
	    "                         how a refused CONNECT is answered: its\n"
	    "                         403 (default), or inside the tunnel, so\n"
	    "                         that clients and relays show the reason\n"
	    "                         (needs moatd's CA)\n"
	    "  --moatd ADDR           moatd's admin socket (unix:PATH or\n"
	    "                         PATH; default %s)\n"
	    "  --policy FILE, --allow HOST[:PORT], --allow-private CIDR\n"
	    "                         the sandbox's policy, as for moat run\n"
	    "  --audit-only           audit mode, as for moat run\n"
	    "  --name NAME            its name in the audit log "
	    "(attach-PID)\n"
	    "  --http-port, --socks-port, --dns-port, --transparent-port N\n"
	    "  --ready-fd N           write \"ready\" to descriptor N once "
	    "attached\n"
	    "  --env-file FILE        write the placeholders of the policy's\n"
	    "                         secrets there (VAR=PLACEHOLDER lines),\n"
	    "                         for the workload's environment\n"
	    "  --trust-bundle FILE    write the trust bundle there (moatd's CA\n"
	    "                         and the system's roots), for the\n"
	    "                         workload's SSL_CERT_FILE and friends\n"
	    "  --trust-store FILE     write the same as a PKCS12 trust store\n"
	    "                         there (no password), for Java's\n"
	    "                         javax.net.ssl.trustStore\n"
	    "  -q, --quiet            do not print the namespace's refused\n"
	    "                         requests, tunnels, DNS queries and\n"
	    "                         connections (default: one line each on\n"
	    "                         stderr, at most 10 a second, and a\n"
	    "                         summary at exit)\n"
	    "  -v, --verbose          print its allowed traffic too\n"
	    "  -h, --help             this text\n", ATTACH_DEFAULT_ADMIN);
}

static int
attach_parse(struct attach *a, int argc, char *argv[])
{
	enum {
		ATTACH_OPT_NETNS = RUNCONF_OPT__END,
		ATTACH_OPT_READY_FD,
		ATTACH_OPT_ENV_FILE,
		ATTACH_OPT_TRUST_BUNDLE,
		ATTACH_OPT_LISTEN,
		ATTACH_OPT_LISTEN_MODE,
		ATTACH_OPT_OWNER,
		ATTACH_OPT_CONNECT_REFUSAL,
		ATTACH_OPT_TRUST_STORE
	};
	static const struct option	opts[] = {
		RUNCONF_LONGOPTS,
		{ "netns", required_argument, NULL, ATTACH_OPT_NETNS },
		{ "ready-fd", required_argument, NULL, ATTACH_OPT_READY_FD },
		{ "env-file", required_argument, NULL, ATTACH_OPT_ENV_FILE },
		{ "trust-bundle", required_argument, NULL,
		    ATTACH_OPT_TRUST_BUNDLE },
		{ "listen", required_argument, NULL, ATTACH_OPT_LISTEN },
		{ "listen-mode", required_argument, NULL,
		    ATTACH_OPT_LISTEN_MODE },
		{ "owner", required_argument, NULL, ATTACH_OPT_OWNER },
		{ "connect-refusal", required_argument, NULL,
		    ATTACH_OPT_CONNECT_REFUSAL },
		{ "trust-store", required_argument, NULL,
		    ATTACH_OPT_TRUST_STORE },
		{ "quiet", no_argument, NULL, 'q' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	char				*end;
	long				 v;
	int				 ch;

	optind = 1;
	while ((ch = getopt_long(argc, argv, "qvh", opts, NULL)) != -1) {
		switch (ch) {
		case ATTACH_OPT_NETNS:
			a->netns = optarg;
			break;
		case ATTACH_OPT_ENV_FILE:
			a->env_file = optarg;
			break;
		case ATTACH_OPT_TRUST_BUNDLE:
			a->bundle_file = optarg;
			break;
		case ATTACH_OPT_LISTEN:
			if (a->nlisten == ATTACH_LISTEN_MAX) {
				fprintf(stderr, "moat attach: at most %d "
				    "--listen\n", ATTACH_LISTEN_MAX);
				return -1;
			}
			if (attach_listen_parse("moat attach", optarg,
			    &a->listen[a->nlisten]) == -1)
				return -1;
			a->nlisten++;
			break;
		case ATTACH_OPT_LISTEN_MODE:
			if (attach_mode_parse("moat attach", optarg,
			    &a->listen_mode) == -1)
				return -1;
			a->mode_given = true;
			break;
		case ATTACH_OPT_OWNER:
			if (attach_owner_parse("moat attach", optarg, &a->uid,
			    &a->gid) == -1)
				return -1;
			break;
		case ATTACH_OPT_CONNECT_REFUSAL:
			if (strcmp(optarg, "status") != 0 &&
			    strcmp(optarg, "in-tunnel") != 0) {
				fprintf(stderr, "moat attach: --connect-refusal "
				    "%s: want status or in-tunnel\n", optarg);
				return -1;
			}
			a->connect_refusal = optarg;
			break;
		case ATTACH_OPT_TRUST_STORE:
			a->store_file = optarg;
			break;
		case ATTACH_OPT_READY_FD:
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno != 0 || *end != '\0' || end == optarg ||
			    v < 0 || v > 65535 ||
			    fcntl((int)v, F_GETFD) == -1) {
				fprintf(stderr, "moat attach: --ready-fd %s: "
				    "not an open descriptor\n", optarg);
				return -1;
			}
			a->ready_fd = (int)v;
			break;
		case 'q':
			a->quiet = true;
			break;
		case 'v':
			a->verbose = true;
			break;
		case 'h':
			attach_usage(stdout);
			exit(0);
		case '?':
			attach_usage(stderr);
			return -1;
		default:
			if (ch >= RUNCONF_OPT_POLICY && ch < RUNCONF_OPT__END) {
				if (runconf_option(&a->rc, ch, optarg) == -1)
					return -1;
				break;
			}
			attach_usage(stderr);
			return -1;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "moat attach: unexpected argument %s\n",
		    argv[optind]);
		return -1;
	}
	if (a->quiet && a->verbose) {
		fprintf(stderr, "moat attach: -q and -v: choose one\n");
		return -1;
	}
	if ((a->netns == NULL) == (a->nlisten == 0)) {
		fprintf(stderr, "moat attach: give --netns PATH (a namespace "
		    "to put behind moatd) or --listen ADDR (sockets to "
		    "serve), not both\n");
		attach_usage(stderr);
		return -1;
	}
	if (a->nlisten > 0 && attach_listen_only(a) == -1)
		return -1;
	if (a->netns != NULL && a->mode_given) {
		fprintf(stderr, "moat attach: --listen-mode applies to --listen "
		    "unix:PATH\n");
		return -1;
	}
	if (a->netns != NULL && geteuid() != 0) {
		fprintf(stderr, "moat attach: needs root (it programs another "
		    "namespace's network)\n");
		return -1;
	}
	if (a->rc.moatd == NULL)
		a->rc.moatd = a->rc.moatd_path = ATTACH_DEFAULT_ADMIN;
	if (a->rc.name[0] == '\0')
		snprintf(a->rc.name, sizeof(a->rc.name), "attach-%ld",
		    (long)getpid());
	return runconf_finish(&a->rc);
}

/*
 * --listen takes no namespace: the options that shape one (--mode, the
 * ports of the sockets made in it) are mistakes there.  0 or -1.
 */
static int
attach_listen_only(const struct attach *a)
{
	struct runconf	d;

	runconf_init(&d, a->rc.cmd);
	if (a->rc.mode != d.mode || a->rc.http_port != d.http_port ||
	    a->rc.socks_port != d.socks_port || a->rc.dns_port != d.dns_port ||
	    a->rc.transparent_port != d.transparent_port) {
		fprintf(stderr, "moat attach: --mode and the --*-port options "
		    "apply to --netns; --listen names its sockets itself\n");
		return -1;
	}
	return 0;
}

/* Writes len bytes to path (replacing it), mode mode, owned by --owner. */
static int
attach_write(const struct attach *a, const char *path, const char *text,
    size_t len, mode_t mode, char *err, size_t errlen)
{
	ssize_t	w;
	size_t	off = 0;
	int	fd;

	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
	    O_CLOEXEC, mode)) == -1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	while (off < len) {
		if ((w = write(fd, text + off, len - off)) <= 0) {
			snprintf(err, errlen, "%s: %s", path, w == 0 ?
			    "short write" : strerror(errno));
			close(fd);
			return -1;
		}
		off += (size_t)w;
	}
	if (a->uid != (uid_t)-1 && fchown(fd, a->uid, a->gid) == -1) {
		snprintf(err, errlen, "%s: %s%s", path, strerror(errno),
		    errno == EPERM ? " (--owner needs root)" : "");
		close(fd);
		return -1;
	}
	if (close(fd) == -1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* --env-file, --trust-bundle and --trust-store, from moatd's answer. */
static int
attach_outputs(struct attach *a, json_t *ans, char *err, size_t errlen)
{
	json_t		*v;
	const char	*key, *pem;
	char		*text = NULL, *line;
	unsigned char	*store = NULL;
	size_t		 n;
	int		 rc = -1;

	if (a->env_file != NULL) {
		json_object_foreach(json_object_get(ans, "placeholders"), key,
		    v) {
			if (!json_is_string(v) || asprintf(&line, "%s%s=%s\n",
			    text != NULL ? text : "", key,
			    json_string_value(v)) == -1)
				continue;
			free(text);
			text = line;
		}
		n = text != NULL ? strlen(text) : 0;
		if (attach_write(a, a->env_file, text != NULL ? text : "", n,
		    0600, err, errlen) == -1)
			goto out;
		free(text);
		text = NULL;
	}
	if ((a->bundle_file != NULL || a->store_file != NULL) &&
	    json_object_get(ans, "trust_pem") == NULL) {
		snprintf(err, errlen, "%s: moatd does not intercept TLS (no "
		    "tls.ca_cert): nothing to trust", a->bundle_file != NULL ?
		    "--trust-bundle" : "--trust-store");
		goto out;
	}
	if (a->store_file != NULL) {
		if ((store = runconf_trust_store(&a->rc, ans, &n)) == NULL) {
			snprintf(err, errlen, "--trust-store: moatd sent no "
			    "trust store (above)");
			goto out;
		}
		if (attach_write(a, a->store_file, (const char *)store, n,
		    0644, err, errlen) == -1)
			goto out;
	}
	if (a->bundle_file != NULL) {
		/* Built by moatd: its CA and the system's roots. */
		if ((pem = json_string_value(json_object_get(ans,
		    "trust_bundle"))) == NULL) {
			pem = json_string_value(json_object_get(ans,
			    "trust_bundle_error"));
			snprintf(err, errlen, "--trust-bundle: moatd sent no "
			    "bundle: %s", pem != NULL ? pem :
			    "(no reason given)");
			goto out;
		}
		if (attach_write(a, a->bundle_file, pem, json_string_length(
		    json_object_get(ans, "trust_bundle")), 0644, err,
		    errlen) == -1)
			goto out;
	}
	rc = 0;
 out:
	free(store);
	free(text);
	return rc;
}

/*
 * Unless -q: moatd sends the namespace's refusals (with -v, all its
 * lines), asked before it registers, so that none is missed.
 */
static int
attach_watch(struct attach *a, char *err, size_t errlen)
{
	int	rc;

	if (a->quiet)
		return 0;
	if ((a->rf = runconf_refusals(&a->rc, a->verbose, "moatd's audit log",
	    NULL, NULL)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if ((rc = runconf_watch(&a->rc, a->admin, a->rf, a->verbose, err,
	    errlen)) == -1)
		return -1;
	a->watching = rc == 1;
	return 0;
}

/*
 * The namespace's sockets: moat-netns joins it, installs moat's table
 * (held sockets or a veth) and makes one listening socket per listener.
 * fds[] and protos[] get them (*n of them, each of fds[] -1 until made),
 * *drops the drop log.
 */
static int
attach_sockets_netns(struct attach *a, int *fds, const char **protos,
    size_t *n, int *drops, char *err, size_t errlen)
{
	struct runconf_listener	 ls[MOAT_LISTENERS_MAX];
	size_t			 nl, i;

	if ((a->nsfd = open(a->netns, O_RDONLY | O_CLOEXEC)) == -1) {
		snprintf(err, errlen, "%s: %s", a->netns, strerror(errno));
		return -1;
	}
	if (ioctl(a->nsfd, NS_GET_NSTYPE) != CLONE_NEWNET) {
		snprintf(err, errlen, "%s is not a network namespace",
		    a->netns);
		return -1;
	}
	if ((a->nsh = nsh_client_spawn(err, errlen)) == NULL ||
	    nsh_client_join(a->nsh, -1, a->nsfd, err, errlen) == -1 ||
	    nsh_client_setup(a->nsh, &a->rc, true, &a->veth_index,
	    a->veth_ifname, err, errlen) == -1 || nsh_client_drops(a->nsh,
	    drops, err, errlen) == -1)
		return -1;
	nl = runconf_listeners(&a->rc, ls, MOAT_LISTENERS_MAX);
	for (i = 0; i < nl; i++) {
		if (nsh_client_socket(a->nsh, &ls[i], &fds[i], err,
		    errlen) == -1)
			return -1;
		protos[i] = ls[i].proto;
		*n = i + 1;
	}
	return 0;
}

/* --listen: the sockets, made here; moatd gets them, we keep no copy. */
static int
attach_sockets_listen(struct attach *a, int *fds, const char **protos,
    size_t *n, char *err, size_t errlen)
{
	size_t	i;

	for (i = 0; i < a->nlisten; i++) {
		if (attach_listen_open(&a->listen[i], a->listen_mode, a->uid,
		    a->gid, err, errlen) == -1)
			return -1;
		fds[i] = a->listen[i].fd;
		a->listen[i].fd = -1;	/* closed with the others */
		protos[i] = ATTACH_LISTEN_PROTO;
		*n = i + 1;
	}
	return 0;
}

static void
attach_say_attached(const struct attach *a)
{
	size_t	i;

	if (a->netns == NULL) {
		printf("moat attach: %s serving", a->rc.name);
		for (i = 0; i < a->nlisten; i++)
			printf(" %s", a->listen[i].text);
		printf(" (%s)\n", ATTACH_LISTEN_PROTO);
	} else if (a->rc.mode == RUNCONF_VETH)
		printf("moat attach: %s attached to %s (veth %s, "
		    "10.203.%u.0/30)\n", a->rc.name, a->netns, a->veth_ifname,
		    a->veth_index);
	else
		printf("moat attach: %s attached to %s (held sockets)\n",
		    a->rc.name, a->netns);
	fflush(stdout);
}

static int
attach_setup(struct attach *a, char *err, size_t errlen)
{
	const char		*protos[MOAT_LISTENERS_MAX];
	int			 fds[MOAT_LISTENERS_MAX], drops = -1;
	size_t			 i, nfds = 0;
	json_t			*ans = NULL;
	int			 rc = -1;

	for (i = 0; i < MOAT_LISTENERS_MAX; i++)
		fds[i] = -1;
	if ((a->netns != NULL ? attach_sockets_netns(a, fds, protos, &nfds,
	    &drops, err, errlen) : attach_sockets_listen(a, fds, protos,
	    &nfds, err, errlen)) == -1)
		goto out;
	if ((a->admin = admin_client_connect(a->rc.moatd_path, err,
	    errlen)) == NULL || admin_client_hello(a->admin, err,
	    errlen) == -1 || attach_watch(a, err, errlen) == -1 ||
	    (a->store_file != NULL && runconf_trust(&a->rc, false, true) == -1) ||
	    admin_client_register(a->admin, a->rc.name, a->rc.config,
	    a->rc.trust, protos, fds, nfds, a->connect_refusal, drops, &ans,
	    err, errlen) == -1)
		goto out;
	if (drops != -1)
		runconf_drops_note(&a->rc, a->admin);
	if (attach_outputs(a, ans, err, errlen) == -1)
		goto out;
	attach_say_attached(a);
	rc = 0;
 out:
	/* moatd holds the only copies now: if it dies, nothing listens. */
	for (i = 0; i < nfds; i++)
		if (fds[i] != -1)
			close(fds[i]);
	if (drops != -1)
		close(drops);
	json_decref(ans);
	return rc;
}

/* 0 after a stop signal (tear down), 1 if moatd or the helper went. */
static int
attach_wait(struct attach *a)
{
	struct signalfd_siginfo	si;
	struct pollfd		pfd[3];
	char			err[MOAT_ERR_MAX];
	int			tmo;

	for (;;) {
		pfd[0].fd = a->sfd;
		pfd[0].events = POLLIN;
		pfd[1].fd = admin_client_fd(a->admin);
		pfd[1].events = POLLIN;
		pfd[2].fd = a->nsh != NULL ? nsh_client_fd(a->nsh) : -1;
		pfd[2].events = POLLIN;
		/* Wakes for the "N more refusals" line when one is due. */
		tmo = a->rf != NULL ? refusals_timeout(a->rf,
		    runconf_now_ms()) : -1;
		if (poll(pfd, 3, tmo) == -1) {
			if (errno == EINTR)
				continue;
			return 1;
		}
		if (a->rf != NULL)
			refusals_tick(a->rf, runconf_now_ms());
		if (pfd[0].revents != 0 && read(a->sfd, &si, sizeof(si)) ==
		    (ssize_t)sizeof(si))
			return 0;
		/* moatd says nothing unasked but the watch's lines. */
		if (pfd[1].revents != 0 &&
		    admin_client_pump(a->admin, err, sizeof(err)) == -1) {
			if (a->netns != NULL)
				fprintf(stderr, "moat attach: %s: %s keeps "
				    "moat's table and has no network "
				    "(`moat-netns cleanup --netns %s` removes "
				    "it)\n", err, a->netns, a->netns);
			else
				fprintf(stderr, "moat attach: %s: nothing "
				    "serves the --listen sockets any more\n",
				    err);
			a->watching = false;	/* no one to ask */
			return 1;
		}
		if (pfd[2].revents != 0) {
			fprintf(stderr, "moat attach: moat-netns exited: %s "
			    "keeps moat's table\n", a->netns);
			return 1;
		}
	}
}

static void
attach_free(struct attach *a)
{
	size_t	i;

	for (i = 0; i < a->nlisten; i++)
		attach_listen_remove(&a->listen[i]);
	refusals_free(a->rf);
	a->rf = NULL;
	admin_client_close(a->admin);
	a->admin = NULL;
	nsh_client_close(a->nsh);
	a->nsh = NULL;
	if (a->nsfd != -1)
		close(a->nsfd);
	if (a->sfd != -1)
		close(a->sfd);
	a->nsfd = a->sfd = -1;
	runconf_free(&a->rc);
}

int
attach_main(int argc, char *argv[])
{
	struct attach	a;
	sigset_t	mask;
	char		err[MOAT_ERR_MAX];
	int		rc = 1;
	bool		stop;

	memset(&a, 0, sizeof(a));
	runconf_init(&a.rc, "moat attach");
	a.ready_fd = a.nsfd = a.sfd = -1;
	a.listen_mode = ATTACH_LISTEN_MODE;
	a.uid = (uid_t)-1;
	a.gid = (gid_t)-1;
	if (attach_parse(&a, argc, argv) == -1) {
		attach_free(&a);
		return 2;
	}
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	signal(SIGPIPE, SIG_IGN);
	if (sigprocmask(SIG_BLOCK, &mask, NULL) == -1 ||
	    (a.sfd = signalfd(-1, &mask, SFD_CLOEXEC)) == -1) {
		fprintf(stderr, "moat attach: signalfd: %s\n", strerror(errno));
		attach_free(&a);
		return 1;
	}
	if (attach_setup(&a, err, sizeof(err)) == -1) {
		fprintf(stderr, "moat attach: %s\n", err);
		/* Undo what was added: nothing was ever served. */
		if (a.nsh != NULL && nsh_client_teardown(a.nsh, err,
		    sizeof(err)) == -1)
			fprintf(stderr, "moat attach: %s\n", err);
		attach_free(&a);
		return 1;
	}
	if (a.ready_fd != -1) {
		(void)!WRITE_LIT(a.ready_fd, "ready\n");
		close(a.ready_fd);
	}
	stop = attach_wait(&a) == 0;
	runconf_refusals_end(&a.rc, a.admin, a.watching, a.rf);
	if (stop) {
		if (admin_client_unregister(a.admin, a.rc.name, err,
		    sizeof(err)) == -1)
			fprintf(stderr, "moat attach: unregister: %s\n", err);
		admin_client_close(a.admin);
		a.admin = NULL;
		if (a.nsh != NULL && nsh_client_teardown(a.nsh, err,
		    sizeof(err)) == -1)
			fprintf(stderr, "moat attach: teardown: %s\n", err);
		else {
			if (a.netns != NULL)
				printf("moat attach: %s detached from %s\n",
				    a.rc.name, a.netns);
			else
				printf("moat attach: %s detached; nothing "
				    "serves its --listen sockets now\n",
				    a.rc.name);
			fflush(stdout);	/* said when done, not at exit */
			rc = 0;
		}
	}
	attach_free(&a);
	return rc;
}
