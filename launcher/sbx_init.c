/*
 * sbx_init.c - the namespaces `moat run` puts a workload in, and the
 * sandbox's init (pid 1 of its PID namespace).
 *
 * What it is: clone() into new mount, PID and network namespaces (and,
 * rootless, a user namespace whose ids the parent maps), then a small
 * init that mounts a fresh /proc, waits for the parent's go (end of file
 * is an abort), bind-mounts a resolv.conf naming moatd's DNS over
 * /etc/resolv.conf, enters a NESTED user namespace, installs a seccomp
 * filter on Unix sockets (unixfilter.c), starts the workload,
 * forwards signals to it, reaps everything, and exits with the workload's
 * status (128+N if it died of signal N).
 *
 * Why the nested user namespace (invariant 9): the network, mount and PID
 * namespaces are owned by the outer user namespace (or the host's, as
 * root).  The workload runs as uid 0 of a user namespace that owns none
 * of them, so it holds no capability over them: it cannot touch nftables,
 * routes, raw sockets or the resolv.conf mount, however root it looks.
 *
 * What it is not: a filesystem sandbox.  The workload sees the host's
 * files with its user's rights (root's, under a root `moat run`); moat
 * only hides moatd's admin sockets (the one it registers through and
 * every one listed in MOAT_ADMIN_REGISTRY), its CA key and secret files.  Combine with a
 * filesystem sandbox (bubblewrap, a container) for that.
 *
 * The handshake (nsjail's initParent / runChild, in small steps): one
 * SOCK_SEQPACKET pair; parent -> init: 'M' (ids mapped), 'G' + struct
 * sandbox_net (go), then the extras as 'B' + bytes (any number) and 'Z';
 * init -> parent: 'R' (ready for the network), 'L' with the seccomp
 * filter's listener and the init's nested user namespace in SCM_RIGHTS
 * (--allow-unix-socket only), 'S' (workload started), 'E' + text
 * (failed; the init exits), 'N' or 'X' + text (the command was not
 * found, or could not be executed).
 *
 * The extras: variables to set ("NAME=VALUE": the placeholders of the
 * sandbox's secrets) and to remove ("NAME": where moatd reads a secret's
 * value from), files to hide ("/PATH": moatd's CA key, secret files; the
 * init mounts /dev/null over each), each ending in NUL, an empty string,
 * then the trust bundle moatd built (its CA, the system's roots, the CA
 * files the user named; PEM, maybe none) and, after a NUL, the same as a
 * PKCS12 trust store (maybe none).  With a bundle, the init mounts it
 * read-only over the system bundle in the sandbox's mount namespace (so
 * programs that read only that file trust moat's CA too) and points the
 * usual variables at it; the trust store goes over every Java trust
 * store it finds (sandbox_java_stores()).  No file is written outside the
 * sandbox's mounts.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "certs/certs_paths.h"
#include "launcher/launcher.h"
#include "launcher/unixfilter.h"
#include "proto/admin_proto.h"

#define SANDBOX_MSG_MAX		512	/* one handshake message */
#define SANDBOX_RESOLV		"/etc/resolv.conf"
#define SANDBOX_TMPFS_BYTES	16384	/* the tmpfs, beyond the bundle */
#define SANDBOX_CHUNK_BYTES	16384	/* one 'B' message of the extras */
#define SANDBOX_EXTRA_MAX	(4u << 20)	/* the extras, bytes */
#define SANDBOX_ENV_MAX		256	/* variables the extras set/unset */
#define SANDBOX_MAP_MAX		64	/* one uid_map / gid_map line */
#define SANDBOX_JAVA_MAX	8	/* Java trust stores mounted over */

extern char	**environ;

struct sandbox {
	pid_t	pid;	/* the init, in our PID namespace; -1 once reaped */
	int	fd;	/* our end of the handshake */
	bool	ready;	/* its 'R' was read */
	bool	notify;	/* an 'L' comes before the 'S' */
	int	listener; /* the filter's listener (--allow-unix-socket) */
	int	userns;	/* and the init's (nested) user namespace */
};

/* The go message: its tag and what the init needs. */
struct sandbox_go {
	char			tag;	/* 'G' */
	char			pad[7];
	struct sandbox_net	net;
};

/* The proxy variables moat sets (and removes from the caller's). */
static const char *const sandbox_proxy_vars[] = {
	"HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy",
	"ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy"
};

/*
 * The variables TLS clients read their trust bundle from, set to the
 * sandbox's bundle when moatd intercepts: OpenSSL (and Python's ssl,
 * Ruby, PHP), requests, curl, node (adds to its own roots), git, pip,
 * cargo, the AWS SDKs and CLI, deno.  SSL_CERT_DIR is left alone: the
 * bundle holds every root, and the system's directory stays valid for
 * what it holds.  The files the caller's own values name are merged into
 * the bundle (runconf_trust_files()).
 */
const char *const sandbox_ca_vars[] = {
	"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
	"NODE_EXTRA_CA_CERTS", "GIT_SSL_CAINFO", "PIP_CERT",
	"CARGO_HTTP_CAINFO", "AWS_CA_BUNDLE", "DENO_CERT"
};
const size_t sandbox_ca_nvars = sizeof(sandbox_ca_vars) /
    sizeof(sandbox_ca_vars[0]);

/*
 * Where Java reads its default trust store (JAVA_HOME/lib/security/cacerts,
 * or jssecacerts when that exists): Debian's and Ubuntu's JDKs link it to
 * the first, Fedora's and RHEL's to the second.  The JDKs of JAVA_HOME
 * and of the java on PATH are looked at too.
 */
static const char *const sandbox_java_system[] = {
	"/etc/ssl/certs/java/cacerts",
	"/etc/pki/ca-trust/extracted/java/cacerts",
};

static void	sandbox_init(const struct sandbox_spec *spec, int fd)
		    __attribute__((noreturn));
static void	sandbox_fail(int fd, const char *fmt, ...)
		    __attribute__((noreturn, format(printf, 2, 3)));
static void	sandbox_close_fds(int keep1, int keep2);
static int	sandbox_write_file(const char *path, const char *text);
static void	sandbox_files(const char *nameserver, const char *bundle,
		    size_t bundlelen, const char *store, size_t storelen,
		    int fd);
static int	sandbox_mount_try(int mnt, const char *name,
		    const char *target);
static void	sandbox_java_add(char (*out)[PATH_MAX], size_t *n,
		    size_t max, const char *path);
static void	sandbox_java_home(char (*out)[PATH_MAX], size_t *n,
		    size_t max, const char *home);
static void	sandbox_mount_file(int mnt, const char *name,
		    const char *target, int fd);
static void	sandbox_mask(const char *path, int fd);
static void	sandbox_mask_admins(int fd);
static char	*sandbox_recv_extra(int fd, size_t *len);
static char	**sandbox_env(const struct sandbox_net *net,
		    const char *extra, size_t extralen, bool ca);
static void	sandbox_exec(const struct sandbox_spec *spec,
		    char **envp, int errfd) __attribute__((noreturn));
static void	sandbox_serve(pid_t wpid, int sfd, int fd)
		    __attribute__((noreturn));
static int	sandbox_recv(int fd, char *buf, size_t len, int timeout_ms);
static void	sandbox_notify(int fd);
static int	sandbox_recv_listener(struct sandbox *sb, char *err,
		    size_t errlen);
static int	sandbox_answer(struct sandbox *sb, char want, char *err,
		    size_t errlen);

/* --- the init (the clone's child) ------------------------------------ */

/*
 * Closes every descriptor but 0-2, keep1 and keep2 (-1: none).  The init
 * is a copy of moat run: it must not keep moat run's descriptors, and no
 * descriptor the caller left open (a socket, say) may reach the workload:
 * it could be a way out.
 */
static void
sandbox_close_fds(int keep1, int keep2)
{
	int	keep[2], i, lo = 3, t;

	keep[0] = keep1;
	keep[1] = keep2;
	if (keep[0] > keep[1]) {
		t = keep[0];
		keep[0] = keep[1];
		keep[1] = t;
	}
	for (i = 0; i < 2; i++) {
		if (keep[i] < lo)
			continue;	/* -1, 0-2, or the same as the other */
		if (keep[i] > lo)
			(void)close_range((unsigned)lo, (unsigned)keep[i] - 1,
			    0);
		lo = keep[i] + 1;
	}
	(void)close_range((unsigned)lo, ~0u, 0);
}

/* Reports a failure to the parent and exits. */
static void
sandbox_fail(int fd, const char *fmt, ...)
{
	char	msg[SANDBOX_MSG_MAX];
	va_list	ap;

	msg[0] = 'E';
	va_start(ap, fmt);
	vsnprintf(msg + 1, sizeof(msg) - 1, fmt, ap);
	va_end(ap);
	(void)send(fd, msg, strlen(msg), MSG_NOSIGNAL);
	_exit(MOAT_EXIT_LAUNCH);
}

static int
sandbox_write_file(const char *path, const char *text)
{
	size_t	len = strlen(text);
	ssize_t	r;
	int	fd;

	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) == -1)
		return -1;
	r = write(fd, text, len);
	if (close(fd) == -1 || r != (ssize_t)len)
		return -1;
	return 0;
}

/* Mounts name of the tmpfs mnt over target, read-only.  0 or -1. */
static int
sandbox_mount_try(int mnt, const char *name, const char *target)
{
	struct mount_attr	attr;
	int			tree, rc = -1, e;

	memset(&attr, 0, sizeof(attr));
	attr.attr_set = MOUNT_ATTR_RDONLY;
	if ((tree = open_tree(mnt, name, OPEN_TREE_CLONE |
	    OPEN_TREE_CLOEXEC)) == -1)
		return -1;
	if (mount_setattr(tree, "", AT_EMPTY_PATH, &attr, sizeof(attr)) == 0 &&
	    move_mount(tree, "", AT_FDCWD, target,
	    MOVE_MOUNT_F_EMPTY_PATH) == 0)
		rc = 0;
	e = errno;
	close(tree);
	errno = e;
	return rc;
}

/* The same, or the init gives up. */
static void
sandbox_mount_file(int mnt, const char *name, const char *target, int fd)
{
	if (sandbox_mount_try(mnt, name, target) == -1)
		sandbox_fail(fd, "cannot mount %s over %s: %s", name, target,
		    strerror(errno));
}

/* Writes len bytes of text to name in the directory mnt. */
static void
sandbox_write_at(int mnt, const char *name, const char *text, size_t len,
    int fd)
{
	ssize_t	w;
	size_t	off = 0;
	int	f;

	if ((f = openat(mnt, name, O_CREAT | O_WRONLY | O_CLOEXEC,
	    0644)) == -1)
		sandbox_fail(fd, "cannot write %s: %s", name, strerror(errno));
	while (off < len) {
		if ((w = write(f, text + off, len - off)) <= 0)
			sandbox_fail(fd, "cannot write %s: %s", name,
			    w == 0 ? "short write" : strerror(errno));
		off += (size_t)w;
	}
	if (close(f) == -1)
		sandbox_fail(fd, "cannot write %s: %s", name, strerror(errno));
}

/* Adds path's canonical name to out[] if it is a regular file not there. */
static void
sandbox_java_add(char (*out)[PATH_MAX], size_t *n, size_t max,
    const char *path)
{
	struct stat	st;
	char		real[PATH_MAX];
	size_t		i;

	if (*n == max || realpath(path, real) == NULL || stat(real,
	    &st) == -1 || !S_ISREG(st.st_mode))
		return;
	for (i = 0; i < *n; i++)
		if (strcmp(out[i], real) == 0)
			return;
	memcpy(out[(*n)++], real, strlen(real) + 1);
}

/* The trust stores of the JDK at home (".../lib/security/"). */
static void
sandbox_java_home(char (*out)[PATH_MAX], size_t *n, size_t max,
    const char *home)
{
	static const char *const files[] = {
		"lib/security/cacerts", "lib/security/jssecacerts",
		"jre/lib/security/cacerts", "jre/lib/security/jssecacerts"
	};
	char	path[PATH_MAX];
	size_t	i;

	if (home == NULL || home[0] != '/')
		return;
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", home,
		    files[i]) < sizeof(path))
			sandbox_java_add(out, n, max, path);
}

/* The JDK of the first java on PATH is its real path less "bin/java". */
size_t
sandbox_java_stores(char (*out)[PATH_MAX], size_t max)
{
	const char	*path = getenv("PATH"), *p, *e;
	char		 java[PATH_MAX], real[PATH_MAX], *slash;
	size_t		 n = 0, i, l;

	for (i = 0; i < sizeof(sandbox_java_system) /
	    sizeof(sandbox_java_system[0]); i++)
		sandbox_java_add(out, &n, max, sandbox_java_system[i]);
	sandbox_java_home(out, &n, max, getenv("JAVA_HOME"));
	for (p = path; p != NULL && *p != '\0'; p = *e != '\0' ? e + 1 : e) {
		e = p + strcspn(p, ":");
		l = (size_t)(e - p);
		if (l == 0 || p[0] != '/' || l + sizeof("/java") > sizeof(java))
			continue;
		memcpy(java, p, l);
		memcpy(java + l, "/java", sizeof("/java"));
		if (access(java, X_OK) == -1)
			continue;
		/* .../bin/java: the JDK is two levels up. */
		if (realpath(java, real) != NULL &&
		    (slash = strrchr(real, '/')) != NULL) {
			*slash = '\0';
			if ((slash = strrchr(real, '/')) != NULL &&
			    strcmp(slash, "/bin") == 0) {
				*slash = '\0';
				sandbox_java_home(out, &n, max, real);
			}
		}
		break;
	}
	return n;
}

/*
 * A tmpfs of the sandbox's own holding resolv.conf (naming moatd's DNS)
 * and, when moatd intercepts TLS, the trust bundle and its Java trust
 * store; each file is mounted read-only over its place (/etc/resolv.conf,
 * the system bundle, each Java trust store found; over what they point to
 * if they are symlinks).  The new mount API makes the files without
 * touching the host's filesystem.
 */
static void
sandbox_files(const char *nameserver, const char *bundle, size_t bundlelen,
    const char *store, size_t storelen, int fd)
{
	struct stat	 st;
	char		 resolv[PATH_MAX], sys[PATH_MAX], text[128], size[32];
	char		 java[SANDBOX_JAVA_MAX][PATH_MAX];
	size_t		 njava = 0, i;
	int		 fs = -1, mnt = -1, n;

	if (realpath(SANDBOX_RESOLV, resolv) == NULL ||
	    stat(resolv, &st) == -1)
		sandbox_fail(fd, "%s: %s (the file must exist: moat mounts the "
		    "sandbox's own over it)", SANDBOX_RESOLV, strerror(errno));
	if (!S_ISREG(st.st_mode))
		sandbox_fail(fd, "%s is not a regular file", resolv);
	errno = 0;
	if (bundle != NULL && (realpath(CERTS_SYSTEM_BUNDLE, sys) == NULL ||
	    stat(sys, &st) == -1 || !S_ISREG(st.st_mode)))
		sandbox_fail(fd, "%s: %s (moat mounts the sandbox's trust "
		    "bundle over it)", CERTS_SYSTEM_BUNDLE, errno ?
		    strerror(errno) : "not a regular file");
	if (bundle != NULL && store != NULL)
		njava = sandbox_java_stores(java, SANDBOX_JAVA_MAX);
	n = snprintf(text, sizeof(text), "# moat run: DNS goes to moatd\n"
	    "nameserver %s\n", nameserver);
	snprintf(size, sizeof(size), "%zu", bundlelen + storelen +
	    SANDBOX_TMPFS_BYTES);
	if ((fs = fsopen("tmpfs", FSOPEN_CLOEXEC)) == -1 ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "size", size, 0) == -1 ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "mode", "0755", 0) == -1 ||
	    fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) == -1 ||
	    (mnt = fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID |
	    MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC)) == -1)
		sandbox_fail(fd, "cannot make a tmpfs for resolv.conf: %s",
		    strerror(errno));
	sandbox_write_at(mnt, "resolv.conf", text, (size_t)n, fd);
	sandbox_mount_file(mnt, "resolv.conf", resolv, fd);
	if (bundle != NULL) {
		sandbox_write_at(mnt, "ca-bundle.crt", bundle, bundlelen, fd);
		sandbox_mount_file(mnt, "ca-bundle.crt", sys, fd);
	}
	if (njava > 0) {
		sandbox_write_at(mnt, "cacerts", store, storelen, fd);
		/* A JDK found by its path may be where no mount goes (a
		 * FUSE file system): its JVMs then trust what they did. */
		for (i = 0; i < njava; i++)
			(void)sandbox_mount_try(mnt, "cacerts", java[i]);
	}
	close(mnt);
	close(fs);
}

/*
 * Hides a file (moatd's admin socket, its CA key, a secret file) behind
 * /dev/null, read-only, in the sandbox's mount namespace.  The workload
 * holds no capability over that namespace, so it cannot unmount it.
 */
static void
sandbox_mask(const char *path, int fd)
{
	struct stat	st;

	if (path == NULL || stat(path, &st) == -1 || S_ISDIR(st.st_mode))
		return;
	if (mount("/dev/null", path, NULL, MS_BIND, NULL) == -1 ||
	    mount(NULL, path, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY |
	    MS_NOSUID | MS_NOEXEC, NULL) == -1)
		sandbox_fail(fd, "cannot hide %s from the sandbox: %s", path,
		    strerror(errno));
}

/*
 * Hides every admin socket a moatd on this machine listed in the registry
 * (MOAT_ADMIN_REGISTRY, admin_proto.h), not only the one moat run
 * registers with: a workload that reached any admin socket could register
 * a sandbox of its own there and leave through it.  An entry is one
 * absolute path and a newline; paths that are not sockets (now) are
 * skipped (a moatd that stopped, a stale entry).
 */
static void
sandbox_mask_admins(int fd)
{
	struct dirent	*de;
	struct stat	 st;
	char		 path[PATH_MAX + 1];
	ssize_t		 n;
	DIR		*d;
	int		 f;

	if ((d = opendir(MOAT_ADMIN_REGISTRY)) == NULL)
		return;		/* no moatd has listed a socket */
	while ((de = readdir(d)) != NULL) {
		/* Names are hex digits; "NAME.PID" is an entry being made. */
		if (de->d_name[0] == '.' || strchr(de->d_name, '.') != NULL)
			continue;
		if ((f = openat(dirfd(d), de->d_name, O_RDONLY | O_NOFOLLOW |
		    O_NONBLOCK | O_CLOEXEC)) == -1)
			continue;
		n = -1;
		if (fstat(f, &st) == 0 && S_ISREG(st.st_mode))
			n = read(f, path, sizeof(path));
		close(f);
		if (n < 2 || path[0] != '/' || path[n - 1] != '\n' ||
		    memchr(path, '\0', (size_t)n) != NULL)
			continue;
		path[n - 1] = '\0';
		if (stat(path, &st) == 0 && S_ISSOCK(st.st_mode))
			sandbox_mask(path, fd);
	}
	closedir(d);
}

/*
 * The extras after the go: 'B' messages appended until 'Z'.  Returns them
 * (NUL-terminated copy, *len bytes before it) or NULL: the init gives up.
 */
static char *
sandbox_recv_extra(int fd, size_t *len)
{
	char	*buf = NULL, *nb, msg[SANDBOX_CHUNK_BYTES + 1];
	size_t	 have = 0;
	ssize_t	 n;

	for (;;) {
		do
			n = recv(fd, msg, sizeof(msg), 0);
		while (n == -1 && errno == EINTR);
		if (n < 1 || (msg[0] != 'B' && msg[0] != 'Z') ||
		    (msg[0] == 'Z' && n != 1) || have + (size_t)n >
		    SANDBOX_EXTRA_MAX) {
			free(buf);
			return NULL;
		}
		if ((nb = realloc(buf, have + (size_t)n + 1)) == NULL) {
			free(buf);
			return NULL;
		}
		buf = nb;
		if (msg[0] == 'Z') {
			buf[have] = '\0';
			*len = have;
			return buf;
		}
		memcpy(buf + have, msg + 1, (size_t)n - 1);
		have += (size_t)n - 1;
	}
}

/* Whether entry ("NAME=..." or "NAME") names variable var. */
static bool
sandbox_env_is(const char *entry, const char *var)
{
	size_t	l = strcspn(var, "=");

	return strncmp(entry, var, l) == 0 && (entry[l] == '=' ||
	    entry[l] == '\0');
}

/*
 * The caller's environment, less the variables moat sets or removes, then
 * moat's proxy variables, the extras' variables, and (ca) the trust
 * bundle's.  NULL on a bad extra (the parent sent nonsense) or memory.
 */
static char **
sandbox_env(const struct sandbox_net *net, const char *extra,
    size_t extralen, bool ca)
{
	const char	*x[SANDBOX_ENV_MAX], *p, *end = extra + extralen;
	char		**env, *v;
	size_t		  n = 0, i, j, k = 0, nx = 0, nvars, ncas;
	bool		  drop;

	/* The extras' variables, up to the empty string. */
	for (p = extra; p < end && *p != '\0'; p += strlen(p) + 1) {
		size_t l = strcspn(p, "=");

		if (*p == '/')
			continue;	/* a file to hide */

		if (nx == SANDBOX_ENV_MAX || l == 0 || l > 255 ||
		    strspn(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuv"
		    "wxyz0123456789_") != l || (p[0] >= '0' && p[0] <= '9'))
			return NULL;
		x[nx++] = p;
	}
	nvars = sizeof(sandbox_proxy_vars) / sizeof(sandbox_proxy_vars[0]);
	ncas = ca ? sandbox_ca_nvars : 0;
	while (environ[n] != NULL)
		n++;
	if ((env = calloc(n + nvars + nx + ncas + 1, sizeof(*env))) == NULL)
		return NULL;
	for (i = 0; i < n; i++) {
		drop = false;
		for (j = 0; j < nvars && !drop; j++)
			drop = sandbox_env_is(environ[i],
			    sandbox_proxy_vars[j]);
		for (j = 0; j < ncas && !drop; j++)
			drop = sandbox_env_is(environ[i], sandbox_ca_vars[j]);
		for (j = 0; j < nx && !drop; j++) {
			size_t l = strcspn(x[j], "=");

			drop = strncmp(environ[i], x[j], l) == 0 &&
			    environ[i][l] == '=';
		}
		if (!drop)
			env[k++] = environ[i];
	}
	for (j = 0; j < nvars; j++) {
		const char	*name = sandbox_proxy_vars[j];
		int		 r;

		/*
		 * ALL_PROXY too names the HTTP proxy: every client that reads
		 * it takes http:// (httpx refuses socks5h://, and wants a
		 * package for socks5://), and what ignores it is caught by
		 * the transparent listener.
		 */
		if (strcasecmp(name, "NO_PROXY") == 0)
			r = asprintf(&v, "%s=localhost,127.0.0.1,::1", name);
		else
			r = asprintf(&v, "%s=http://%s:%u", name,
			    net->proxy_host, net->http_port);
		if (r == -1)
			return NULL;
		env[k++] = v;
	}
	for (j = 0; j < nx; j++)
		if (strchr(x[j], '=') != NULL)
			env[k++] = (char *)x[j];
	for (j = 0; j < ncas; j++) {
		if (asprintf(&v, "%s=%s", sandbox_ca_vars[j],
		    CERTS_SYSTEM_BUNDLE) == -1)
			return NULL;
		env[k++] = v;
	}
	env[k] = NULL;
	return env;
}

/* The workload: a session of its own, its terminal, no new privileges. */
static void
sandbox_exec(const struct sandbox_spec *spec, char **envp, int errfd)
{
	sigset_t	none;
	int		e, i;

	sigemptyset(&none);
	for (i = 1; i < NSIG; i++)
		(void)signal(i, SIG_DFL);
	sigprocmask(SIG_SETMASK, &none, NULL);
	(void)setsid();
	if (spec->tty != -1) {
		if (ioctl(spec->tty, TIOCSCTTY, 0) == -1)
			goto fail;
		for (i = 0; i <= 2; i++)
			if (isatty(i) && dup2(spec->tty, i) == -1)
				goto fail;
		if (spec->tty > 2)
			close(spec->tty);
	}
	sandbox_close_fds(errfd, -1);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1)
		goto fail;
	environ = envp;
	execvp(spec->argv[0], spec->argv);
 fail:
	e = errno;
	(void)!write(errfd, &e, sizeof(e));
	_exit(MOAT_EXIT_NOT_FOUND);
}

/*
 * pid 1 after the start: forward signals to the workload's process group,
 * reap every child, exit with the workload's status.  When pid 1 exits the
 * kernel kills everything else in the PID namespace.
 */
static void
sandbox_serve(pid_t wpid, int sfd, int fd)
{
	struct signalfd_siginfo	si;
	struct pollfd		pfd[2];
	pid_t			p;
	int			st;

	for (;;) {
		pfd[0].fd = sfd;
		pfd[0].events = POLLIN;
		pfd[1].fd = fd;
		pfd[1].events = POLLIN;
		if (poll(pfd, 2, -1) == -1) {
			if (errno == EINTR)
				continue;
			_exit(MOAT_EXIT_LAUNCH);
		}
		if (pfd[1].revents != 0) {
			/* The parent is gone (PDEATHSIG would have done it). */
			kill(-1, SIGKILL);
			_exit(MOAT_EXIT_LAUNCH);
		}
		if (pfd[0].revents == 0)
			continue;
		if (read(sfd, &si, sizeof(si)) != (ssize_t)sizeof(si))
			continue;
		if (si.ssi_signo != SIGCHLD) {
			if (kill(-wpid, (int)si.ssi_signo) == -1)
				(void)kill(wpid, (int)si.ssi_signo);
			continue;
		}
		while ((p = waitpid(-1, &st, WNOHANG)) > 0) {
			if (p != wpid)
				continue;
			if (WIFEXITED(st))
				_exit(WEXITSTATUS(st));
			_exit(128 + WTERMSIG(st));
		}
	}
}

/*
 * --allow-unix-socket: the filter that sends every connect() to moat
 * run's supervisor, whose listener goes to moat run ('L') and is not
 * kept: no process in the sandbox may answer its own calls.
 */
static void
sandbox_notify(int fd)
{
	struct msghdr	 mh;
	struct iovec	 iov;
	struct cmsghdr	*cm;
	union {
		char		buf[CMSG_SPACE(2 * sizeof(int))];
		struct cmsghdr	align;
	}		 u;
	char		 tag = 'L';
	int		 fds[2];

	/* Ours: the nested one, where the supervisor's workers go. */
	if ((fds[1] = open("/proc/self/ns/user", O_RDONLY | O_CLOEXEC)) ==
	    -1)
		sandbox_fail(fd, "/proc/self/ns/user: %s", strerror(errno));
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1 ||
	    (fds[0] = unixfilter_install_notify()) == -1)
		sandbox_fail(fd, "cannot install the seccomp filter on Unix "
		    "sockets: %s", strerror(errno));
	memset(&mh, 0, sizeof(mh));
	memset(&u, 0, sizeof(u));
	iov.iov_base = &tag;
	iov.iov_len = 1;
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = u.buf;
	mh.msg_controllen = sizeof(u.buf);
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(fds));
	memcpy(CMSG_DATA(cm), fds, sizeof(fds));
	if (sendmsg(fd, &mh, MSG_NOSIGNAL) != 1)
		_exit(MOAT_EXIT_LAUNCH);
	close(fds[0]);
	close(fds[1]);
}

/* The clone's child: pid 1 of the new PID namespace. */
static void
sandbox_init(const struct sandbox_spec *spec, int fd)
{
	struct sandbox_go	 go;
	sigset_t		 mask;
	char			 msg[SANDBOX_MSG_MAX], **envp, *extra;
	const char		*pem, *store, *end;
	size_t			 extralen, pemlen, storelen;
	ssize_t			 n;
	pid_t			 wpid;
	int			 sfd, ep[2], e;

	/* The sandbox dies with moat run. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) == -1)
		sandbox_fail(fd, "PR_SET_PDEATHSIG: %s", strerror(errno));
	sandbox_close_fds(fd, spec->tty);
	if (spec->userns) {
		/* Wait for the parent to map our ids (EOF: it gave up). */
		n = recv(fd, msg, sizeof(msg), 0);
		if (n != 1 || msg[0] != 'M')
			_exit(MOAT_EXIT_LAUNCH);
	}
	/* Away from the terminal's process group: signals come forwarded. */
	(void)setsid();
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == -1)
		sandbox_fail(fd, "cannot make mounts private: %s",
		    strerror(errno));
	if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC,
	    NULL) == -1)
		sandbox_fail(fd, "cannot mount /proc: %s", strerror(errno));
	if (send(fd, "R", 1, MSG_NOSIGNAL) != 1)
		_exit(MOAT_EXIT_LAUNCH);

	n = recv(fd, &go, sizeof(go), 0);
	if (n != (ssize_t)sizeof(go) || go.tag != 'G' ||
	    memchr(go.net.nameserver, '\0', sizeof(go.net.nameserver)) ==
	    NULL || memchr(go.net.proxy_host, '\0',
	    sizeof(go.net.proxy_host)) == NULL)
		_exit(MOAT_EXIT_LAUNCH);
	if ((extra = sandbox_recv_extra(fd, &extralen)) == NULL)
		_exit(MOAT_EXIT_LAUNCH);
	/* The bundle follows the variables' empty string, the trust store
	 * the bundle's NUL. */
	end = extra + extralen;
	for (pem = extra; pem < end && *pem != '\0'; pem += strlen(pem) + 1)
		;
	pem = pem < end ? pem + 1 : end;
	store = memchr(pem, '\0', (size_t)(end - pem));
	pemlen = (size_t)((store != NULL ? store : end) - pem);
	store = store != NULL ? store + 1 : end;
	storelen = (size_t)(end - store);
	sandbox_files(go.net.nameserver, pemlen > 0 ? pem : NULL, pemlen,
	    storelen > 0 ? store : NULL, storelen, fd);
	sandbox_mask(spec->mask, fd);
	sandbox_mask_admins(fd);
	for (pem = extra; pem < extra + extralen && *pem != '\0';
	    pem += strlen(pem) + 1)
		if (*pem == '/')
			sandbox_mask(pem, fd);
	if ((envp = sandbox_env(&go.net, extra, extralen, pemlen > 0)) ==
	    NULL)
		sandbox_fail(fd, "bad variables from moat run, or out of "
		    "memory");

	/*
	 * The nested user namespace: uid and gid 0 map to 0 of the one
	 * outside, which owns the network, mount and PID namespaces; this
	 * one owns nothing.
	 */
	if (unshare(CLONE_NEWUSER) == -1)
		sandbox_fail(fd, "cannot create the nested user namespace: %s",
		    strerror(errno));
	if (sandbox_write_file("/proc/self/setgroups", "deny") == -1 ||
	    sandbox_write_file("/proc/self/uid_map", "0 0 1\n") == -1 ||
	    sandbox_write_file("/proc/self/gid_map", "0 0 1\n") == -1)
		sandbox_fail(fd, "cannot map ids in the nested user namespace: "
		    "%s", strerror(errno));
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) == -1 ||
	    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == -1)
		sandbox_fail(fd, "prctl: %s", strerror(errno));
	/*
	 * The filter goes on the init, so the workload inherits it and
	 * cannot run a line before it; the init makes no socket from here.
	 * no_new_privs first, as seccomp wants without CAP_SYS_ADMIN.
	 */
	if (spec->unix_notify)
		sandbox_notify(fd);
	else if (!spec->unix_sockets && (prctl(PR_SET_NO_NEW_PRIVS, 1, 0,
	    0, 0) == -1 || unixfilter_install() == -1))
		sandbox_fail(fd, "cannot install the seccomp filter on Unix "
		    "sockets: %s", strerror(errno));

	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGQUIT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGUSR1);
	sigaddset(&mask, SIGUSR2);
	sigaddset(&mask, SIGWINCH);
	sigaddset(&mask, SIGCONT);
	sigaddset(&mask, SIGALRM);
	if (sigprocmask(SIG_BLOCK, &mask, NULL) == -1 ||
	    (sfd = signalfd(-1, &mask, SFD_CLOEXEC)) == -1)
		sandbox_fail(fd, "signalfd: %s", strerror(errno));
	if (pipe2(ep, O_CLOEXEC) == -1)
		sandbox_fail(fd, "pipe: %s", strerror(errno));
	if ((wpid = fork()) == -1)
		sandbox_fail(fd, "fork: %s", strerror(errno));
	if (wpid == 0) {
		close(ep[0]);
		close(sfd);
		close(fd);
		sandbox_exec(spec, envp, ep[1]);
	}
	close(ep[1]);
	if (spec->tty != -1)
		close(spec->tty);
	/* Nothing comes back on the pipe when exec succeeded. */
	do
		n = read(ep[0], &e, sizeof(e));
	while (n == -1 && errno == EINTR);
	close(ep[0]);
	if (n == (ssize_t)sizeof(e)) {
		snprintf(msg, sizeof(msg), "%c%s: %s", e == ENOENT ? 'N' : 'X',
		    spec->argv[0], strerror(e));
		(void)send(fd, msg, strlen(msg), MSG_NOSIGNAL);
		while (waitpid(wpid, NULL, 0) == -1 && errno == EINTR)
			;
		_exit(e == ENOENT ? MOAT_EXIT_NOT_FOUND :
		    MOAT_EXIT_CANNOT_EXEC);
	}
	if (send(fd, "S", 1, MSG_NOSIGNAL) != 1)
		_exit(MOAT_EXIT_LAUNCH);
	sandbox_serve(wpid, sfd, fd);
}

/* --- the parent's side ------------------------------------------------ */

/* One handshake message within timeout_ms: its length, 0 EOF, -1 error. */
static int
sandbox_recv(int fd, char *buf, size_t len, int timeout_ms)
{
	struct pollfd	pfd;
	ssize_t		n;
	int		r;

	pfd.fd = fd;
	pfd.events = POLLIN;
	do
		r = poll(&pfd, 1, timeout_ms);
	while (r == -1 && errno == EINTR);
	if (r <= 0) {
		errno = r == 0 ? ETIMEDOUT : errno;
		return -1;
	}
	do
		n = recv(fd, buf, len - 1, 0);
	while (n == -1 && errno == EINTR);
	if (n == -1)
		return -1;
	buf[n] = '\0';
	return (int)n;
}

/* The init's 'L' and the listener it carries (or its 'E'). */
static int
sandbox_recv_listener(struct sandbox *sb, char *err, size_t errlen)
{
	struct msghdr	 mh;
	struct iovec	 iov;
	struct cmsghdr	*cm;
	struct pollfd	 pfd;
	union {
		char		buf[CMSG_SPACE(2 * sizeof(int))];
		struct cmsghdr	align;
	}		 u;
	char		 msg[SANDBOX_MSG_MAX];
	int		 fds[2];
	ssize_t		 n;
	int		 r;

	pfd.fd = sb->fd;
	pfd.events = POLLIN;
	do
		r = poll(&pfd, 1, MOAT_STEP_TIMEOUT_MS);
	while (r == -1 && errno == EINTR);
	memset(&mh, 0, sizeof(mh));
	iov.iov_base = msg;
	iov.iov_len = sizeof(msg) - 1;
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = u.buf;
	mh.msg_controllen = sizeof(u.buf);
	n = r == 1 ? recvmsg(sb->fd, &mh, MSG_CMSG_CLOEXEC) : -1;
	cm = n == 1 && msg[0] == 'L' ? CMSG_FIRSTHDR(&mh) : NULL;
	if (cm != NULL && cm->cmsg_level == SOL_SOCKET &&
	    cm->cmsg_type == SCM_RIGHTS &&
	    cm->cmsg_len == CMSG_LEN(sizeof(fds)) &&
	    (mh.msg_flags & MSG_CTRUNC) == 0) {
		memcpy(fds, CMSG_DATA(cm), sizeof(fds));
		sb->listener = fds[0];
		sb->userns = fds[1];
		return 0;
	}
	if (n > 1 && msg[0] == 'E') {
		msg[n] = '\0';
		snprintf(err, errlen, "sandbox: %s", msg + 1);
	} else
		snprintf(err, errlen, "the sandbox's init did not send the "
		    "seccomp filter's listener");
	return -1;
}

/* Waits for the init's message want ('R', 'S'); 'E' is its error. */
static int
sandbox_answer(struct sandbox *sb, char want, char *err, size_t errlen)
{
	char	msg[SANDBOX_MSG_MAX];
	int	n;

	n = sandbox_recv(sb->fd, msg, sizeof(msg), MOAT_STEP_TIMEOUT_MS);
	if (n == 1 && msg[0] == want)
		return 0;
	if (n > 1 && msg[0] == 'E')
		snprintf(err, errlen, "sandbox: %s", msg + 1);
	else if (n == 0)
		snprintf(err, errlen, "the sandbox's init exited during "
		    "set-up");
	else if (n == -1)
		snprintf(err, errlen, "the sandbox's init did not answer: %s",
		    strerror(errno));
	else
		snprintf(err, errlen, "the sandbox's init sent a bad message");
	return -1;
}

struct sandbox *
sandbox_create(const struct sandbox_spec *spec, char *err, size_t errlen)
{
	struct sandbox	*sb;
	char		 path[64], map[SANDBOX_MAP_MAX];
	long		 flags;
	int		 sv[2];

	if ((sb = calloc(1, sizeof(*sb))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	sb->pid = -1;
	sb->fd = -1;
	sb->listener = -1;
	sb->userns = -1;
	sb->notify = spec->unix_notify;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == -1) {
		snprintf(err, errlen, "socketpair: %s", strerror(errno));
		free(sb);
		return NULL;
	}
	flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET;
	if (spec->userns)
		flags |= CLONE_NEWUSER;
	/* clone(2) with fork semantics: the child runs on a copy of us. */
	sb->pid = (pid_t)syscall(SYS_clone, flags | SIGCHLD, NULL, NULL, NULL,
	    0L);
	if (sb->pid == -1) {
		snprintf(err, errlen, "cannot create the sandbox's namespaces: "
		    "%s%s", strerror(errno), spec->userns && (errno == EPERM ||
		    errno == ENOSPC || errno == EINVAL) ? " (are unprivileged "
		    "user namespaces allowed here?)" : "");
		close(sv[0]);
		close(sv[1]);
		free(sb);
		return NULL;
	}
	if (sb->pid == 0) {
		close(sv[0]);
		sandbox_init(spec, sv[1]);
	}
	close(sv[1]);
	sb->fd = sv[0];
	if (spec->userns) {
		/* uid and gid 0 inside are ours outside; no setgroups. */
		snprintf(path, sizeof(path), "/proc/%d/uid_map", (int)sb->pid);
		snprintf(map, sizeof(map), "0 %lu 1\n",
		    (unsigned long)geteuid());
		if (sandbox_write_file(path, map) == -1)
			goto mapfail;
		snprintf(path, sizeof(path), "/proc/%d/setgroups",
		    (int)sb->pid);
		if (sandbox_write_file(path, "deny") == -1)
			goto mapfail;
		snprintf(path, sizeof(path), "/proc/%d/gid_map", (int)sb->pid);
		snprintf(map, sizeof(map), "0 %lu 1\n",
		    (unsigned long)getegid());
		if (sandbox_write_file(path, map) == -1)
			goto mapfail;
		if (send(sb->fd, "M", 1, MSG_NOSIGNAL) != 1) {
			snprintf(err, errlen, "the sandbox's init is gone");
			goto fail;
		}
	}
	/*
	 * The namespaces exist now: the init mounts its /proc while moat
	 * sets up their network; sandbox_go() reads its 'R' first.
	 */
	return sb;
 mapfail:
	snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
 fail:
	sandbox_kill(sb);
	sandbox_free(sb);
	return NULL;
}

int
sandbox_nsfd(const struct sandbox *sb, const char *type, char *err,
    size_t errlen)
{
	char	path[64];
	int	fd;

	snprintf(path, sizeof(path), "/proc/%d/ns/%s", (int)sb->pid, type);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
	return fd;
}

int
sandbox_go(struct sandbox *sb, const struct sandbox_net *net,
    const char *extra, size_t extralen, int *code, char *err, size_t errlen)
{
	struct sandbox_go	go;
	char			msg[SANDBOX_MSG_MAX], chunk[SANDBOX_CHUNK_BYTES + 1];
	size_t			off, take;
	int			n;

	*code = MOAT_EXIT_LAUNCH;
	if (!sb->ready) {
		if (sandbox_answer(sb, 'R', err, errlen) == -1)
			return -1;
		sb->ready = true;
	}
	memset(&go, 0, sizeof(go));
	go.tag = 'G';
	go.net = *net;
	if (send(sb->fd, &go, sizeof(go), MSG_NOSIGNAL) !=
	    (ssize_t)sizeof(go))
		goto gone;
	if (extralen > SANDBOX_EXTRA_MAX) {
		snprintf(err, errlen, "too many variables or certificates for "
		    "the sandbox (%zu bytes)", extralen);
		return -1;
	}
	chunk[0] = 'B';
	for (off = 0; off < extralen; off += take) {
		take = extralen - off < SANDBOX_CHUNK_BYTES ? extralen - off :
		    SANDBOX_CHUNK_BYTES;
		memcpy(chunk + 1, extra + off, take);
		if (send(sb->fd, chunk, take + 1, MSG_NOSIGNAL) !=
		    (ssize_t)take + 1)
			goto gone;
	}
	if (send(sb->fd, "Z", 1, MSG_NOSIGNAL) != 1)
		goto gone;
	if (sb->notify && sandbox_recv_listener(sb, err, errlen) == -1)
		return -1;
	n = sandbox_recv(sb->fd, msg, sizeof(msg), MOAT_STEP_TIMEOUT_MS);
	if (n == 1 && msg[0] == 'S')
		return 0;
	if (n > 1 && (msg[0] == 'N' || msg[0] == 'X')) {
		/* The command itself could not run: exec's error. */
		*code = msg[0] == 'N' ? MOAT_EXIT_NOT_FOUND :
		    MOAT_EXIT_CANNOT_EXEC;
		snprintf(err, errlen, "%s", msg + 1);
		return -1;
	}
	if (n > 1 && msg[0] == 'E')
		snprintf(err, errlen, "sandbox: %s", msg + 1);
	else if (n == 0)
		snprintf(err, errlen, "the sandbox's init exited before the "
		    "workload started");
	else
		snprintf(err, errlen, "the sandbox's init did not answer: %s",
		    n == -1 ? strerror(errno) : "bad message");
	return -1;
 gone:
	snprintf(err, errlen, "the sandbox's init is gone: %s",
	    strerror(errno));
	return -1;
}

int
sandbox_take_listener(struct sandbox *sb, int *userns)
{
	int	fd = sb->listener;

	*userns = sb->userns;
	sb->listener = sb->userns = -1;
	return fd;
}

pid_t
sandbox_pid(const struct sandbox *sb)
{
	return sb->pid;
}

void
sandbox_kill(struct sandbox *sb)
{
	if (sb == NULL || sb->pid == -1)
		return;
	(void)kill(sb->pid, SIGKILL);
	while (waitpid(sb->pid, NULL, 0) == -1 && errno == EINTR)
		;
	sb->pid = -1;
}

void
sandbox_free(struct sandbox *sb)
{
	if (sb == NULL)
		return;
	if (sb->fd != -1)
		close(sb->fd);
	if (sb->listener != -1)
		close(sb->listener);
	if (sb->userns != -1)
		close(sb->userns);
	free(sb);
}
