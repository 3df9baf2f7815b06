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

struct attach {
	struct runconf		 rc;
	const char		*netns;		/* --netns PATH */
	int			 ready_fd;	/* --ready-fd, or -1 */
	const char		*env_file;	/* --env-file, or NULL */
	const char		*bundle_file;	/* --trust-bundle, or NULL */
	bool			 verbose;	/* -v: allowed traffic too */
	bool			 quiet;		/* -q: no refusal lines */
	int			 nsfd;
	int			 sfd;
	struct nsh_client	*nsh;
	struct admin_client	*admin;
	struct refusals		*rf;		/* prints the refusals */
	bool			 watching;	/* moatd sends them */
};

static void	attach_usage(FILE *f);
static int	attach_parse(struct attach *a, int argc, char *argv[]);
static int	attach_setup(struct attach *a, char *err, size_t errlen);
static int	attach_wait(struct attach *a);
static void	attach_free(struct attach *a);

static void
attach_usage(FILE *f)
{
	fprintf(f,
	    "usage: moat attach --netns PATH [OPTIONS]\n"
	    "\n"
	    "Puts the network namespace PATH (/proc/PID/ns/net,\n"
	    "/run/netns/NAME) behind a running moatd until SIGTERM, SIGINT\n"
	    "or SIGHUP, then removes what it added.  Root only.\n"
	    "\n"
	    "  --netns PATH           the namespace\n"
	    "  --mode held|veth       listening sockets inside the namespace\n"
	    "                         (default) or a veth gateway to this one\n"
	    "  --moatd ADDR           moatd's admin socket (unix:PATH or\n"
	    "                         PATH; default %s)\n"
	    "  --policy FILE, --allow HOST[:PORT], --allow-private CIDR\n"
	    "                         the sandbox's policy, as for moat run\n"
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
		ATTACH_OPT_TRUST_BUNDLE
	};
	static const struct option	opts[] = {
		RUNCONF_LONGOPTS,
		{ "netns", required_argument, NULL, ATTACH_OPT_NETNS },
		{ "ready-fd", required_argument, NULL, ATTACH_OPT_READY_FD },
		{ "env-file", required_argument, NULL, ATTACH_OPT_ENV_FILE },
		{ "trust-bundle", required_argument, NULL,
		    ATTACH_OPT_TRUST_BUNDLE },
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
	if (a->netns == NULL) {
		fprintf(stderr, "moat attach: --netns PATH is required\n");
		attach_usage(stderr);
		return -1;
	}
	if (geteuid() != 0) {
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

/* Writes len bytes to path (replacing it), mode mode. */
static int
attach_write(const char *path, const char *text, size_t len, mode_t mode,
    char *err, size_t errlen)
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
	if (close(fd) == -1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* --env-file and --trust-bundle, from moatd's register answer. */
static int
attach_outputs(struct attach *a, json_t *ans, char *err, size_t errlen)
{
	json_t		*v;
	const char	*key, *pem;
	char		*text = NULL, *line;
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
		if (attach_write(a->env_file, text != NULL ? text : "", n,
		    0600, err, errlen) == -1)
			goto out;
		free(text);
		text = NULL;
	}
	if (a->bundle_file != NULL) {
		if (json_object_get(ans, "trust_pem") == NULL) {
			snprintf(err, errlen, "--trust-bundle: moatd does not "
			    "intercept TLS (no tls.ca_cert): nothing to trust");
			goto out;
		}
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
		if (attach_write(a->bundle_file, pem, json_string_length(
		    json_object_get(ans, "trust_bundle")), 0644, err,
		    errlen) == -1)
			goto out;
	}
	rc = 0;
 out:
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

static int
attach_setup(struct attach *a, char *err, size_t errlen)
{
	struct runconf_listener	 ls[MOAT_LISTENERS_MAX];
	const char		*protos[MOAT_LISTENERS_MAX];
	int			 fds[MOAT_LISTENERS_MAX];
	size_t			 n, i, nfds = 0;
	unsigned		 index;
	char			 ifname[NSH_IFNAME_MAX];
	json_t			*ans = NULL;
	int			 rc = -1;

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
	    nsh_client_setup(a->nsh, &a->rc, true, &index, ifname, err,
	    errlen) == -1)
		return -1;
	n = runconf_listeners(&a->rc, ls, MOAT_LISTENERS_MAX);
	for (i = 0; i < n; i++) {
		if (nsh_client_socket(a->nsh, &ls[i], &fds[i], err,
		    errlen) == -1)
			goto out;
		protos[i] = ls[i].proto;
		nfds = i + 1;
	}
	if ((a->admin = admin_client_connect(a->rc.moatd_path, err,
	    errlen)) == NULL || admin_client_hello(a->admin, err,
	    errlen) == -1 || attach_watch(a, err, errlen) == -1 ||
	    admin_client_register(a->admin, a->rc.name, a->rc.config, protos,
	    fds, nfds, &ans, err, errlen) == -1)
		goto out;
	if (attach_outputs(a, ans, err, errlen) == -1)
		goto out;
	if (a->rc.mode == RUNCONF_VETH)
		printf("moat attach: %s attached to %s (veth %s, "
		    "10.203.%u.0/30)\n", a->rc.name, a->netns, ifname, index);
	else
		printf("moat attach: %s attached to %s (held sockets)\n",
		    a->rc.name, a->netns);
	fflush(stdout);
	rc = 0;
 out:
	for (i = 0; i < nfds; i++)
		close(fds[i]);
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
		pfd[2].fd = nsh_client_fd(a->nsh);
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
			fprintf(stderr, "moat attach: %s: %s keeps moat's "
			    "table and has no network (`moat-netns cleanup "
			    "--netns %s` removes it)\n", err, a->netns,
			    a->netns);
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
		if (nsh_client_teardown(a.nsh, err, sizeof(err)) == -1)
			fprintf(stderr, "moat attach: teardown: %s\n", err);
		else {
			printf("moat attach: %s detached from %s\n", a.rc.name,
			    a.netns);
			fflush(stdout);	/* said when done, not at exit */
			rc = 0;
		}
	}
	attach_free(&a);
	return rc;
}
