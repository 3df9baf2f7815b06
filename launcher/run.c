/*
 * run.c - `moat run`: run a command with moatd as its only network exit.
 *
 * What it is: the supervisor.  It creates the sandbox (sbx_init.c), has
 * moat-netns program its network and create the listening sockets inside
 * it (helper_client.c), hands those sockets to moatd (a private one it
 * starts, or a running one, --moatd) and closes its own copies, lets the
 * workload start, relays the terminal and forwards signals, and when the
 * workload ends, or moat run is told to end, takes everything down again.
 * Its exit status is the workload's.
 *
 * Fail closed (invariant 8): once registered, the only listeners of the
 * sandbox are held by moatd.  If moatd dies they close, and the sandbox,
 * whose nftables table sends every connection to them, has no network.
 * If moat run dies, the sandbox dies with it (PR_SET_PDEATHSIG), a private
 * moatd too, and moat-netns, seeing its channel close, removes the host
 * side of a veth.
 *
 * What it is not: a filesystem sandbox (see sbx_init.c).
 */
#include "config.h"

#include <sys/types.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <arpa/inet.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "launcher/launcher.h"
#include "launcher/refusals.h"
#include "launcher/unixsuper.h"
#include "policy/policy.h"
#include "policyio/policyio.h"
#include "proto/admin_proto.h"

#define RUN_RESOLVERS_MAX	8	/* --resolver */
#define RUN_PATH_MAX		4096
#define RUN_FD_HIGH		100	/* where the moatd child parks fds */
#define RUN_MOATD_ADMIN_FD	3	/* moatd --admin-fd */
#define RUN_MOATD_CONFIG_FD	4	/* moatd -c /dev/fd/4 */
#define RUN_MOATD_EXIT_MS	1000	/* for its exit status, once it hung up */
#define RUN_POLL_MAX		8

struct run {
	struct runconf		 rc;
	const char		*audit;		/* --audit FILE|-, or NULL */
	const char		*resolvers[RUN_RESOLVERS_MAX];
	size_t			 nresolvers;
	bool			 no_tty;
	bool			 unix_sockets;	/* --allow-unix-sockets */
	char			 unix_paths[UNIXSUPER_PATHS_MAX]
				    [UNIXSUPER_PATH_MAX]; /* canonical */
	size_t			 nunix_paths;	/* --allow-unix-socket */
	pid_t			 usuper;	/* their supervisor, or -1 */
	bool			 verbose;	/* -v: allowed traffic too */
	bool			 quiet;		/* -q: no refusal lines */
	struct refusals		*rf;		/* what prints them */
	bool			 watching;	/* moatd sends them */
	char			**argv;		/* the workload */
	char			 mask[PATH_MAX]; /* admin socket to hide */
	struct pty		*pty;
	struct sandbox		*sb;
	struct nsh_client	*nsh;
	struct nsh_client	*nsh_done;	/* hung up, to be reaped */
	struct admin_client	*admin;
	pid_t			 moatd;		/* a private moatd, or -1 */
	int			 sfd;		/* signalfd */
	bool			 registered;
	json_t			*answer;	/* moatd's register answer */
	unsigned		 index;		/* veth: 10.203.X.0/30 */
	char			 ifname[NSH_IFNAME_MAX];
};

static void	run_usage(FILE *f);
static int	run_parse(struct run *r, int argc, char *argv[]);
static int	run_signals(struct run *r);
static int	run_moatd_path(char *buf, size_t len);
static int	run_moatd_config(struct run *r);
static int	run_moatd_spawn(struct run *r, char *err, size_t errlen);
static int	run_moatd_wait(struct run *r, char *err, size_t errlen);
static void	run_moatd_gone(struct run *r, char *err, size_t errlen);
static int	run_moatd_child(void *arg) RUNCONF_SPAWNED;
struct run_moatd_args;
static void	run_moatd_argv(const struct run *r,
		    struct run_moatd_args *m);
static int	run_network(struct run *r, int *fds, size_t *nfds,
		    int *drops, const char **protos, char *err, size_t errlen);
static int	run_register(struct run *r, char *err, size_t errlen);
static int	run_unix_admin(struct run *r, const char *admin, char *err,
		    size_t errlen);
static int	run_unix_admins(struct run *r, char *err, size_t errlen);
static int	run_unixsuper(struct run *r, char *err, size_t errlen);
static int	run_setup(struct run *r, int *code, char *err, size_t errlen);
static int	run_loop(struct run *r);
static void	run_teardown(struct run *r);
static void	run_stop_moatd(struct run *r);
static int	run_watch(struct run *r, char *err, size_t errlen);
static int	run_term(void *arg);

static void
run_usage(FILE *f)
{
	fprintf(f,
	    "usage: moat run [OPTIONS] -- COMMAND [ARG...]\n"
	    "\n"
	    "Runs COMMAND in new user, mount, PID and network namespaces\n"
	    "whose only way out is moatd.  Its proxy variables point at\n"
	    "moatd; any other TCP connection and every DNS query is\n"
	    "redirected to moatd and judged by the policy; everything else\n"
	    "is dropped.\n"
	    "\n"
	    "Policy:\n"
	    "  --policy FILE         a moat.json: its \"policy\" and "
	    "\"secrets\"\n"
	    "                        (and \"tls\" for a private moatd)\n"
	    "  --allow HOST[:PORT]   also allow HOST (\"*.\" wildcards too)\n"
	    "                        on PORT (default 80 and 443); "
	    "repeatable\n"
	    "  --allow-private CIDR  open a special-purpose range; "
	    "repeatable\n"
	    "                        (with neither --policy nor --allow: the\n"
	    "                        built-in default policy)\n"
	    "  --audit-only          audit mode: what the rules refuse goes\n"
	    "                        through, audited and shown as \"would\n"
	    "                        refuse\" (metadata, private ranges,\n"
	    "                        secret leaks, DNS limits stay refused)\n"
	    "moatd:\n"
	    "  --moatd ADDR          register with a running moatd's admin\n"
	    "                        socket (unix:PATH or PATH); default:\n"
	    "                        start a private moatd for this run\n"
	    "  --audit FILE|-        private moatd: append audit lines to\n"
	    "                        FILE (- = stderr); default: none\n"
	    "  --resolver IP[:PORT]  private moatd: upstream DNS server\n"
	    "                        (repeatable; default: the system's)\n"
	    "  --name NAME           the sandbox's name in the audit log\n"
	    "                        (default run-PID)\n"
	    "Network:\n"
	    "  --mode held|veth      held sockets inside the sandbox\n"
	    "                        (default; rootless) or a veth gateway\n"
	    "                        (root)\n"
	    "  --http-port N (3128), --socks-port N (1080),\n"
	    "  --dns-port N (53), --transparent-port N (15001)\n"
	    "                        the listeners' ports\n"
	    "Other:\n"
	    "  --no-tty              never give COMMAND a pseudo-terminal\n"
	    "  --allow-unix-sockets  let COMMAND make Unix sockets (default:\n"
	    "                        socket(AF_UNIX) fails with EPERM, so no\n"
	    "                        host socket can relay its traffic)\n"
	    "  --allow-unix-socket PATH\n"
	    "                        let COMMAND connect to the stream or\n"
	    "                        seqpacket Unix socket at the absolute\n"
	    "                        PATH (repeatable; every connect() then\n"
	    "                        goes through moat run)\n"
	    "  -q, --quiet           do not print refused requests, tunnels,\n"
	    "                        DNS queries and connections (default:\n"
	    "                        one line each on stderr, at most 10 a\n"
	    "                        second, and a summary at exit)\n"
	    "  -v, --verbose         print allowed traffic too; moatd logs at\n"
	    "                        info level\n"
	    "  -h, --help            this text\n"
	    "\n"
	    "Exit status: COMMAND's (128+N if it died of signal N); 125 if\n"
	    "moat run failed, 126 if COMMAND could not run, 127 if it was\n"
	    "not found.\n");
}

static int
run_parse(struct run *r, int argc, char *argv[])
{
	enum {
		RUN_OPT_AUDIT = RUNCONF_OPT__END,
		RUN_OPT_RESOLVER,
		RUN_OPT_NO_TTY,
		RUN_OPT_UNIX_SOCKETS,
		RUN_OPT_UNIX_SOCKET
	};
	static const struct option	opts[] = {
		RUNCONF_LONGOPTS,
		{ "audit", required_argument, NULL, RUN_OPT_AUDIT },
		{ "resolver", required_argument, NULL, RUN_OPT_RESOLVER },
		{ "no-tty", no_argument, NULL, RUN_OPT_NO_TTY },
		{ "allow-unix-sockets", no_argument, NULL,
		    RUN_OPT_UNIX_SOCKETS },
		{ "allow-unix-socket", required_argument, NULL,
		    RUN_OPT_UNIX_SOCKET },
		{ "verbose", no_argument, NULL, 'v' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	char				err[MOAT_ERR_MAX];
	int				ch;

	optind = 1;
	while ((ch = getopt_long(argc, argv, "+vqh", opts, NULL)) != -1) {
		switch (ch) {
		case RUN_OPT_AUDIT:
			r->audit = optarg;
			break;
		case RUN_OPT_RESOLVER:
			if (r->nresolvers == RUN_RESOLVERS_MAX) {
				fprintf(stderr, "moat run: at most %d "
				    "--resolver\n", RUN_RESOLVERS_MAX);
				return -1;
			}
			r->resolvers[r->nresolvers++] = optarg;
			break;
		case RUN_OPT_NO_TTY:
			r->no_tty = true;
			break;
		case RUN_OPT_UNIX_SOCKETS:
			r->unix_sockets = true;
			break;
		case RUN_OPT_UNIX_SOCKET:
			if (r->nunix_paths == UNIXSUPER_PATHS_MAX) {
				fprintf(stderr, "moat run: at most %d "
				    "--allow-unix-socket\n",
				    (int)UNIXSUPER_PATHS_MAX);
				return -1;
			}
			if (unixsuper_canon(optarg,
			    r->unix_paths[r->nunix_paths], err,
			    sizeof(err)) == -1) {
				fprintf(stderr, "moat run: "
				    "--allow-unix-socket %s\n", err);
				return -1;
			}
			r->nunix_paths++;
			break;
		case 'v':
			r->verbose = true;
			break;
		case 'q':
			r->quiet = true;
			break;
		case 'h':
			run_usage(stdout);
			exit(0);
		case '?':
			run_usage(stderr);
			return -1;
		default:
			if (ch >= RUNCONF_OPT_POLICY && ch < RUNCONF_OPT__END) {
				if (runconf_option(&r->rc, ch, optarg) == -1)
					return -1;
				break;
			}
			run_usage(stderr);
			return -1;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "moat run: missing COMMAND (after --)\n");
		run_usage(stderr);
		return -1;
	}
	r->argv = argv + optind;
	if (r->rc.moatd != NULL && (r->audit != NULL || r->nresolvers > 0)) {
		fprintf(stderr, "moat run: --audit and --resolver configure a "
		    "private moatd; a running one (--moatd) has its own\n");
		return -1;
	}
	if (r->quiet && r->verbose) {
		fprintf(stderr, "moat run: -q and -v: choose one\n");
		return -1;
	}
	if (r->unix_sockets && r->nunix_paths > 0) {
		fprintf(stderr, "moat run: --allow-unix-sockets already "
		    "allows every --allow-unix-socket\n");
		return -1;
	}
	if (r->rc.mode == RUNCONF_VETH && geteuid() != 0) {
		fprintf(stderr, "moat run: --mode veth needs root (the held "
		    "mode works rootless)\n");
		return -1;
	}
	return runconf_finish(&r->rc);
}

/*
 * Signals are read from a signalfd, blocked before the clone so none is
 * lost in between; every child we fork unblocks them before exec.
 */
static int
run_signals(struct run *r)
{
	static const int	sigs[] = { SIGCHLD, SIGHUP, SIGINT, SIGQUIT,
				    SIGTERM, SIGUSR1, SIGUSR2, SIGWINCH,
				    SIGCONT, SIGALRM };
	sigset_t		mask;
	size_t			i;

	sigemptyset(&mask);
	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaddset(&mask, sigs[i]);
	signal(SIGPIPE, SIG_IGN);
	if (sigprocmask(SIG_BLOCK, &mask, NULL) == -1 ||
	    (r->sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK)) == -1) {
		fprintf(stderr, "moat run: signalfd: %s\n", strerror(errno));
		return -1;
	}
	return 0;
}

/* --- a private moatd ------------------------------------------------- */

/*
 * MOAT_MOATD, else $(bindir)/../sbin/moatd beside moat, else the build
 * tree's proxy/moatd, else MOAT_SBINDIR/moatd, else "moatd" on PATH.
 */
static int
run_moatd_path(char *buf, size_t len)
{
	static const char *const	rel[] = { "../sbin/moatd",
					    "../proxy/moatd" };
	const char			*env;
	char				 dir[RUN_PATH_MAX];
	size_t				 i;

	if ((env = getenv("MOAT_MOATD")) != NULL && env[0] != '\0') {
		snprintf(buf, len, "%s", env);
		return access(buf, X_OK);
	}
	if (runconf_exe_dir(dir, sizeof(dir)) == 0) {
		for (i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
			if ((size_t)snprintf(buf, len, "%s/%s", dir, rel[i]) <
			    len && access(buf, X_OK) == 0)
				return 0;
		}
	}
	snprintf(buf, len, "%s/moatd", MOAT_SBINDIR);
	if (access(buf, X_OK) == 0)
		return 0;
	snprintf(buf, len, "moatd");
	return 0;
}

/*
 * The private moatd's config, in a memfd: no listener of its own (the
 * sandbox's come over the admin descriptor), the audit destination and
 * the resolvers.  Validated here first.  Returns the memfd or -1.
 */
static int
run_moatd_config(struct run *r)
{
	struct policy_diags	 d;
	struct moat_config	*c;
	json_t			*conf, *servers = NULL;
	char			*text = NULL, line[1024];
	size_t			 i, len;
	int			 fd = -1;

	/*
	 * The daemon's own policy serves no listener (the sandbox brings its
	 * policy with its registration); one deny rule keeps moatd from
	 * warning about an empty policy.
	 */
	conf = json_pack("{s:[], s:{s:s, s:[{s:s, s:s, s:[s]}]}, s:{s:s}}",
	    "listen", "policy", "default", "deny", "rules", "name", "unused",
	    "action", "deny", "hosts", "moat-run.invalid", "audit", "path",
	    r->audit != NULL ? r->audit : "/dev/null");
	if (conf != NULL && r->nresolvers > 0) {
		servers = json_array();
		for (i = 0; i < r->nresolvers; i++)
			json_array_append_new(servers,
			    json_string(r->resolvers[i]));
		json_object_set_new(conf, "resolver", json_pack("{s:o}",
		    "servers", servers));
	}
	/* The CA (and upstream CAs) of --policy FILE: interception. */
	if (conf != NULL && r->rc.tls != NULL)
		json_object_set(conf, "tls", r->rc.tls);
	/* And its GeoIP databases, which the sandbox's rules use. */
	if (conf != NULL && r->rc.geoip != NULL)
		json_object_set(conf, "geoip", r->rc.geoip);
	if (conf == NULL || (text = json_dumps(conf, JSON_INDENT(2))) ==
	    NULL) {
		fprintf(stderr, "moat run: out of memory\n");
		goto out;
	}
	len = strlen(text);
	policy_diags_init(&d);
	policyio_idn_for(text, len);
	c = policy_config_load_opts("(moat run's moatd config)", text, len,
	    &policyio_load_opts, &d);
	for (i = 0; i < d.n; i++)
		if (d.v[i].level == POLICY_DIAG_ERROR)
			fprintf(stderr, "%s\n", policy_diag_format(&d, i, line,
			    sizeof(line)));
	policy_diags_clear(&d);
	if (c == NULL) {
		fprintf(stderr, "moat run: --audit or --resolver is not valid "
		    "(above)\n");
		goto out;
	}
	policy_config_unref(c);
	if ((fd = memfd_create("moatd.json", MFD_CLOEXEC)) == -1 ||
	    write(fd, text, len) != (ssize_t)len) {
		fprintf(stderr, "moat run: memfd: %s\n", strerror(errno));
		if (fd != -1)
			close(fd);
		fd = -1;
	}
 out:
	free(text);
	json_decref(conf);
	return fd;
}

/* What the moatd child needs between spawn and exec. */
struct run_moatd_args {
	const char	*path;
	int		 afd, cfd;
	bool		 verbose;
	pid_t		 parent;
	char		 cfg[32];
	const char	*argv[10];	/* moatd's */
};

/*
 * Between spawn and exec (runconf_spawn: system calls only): descriptors
 * 3 (admin) and 4 (config), its own process group.
 */
static int
run_moatd_child(void *arg)
{
	const struct run_moatd_args	*m = arg;
	sigset_t			 none;
	int				 a, c, null;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	(void)setpgid(0, 0);
	/* A private moatd never outlives moat run. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) == -1 ||
	    getppid() != m->parent)
		_exit(MOAT_EXIT_LAUNCH);
	if ((a = fcntl(m->afd, F_DUPFD_CLOEXEC, RUN_FD_HIGH)) == -1 ||
	    (c = fcntl(m->cfd, F_DUPFD_CLOEXEC, RUN_FD_HIGH)) == -1 ||
	    dup2(a, RUN_MOATD_ADMIN_FD) == -1 ||
	    dup2(c, RUN_MOATD_CONFIG_FD) == -1)
		_exit(MOAT_EXIT_LAUNCH);
	(void)close_range(RUN_MOATD_CONFIG_FD + 1, ~0u, 0);
	/* Its stdout is the workload's (a pipe, maybe): moatd writes to
	 * stderr only. */
	if ((null = open("/dev/null", O_RDONLY)) != -1) {
		(void)dup2(null, STDIN_FILENO);
		if (null != STDIN_FILENO)
			close(null);
	}
	(void)dup2(STDERR_FILENO, STDOUT_FILENO);
	/* Its messages name the --policy file, not /dev/fd/4. */
	execvp(m->path, (char *const *)m->argv);
	runconf_spawn_fail(m->path, errno);
	_exit(MOAT_EXIT_NOT_FOUND);
}

/*
 * The private moatd's command line.  Its config is the memfd at
 * RUN_MOATD_CONFIG_FD, but what its messages can be about (the CA of
 * tls) comes from --policy FILE: they name that file.
 */
static void
run_moatd_argv(const struct run *r, struct run_moatd_args *m)
{
	size_t	n = 0;

	m->argv[n++] = "moatd";
	if (!m->verbose)
		m->argv[n++] = "-q";
	m->argv[n++] = "-c";
	m->argv[n++] = m->cfg;
	m->argv[n++] = "--config-name";
	m->argv[n++] = r->rc.policy_file != NULL ? r->rc.policy_file :
	    "(moat run's moatd config)";
	m->argv[n++] = "--admin-fd";
	m->argv[n++] = "3";
	m->argv[n] = NULL;
}

/*
 * Starts the private moatd, and sends it the admin hello at once: it gets
 * ready, and reads it, while the sandbox and its network are made.  0, or
 * -1 with err set.
 */
static int
run_moatd_spawn(struct run *r, char *err, size_t errlen)
{
	struct run_moatd_args	m;
	char			path[RUN_PATH_MAX];
	int			sv[2] = { -1, -1 }, cfd;
	int			rc = -1;

	if (run_moatd_path(path, sizeof(path)) == -1) {
		snprintf(err, errlen, "cannot find moatd (set MOAT_MOATD)");
		return -1;
	}
	if ((cfd = run_moatd_config(r)) == -1) {
		snprintf(err, errlen, "no config for moatd");
		return -1;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == -1) {
		snprintf(err, errlen, "socketpair: %s", strerror(errno));
		goto out;
	}
	m.path = path;
	m.afd = sv[1];
	m.cfd = cfd;
	m.verbose = r->verbose;
	m.parent = getpid();
	snprintf(m.cfg, sizeof(m.cfg), "/dev/fd/%d", RUN_MOATD_CONFIG_FD);
	run_moatd_argv(r, &m);
	if ((r->moatd = runconf_spawn(run_moatd_child, &m)) == -1) {
		snprintf(err, errlen, "cannot start moatd: %s",
		    strerror(errno));
		goto out;
	}
	r->admin = admin_client_from_fd(sv[0]);
	sv[0] = -1;
	if (r->admin == NULL) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	if ((rc = admin_client_hello_send(r->admin, err, errlen)) == -1)
		run_moatd_gone(r, err, errlen);
 out:
	if (sv[0] != -1)
		close(sv[0]);
	if (sv[1] != -1)
		close(sv[1]);
	close(cfd);
	return rc;
}

/* moatd hung up: if it exited, err says how (else err stays). */
static void
run_moatd_gone(struct run *r, char *err, size_t errlen)
{
	int	st;

	if (moat_reap(r->moatd, RUN_MOATD_EXIT_MS, &st) == 1) {
		r->moatd = -1;
		snprintf(err, errlen, "moatd exited (status %d) before it was "
		    "ready; its messages are above", WIFEXITED(st) ?
		    WEXITSTATUS(st) : 128 + WTERMSIG(st));
	}
}

/*
 * Reads the private moatd's answer to the hello sent at spawn: it is
 * ready.  If it hung up instead, says how it ended.
 */
static int
run_moatd_wait(struct run *r, char *err, size_t errlen)
{
	if (admin_client_hello_recv(r->admin, err, errlen) == 0)
		return 0;
	run_moatd_gone(r, err, errlen);
	return -1;
}

static void
run_stop_moatd(struct run *r)
{
	int	st;

	if (r->moatd == -1)
		return;
	/*
	 * With no --audit and no -v it has nothing to write: its sandbox is
	 * gone, so it ends at once, and its exit (threads, unmapping) is no
	 * step of ours; init reaps it.  Else SIGTERM, and its audit lines
	 * are all written when moat run returns.
	 */
	if (r->audit == NULL && !r->verbose) {
		(void)kill(r->moatd, SIGKILL);
		r->moatd = -1;
		return;
	}
	(void)kill(r->moatd, SIGTERM);
	if (moat_reap(r->moatd, MOAT_STOP_TIMEOUT_MS, &st) == 1) {
		r->moatd = -1;
		/* SIGTERM ends it with 0; anything else may have cost audit
		 * lines, and the one reading the audit must know. */
		if (WIFSIGNALED(st) && WTERMSIG(st) != SIGTERM)
			fprintf(stderr, "moat run: moatd died of signal %d "
			    "(%s); its last audit lines may be missing\n",
			    WTERMSIG(st), strsignal(WTERMSIG(st)));
		else if (WIFEXITED(st) && WEXITSTATUS(st) != 0)
			fprintf(stderr, "moat run: moatd exited with status "
			    "%d; its last audit lines may be missing\n",
			    WEXITSTATUS(st));
		return;
	}
	(void)kill(r->moatd, SIGKILL);
	while (waitpid(r->moatd, &st, 0) == -1 && errno == EINTR)
		;
	r->moatd = -1;
	fprintf(stderr, "moat run: moatd did not stop within %d ms of SIGTERM "
	    "and was killed; its last audit lines may be missing\n",
	    MOAT_STOP_TIMEOUT_MS);
}

/* --- set-up ----------------------------------------------------------- */

/*
 * The sandbox's network, through moat-netns; the listeners into fds, the
 * drop log into *drops.
 */
static int
run_network(struct run *r, int *fds, size_t *nfds, int *drops,
    const char **protos, char *err, size_t errlen)
{
	struct runconf_listener	ls[MOAT_LISTENERS_MAX];
	size_t			n, i;
	int			userns = -1, netns = -1, rc = -1;
	bool			held;

	/* r->nsh was started in run_setup(); nsh_client_open() reads its
	 * HELLO answer. */
	if ((netns = sandbox_nsfd(r->sb, "net", err, errlen)) == -1)
		goto out;
	if (geteuid() != 0 &&
	    (userns = sandbox_nsfd(r->sb, "user", err, errlen)) == -1)
		goto out;
	n = runconf_listeners(&r->rc, ls, MOAT_LISTENERS_MAX);
	/*
	 * Held mode: once the sockets are made the namespace holds
	 * everything and dies with the sandbox, so the helper is released
	 * in the same exchange.
	 */
	held = r->rc.mode == RUNCONF_HELD;
	rc = nsh_client_open(r->nsh, userns, netns, &r->rc, ls, n, fds, drops,
	    held, &r->index, r->ifname, err, errlen);
	for (i = 0; i < n; i++)
		protos[i] = ls[i].proto;
	*nfds = n;
	if (rc == -1)
		goto out;
	if (held) {
		/* Reaped at the end if it is gone by then. */
		r->nsh_done = r->nsh;
		r->nsh = NULL;
	}
	rc = 0;
 out:
	if (userns != -1)
		close(userns);
	if (netns != -1)
		close(netns);
	return rc;
}

/*
 * The terminal our lines share with the workload's output (stderr a
 * terminal and a pty relayed to it): raw while the relay runs, and mid-
 * line when the workload's last byte was no newline.
 */
static int
run_term(void *arg)
{
	struct run	*r = arg;
	int		 t = 0;

	if (r->pty == NULL || !isatty(STDERR_FILENO))
		return 0;
	if (pty_is_raw(r->pty))
		t |= REFUSALS_TERM_RAW;
	if (pty_take_midline(r->pty))
		t |= REFUSALS_TERM_MIDLINE;
	return t;
}

/*
 * Unless -q: moatd sends the sandbox's refusals (with -v, all its lines),
 * asked before the sandbox registers, so that none is missed.
 */
static int
run_watch(struct run *r, char *err, size_t errlen)
{
	char	where[MOAT_ERR_MAX];
	int	rc;

	if (r->quiet)
		return 0;
	if (r->rc.moatd != NULL)
		snprintf(where, sizeof(where), "moatd's audit log");
	else if (r->audit == NULL)
		snprintf(where, sizeof(where), "moat run --audit FILE");
	else if (strcmp(r->audit, "-") == 0)
		snprintf(where, sizeof(where), "the audit lines above");
	else
		snprintf(where, sizeof(where), "%s", r->audit);
	if ((r->rf = runconf_refusals(&r->rc, r->verbose, where, run_term,
	    r)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if ((rc = runconf_watch(&r->rc, r->admin, r->rf, r->verbose, err,
	    errlen)) == -1)
		return -1;
	r->watching = rc == 1;
	return 0;
}

static int
run_register(struct run *r, char *err, size_t errlen)
{
	const char	*protos[MOAT_LISTENERS_MAX];
	char		 java[1][PATH_MAX];
	int		 fds[MOAT_LISTENERS_MAX], drops = -1;
	size_t		 nfds = 0, i;
	int		 rc = -1;

	for (i = 0; i < MOAT_LISTENERS_MAX; i++)
		fds[i] = -1;
	if (run_network(r, fds, &nfds, &drops, protos, err, errlen) == -1)
		goto out;
	if (r->rc.moatd != NULL) {
		if ((r->admin = admin_client_connect(r->rc.moatd_path, err,
		    errlen)) == NULL || admin_client_hello(r->admin, err,
		    errlen) == -1)
			goto out;
	} else if (run_moatd_wait(r, err, errlen) == -1)
		goto out;
	if (run_watch(r, err, errlen) == -1)
		goto out;
	/*
	 * Files to merge only where moatd may intercept: its own CA
	 * (--policy's tls), or a running moatd's; a Java trust store only
	 * where a JVM would read one (the init looks again, in the same
	 * files).
	 */
	if (runconf_trust(&r->rc, r->rc.tls != NULL || r->rc.moatd != NULL,
	    sandbox_java_stores(java, 1) > 0) == -1) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	if (admin_client_register(r->admin, r->rc.name, r->rc.config,
	    r->rc.trust, protos, fds, nfds, NULL, drops, &r->answer, err,
	    errlen) == -1)
		goto out;
	r->registered = true;
	runconf_drops_note(&r->rc, r->admin);
	rc = 0;
 out:
	/* moatd holds the only copies now: if it dies, nothing listens. */
	for (i = 0; i < nfds; i++)
		if (fds[i] != -1)
			close(fds[i]);
	if (drops != -1)
		close(drops);
	return rc;
}

/*
 * Whether an allowed path is the admin socket admin (same canonical name,
 * or same socket): -1 with err set if so.  The sandbox hides admin
 * sockets in its own mount namespace; the supervisor connects in ours.
 */
static int
run_unix_admin(struct run *r, const char *admin, char *err, size_t errlen)
{
	struct stat	a, b;
	char		real[PATH_MAX];
	size_t		i;
	bool		sock;

	sock = stat(admin, &a) == 0 && S_ISSOCK(a.st_mode);
	if (realpath(admin, real) == NULL)
		real[0] = '\0';
	for (i = 0; i < r->nunix_paths; i++) {
		if (strcmp(real, r->unix_paths[i]) == 0 || (sock &&
		    stat(r->unix_paths[i], &b) == 0 && a.st_dev == b.st_dev &&
		    a.st_ino == b.st_ino)) {
			snprintf(err, errlen, "--allow-unix-socket %s: an admin "
			    "socket of moatd; no sandbox may reach one",
			    r->unix_paths[i]);
			return -1;
		}
	}
	return 0;
}

/* No allowed path may be --moatd's or a listed admin socket. */
static int
run_unix_admins(struct run *r, char *err, size_t errlen)
{
	struct dirent	*de;
	char		 path[PATH_MAX + 1];
	ssize_t		 n;
	DIR		*d;
	int		 f, rc = 0;

	if (r->nunix_paths == 0)
		return 0;
	if (r->mask[0] != '\0' && run_unix_admin(r, r->mask, err,
	    errlen) == -1)
		return -1;
	if ((d = opendir(MOAT_ADMIN_REGISTRY)) == NULL)
		return 0;
	while (rc == 0 && (de = readdir(d)) != NULL) {
		/* As sbx_init.c reads it: one path and a newline a file. */
		if (de->d_name[0] == '.' || strchr(de->d_name, '.') != NULL)
			continue;
		if ((f = openat(dirfd(d), de->d_name, O_RDONLY | O_NOFOLLOW |
		    O_NONBLOCK | O_CLOEXEC)) == -1)
			continue;
		n = read(f, path, sizeof(path));
		close(f);
		if (n < 2 || path[0] != '/' || path[n - 1] != '\n' ||
		    memchr(path, '\0', (size_t)n) != NULL)
			continue;
		path[n - 1] = '\0';
		rc = run_unix_admin(r, path, err, errlen);
	}
	closedir(d);
	return rc;
}

/*
 * --allow-unix-socket: the supervisor of the workload's connect() calls,
 * in the user namespace of the init (the workload's, which owns nothing).
 */
static int
run_unixsuper(struct run *r, char *err, size_t errlen)
{
	int	listener, userns;

	listener = sandbox_take_listener(r->sb, &userns);
	r->usuper = unixsuper_start(listener, userns, r->unix_paths,
	    r->nunix_paths, err, errlen);
	close(listener);
	close(userns);
	return r->usuper == -1 ? -1 : 0;
}

static int
run_setup(struct run *r, int *code, char *err, size_t errlen)
{
	struct sandbox_spec	spec;
	struct sandbox_net	net;
	struct in_addr		gw;
	char			*extra;
	size_t			 extralen;
	int			 rc;

	*code = MOAT_EXIT_LAUNCH;
	if (!r->no_tty && (r->pty = pty_open(err, errlen)) == NULL &&
	    err[0] != '\0')
		return -1;
	if (r->rc.moatd != NULL) {
		if (realpath(r->rc.moatd_path, r->mask) == NULL)
			r->mask[0] = '\0';
	} else if (run_moatd_spawn(r, err, errlen) == -1)
		return -1;
	if (run_unix_admins(r, err, errlen) == -1)
		return -1;
	/*
	 * The helper starts now, and loads while the namespaces are made:
	 * its first answer is read when it is first needed.
	 */
	if ((r->nsh = nsh_client_start(err, errlen)) == NULL)
		return -1;
	memset(&spec, 0, sizeof(spec));
	spec.argv = r->argv;
	spec.userns = geteuid() != 0;
	spec.tty = r->pty != NULL ? pty_slave(r->pty) : -1;
	spec.mask = r->mask[0] != '\0' ? r->mask : NULL;
	spec.unix_sockets = r->unix_sockets;
	spec.unix_notify = r->nunix_paths > 0;
	if ((r->sb = sandbox_create(&spec, err, errlen)) == NULL)
		return -1;
	if (r->pty != NULL)
		pty_close_slave(r->pty);
	if (run_register(r, err, errlen) == -1)
		return -1;

	memset(&net, 0, sizeof(net));
	if (r->rc.mode == RUNCONF_VETH) {
		gw.s_addr = htonl(0x0acb0001u | (r->index << 8));
		inet_ntop(AF_INET, &gw, net.nameserver,
		    sizeof(net.nameserver));
	} else
		snprintf(net.nameserver, sizeof(net.nameserver), "127.0.0.1");
	snprintf(net.proxy_host, sizeof(net.proxy_host), "%s",
	    net.nameserver);
	net.http_port = r->rc.http_port;
	if ((extra = runconf_extras(&r->rc, r->answer, &extralen)) == NULL) {
		snprintf(err, errlen, "cannot prepare the sandbox's variables");
		return -1;
	}
	rc = sandbox_go(r->sb, &net, extra, extralen, code, err, errlen);
	free(extra);
	if (rc == -1)
		return -1;
	/* The workload's first connect() waits for it, if it came first. */
	if (r->nunix_paths > 0 && run_unixsuper(r, err, errlen) == -1)
		return -1;
	if (r->pty != NULL && pty_raw(r->pty) == -1) {
		/* Not fatal: the relay works, only line editing stays ours. */
		fprintf(stderr, "moat run: cannot set the terminal raw: %s\n",
		    strerror(errno));
	}
	*code = 0;
	return 0;
}

/* --- running ---------------------------------------------------------- */

/* Until the workload exits; returns moat run's exit status. */
static int
run_loop(struct run *r)
{
	struct signalfd_siginfo	si;
	struct pollfd		pfd[RUN_POLL_MAX];
	size_t			n, ptyn = 0, ptyat = 0;
	int			st, admin_at = -1, nsh_at = -1, tmo;
	char			err[MOAT_ERR_MAX];
	pid_t			init = sandbox_pid(r->sb);

	for (;;) {
		n = 0;
		pfd[n].fd = r->sfd;
		pfd[n++].events = POLLIN;
		admin_at = nsh_at = -1;
		if (r->admin != NULL) {
			admin_at = (int)n;
			pfd[n].fd = admin_client_fd(r->admin);
			pfd[n++].events = POLLIN;
		}
		if (r->nsh != NULL && nsh_client_fd(r->nsh) != -1) {
			nsh_at = (int)n;
			pfd[n].fd = nsh_client_fd(r->nsh);
			pfd[n++].events = POLLIN;
		}
		if (r->pty != NULL) {
			ptyat = n;
			ptyn = pty_pollfds(r->pty, pfd + n);
			n += ptyn;
		}
		/* Wakes for the "N more refusals" line when one is due. */
		tmo = r->rf != NULL ? refusals_timeout(r->rf,
		    runconf_now_ms()) : -1;
		if (poll(pfd, (nfds_t)n, tmo) == -1) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "moat run: poll: %s\n",
			    strerror(errno));
			return MOAT_EXIT_LAUNCH;
		}
		if (r->rf != NULL)
			refusals_tick(r->rf, runconf_now_ms());
		while (pfd[0].revents != 0 && read(r->sfd, &si, sizeof(si)) ==
		    (ssize_t)sizeof(si)) {
			if (si.ssi_signo == SIGCHLD) {
				if (waitpid(init, &st, WNOHANG) == init) {
					sandbox_free(r->sb);
					r->sb = NULL;
					return WIFEXITED(st) ?
					    WEXITSTATUS(st) :
					    128 + WTERMSIG(st);
				}
				if (r->moatd != -1 && waitpid(r->moatd, &st,
				    WNOHANG) == r->moatd) {
					r->moatd = -1;
					fprintf(stderr, "moat run: moatd "
					    "exited: the sandbox has no "
					    "network now\n");
				}
				continue;
			}
			if (si.ssi_signo == SIGWINCH && r->pty != NULL) {
				pty_winch(r->pty);
				continue;
			}
			(void)kill(init, (int)si.ssi_signo);
		}
		/* moatd says nothing unasked but the watch's lines. */
		if (admin_at != -1 && pfd[admin_at].revents != 0 &&
		    admin_client_pump(r->admin, err, sizeof(err)) == -1) {
			fprintf(stderr, "moat run: %s: the sandbox has no "
			    "network now\n", err);
			admin_client_close(r->admin);
			r->admin = NULL;
			r->registered = false;
		}
		if (nsh_at != -1 && pfd[nsh_at].revents != 0) {
			fprintf(stderr, "moat run: moat-netns exited: the "
			    "sandbox keeps its rules; its veth will be "
			    "removed at exit\n");
			nsh_client_close(r->nsh);
			r->nsh = NULL;
		}
		if (r->pty != NULL)
			(void)pty_service(r->pty, pfd + ptyat, ptyn);
	}
}

/* Everything down, in reverse; each step is repeatable. */
static void
run_teardown(struct run *r)
{
	char	err[MOAT_ERR_MAX];

	if (r->sb != NULL) {
		sandbox_kill(r->sb);
		sandbox_free(r->sb);
		r->sb = NULL;
	}
	if (r->usuper != -1) {
		(void)kill(r->usuper, SIGKILL);
		while (waitpid(r->usuper, NULL, 0) == -1 && errno == EINTR)
			;
		r->usuper = -1;
	}
	if (r->pty != NULL) {
		pty_drain(r->pty);
		pty_restore(r->pty);
	}
	/* After the workload's last output: its last refusals, the sum. */
	runconf_refusals_end(&r->rc, r->admin, r->watching, r->rf);
	refusals_free(r->rf);
	r->rf = NULL;
	r->watching = false;
	if (r->admin != NULL) {
		if (r->registered && r->rc.moatd != NULL &&
		    admin_client_unregister(r->admin, r->rc.name, err,
		    sizeof(err)) == -1)
			fprintf(stderr, "moat run: unregister: %s\n", err);
		admin_client_close(r->admin);
		r->admin = NULL;
	}
	run_stop_moatd(r);
	nsh_client_close(r->nsh_done);
	r->nsh_done = NULL;
	if (r->nsh != NULL) {
		if (nsh_client_teardown(r->nsh, err, sizeof(err)) == -1)
			fprintf(stderr, "moat run: teardown: %s\n", err);
		nsh_client_close(r->nsh);
		r->nsh = NULL;
	} else if (r->rc.mode == RUNCONF_VETH && r->ifname[0] != '\0') {
		/* The helper died: clean up after it (its owner is gone). */
		if (nsh_client_cleanup(NULL, err, sizeof(err)) == -1)
			fprintf(stderr, "moat run: %s; %s may remain: run "
			    "`moat-netns cleanup` as root\n", err, r->ifname);
	}
	pty_free(r->pty);
	r->pty = NULL;
	json_decref(r->answer);
	r->answer = NULL;
	if (r->sfd != -1)
		close(r->sfd);
	r->sfd = -1;
	runconf_free(&r->rc);
}

int
run_main(int argc, char *argv[])
{
	struct run	r;
	char		err[MOAT_ERR_MAX];
	int		code;

	memset(&r, 0, sizeof(r));
	runconf_init(&r.rc, "moat run");
	r.moatd = -1;
	r.usuper = -1;
	r.sfd = -1;
	err[0] = '\0';
	if (run_parse(&r, argc, argv) == -1) {
		runconf_free(&r.rc);
		return MOAT_EXIT_LAUNCH;
	}
	if (run_signals(&r) == -1) {
		run_teardown(&r);
		return MOAT_EXIT_LAUNCH;
	}
	if (run_setup(&r, &code, err, sizeof(err)) == -1) {
		fprintf(stderr, "moat run: %s\n", err);
		run_teardown(&r);
		return code;
	}
	code = run_loop(&r);
	run_teardown(&r);
	return code;
}
