/*
 * test_unixsuper.c - `moat run --allow-unix-socket` (launcher/
 * unixsuper.c): the option's path check and canonical form, the match of
 * a workload's sockaddr_un path against the allowed ones, and the filter
 * with its supervisor run for real: a child under unixfilter_install_
 * notify() reaches the allowed socket and a TCP listener, and gets EPERM
 * for another socket, an abstract name, a datagram socket and a seccomp
 * listener of its own.
 */
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <netinet/in.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/filter.h>
#include <linux/seccomp.h>

#include <CUnit/CUnit.h>

#include "launcher/unixfilter.h"
#include "launcher/unixsuper.h"
#include "tests/unit/unit.h"

static char	tmpdir[64];

static void
mk_tmpdir(void)
{
	char	path[128];

	if (tmpdir[0] != '\0')
		return;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/moat-unixsuper.XXXXXX");
	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(tmpdir));
	snprintf(path, sizeof(path), "%s/d", tmpdir);
	CU_ASSERT_EQUAL(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/ld", tmpdir);
	CU_ASSERT_EQUAL(symlink("d", path), 0);
}

static void
test_canon(void)
{
	char	out[UNIXSUPER_PATH_MAX], in[256], want[256], err[256];

	mk_tmpdir();
	/* Relative, empty names, missing directories: refused. */
	CU_ASSERT_EQUAL(unixsuper_canon("relay.sock", out, err,
	    sizeof(err)), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "not an absolute path"));
	CU_ASSERT_EQUAL(unixsuper_canon("", out, err, sizeof(err)), -1);
	snprintf(in, sizeof(in), "%s/d/", tmpdir);
	CU_ASSERT_EQUAL(unixsuper_canon(in, out, err, sizeof(err)), 0);
	snprintf(in, sizeof(in), "%s/nodir/x.sock", tmpdir);
	CU_ASSERT_EQUAL(unixsuper_canon(in, out, err, sizeof(err)), -1);
	snprintf(in, sizeof(in), "%s/d/nofile/..", tmpdir);
	CU_ASSERT_EQUAL(unixsuper_canon(in, out, err, sizeof(err)), -1);
	/* A socket not there yet: its directory, canonical, and its name. */
	snprintf(in, sizeof(in), "%s/ld/../d/x.sock", tmpdir);
	snprintf(want, sizeof(want), "%s/d/x.sock", tmpdir);
	CU_ASSERT_EQUAL(unixsuper_canon(in, out, err, sizeof(err)), 0);
	CU_ASSERT_STRING_EQUAL(out, want);
	/* Too long for a sockaddr_un once canonical. */
	memset(in, 'a', sizeof(in));
	memcpy(in, tmpdir, strlen(tmpdir));
	in[strlen(tmpdir)] = '/';
	in[UNIXSUPER_PATH_MAX + 10] = '\0';
	CU_ASSERT_EQUAL(unixsuper_canon(in, out, err, sizeof(err)), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "too long"));
}

static void
test_match(void)
{
	char	allowed[2][UNIXSUPER_PATH_MAX], in[UNIXSUPER_PATH_MAX];
	char	err[256];

	mk_tmpdir();
	snprintf(in, sizeof(in), "%s/d/a.sock", tmpdir);
	CU_ASSERT_EQUAL_FATAL(unixsuper_canon(in, allowed[0], err,
	    sizeof(err)), 0);
	snprintf(in, sizeof(in), "%s/d/b.sock", tmpdir);
	CU_ASSERT_EQUAL_FATAL(unixsuper_canon(in, allowed[1], err,
	    sizeof(err)), 0);
	CU_ASSERT_EQUAL(unixsuper_match(in, strlen(in), allowed, 2), 1);
	/* Without its NUL, as the kernel takes it. */
	CU_ASSERT_EQUAL(unixsuper_match(in, strlen(in), allowed, 1), -1);
	snprintf(in, sizeof(in), "%s/ld/a.sock", tmpdir);
	CU_ASSERT_EQUAL(unixsuper_match(in, strlen(in) + 1, allowed, 2), 0);
	snprintf(in, sizeof(in), "%s/d/../d/./a.sock", tmpdir);
	CU_ASSERT_EQUAL(unixsuper_match(in, strlen(in), allowed, 2), 0);
	snprintf(in, sizeof(in), "%s/d/c.sock", tmpdir);
	CU_ASSERT_EQUAL(unixsuper_match(in, strlen(in), allowed, 2), -1);
	/* A prefix is not a match. */
	CU_ASSERT_EQUAL(unixsuper_match(allowed[0], strlen(allowed[0]) - 1,
	    allowed, 2), -1);
	/* Unnamed, abstract, relative. */
	CU_ASSERT_EQUAL(unixsuper_match(allowed[0], 0, allowed, 2), -1);
	in[0] = '\0';
	memcpy(in + 1, allowed[0], strlen(allowed[0]));
	CU_ASSERT_EQUAL(unixsuper_match(in, strlen(allowed[0]) + 1, allowed,
	    2), -1);
	CU_ASSERT_EQUAL(unixsuper_match("d/a.sock", 8, allowed, 2), -1);
}

/* A listening Unix socket at path. */
static int
listen_unix(const char *path)
{
	struct sockaddr_un	sun;
	int			fd;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%.100s", path);
	if ((fd = socket(AF_UNIX, SOCK_STREAM, 0)) == -1)
		return -1;
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1 ||
	    listen(fd, 8) == -1) {
		close(fd);
		return -1;
	}
	return fd;
}

/* connect() a new socket of (domain, type) to sa: 0 or its errno. */
static int
try_connect(int domain, int type, const void *sa, socklen_t len)
{
	int	fd, e = 0;

	if ((fd = socket(domain, type, 0)) == -1)
		return errno;
	if (connect(fd, sa, len) == -1)
		e = errno;
	close(fd);
	return e;
}

/* The child under the filter: one bit per result not the expected one. */
static int
filtered_child(int chan, const char *good, const char *bad, uint16_t port)
{
	struct sockaddr_un	sun;
	struct sockaddr_in	sin;
	struct msghdr		mh;
	struct iovec		iov;
	struct cmsghdr		*cm;
	union {
		char		buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr	align;
	}			u;
	char			tag = 'L';
	int			lfd, bits = 0;

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1 ||
	    (lfd = unixfilter_install_notify()) == -1)
		return 255;
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
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &lfd, sizeof(int));
	if (sendmsg(chan, &mh, 0) != 1)
		return 254;
	close(lfd);
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%.100s", good);
	if (try_connect(AF_UNIX, SOCK_STREAM, &sun, sizeof(sun)) != 0)
		bits |= 1;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%.100s", bad);
	if (try_connect(AF_UNIX, SOCK_STREAM, &sun, sizeof(sun)) != EPERM)
		bits |= 2;
	/* The abstract spelling of the allowed path. */
	sun.sun_path[0] = '\0';
	snprintf(sun.sun_path + 1, sizeof(sun.sun_path) - 1, "%.100s", good);
	if (try_connect(AF_UNIX, SOCK_STREAM, &sun, sizeof(sun)) != EPERM)
		bits |= 4;
	if (socket(AF_UNIX, SOCK_DGRAM, 0) != -1 || errno != EPERM)
		bits |= 8;
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (try_connect(AF_INET, SOCK_STREAM, &sin, sizeof(sin)) != 0)
		bits |= 16;
	/* No listener of its own (it would take connect() first)... */
	{
		struct sock_filter	allow[] = {
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		};
		struct sock_fprog	prog = { 1, allow };

		if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
		    SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog) != -1 ||
		    errno != EPERM)
			bits |= 64;
		/* ... but a filter of its own it may have. */
		if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0,
		    &prog) != 0)
			bits |= 128;
	}
	/* A bad descriptor is the kernel's error, not the supervisor's. */
	if (connect(999, (struct sockaddr *)&sin, sizeof(sin)) != -1 ||
	    errno != EBADF)
		bits |= 32;
	return bits;
}

static void
test_supervised(void)
{
	char			good[128], bad[128], err[256];
	char			allowed[1][UNIXSUPER_PATH_MAX];
	struct sockaddr_in	sin;
	socklen_t		slen = sizeof(sin);
	struct msghdr		mh;
	struct iovec		iov;
	struct cmsghdr		*cm;
	union {
		char		buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr	align;
	}			u;
	char			tag;
	int			g, b, t, sv[2], lfd = -1, st;
	pid_t			child, sup;

	mk_tmpdir();
	snprintf(good, sizeof(good), "%s/d/good.sock", tmpdir);
	snprintf(bad, sizeof(bad), "%s/d/bad.sock", tmpdir);
	CU_ASSERT_NOT_EQUAL_FATAL(g = listen_unix(good), -1);
	CU_ASSERT_NOT_EQUAL_FATAL(b = listen_unix(bad), -1);
	CU_ASSERT_NOT_EQUAL_FATAL(t = socket(AF_INET, SOCK_STREAM, 0), -1);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CU_ASSERT_EQUAL_FATAL(bind(t, (struct sockaddr *)&sin, sizeof(sin)),
	    0);
	CU_ASSERT_EQUAL_FATAL(listen(t, 8), 0);
	CU_ASSERT_EQUAL_FATAL(getsockname(t, (struct sockaddr *)&sin,
	    &slen), 0);
	CU_ASSERT_EQUAL_FATAL(unixsuper_canon(good, allowed[0], err,
	    sizeof(err)), 0);
	CU_ASSERT_EQUAL_FATAL(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	if ((child = fork()) == 0) {
		close(sv[0]);
		_exit(filtered_child(sv[1], good, bad, ntohs(sin.sin_port)));
	}
	CU_ASSERT_NOT_EQUAL_FATAL(child, -1);
	close(sv[1]);
	memset(&mh, 0, sizeof(mh));
	iov.iov_base = &tag;
	iov.iov_len = 1;
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = u.buf;
	mh.msg_controllen = sizeof(u.buf);
	if (recvmsg(sv[0], &mh, MSG_CMSG_CLOEXEC) == 1 &&
	    (cm = CMSG_FIRSTHDR(&mh)) != NULL && cm->cmsg_type == SCM_RIGHTS)
		memcpy(&lfd, CMSG_DATA(cm), sizeof(int));
	CU_ASSERT_NOT_EQUAL(lfd, -1);
	sup = lfd == -1 ? -1 : unixsuper_start(lfd, -1, allowed, 1, err,
	    sizeof(err));
	CU_ASSERT_NOT_EQUAL(sup, -1);
	if (lfd != -1)
		close(lfd);
	while (waitpid(child, &st, 0) == -1 && errno == EINTR)
		;
	CU_ASSERT_TRUE(WIFEXITED(st));
	CU_ASSERT_EQUAL(WEXITSTATUS(st), 0);
	if (sup != -1) {
		kill(sup, SIGKILL);
		waitpid(sup, NULL, 0);
	}
	close(sv[0]);
	close(g);
	close(b);
	close(t);
	unlink(good);
	unlink(bad);
}

static int
cleanup(void)
{
	char	path[128];

	if (tmpdir[0] == '\0')
		return 0;
	snprintf(path, sizeof(path), "%s/ld", tmpdir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/d", tmpdir);
	rmdir(path);
	rmdir(tmpdir);
	return 0;
}

void
test_unixsuper_register(void)
{
	CU_pSuite s = CU_add_suite("unixsuper", NULL, cleanup);

	CU_add_test(s, "--allow-unix-socket: absolute, canonical, fits",
	    test_canon);
	CU_add_test(s, "a workload's path against the allowed ones",
	    test_match);
	CU_add_test(s, "filter and supervisor: allowed, other, abstract, "
	    "dgram, TCP", test_supervised);
}
