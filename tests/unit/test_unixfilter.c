/*
 * test_unixfilter.c - moat run's seccomp filter on Unix sockets
 * (launcher/unixfilter.c), run for real in a child process.
 *
 * Under the filter: socket(AF_UNIX) of every type and socketpair(AF_UNIX,
 * SOCK_DGRAM) fail with EPERM; stream and seqpacket socketpairs, IPv4 and
 * IPv6 sockets work; flags in the type (SOCK_CLOEXEC) change nothing;
 * io_uring_setup and an x32 call fail with EPERM.  Without the filter
 * (control) the same calls work, so each check can fail.
 */
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "launcher/unixfilter.h"
#include "tests/unit/unit.h"

/* What a call gave: 0 it worked, else its errno. */
static int
sock_result(int domain, int type)
{
	int	fd = socket(domain, type, 0);

	if (fd == -1)
		return errno;
	close(fd);
	return 0;
}

static int
pair_result(int type)
{
	int	sv[2];

	if (socketpair(AF_UNIX, type, 0, sv) == -1)
		return errno;
	close(sv[0]);
	close(sv[1]);
	return 0;
}

/*
 * In a child: (filter) installs it, then makes each call; the exit
 * status has one bit per call whose result was not the one expected.
 */
static int
run_child(int filter)
{
	pid_t	pid;
	int	st, bad = 0, want = filter ? EPERM : 0;

	if ((pid = fork()) == -1)
		return -1;
	if (pid == 0) {
		if (filter && (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1 ||
		    unixfilter_install() == -1))
			_exit(255);
		if (sock_result(AF_UNIX, SOCK_STREAM) != want)
			bad |= 1;
		if (sock_result(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC) != want)
			bad |= 2;
		if (sock_result(AF_UNIX, SOCK_SEQPACKET) != want)
			bad |= 4;
		if (pair_result(SOCK_DGRAM | SOCK_NONBLOCK) != want)
			bad |= 8;
		if (pair_result(SOCK_STREAM | SOCK_CLOEXEC) != 0 ||
		    pair_result(SOCK_SEQPACKET) != 0)
			bad |= 16;
		if (sock_result(AF_INET, SOCK_STREAM) != 0 ||
		    sock_result(AF_INET6, SOCK_DGRAM) != 0)
			bad |= 32;
#if defined(__x86_64__)
		/* x32 socket(AF_INET): EPERM, or ENOSYS without x32 support */
		errno = 0;
		if (syscall(0x40000000 | 41, AF_INET, SOCK_STREAM, 0) != -1 ||
		    (filter ? errno != EPERM : errno == EPERM))
			bad |= 64;
#endif
		{
			char	params[120];
			long	r;

			memset(params, 0, sizeof(params));
			errno = 0;
			r = syscall(SYS_io_uring_setup, 1, params);
			if (r >= 0)
				close((int)r);
			if (filter ? (r != -1 || errno != EPERM) :
			    (r == -1 && errno == EPERM))
				bad |= 128;
		}
		_exit(bad);
	}
	while (waitpid(pid, &st, 0) == -1)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 256;
}

static void
test_filter(void)
{
	CU_ASSERT_EQUAL(run_child(1), 0);
}

static void
test_control(void)
{
	/* Without the filter every AF_UNIX call works: the checks bite. */
	CU_ASSERT_EQUAL(run_child(0), 0);
}

void
test_unixfilter_register(void)
{
	CU_pSuite s = CU_add_suite("unixfilter", NULL, NULL);

	CU_add_test(s, "filter: AF_UNIX, dgram pairs, io_uring, x32 refused; "
	    "the rest works", test_filter);
	CU_add_test(s, "control: without it, all work", test_control);
}
