/*
 * helper_client.c - the moat CLI's side of the moat-netns protocol: start
 * the helper, send each request, read and check each reply, wait for the
 * helper to end.
 *
 * What it is not: trusting.  Every reply goes through the same decoder as
 * the requests (nsh_proto_decode), must answer the op that was asked and
 * carry a descriptor only where one is due; a helper that dies, stalls
 * (MOAT_STEP_TIMEOUT_MS) or answers wrongly is an error, never a hang.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "launcher/launcher.h"
#include "proto/helper_proto.h"

#define NSH_CLIENT_PATH_MAX	4096
#define NSH_CLIENT_NAME		"moat-netns"
#define NSH_CLIENT_ERR_MAX	256	/* errors after the first, dropped */

struct nsh_client {
	int	fd;	/* the channel */
	pid_t	pid;	/* the helper; -1 once reaped */
	int	status;	/* its wait status, once reaped */
	bool	ended;	/* it answered RELEASE or TEARDOWN: only its exit
			   is left */
	bool	hello;	/* HELLO sent, its answer not read yet */
};

static int	nsh_client_call(struct nsh_client *c, const struct nsh_msg *req,
		    const int *fds, struct nsh_msg *reply, int *fd, char *err,
		    size_t errlen);
static void	nsh_client_join_req(struct nsh_msg *req, int fds[2], int userns,
		    int netns);
static void	nsh_client_done(struct nsh_client *c);
static int	nsh_client_send(struct nsh_client *c, const struct nsh_msg *req,
		    const int *fds, char *err, size_t errlen);
static int	nsh_client_recv(struct nsh_client *c, int op,
		    struct nsh_msg *reply, int *fd, char *err, size_t errlen);
static void	nsh_client_died(struct nsh_client *c, char *err,
		    size_t errlen, const char *what);
static int	nsh_client_reap(struct nsh_client *c, int timeout_ms);

/* What the helper's child needs between spawn and exec. */
struct nsh_client_args {
	const char	*path;
	int		 fd;
};

/*
 * Between spawn and exec (runconf_spawn: system calls only): its own
 * process group (a terminal's ^C is for the workload, not for the helper
 * that must clean up), the channel on fd 3 without close-on-exec, nothing
 * else.
 */
static int RUNCONF_SPAWNED
nsh_client_child(void *arg)
{
	const struct nsh_client_args	*a = arg;
	sigset_t			 none;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	(void)setpgid(0, 0);
	if (a->fd == NSH_CHANNEL_FD) {
		if (fcntl(a->fd, F_SETFD, 0) == -1)
			_exit(127);
	} else if (dup2(a->fd, NSH_CHANNEL_FD) == -1)
		_exit(127);
	(void)close_range(NSH_CHANNEL_FD + 1, ~0u, 0);
	execl(a->path, NSH_CLIENT_NAME, "serve", (char *)NULL);
	runconf_spawn_fail(a->path, errno);
	_exit(127);
}

struct nsh_client *
nsh_client_start(char *err, size_t errlen)
{
	struct nsh_client	*c;
	struct nsh_client_args	 ch;
	struct nsh_msg		 req;
	char			 path[NSH_CLIENT_PATH_MAX];
	int			 sv[2];

	if (runconf_libexec_path(NSH_CLIENT_NAME, "MOAT_NETNS",
	    "netns-helper", path, sizeof(path)) == -1) {
		snprintf(err, errlen, "cannot find %s (tried %s; set "
		    "MOAT_NETNS): %s", NSH_CLIENT_NAME, path, strerror(errno));
		return NULL;
	}
	if ((c = calloc(1, sizeof(*c))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	c->fd = -1;
	c->pid = -1;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == -1) {
		snprintf(err, errlen, "socketpair: %s", strerror(errno));
		free(c);
		return NULL;
	}
	ch.path = path;
	ch.fd = sv[1];
	if ((c->pid = runconf_spawn(nsh_client_child, &ch)) == -1) {
		snprintf(err, errlen, "cannot start %s: %s", NSH_CLIENT_NAME,
		    strerror(errno));
		close(sv[0]);
		close(sv[1]);
		free(c);
		return NULL;
	}
	close(sv[1]);
	c->fd = sv[0];
	memset(&req, 0, sizeof(req));
	req.op = NSH_OP_HELLO;
	req.u.hello.version = NSH_PROTO_VERSION;
	if (nsh_client_send(c, &req, NULL, err, errlen) == -1) {
		nsh_client_close(c);
		return NULL;
	}
	c->hello = true;
	return c;
}

struct nsh_client *
nsh_client_spawn(char *err, size_t errlen)
{
	struct nsh_client	*c;

	if ((c = nsh_client_start(err, errlen)) == NULL)
		return NULL;
	if (nsh_client_ready(c, err, errlen) == -1) {
		nsh_client_close(c);
		return NULL;
	}
	return c;
}

int
nsh_client_ready(struct nsh_client *c, char *err, size_t errlen)
{
	struct nsh_msg	reply;

	if (!c->hello)
		return 0;
	c->hello = false;
	return nsh_client_recv(c, NSH_OP_HELLO, &reply, NULL, err, errlen);
}

int
moat_reap(pid_t pid, int timeout_ms, int *status)
{
	struct timespec	now, end, step = { 0, 10 * 1000 * 1000 };
	struct pollfd	pfd;
	long long	left;
	int		st = 0, rc = 0;
	pid_t		r;

	/*
	 * A pidfd becomes readable the moment the child exits: no sleeping
	 * in steps (which cost moat run up to a step per child at exit).
	 * Without pidfd_open(2) (before Linux 5.3), steps of 10 ms.
	 */
	pfd.fd = timeout_ms > 0 ? (int)syscall(SYS_pidfd_open, pid, 0) : -1;
	pfd.events = POLLIN;
	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += timeout_ms / 1000;
	end.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (end.tv_nsec >= 1000000000L) {
		end.tv_sec++;
		end.tv_nsec -= 1000000000L;
	}
	for (;;) {
		do
			r = waitpid(pid, &st, WNOHANG);
		while (r == -1 && errno == EINTR);
		if (r == pid || (r == -1 && errno == ECHILD)) {
			*status = r == pid ? st : 0;
			rc = 1;
			break;
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		left = (long long)(end.tv_sec - now.tv_sec) * 1000 +
		    (end.tv_nsec - now.tv_nsec) / 1000000;
		if (left <= 0)
			break;
		if (pfd.fd != -1)
			(void)poll(&pfd, 1, (int)left);
		else
			nanosleep(&step, NULL);
	}
	if (pfd.fd != -1)
		close(pfd.fd);
	return rc;
}

/* Reaps the helper if it exits within timeout_ms; 1 reaped, 0 not. */
static int
nsh_client_reap(struct nsh_client *c, int timeout_ms)
{
	int	st;

	if (c->pid == -1)
		return 1;
	if (moat_reap(c->pid, timeout_ms, &st) == 0)
		return 0;
	c->status = st;
	c->pid = -1;
	return 1;
}

static void
nsh_client_died(struct nsh_client *c, char *err, size_t errlen,
    const char *what)
{
	(void)nsh_client_reap(c, 1000);
	if (c->pid != -1)
		snprintf(err, errlen, "moat-netns: %s", what);
	else if (WIFSIGNALED(c->status))
		snprintf(err, errlen, "moat-netns died of signal %d (%s)",
		    WTERMSIG(c->status), what);
	else
		snprintf(err, errlen, "moat-netns exited with status %d (%s)",
		    WEXITSTATUS(c->status), what);
}

/*
 * One request, one reply.  The reply must answer req's op; an error
 * reply becomes err ("moat-netns: OP: text").  *fd receives the reply's
 * descriptor, which only a successful SOCKET or DROPS may carry.
 */
static int
nsh_client_call(struct nsh_client *c, const struct nsh_msg *req,
    const int *fds, struct nsh_msg *reply, int *fd, char *err, size_t errlen)
{
	if (nsh_client_ready(c, err, errlen) == -1 ||
	    nsh_client_send(c, req, fds, err, errlen) == -1)
		return -1;
	return nsh_client_recv(c, req->op, reply, fd, err, errlen);
}

static int
nsh_client_send(struct nsh_client *c, const struct nsh_msg *req,
    const int *fds, char *err, size_t errlen)
{
	if (nsh_proto_send(c->fd, req, fds) == -1) {
		nsh_client_died(c, err, errlen, errno == EPIPE ||
		    errno == ECONNRESET ? "it went away" : strerror(errno));
		return -1;
	}
	return 0;
}

/* The reply to a request of op already sent; see nsh_client_call(). */
static int
nsh_client_recv(struct nsh_client *c, int op, struct nsh_msg *reply,
    int *fd, char *err, size_t errlen)
{
	const char	*e = NULL;
	int		 got[NSH_FDS_MAX], r, i;

	if (fd != NULL)
		*fd = -1;
	r = nsh_proto_recv(c->fd, reply, got, MOAT_STEP_TIMEOUT_MS, &e);
	if (r == 1) {
		nsh_client_died(c, err, errlen, "it closed the channel");
		return -1;
	}
	if (r == -1) {
		snprintf(err, errlen, "moat-netns: %s: %s",
		    nsh_proto_opname(op), e);
		return -1;
	}
	if (reply->op != NSH_OP_REPLY || reply->u.reply.op != op) {
		for (i = 0; i < NSH_FDS_MAX; i++)
			if (got[i] != -1)
				close(got[i]);
		snprintf(err, errlen, "moat-netns answered %s with %s",
		    nsh_proto_opname(op), nsh_proto_opname(reply->op));
		return -1;
	}
	if (reply->u.reply.error != 0) {
		snprintf(err, errlen, "moat-netns: %s: %s",
		    nsh_proto_opname(op), reply->u.reply.text);
		return -1;
	}
	if (fd != NULL)
		*fd = got[0];
	else if (got[0] != -1) {
		close(got[0]);
		snprintf(err, errlen, "moat-netns sent a descriptor with %s",
		    nsh_proto_opname(op));
		return -1;
	}
	return 0;
}

int
nsh_client_join(struct nsh_client *c, int userns, int netns, char *err,
    size_t errlen)
{
	struct nsh_msg	req, reply;
	int		fds[2];

	nsh_client_join_req(&req, fds, userns, netns);
	return nsh_client_call(c, &req, fds, &reply, NULL, err, errlen);
}

/* JOIN: {userns, netns}, or {netns} when userns is -1. */
static void
nsh_client_join_req(struct nsh_msg *req, int fds[2], int userns, int netns)
{
	memset(req, 0, sizeof(*req));
	req->op = NSH_OP_JOIN;
	if (userns != -1) {
		req->u.join.flags = NSH_JOIN_USERNS;
		req->nfds = 2;
		fds[0] = userns;
		fds[1] = netns;
	} else {
		req->nfds = 1;
		fds[0] = netns;
	}
}

/* Its last answer read: the channel closes; only its exit is left. */
static void
nsh_client_done(struct nsh_client *c)
{
	close(c->fd);
	c->fd = -1;
	c->ended = true;
}

static void
nsh_client_setup_req(struct nsh_msg *req, const struct runconf *rc,
    bool attach)
{
	memset(req, 0, sizeof(*req));
	req->op = rc->mode == RUNCONF_VETH ? NSH_OP_VETH : NSH_OP_HELD;
	req->u.setup.dns_port = rc->dns_port;
	req->u.setup.transparent_port = rc->transparent_port;
	req->u.setup.nports = 2;
	req->u.setup.ports[0] = rc->http_port;
	req->u.setup.ports[1] = rc->socks_port;
	/* The drop log always: moatd reads it, or it is closed unread. */
	req->u.setup.flags = NSH_SETUP_DROPS |
	    (attach ? NSH_SETUP_ATTACH : 0);
}

static void
nsh_client_setup_reply(const struct nsh_msg *reply, unsigned *index,
    char *ifname)
{
	if (index != NULL)
		*index = reply->u.reply.index;
	if (ifname != NULL)
		snprintf(ifname, NSH_IFNAME_MAX, "%s", reply->u.reply.ifname);
}

static void
nsh_client_socket_req(struct nsh_msg *req, const struct runconf_listener *l)
{
	memset(req, 0, sizeof(*req));
	req->op = NSH_OP_SOCKET;
	req->u.socket.family = (uint8_t)l->family;
	req->u.socket.type = (uint8_t)l->type;
	req->u.socket.port = l->port;
}

int
nsh_client_setup(struct nsh_client *c, const struct runconf *rc, bool attach,
    unsigned *index, char *ifname, char *err, size_t errlen)
{
	struct nsh_msg	req, reply;

	nsh_client_setup_req(&req, rc, attach);
	if (nsh_client_call(c, &req, NULL, &reply, NULL, err, errlen) == -1)
		return -1;
	nsh_client_setup_reply(&reply, index, ifname);
	return 0;
}

int
nsh_client_socket(struct nsh_client *c, const struct runconf_listener *l,
    int *fd, char *err, size_t errlen)
{
	struct nsh_msg	req, reply;

	nsh_client_socket_req(&req, l);
	if (nsh_client_call(c, &req, NULL, &reply, fd, err, errlen) == -1)
		return -1;
	if (*fd == -1) {
		snprintf(err, errlen, "moat-netns answered SOCKET without a "
		    "descriptor");
		return -1;
	}
	return 0;
}

int
nsh_client_drops(struct nsh_client *c, int *fd, char *err, size_t errlen)
{
	struct nsh_msg	req, reply;

	memset(&req, 0, sizeof(req));
	req.op = NSH_OP_DROPS;
	if (nsh_client_call(c, &req, NULL, &reply, fd, err, errlen) == -1)
		return -1;
	if (*fd == -1) {
		snprintf(err, errlen, "moat-netns answered DROPS without a "
		    "descriptor");
		return -1;
	}
	return 0;
}

/* The op of the i-th answer nsh_client_open() reads (n sockets). */
static int
nsh_client_open_op(const struct runconf *rc, size_t i, size_t n)
{
	if (i == 0)
		return NSH_OP_JOIN;
	if (i == 1)
		return rc->mode == RUNCONF_VETH ? NSH_OP_VETH : NSH_OP_HELD;
	if (i == 2)
		return NSH_OP_DROPS;
	return i < 3 + n ? NSH_OP_SOCKET : NSH_OP_RELEASE;
}

int
nsh_client_open(struct nsh_client *c, int userns, int netns,
    const struct runconf *rc, const struct runconf_listener *ls, size_t n,
    int *fds, int *drops, bool release, unsigned *index, char *ifname,
    char *err, size_t errlen)
{
	struct nsh_msg	req, reply;
	int		jfds[2], rc_ = 0, op, *fd;
	size_t		i, sent = 0, total = 3 + n + (release ? 1 : 0);
	char		e[NSH_CLIENT_ERR_MAX];

	for (i = 0; i < n; i++)
		fds[i] = -1;
	*drops = -1;
	if (nsh_client_ready(c, err, errlen) == -1)
		return -1;
	/* Everything out first: the helper answers in order. */
	nsh_client_join_req(&req, jfds, userns, netns);
	if (nsh_client_send(c, &req, jfds, err, errlen) == -1)
		return -1;
	sent++;
	nsh_client_setup_req(&req, rc, false);
	if (nsh_client_send(c, &req, NULL, err, errlen) == -1)
		goto drain;
	sent++;
	memset(&req, 0, sizeof(req));
	req.op = NSH_OP_DROPS;
	if (nsh_client_send(c, &req, NULL, err, errlen) == -1)
		goto drain;
	sent++;
	for (i = 0; i < n; i++) {
		nsh_client_socket_req(&req, &ls[i]);
		if (nsh_client_send(c, &req, NULL, err, errlen) == -1)
			goto drain;
		sent++;
	}
	if (release) {
		memset(&req, 0, sizeof(req));
		req.op = NSH_OP_RELEASE;
		if (nsh_client_send(c, &req, NULL, err, errlen) == -1)
			goto drain;
		sent++;
	}
 drain:
	/* Then every answer, in the order asked; the first error counts. */
	for (i = 0; i < sent; i++) {
		op = nsh_client_open_op(rc, i, n);
		fd = op == NSH_OP_SOCKET ? &fds[i - 3] : op == NSH_OP_DROPS ?
		    drops : NULL;
		memset(&reply, 0, sizeof(reply));
		if (nsh_client_recv(c, op, &reply, fd, rc_ == 0 ? err : e,
		    rc_ == 0 ? errlen : sizeof(e)) == -1) {
			rc_ = -1;
			/* After a refusal the rest are answered (refused);
			 * a broken channel answers nothing more. */
			if (reply.op != NSH_OP_REPLY || reply.u.reply.op != op ||
			    reply.u.reply.error == 0)
				break;
			continue;
		}
		if (op == NSH_OP_VETH || op == NSH_OP_HELD)
			nsh_client_setup_reply(&reply, index, ifname);
		if (fd != NULL && *fd == -1 && rc_ == 0) {
			snprintf(err, errlen, "moat-netns answered %s "
			    "without a descriptor", nsh_proto_opname(op));
			rc_ = -1;
		}
		if (op == NSH_OP_RELEASE && rc_ == 0)
			nsh_client_done(c);
	}
	if (rc_ == 0 && sent < total)
		rc_ = -1;	/* err says why the sending stopped */
	return rc_;
}

int
nsh_client_pod(struct nsh_client *c, int netns, bool self,
    uint16_t dns_port, uint16_t transparent_port, uint32_t exempt_uid,
    char *err, size_t errlen)
{
	struct nsh_msg	req, reply;
	int		fds[2];

	nsh_client_join_req(&req, fds, -1, netns);
	if (self)
		req.u.join.flags = NSH_JOIN_SELF;
	if (nsh_client_call(c, &req, fds, &reply, NULL, err, errlen) == -1)
		return -1;
	memset(&req, 0, sizeof(req));
	req.op = NSH_OP_HELD;
	req.u.setup.dns_port = dns_port;
	req.u.setup.transparent_port = transparent_port;
	req.u.setup.flags = NSH_SETUP_ATTACH | NSH_SETUP_EXEMPT;
	req.u.setup.exempt_uid = exempt_uid;
	if (nsh_client_call(c, &req, NULL, &reply, NULL, err, errlen) == -1)
		return -1;
	memset(&req, 0, sizeof(req));
	req.op = NSH_OP_RELEASE;
	if (nsh_client_call(c, &req, NULL, &reply, NULL, err, errlen) == -1)
		return -1;
	nsh_client_done(c);
	return 0;
}

int
nsh_client_teardown(struct nsh_client *c, char *err, size_t errlen)
{
	struct nsh_msg	req, reply;

	memset(&req, 0, sizeof(req));
	req.op = NSH_OP_TEARDOWN;
	/*
	 * The answer comes after the work: no veth and no table are left.
	 * The helper's exit is no step of the caller's: closing its
	 * nftables socket waits in the kernel until the last commit's
	 * memory is freed, one RCU grace period (7-22 ms here).
	 * nsh_client_close() reaps it if it is gone by then and otherwise
	 * leaves it to finish on its own.
	 */
	if (nsh_client_call(c, &req, NULL, &reply, NULL, err, errlen) == 0) {
		nsh_client_done(c);
		return 0;
	}
	close(c->fd);
	c->fd = -1;
	if (!nsh_client_reap(c, MOAT_STOP_TIMEOUT_MS)) {
		kill(c->pid, SIGKILL);
		(void)nsh_client_reap(c, MOAT_STOP_TIMEOUT_MS);
	}
	return -1;
}

int
nsh_client_cleanup(const char *netns, char *err, size_t errlen)
{
	struct nsh_client	c;
	sigset_t		none;
	char			path[NSH_CLIENT_PATH_MAX];

	if (runconf_libexec_path(NSH_CLIENT_NAME, "MOAT_NETNS",
	    "netns-helper", path, sizeof(path)) == -1) {
		snprintf(err, errlen, "cannot find %s: %s", NSH_CLIENT_NAME,
		    strerror(errno));
		return -1;
	}
	memset(&c, 0, sizeof(c));
	c.fd = -1;
	if ((c.pid = fork()) == -1) {
		snprintf(err, errlen, "fork: %s", strerror(errno));
		return -1;
	}
	if (c.pid == 0) {
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		(void)setpgid(0, 0);
		(void)dup2(STDERR_FILENO, STDOUT_FILENO);
		if (netns != NULL)
			execl(path, NSH_CLIENT_NAME, "cleanup", "--netns",
			    netns, (char *)NULL);
		else
			execl(path, NSH_CLIENT_NAME, "cleanup", (char *)NULL);
		_exit(127);
	}
	if (!nsh_client_reap(&c, MOAT_STEP_TIMEOUT_MS)) {
		kill(c.pid, SIGKILL);
		(void)nsh_client_reap(&c, MOAT_STOP_TIMEOUT_MS);
		snprintf(err, errlen, "moat-netns cleanup did not finish");
		return -1;
	}
	if (!WIFEXITED(c.status) || WEXITSTATUS(c.status) != 0) {
		snprintf(err, errlen, "moat-netns cleanup failed (status "
		    "0x%x)", c.status);
		return -1;
	}
	return 0;
}

int
nsh_client_fd(const struct nsh_client *c)
{
	return c->fd;
}

pid_t
nsh_client_pid(const struct nsh_client *c)
{
	return c->pid;
}

void
nsh_client_close(struct nsh_client *c)
{
	if (c == NULL)
		return;
	if (c->fd != -1)
		close(c->fd);
	c->fd = -1;
	/*
	 * After its answer to END it only exits: reaped if it is gone
	 * already, else left to finish (our exit hands it to init).
	 */
	if (c->ended) {
		(void)nsh_client_reap(c, 0);
		free(c);
		return;
	}
	/* On end of file the helper removes the host side and exits. */
	if (!nsh_client_reap(c, MOAT_STOP_TIMEOUT_MS)) {
		kill(c->pid, SIGKILL);
		(void)nsh_client_reap(c, MOAT_STOP_TIMEOUT_MS);
	}
	free(c);
}
