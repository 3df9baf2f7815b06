/*
 * moatd.c - the main thread of moatd: options, config, listeners,
 * privilege drop, workers, signals (reload, drain, reopen).
 *
 * The main thread serves no connection.  It owns the config: on SIGHUP it
 * loads and checks a new one and hands it to every worker; a config with
 * errors is refused and the old one stays.
 */
#include "config.h"

#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "policy/policy.h"
#include "policyio/policyio.h"
#include "proxy/admin.h"
#include "proxy/audit.h"
#include "proxy/listener.h"
#include "proxy/log.h"
#include "proxy/metrics.h"
#include "proxy/secret.h"
#include "proxy/secrets.h"
#include "proxy/tls.h"
#include "proxy/util.h"
#include "proxy/worker.h"

#define MOATD_CONFIG_MAX_BYTES	(64u << 20)	/* largest config file read */
#define MOATD_MAX_WORKERS	256
#define MOATD_NOFILE_RESERVE	64	/* stdio, audit, admin, signals... */
#define MOATD_NOFILE_PER_WORKER	8	/* epoll, eventfd, spare, resolver */

struct moatd {
	const char		*config_path;	/* NULL: embedded default */
	const char		*config_name;	/* what messages call it */
	char			**allow_private;	/* from the command line */
	size_t			 nallow_private;
	struct moat_config	*cfg;
	struct tls		*tls;		/* interception contexts, or NULL */
	struct secrets		*secrets;	/* secret values, or NULL */
	struct listener		*listeners;
	struct worker		**workers;
	size_t			 nworkers;
	struct event_base	*base;
	struct event		*sig_hup, *sig_term, *sig_int, *sig_usr1;
	struct event		*done_ev;	/* done_pipe[0] */
	struct event		*drain_timer;
	int			 draining;
	int			 done_pipe[2];	/* workers -> main: "I stopped" */
	size_t			 nstopped;
	int			 check;		/* --check */
	int			 ready_fd;	/* --ready-fd, or -1 */
	enum log_level		 log_level;	/* -d, -q */
	int			 admin_fd;	/* --admin-fd, or -1 */
	int			 admin_lfd;	/* "admin" socket, or -1 */
	struct admin_ctx	 admin;
	int			 metrics_fd;	/* "metrics" socket, or -1 */
	struct metrics_http	*metrics;
};

static void	usage(FILE *f);
static char	*read_file(const char *path, size_t *len, char *err,
		    size_t errlen);
static struct moat_config *load_config(struct moatd *m, int quiet_ok,
		    const char *what);
static int	check_secrets(const struct moat_config *cfg);
static size_t	count_cpus(void);
static void	raise_nofile(void);
static void	check_nofile(const struct moat_config *cfg, size_t nworkers,
		    const char *what);
static int	drop_privileges(const char *user);
static int	publish_trust(const struct moat_config *cfg, struct tls *tls,
		    const char *what);
static void	on_sighup(evutil_socket_t fd, short what, void *arg);
static void	on_sigterm(evutil_socket_t fd, short what, void *arg);
static void	on_sigusr1(evutil_socket_t fd, short what, void *arg);
static void	on_drain_deadline(evutil_socket_t fd, short what, void *arg);
static void	on_worker_done(evutil_socket_t fd, short what, void *arg);
static int	same_listeners(const struct moat_config *a,
		    const struct moat_config *b);
static void	on_admin_gone(void *arg);
static void	start_drain(struct moatd *m);
static int	moatd_options(struct moatd *m, int argc, char *argv[]);
static int	moatd_fd_arg(const char *opt, const char *arg, int *fd);
static int	moatd_load(struct moatd *m);
static void	moatd_metrics_start(struct moatd *m);
static void	moatd_start(struct moatd *m);
static void	moatd_serve(struct moatd *m);
static void	moatd_stop(struct moatd *m);

static void
usage(FILE *f)
{
	fprintf(f,
	    "usage: moatd [-c FILE] [--check] [-d] [--ready-fd N] [--admin-fd N]\n"
	    "             [--allow-private CIDR]... [--print-default-config]\n"
	    "\n"
	    "moatd is the egress proxy of moat: the only network exit of a\n"
	    "sandbox.  It serves HTTP forward proxy, CONNECT, SOCKS5,\n"
	    "transparent (redirected TCP) and DNS on the listeners of its\n"
	    "config and of the sandboxes registered on its admin socket,\n"
	    "allows only what each policy allows, intercepts TLS where a rule\n"
	    "must see inside, and puts secrets into requests for the hosts\n"
	    "they are bound to.\n"
	    "\n"
	    "  -c, --config FILE        config file (JSON); default: the embedded\n"
	    "                           default config (see --print-default-config)\n"
	    "  -t, --check              validate the config (and secret files),\n"
	    "                           print FILE:LINE:COLUMN: message per error,\n"
	    "                           exit 0 if valid, 1 if not\n"
	    "  -d, --debug              debug logging on stderr\n"
	    "  -q, --quiet              log warnings and errors only\n"
	    "      --ready-fd N         write \"ready\\n\" to descriptor N once every\n"
	    "                           listener is bound, then close it\n"
	    "      --admin-fd N         serve the admin protocol on the connected\n"
	    "                           socket N (moat run's private moatd); exit\n"
	    "                           when it closes\n"
	    "      --config-name NAME   call the config NAME in messages (moat run\n"
	    "                           names the file its config comes from)\n"
	    "      --allow-private CIDR also open this special-purpose range\n"
	    "                           (added to policy.allow_private; repeatable)\n"
	    "      --print-default-config  print the embedded config and exit\n"
	    "  -V, --version            print the version and exit\n"
	    "  -h, --help               print this help and exit\n"
	    "\n"
	    "Signals: SIGHUP reloads the config (a bad one is refused), SIGTERM\n"
	    "and SIGINT drain and exit, SIGUSR1 reopens the audit log.\n"
	    "See moatd(8) and moat.json(5).\n");
}

static char *
read_file(const char *path, size_t *len, char *err, size_t errlen)
{
	struct stat	 st;
	char		*buf;
	size_t		 n = 0;
	ssize_t		 r;
	int		 fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) ||
	    st.st_size > MOATD_CONFIG_MAX_BYTES) {
		snprintf(err, errlen, "%s: %s", path, errno ? strerror(errno) :
		    !S_ISREG(st.st_mode) ? "not a regular file" :
		    "larger than 64 MiB");
		close(fd);
		return NULL;
	}
	if ((buf = malloc((size_t)st.st_size + 1)) == NULL) {
		snprintf(err, errlen, "%s: out of memory", path);
		close(fd);
		return NULL;
	}
	while (n < (size_t)st.st_size) {
		r = read(fd, buf + n, (size_t)st.st_size - n);
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1) {
			snprintf(err, errlen, "%s: %s", path, strerror(errno));
			free(buf);
			close(fd);
			return NULL;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	buf[n] = '\0';
	*len = n;
	return buf;
}

/*
 * Loads the config named on the command line (or the embedded one) and
 * applies --allow-private.  Prints every diagnostic; returns NULL if there
 * was an error.  what prefixes messages at reload ("reload refused").
 */
static struct moat_config *
load_config(struct moatd *m, int print_warnings, const char *what)
{
	struct policy_diags	 d;
	struct moat_config	*cfg;
	char			*buf = NULL, err[512], line[1024];
	const char		*name, *e = NULL;
	size_t			 len, i;

	if (m->config_path != NULL) {
		if ((buf = read_file(m->config_path, &len, err,
		    sizeof(err))) == NULL) {
			log_warnx("%s%s", what, err);
			return NULL;
		}
		name = m->config_name != NULL ? m->config_name :
		    m->config_path;
	} else {
		name = "(embedded default config)";
		len = moat_default_config_len;
	}
	policy_diags_init(&d);
	cfg = policy_config_load_opts(name, buf ? buf : moat_default_config,
	    len, &policyio_load_opts, &d);
	free(buf);
	for (i = 0; i < d.n; i++) {
		if (d.v[i].level == POLICY_DIAG_WARNING && !print_warnings)
			continue;
		policy_diag_format(&d, i, line, sizeof(line));
		fprintf(stderr, "%s%s\n", d.v[i].level == POLICY_DIAG_WARNING &&
		    what[0] != '\0' ? "reload: " : what, line);
	}
	policy_diags_clear(&d);
	if (cfg == NULL)
		return NULL;
	for (i = 0; i < m->nallow_private; i++) {
		if (policy_config_allow_private(cfg, m->allow_private[i],
		    &e) == -1) {
			fprintf(stderr, "%s--allow-private %s: %s\n", what,
			    m->allow_private[i], e);
			policy_config_unref(cfg);
			return NULL;
		}
	}
	return cfg;
}

/* Listener token files must be readable and private: check them all.
 * (Secret values are read by secrets_load().) */
static int
check_secrets(const struct moat_config *cfg)
{
	char	 err[512], *v;
	size_t	 i, j, len;
	int	 bad = 0;

	for (i = 0; i < cfg->nlisten; i++) {
		for (j = 0; j < cfg->listen[i].nauth; j++) {
			const struct moat_secret_ref *a = &cfg->listen[i].auth[j];

			v = secret_read(a, &len, err, sizeof(err));
			if (v == NULL) {
				fprintf(stderr, "%s:%d:%d: listen[%zu].auth.%s: "
				    "%s\n", cfg->file, a->line, a->column, i,
				    a->name, err);
				bad = 1;
			}
			secret_free(v, len);
		}
	}
	return bad ? -1 : 0;
}

static size_t
count_cpus(void)
{
	cpu_set_t	set;
	int		n;

	if (sched_getaffinity(0, sizeof(set), &set) == 0 &&
	    (n = CPU_COUNT(&set)) > 0)
		return (size_t)n;
	n = (int)sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (size_t)n : 1;
}

/*
 * Every connection may hold descriptors, so take all the kernel allows:
 * the soft limit goes up to the hard one.
 */
static void
raise_nofile(void)
{
	struct rlimit	rl;
	rlim_t		was;

	if (getrlimit(RLIMIT_NOFILE, &rl) == -1) {
		log_warn("getrlimit(RLIMIT_NOFILE)");
		return;
	}
	was = rl.rlim_cur;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) == -1) {
			log_warn("cannot raise the descriptor limit from %llu "
			    "to %llu", (unsigned long long)was,
			    (unsigned long long)rl.rlim_max);
			return;
		}
	}
	if (was != rl.rlim_cur)
		log_info("descriptor limit %llu (raised from %llu)",
		    (unsigned long long)rl.rlim_cur, (unsigned long long)was);
	else
		log_info("descriptor limit %llu", (unsigned long long)rl.rlim_cur);
}

/*
 * Descriptors that limits.connections asks for, roughly: 2 per connection
 * (client and upstream), 2 per pipe of each worker's pool, and a reserve
 * for listeners (a socket per worker each), each worker's own (event
 * loop, wake-up, spare, resolver) and the main thread's (stdio, audit,
 * admin, signals).  Documented in README ("Out of file descriptors").
 */
static void
check_nofile(const struct moat_config *cfg, size_t nworkers,
    const char *what)
{
	struct rlimit		rl;
	unsigned long long	need, reserve, fit;

	if (getrlimit(RLIMIT_NOFILE, &rl) == -1 || rl.rlim_cur == RLIM_INFINITY)
		return;
	reserve = MOATD_NOFILE_RESERVE + nworkers * (MOATD_NOFILE_PER_WORKER +
	    cfg->nlisten);
	need = 2ULL * cfg->limits.connections + nworkers * 2ULL *
	    WORKER_PIPE_POOL_MAX + reserve;
	if (need <= rl.rlim_cur)
		return;
	fit = rl.rlim_cur > reserve ? (rl.rlim_cur - reserve) / 2 : 0;
	/* The default asks for more than most sandboxes use: said, not
	 * warned, so that a plain `moat run` prints nothing. */
	(cfg->limits.connections_set ? log_warnx : log_info)(
	    "%slimits.connections %zu needs about %llu descriptors "
	    "(2 per connection, %d per worker for pipes, %llu in reserve), "
	    "but the limit is %llu: about %llu connections fit; when "
	    "descriptors run out, new connections are refused.  Raise the "
	    "hard limit (LimitNOFILE=, ulimit -Hn) or lower "
	    "limits.connections", what, cfg->limits.connections, need,
	    2 * WORKER_PIPE_POOL_MAX, reserve,
	    (unsigned long long)rl.rlim_cur, fit);
}

/*
 * After binding, moatd needs no privilege at all: switch to the
 * configured user, groups first, and check that nothing can be regained.
 */
static int
drop_privileges(const char *user)
{
	struct passwd	*pw;
	uid_t		 r, e, s;

	if ((pw = getpwnam(user)) == NULL) {
		log_warnx("user \"%s\": no such user", user);
		return -1;
	}
	if (geteuid() != 0) {
		if (geteuid() == pw->pw_uid)
			return 0;
		log_warnx("user \"%s\": moatd is not root, cannot switch", user);
		return -1;
	}
	if (setgroups(1, &pw->pw_gid) == -1 ||
	    setresgid(pw->pw_gid, pw->pw_gid, pw->pw_gid) == -1 ||
	    setresuid(pw->pw_uid, pw->pw_uid, pw->pw_uid) == -1) {
		log_warn("cannot switch to user \"%s\"", user);
		return -1;
	}
	if (getresuid(&r, &e, &s) == -1 || r != pw->pw_uid ||
	    e != pw->pw_uid || s != pw->pw_uid || setuid(0) != -1) {
		log_warnx("switching to user \"%s\" did not stick", user);
		return -1;
	}
	/* setresuid cleared the capabilities; keep it unable to regain any. */
	(void)prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	return 0;
}

/*
 * tls.trust_dir: the trust bundle and store the clients of moatd's own
 * listeners take (a Docker sidecar's container mounts the folder).  what
 * prefixes the warning ("reload: ").  0, or -1 after the warning.
 */
static int
publish_trust(const struct moat_config *cfg, struct tls *tls,
    const char *what)
{
	char	err[512];

	if (cfg->tls.trust_dir == NULL || tls == NULL)
		return 0;
	err[0] = '\0';
	if (tls_publish(tls, cfg->tls.trust_dir, err, sizeof(err)) == -1) {
		log_warnx("%stls.trust_dir: cannot write the trust bundle: %s",
		    what, err);
		return -1;
	}
	log_info("%strust: the clients of moatd's listeners trust %s/%s "
	    "(PEM) or %s/%s (PKCS12, for Java)", what, cfg->tls.trust_dir,
	    TLS_TRUST_PEM, cfg->tls.trust_dir, TLS_TRUST_P12);
	return 0;
}

/* "metrics" is read at start only: say so when a reload changes it. */
static int
same_metrics(const struct moat_metrics *a, const struct moat_metrics *b)
{
	return strcmp(a->address ? a->address : "", b->address ? b->address :
	    "") == 0 && a->mode == b->mode &&
	    a->max_sandboxes == b->max_sandboxes &&
	    a->max_rules == b->max_rules && a->max_series == b->max_series;
}

static int
same_listeners(const struct moat_config *a, const struct moat_config *b)
{
	size_t	i;

	if (a->nlisten != b->nlisten)
		return 0;
	for (i = 0; i < a->nlisten; i++) {
		const struct moat_listen *x = &a->listen[i], *y = &b->listen[i];

		if (x->proto != y->proto || strcmp(x->address, y->address) ||
		    x->mode != y->mode || x->nauth != y->nauth ||
		    x->connections != y->connections ||
		    x->connect_refusal != y->connect_refusal ||
		    strcmp(x->sandbox ? x->sandbox : "",
		    y->sandbox ? y->sandbox : ""))
			return 0;
	}
	return 1;
}

static void
on_sighup(evutil_socket_t fd, short what, void *arg)
{
	struct moatd		*m = arg;
	struct moat_config	*cfg;
	struct tls		*tls;
	struct secrets		*secrets;
	char			 err[512];
	size_t			 i;

	if (m->draining)
		return;
	m->admin.reloads_tried++;
	log_info("SIGHUP: reloading %s", m->config_path ? m->config_path :
	    "the embedded default config");
	if ((cfg = load_config(m, 1, "reload refused: ")) == NULL) {
		log_warnx("reload refused: the config has errors; the running "
		    "config stays in force");
		metrics_reload(false);
		return;
	}
	if (check_secrets(cfg) == -1) {
		log_warnx("reload refused: secrets or tokens cannot be read; "
		    "the running config stays in force");
		policy_config_unref(cfg);
		metrics_reload(false);
		return;
	}
	if (!same_listeners(m->cfg, cfg))
		log_warnx("reload: changes to \"listen\" need a restart; the "
		    "listeners stay as they are");
	if (!same_metrics(&m->cfg->metrics, &cfg->metrics))
		log_warnx("reload: changes to \"metrics\" need a restart; "
		    "metrics stay as they are");
	for (i = 0; i < cfg->nlisten; i++)
		if (cfg->listen[i].nauth > 0) {
			log_warnx("reload: listener auth tokens are read at "
			    "start; restart moatd to change them");
			break;
		}
	tls = tls_new(cfg, err, sizeof(err));
	if (tls == NULL && err[0] != '\0') {
		log_warnx("reload refused: tls: %s; the running config stays "
		    "in force", err);
		policy_config_unref(cfg);
		metrics_reload(false);
		return;
	}
	secrets = secrets_load(cfg, true, err, sizeof(err));
	if (secrets == NULL && err[0] != '\0') {
		log_warnx("reload refused: %s; the running config stays in "
		    "force", err);
		tls_unref(tls);
		policy_config_unref(cfg);
		metrics_reload(false);
		return;
	}
	check_nofile(cfg, m->nworkers, "reload: ");
	if (audit_set_chain(cfg->audit_chain) == -1)
		log_warnx("reload: out of memory for audit.hash_chain");
	if (audit_set_path(cfg->audit_path) == -1)
		log_warn("reload: cannot open the new audit log %s, keeping "
		    "the old one", cfg->audit_path);
	for (i = 0; i < m->nworkers; i++)
		worker_post_config(m->workers[i], cfg, tls, secrets);
	policy_config_unref(m->cfg);
	tls_unref(m->tls);
	secrets_unref(m->secrets);
	m->cfg = cfg;
	m->tls = tls;
	m->secrets = secrets;
	(void)publish_trust(cfg, tls, "reload: ");
	admin_reload();
	metrics_reload(true);
	log_info("reload done: new requests use the new policy");
}

static void
on_sigterm(evutil_socket_t fd, short what, void *arg)
{
	struct moatd	*m = arg;
	size_t		 i;

	if (m->draining) {
		log_info("second signal: stopping now");
		for (i = 0; i < m->nworkers; i++)
			worker_post_stop(m->workers[i]);
		return;
	}
	start_drain(m);
}

/* No new connections; open ones get timeouts.drain_ms to finish. */
static void
start_drain(struct moatd *m)
{
	struct timeval	 tv;
	size_t		 i;

	if (m->draining)
		return;
	m->draining = 1;
	log_info("draining: no new connections; open ones have %u ms",
	    m->cfg->timeouts.drain_ms);
	admin_shutdown();
	for (i = 0; i < m->nworkers; i++)
		worker_post_drain(m->workers[i]);
	tv = util_ms_tv(m->cfg->timeouts.drain_ms);
	evtimer_add(m->drain_timer, &tv);
}

/* The parent that started this private moatd is gone: so is our job. */
static void
on_admin_gone(void *arg)
{
	struct moatd	*m = arg;

	log_info("the admin connection closed: nothing left to serve");
	start_drain(m);
}

static void
on_drain_deadline(evutil_socket_t fd, short what, void *arg)
{
	struct moatd	*m = arg;
	size_t		 i;

	log_info("drain deadline reached: closing what is still open");
	for (i = 0; i < m->nworkers; i++)
		worker_post_stop(m->workers[i]);
}

static void
on_sigusr1(evutil_socket_t fd, short what, void *arg)
{
	log_info("SIGUSR1: reopening the audit log");
	audit_reopen();
}

static void
on_worker_done(evutil_socket_t fd, short what, void *arg)
{
	struct moatd	*m = arg;
	char		 b[64];
	ssize_t		 n;

	n = read(fd, b, sizeof(b));
	if (n > 0)
		m->nstopped += (size_t)n;
	if (m->nstopped >= m->nworkers)
		event_base_loopbreak(m->base);
}

/*
 * The command line: 0 or 2 when moatd is done (--help, --version,
 * --print-default-config, a bad option), -1 to go on.
 */
static int
moatd_options(struct moatd *m, int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "check", no_argument, NULL, 't' },
		{ "debug", no_argument, NULL, 'd' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "ready-fd", required_argument, NULL, 'R' },
		{ "admin-fd", required_argument, NULL, 'A' },
		{ "config-name", required_argument, NULL, 'N' },
		{ "allow-private", required_argument, NULL, 'P' },
		{ "print-default-config", no_argument, NULL, 'D' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	int	ch;

	while ((ch = getopt_long(argc, argv, "c:tdqVh", longopts, NULL)) != -1) {
		switch (ch) {
		case 'c':
			m->config_path = optarg;
			break;
		case 't':
			m->check = 1;
			break;
		case 'd':
			m->log_level = LOG_LVL_DEBUG;
			break;
		case 'q':
			m->log_level = LOG_LVL_WARN;
			break;
		case 'R':
			if (moatd_fd_arg("--ready-fd", optarg,
			    &m->ready_fd) == -1)
				return 2;
			break;
		case 'A':
			if (moatd_fd_arg("--admin-fd", optarg,
			    &m->admin_fd) == -1)
				return 2;
			break;
		case 'N':
			m->config_name = optarg;
			break;
		case 'P':
			m->allow_private = realloc(m->allow_private,
			    (m->nallow_private + 1) * sizeof(char *));
			if (m->allow_private == NULL)
				fatalx("out of memory");
			m->allow_private[m->nallow_private++] = optarg;
			break;
		case 'D':
			fwrite(moat_default_config, 1, moat_default_config_len,
			    stdout);
			return 0;
		case 'V':
			printf("moatd %s\n", PACKAGE_VERSION);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "moatd: unexpected argument \"%s\"\n",
		    argv[optind]);
		usage(stderr);
		return 2;
	}
	return -1;
}

/* A descriptor number given to option opt; -1 (said) if it is none. */
static int
moatd_fd_arg(const char *opt, const char *arg, int *fd)
{
	char	*end;
	long	 v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || *end != '\0' || v < 0 || v > INT_MAX) {
		fprintf(stderr, "moatd: %s: \"%s\" is not a descriptor "
		    "number\n", opt, arg);
		return -1;
	}
	*fd = (int)v;
	return 0;
}

/*
 * The config, the listener tokens, the TLS files and the secrets, all
 * checked before anything starts: 1 if one is bad, 0 after --check, -1
 * to go on (m->cfg, m->tls and m->secrets set).
 */
static int
moatd_load(struct moatd *m)
{
	char	err[1024];

	/*
	 * libidn2 now, before any config and any worker: every later config
	 * (reload, sandboxes) may need IDNA, and no worker loads a library.
	 * Without it, names that need IDNA are refused.
	 */
	(void)policyio_idn_load();
	if ((m->cfg = load_config(m, 1, "")) == NULL)
		return 1;
	if (check_secrets(m->cfg) == -1) {
		policy_config_unref(m->cfg);
		return 1;
	}
	if (m->cfg->nlisten == 0 && m->cfg->admin_address == NULL &&
	    m->admin_fd < 0) {
		fprintf(stderr, "%s:1:1: nothing to serve: add a listener to "
		    "\"listen\" or an \"admin\" socket\n", m->cfg->file);
		policy_config_unref(m->cfg);
		return 1;
	}
	/* The CA and upstream CA files load now: --check reports them too. */
	m->tls = tls_new(m->cfg, err, sizeof(err));
	if (m->tls == NULL && err[0] != '\0') {
		fprintf(stderr, "%s: tls: %s\n", m->cfg->file, err);
		policy_config_unref(m->cfg);
		return 1;
	}
	m->secrets = secrets_load(m->cfg, true, err, sizeof(err));
	if (m->secrets == NULL && err[0] != '\0') {
		fprintf(stderr, "%s\n", err);
		tls_unref(m->tls);
		policy_config_unref(m->cfg);
		return 1;
	}
	if (m->check) {
		secrets_unref(m->secrets);
		tls_unref(m->tls);
		printf("%s: configuration OK\n", m->cfg->file);
		policy_config_unref(m->cfg);
		return 0;
	}
	return -1;
}

/* "metrics": the counters, and the listening socket.  Exits on failure. */
static void
moatd_metrics_start(struct moatd *m)
{
	const struct moat_metrics	*mc = &m->cfg->metrics;
	struct metrics_limits		 lim;
	char				 err[512];

	lim.sandboxes = mc->max_sandboxes;
	lim.rules = mc->max_rules;
	lim.series = mc->max_series;
	if (metrics_init(&lim) == -1)
		fatalx("metrics: out of memory");
	if ((m->metrics_fd = metrics_http_bind(mc, err, sizeof(err))) == -1)
		fatalx("%s", err);
}

/*
 * Everything that needs privilege (the audit log, the metrics and the
 * other listeners, the admin socket), then the drop, then the workers.
 * Exits on failure.
 */
static void
moatd_start(struct moatd *m)
{
	char	err[1024];
	size_t	i;

	/* Secrets will live in this process: keep them out of core dumps. */
	(void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	signal(SIGPIPE, SIG_IGN);
	raise_nofile();

	m->nworkers = m->cfg->workers ? m->cfg->workers : count_cpus();
	if (m->nworkers > MOATD_MAX_WORKERS)
		m->nworkers = MOATD_MAX_WORKERS;
	check_nofile(m->cfg, m->nworkers, "");
	if (audit_set_chain(m->cfg->audit_chain) == -1)
		fatalx("audit.hash_chain: out of memory");
	if (audit_start(m->cfg->audit_path) == -1)
		fatal("audit log %s", m->cfg->audit_path);
	/* Before the listeners: their sandboxes take places in it. */
	if (m->cfg->metrics.address != NULL)
		moatd_metrics_start(m);
	m->listeners = listener_bind_all(m->cfg, m->nworkers, err,
	    sizeof(err));
	if (m->listeners == NULL && err[0] != '\0')
		fatalx("%s", err);
	if (m->cfg->admin_path != NULL) {
		m->admin_lfd = admin_bind(m->cfg->admin_path,
		    m->cfg->admin_mode, err, sizeof(err));
		if (m->admin_lfd == -1)
			fatalx("%s", err);
	}
	/* Before the drop: the folder may be root's. */
	if (publish_trust(m->cfg, m->tls, "") == -1)
		fatalx("the clients of the listeners would have nothing to "
		    "trust");
	if (m->cfg->user != NULL && drop_privileges(m->cfg->user) == -1)
		fatalx("refusing to run with more privilege than asked for");

	if ((m->base = util_base_new(0)) == NULL)
		fatalx("cannot create the main event loop");
	if (pipe2(m->done_pipe, O_CLOEXEC | O_NONBLOCK) == -1)
		fatal("pipe");
	if ((m->workers = calloc(m->nworkers, sizeof(*m->workers))) == NULL)
		fatalx("out of memory");
	for (i = 0; i < m->nworkers; i++) {
		if ((m->workers[i] = worker_new((int)i, m->cfg, m->tls,
		    m->secrets, m->listeners, err, sizeof(err))) == NULL)
			fatalx("worker %zu: %s", i, err);
		m->workers[i]->done_fd = m->done_pipe[1];
	}
	for (i = 0; i < m->nworkers; i++)
		if (worker_start(m->workers[i]) == -1)
			fatal("cannot start worker %zu", i);
}

/*
 * The main thread's events (signals, the drain deadline, the workers'
 * "stopped"), the admin socket or connection; then "ready".  Exits on
 * failure.
 */
static void
moatd_serve(struct moatd *m)
{
	struct listener	*l;

	m->sig_hup = evsignal_new(m->base, SIGHUP, on_sighup, m);
	m->sig_term = evsignal_new(m->base, SIGTERM, on_sigterm, m);
	m->sig_int = evsignal_new(m->base, SIGINT, on_sigterm, m);
	m->sig_usr1 = evsignal_new(m->base, SIGUSR1, on_sigusr1, m);
	m->drain_timer = evtimer_new(m->base, on_drain_deadline, m);
	m->done_ev = event_new(m->base, m->done_pipe[0], EV_READ | EV_PERSIST,
	    on_worker_done, m);
	if (m->sig_hup == NULL || m->sig_term == NULL || m->sig_int == NULL ||
	    m->sig_usr1 == NULL || m->drain_timer == NULL ||
	    m->done_ev == NULL ||
	    evsignal_add(m->sig_hup, NULL) == -1 ||
	    evsignal_add(m->sig_term, NULL) == -1 ||
	    evsignal_add(m->sig_int, NULL) == -1 ||
	    evsignal_add(m->sig_usr1, NULL) == -1 ||
	    event_add(m->done_ev, NULL) == -1)
		fatalx("cannot set up signal handling");

	m->admin.base = m->base;
	m->admin.workers = m->workers;
	m->admin.nworkers = m->nworkers;
	m->admin.cfg = &m->cfg;
	m->admin.tls = &m->tls;
	m->admin.listeners = m->listeners;
	if (m->admin_lfd >= 0 && admin_serve(&m->admin, m->admin_lfd,
	    m->cfg->admin_path) == -1)
		fatalx("cannot serve the admin socket");
	if (m->admin_fd >= 0 && admin_adopt(&m->admin, m->admin_fd,
	    on_admin_gone, m) == -1)
		fatal("--admin-fd %d", m->admin_fd);
	if (m->metrics_fd >= 0) {
		if ((m->metrics = metrics_http_serve(m->base, m->metrics_fd,
		    m->cfg->metrics.path)) == NULL)
			fatalx("cannot serve the metrics socket");
		m->metrics_fd = -1;	/* closed with m->metrics */
		log_info("metrics on %s (GET /metrics)",
		    m->cfg->metrics.address);
	}
	for (l = m->listeners; l != NULL; l = l->next)
		log_info("listening on %s (%s%s, sandbox \"%s\"%s)",
		    l->address, policy_proto_str(l->proto),
		    l->udp ? " over udp" : "", l->sandbox,
		    l->connect_refusal == MOAT_REFUSAL_IN_TUNNEL ? ", refused "
		    "CONNECTs answered inside the tunnel" : "");
	if (m->cfg->admin_address != NULL)
		log_info("admin socket on %s", m->cfg->admin_address);
	log_info("moatd %s running with %zu worker%s, config %s",
	    PACKAGE_VERSION, m->nworkers, m->nworkers == 1 ? "" : "s",
	    m->cfg->file);
	if (m->ready_fd >= 0) {
		(void)!WRITE_LIT(m->ready_fd, "ready\n");
		close(m->ready_fd);
	}
}

/* Once every worker has stopped: the rest, in an order that loses no
 * audit line. */
static void
moatd_stop(struct moatd *m)
{
	size_t	i;

	metrics_http_free(m->metrics);
	admin_shutdown();
	for (i = 0; i < m->nworkers; i++)
		worker_free(m->workers[i]);
	free(m->workers);
	/*
	 * Every audit line is queued now: write them out before the signal
	 * events go.  Freeing them gives SIGTERM its default action back,
	 * and moat run sends one as it closes a private moatd's admin
	 * connection: arriving there, it used to end moatd with its last
	 * lines ("unregistered") still queued.
	 */
	audit_stop();
	event_free(m->sig_hup);
	event_free(m->sig_term);
	event_free(m->sig_int);
	event_free(m->sig_usr1);
	event_free(m->drain_timer);
	event_free(m->done_ev);
	event_base_free(m->base);
	close(m->done_pipe[0]);
	close(m->done_pipe[1]);
	listener_free_all(m->listeners);
	policy_config_unref(m->cfg);
	tls_unref(m->tls);
	secrets_unref(m->secrets);
	free(m->allow_private);
	metrics_free();
	log_info("stopped");
}

int
main(int argc, char *argv[])
{
	struct moatd	m;
	int		rc;

	memset(&m, 0, sizeof(m));
	m.done_pipe[0] = m.done_pipe[1] = -1;
	m.admin_fd = m.admin_lfd = m.ready_fd = m.metrics_fd = -1;
	m.log_level = LOG_LVL_INFO;
	if ((rc = moatd_options(&m, argc, argv)) != -1)
		return rc;
	log_init("moatd", m.log_level);
	if ((rc = moatd_load(&m)) != -1)
		return rc;
	moatd_start(&m);
	moatd_serve(&m);
	event_base_dispatch(m.base);
	moatd_stop(&m);
	return 0;
}
