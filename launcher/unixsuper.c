/*
 * unixsuper.c - the supervisor of the workload's connect() calls when
 * `moat run` is given --allow-unix-socket PATH (moat(1), "Unix sockets").
 *
 * Why it is built this way: a seccomp filter sees neither connect()'s
 * address nor its socket's family, and letting the kernel go on with the
 * call after looking at the address (SECCOMP_USER_NOTIF_FLAG_CONTINUE)
 * is a time-of-check hole: the workload rewrites the buffer in between.
 * So the filter (unixfilter_install_notify) sends EVERY connect() here
 * and the kernel never performs one itself: a worker copies the address
 * out of the workload's memory once, takes the workload's socket with
 * pidfd_getfd(2) (the same socket object, not a copy), and connects it
 * itself with its copy.  A Unix address is connected only when the
 * socket its path leads to (resolved once, pinned by an O_PATH
 * descriptor, connected through that descriptor) has one of the allowed
 * paths as canonical name; an abstract or relative one fails with EPERM.  Every other family is
 * connected as given (the sandbox's network, where the socket lives,
 * still decides).  Paths resolve in moat run's mount namespace, which
 * for `moat run` shows the same files as the workload's.
 *
 * UNIXSUPER_WORKERS worker processes wait for calls, so a connect that
 * blocks (a TCP handshake, a full backlog) holds up only its worker.  A
 * worker per call (fork) made each connect() cost 2 ms; a standing one
 * costs about 0.1 ms (a plain loopback TCP connect: 0.03 ms).
 */
#include "config.h"

#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/kcmp.h>
#include <linux/seccomp.h>

#include "launcher/unixsuper.h"

#define UNIXSUPER_WORKERS	4	/* connect() calls served at once */

int
unixsuper_canon(const char *in, char *out, char *err, size_t errlen)
{
	char		 dir[PATH_MAX], real[PATH_MAX];
	const char	*base, *slash;
	int		 n;

	if (in[0] != '/') {
		snprintf(err, errlen, "%s: not an absolute path", in);
		return -1;
	}
	if (strlen(in) >= sizeof(dir)) {
		snprintf(err, errlen, "path too long");
		return -1;
	}
	if (realpath(in, real) != NULL)
		goto done;
	if (errno != ENOENT) {
		snprintf(err, errlen, "%s: %s", in, strerror(errno));
		return -1;
	}
	/* Not there (yet): the directory must be. */
	slash = strrchr(in, '/');
	base = slash + 1;
	if (*base == '\0' || strcmp(base, ".") == 0 ||
	    strcmp(base, "..") == 0) {
		snprintf(err, errlen, "%s: names no socket", in);
		return -1;
	}
	memcpy(dir, in, (size_t)(slash - in));
	dir[slash - in] = '\0';
	if (realpath(dir[0] == '\0' ? "/" : dir, real) == NULL) {
		snprintf(err, errlen, "%s: %s", in, strerror(errno));
		return -1;
	}
	n = snprintf(dir, sizeof(dir), "%s/%s", strcmp(real, "/") == 0 ?
	    "" : real, base);
	if (n < 0 || (size_t)n >= sizeof(dir)) {
		snprintf(err, errlen, "%s: path too long", in);
		return -1;
	}
	memcpy(real, dir, (size_t)n + 1);
 done:
	if (strlen(real) >= UNIXSUPER_PATH_MAX) {
		snprintf(err, errlen, "%s: %s is too long for a Unix socket",
		    in, real);
		return -1;
	}
	memcpy(out, real, strlen(real) + 1);
	return 0;
}

int
unixsuper_match(const char *path, size_t len,
    char allowed[][UNIXSUPER_PATH_MAX], size_t n)
{
	char	buf[UNIXSUPER_PATH_MAX + 1], canon[UNIXSUPER_PATH_MAX];
	char	err[64];
	size_t	i;

	if (len == 0 || path[0] != '/')
		return -1;	/* unnamed, abstract ('\0'), relative */
	if (len > UNIXSUPER_PATH_MAX)
		len = UNIXSUPER_PATH_MAX;
	memcpy(buf, path, len);
	buf[len] = '\0';
	if (unixsuper_canon(buf, canon, err, sizeof(err)) == -1)
		return -1;
	for (i = 0; i < n; i++)
		if (strcmp(canon, allowed[i]) == 0)
			return (int)i;
	return -1;
}

/*
 * A pidfd of the process whose descriptor table thread tid uses: its own
 * when it leads its thread group, else its leader's, if they share the
 * table (kcmp).  -1 otherwise.
 */
static int
unixsuper_pidfd(pid_t tid)
{
	char	path[64], line[128];
	FILE	*f;
	long	tgid = -1;
	int	fd;

	if ((fd = (int)syscall(SYS_pidfd_open, tid, 0)) != -1 ||
	    errno != EINVAL)
		return fd;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	if ((f = fopen(path, "re")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "Tgid: %ld", &tgid) == 1)
			break;
	fclose(f);
	if (tgid <= 0 || syscall(SYS_kcmp, tid, (pid_t)tgid, KCMP_FILES, 0,
	    0) != 0)
		return -1;
	return (int)syscall(SYS_pidfd_open, (pid_t)tgid, 0);
}

/* Whether the namespace ns is ours (setns() into it would fail). */
static int
unixsuper_same_ns(int ns)
{
	struct stat	a, b;

	return fstat(ns, &a) == 0 && stat("/proc/self/ns/user", &b) == 0 &&
	    a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/*
 * A Unix address, on our copy: the path is resolved ONCE, by an O_PATH
 * open, and what that open found is both what is compared (its canonical
 * name, from /proc/self/fd) and what is connected (through the same
 * /proc/self/fd link).  Resolving twice, to compare and then to connect,
 * would let a workload that can write the allowed path's directory swap
 * in a symbolic link to any socket in between.  0 or the errno.
 */
static int
unixsuper_unix(int fd, const struct sockaddr_un *su, size_t len,
    char allowed[][UNIXSUPER_PATH_MAX], size_t n)
{
	struct sockaddr_un	sun;
	char			path[UNIXSUPER_PATH_MAX + 1];
	char			real[PATH_MAX + 1];
	ssize_t			rl;
	size_t			i;
	int			pfd, e;

	if (len == 0 || su->sun_path[0] != '/')
		return EPERM;	/* unnamed, abstract, relative */
	if (len > UNIXSUPER_PATH_MAX)
		len = UNIXSUPER_PATH_MAX;
	memcpy(path, su->sun_path, len);
	path[len] = '\0';
	if ((pfd = open(path, O_PATH | O_CLOEXEC)) == -1) {
		/* Nothing there: say so only for an allowed path. */
		e = errno;
		return unixsuper_match(path, strlen(path), allowed, n) == -1 ?
		    EPERM : e;
	}
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "/proc/self/fd/%d", pfd);
	rl = readlink(sun.sun_path, real, sizeof(real) - 1);
	e = EPERM;
	if (rl > 0) {
		real[rl] = '\0';
		for (i = 0; i < n; i++)
			if (strcmp(real, allowed[i]) == 0)
				break;
		if (i < n)
			e = connect(fd, (struct sockaddr *)&sun, sizeof(sun)) ==
			    -1 ? errno : 0;
	}
	close(pfd);
	return e;
}

/* The connect() itself, on our copy: 0 or its errno. */
static int
unixsuper_do(int fd, const struct sockaddr_storage *ss, socklen_t len,
    char allowed[][UNIXSUPER_PATH_MAX], size_t n)
{
	if (len >= sizeof(sa_family_t) && ss->ss_family == AF_UNIX)
		return unixsuper_unix(fd, (const struct sockaddr_un *)ss,
		    (size_t)len - offsetof(struct sockaddr_un, sun_path),
		    allowed, n);
	return connect(fd, (const struct sockaddr *)ss, len) == -1 ? errno :
	    0;
}

/*
 * With the caller's privileges, not ours: in its user namespace, which
 * owns nothing, a worker holds no capability over the sandbox's network
 * (a netlink connect() checks the connecting task's) and reaches files
 * as the caller would.  Workers start in the workload's namespace; a
 * call from a namespace the workload made under it is served by a child
 * that enters that one.  0 or the errno.
 */
static int
unixsuper_as(int userns, int fd, const struct sockaddr_storage *ss,
    socklen_t len, char allowed[][UNIXSUPER_PATH_MAX], size_t n)
{
	pid_t	pid;
	int	st;

	if (unixsuper_same_ns(userns))
		return unixsuper_do(fd, ss, len, allowed, n);
	if ((pid = fork()) == -1)
		return EAGAIN;
	if (pid == 0) {
		if (setns(userns, CLONE_NEWUSER) == -1)
			_exit(EPERM);
		_exit(unixsuper_do(fd, ss, len, allowed, n));
	}
	while (waitpid(pid, &st, 0) == -1)
		if (errno != EINTR)
			return EPERM;
	return WIFEXITED(st) ? WEXITSTATUS(st) : EPERM;
}

/*
 * One connect(): 0 or the errno for the workload; -1 when the call is
 * gone (nothing to answer).
 */
static int
unixsuper_connect(int listener, const struct seccomp_notif *req,
    char allowed[][UNIXSUPER_PATH_MAX], size_t n)
{
	struct sockaddr_storage	ss;
	char			path[64];
	uint64_t		addr = req->data.args[1];
	uint64_t		len = req->data.args[2] & 0xffffffffu;
	int			mem, pidfd, userns, fd = -1, e;

	snprintf(path, sizeof(path), "/proc/%d/mem", (int)req->pid);
	mem = open(path, O_RDONLY | O_CLOEXEC);
	snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)req->pid);
	userns = open(path, O_RDONLY | O_CLOEXEC);
	pidfd = unixsuper_pidfd((pid_t)req->pid);
	/* All opened before this check: they are the caller's. */
	if (ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &req->id) == -1)
		e = -1;
	else if (mem == -1 || userns == -1 || pidfd == -1)
		e = EPERM;
	/* As the kernel's move_addr_to_kernel(): socklen_t is an int. */
	else if ((int32_t)len < 0 || len > sizeof(ss))
		e = EINVAL;
	/* The one read of the caller's address; only the copy is used. */
	else if (memset(&ss, 0, sizeof(ss)), len > 0 && pread(mem, &ss,
	    (size_t)len, (off_t)addr) != (ssize_t)len)
		e = EFAULT;
	else if ((fd = (int)syscall(SYS_pidfd_getfd, pidfd,
	    (int)req->data.args[0], 0)) == -1)
		e = errno == EBADF ? EBADF : EPERM;
	else
		e = unixsuper_as(userns, fd, &ss, (socklen_t)len, allowed, n);
	if (fd != -1)
		close(fd);
	if (pidfd != -1)
		close(pidfd);
	if (userns != -1)
		close(userns);
	if (mem != -1)
		close(mem);
	return e;
}

/* Answers the call: connect() returns 0 or fails with e. */
static void
unixsuper_reply(int listener, const struct seccomp_notif *req, int e)
{
	struct seccomp_notif_resp	resp;

	memset(&resp, 0, sizeof(resp));
	resp.id = req->id;
	resp.error = -e;
	(void)ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
}

/*
 * A worker: enters the workload's user namespace (userns, or stays
 * where it is with -1), then serves calls until no task is left under
 * the filter.
 */
static void
unixsuper_worker(int listener, int userns,
    char allowed[][UNIXSUPER_PATH_MAX], size_t n)
{
	struct seccomp_notif_sizes	 sizes;
	struct seccomp_notif		*req;
	struct pollfd			 pfd;
	size_t				 reqsize;
	int				 e;

	(void)prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	if (userns != -1 && (setns(userns, CLONE_NEWUSER) == -1 ||
	    close(userns) == -1))
		_exit(1);
	if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes) == -1)
		_exit(1);
	reqsize = sizes.seccomp_notif > sizeof(*req) ? sizes.seccomp_notif :
	    sizeof(*req);
	if ((req = malloc(reqsize)) == NULL)
		_exit(1);
	for (;;) {
		pfd.fd = listener;
		pfd.events = POLLIN;
		if (poll(&pfd, 1, -1) == -1) {
			if (errno == EINTR)
				continue;
			_exit(1);
		}
		if ((pfd.revents & POLLIN) == 0) {
			/* Every task under the filter is gone. */
			if (pfd.revents & (POLLHUP | POLLERR | POLLNVAL))
				_exit(0);
			continue;
		}
		memset(req, 0, reqsize);
		/* Another worker may have taken it (ENOENT: caller gone). */
		if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, req) == -1)
			continue;
		if ((e = unixsuper_connect(listener, req, allowed, n)) != -1)
			unixsuper_reply(listener, req, e);
	}
}

pid_t
unixsuper_start(int listener, int userns,
    char allowed[][UNIXSUPER_PATH_MAX], size_t n, char *err, size_t errlen)
{
	sigset_t	none;
	pid_t		pid, w;
	int		i, live = 0;

	if ((pid = fork()) == -1) {
		snprintf(err, errlen, "cannot start the Unix socket "
		    "supervisor: %s", strerror(errno));
		return -1;
	}
	if (pid > 0)
		return pid;
	/*
	 * Not dumpable: a workload that is the peer of a worker's connect()
	 * (it may listen on an allowed path) gets a pidfd of it
	 * (SO_PEERPIDFD) and, same user, could take its descriptors, the
	 * listener among them, or trace it.  Workers inherit this.
	 */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == -1 ||
	    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) == -1)
		_exit(1);
	if (getppid() == 1)
		_exit(0);
	for (i = 1; i < NSIG; i++)
		(void)signal(i, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* Keep the listener, userns and stderr (not moat run's pty...). */
	for (i = 0; i < 1024; i++)
		if (i != listener && i != userns && i != 2)
			(void)close(i);
	for (i = 0; i < UNIXSUPER_WORKERS; i++) {
		if ((w = fork()) == 0)
			unixsuper_worker(listener, userns, allowed, n);
		if (w > 0)
			live++;
	}
	/* Only workers keep the listener: with none, connect() fails. */
	close(listener);
	while (live > 0)
		if (wait(NULL) > 0 || errno == ECHILD)
			live--;
	_exit(0);
}
