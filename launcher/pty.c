/*
 * pty.c - the terminal of `moat run`: when stdin is a terminal, the
 * workload gets a pseudo-terminal of its own (its controlling terminal, in
 * a session of its own) and moat run relays bytes between it and the real
 * terminal, which it puts in raw mode meanwhile.
 *
 * Why not hand over the real terminal: a process whose controlling
 * terminal it is can push input into it with TIOCSTI (still allowed here,
 * dev.tty.legacy_tiocsti), and those bytes would run, after moat run
 * exits, in the user's shell: outside the sandbox and its network.  A
 * pseudo-terminal keeps such input inside.  Ctrl-C, Ctrl-Z and window
 * size work as usual: the pty's line discipline signals the workload.
 *
 * What it is not: a terminal emulator.  Bytes pass unchanged, each way
 * through a bounded buffer; reading stops while the other side is full.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/ioctl.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "launcher/launcher.h"

#define PTY_BUF			4096	/* bytes buffered each way */
/* output read after the workload ends */
#define PTY_DRAIN_MS		500

struct pty {
	int		master;
	int		slave;
	int		in;	/* our terminal (stdin) */
	int		out;	/* where the workload's output goes (stdout) */
	bool		raw;
	struct termios	saved;
	char		up[PTY_BUF];	/* terminal -> pty */
	size_t		uplen;
	char		down[PTY_BUF];	/* pty -> stdout */
	size_t		downlen;
	bool		in_eof;
	bool		out_eof;
	bool		midline;	/* the last byte written was no
					   newline */
};

static void	pty_flush_down(struct pty *p);

struct pty *
pty_open(char *err, size_t errlen)
{
	struct pty	*p;
	struct winsize	 ws;
	struct termios	 t;
	const char	*name;

	err[0] = '\0';
	errno = 0;
	if (!isatty(STDIN_FILENO))
		return NULL;
	if ((p = calloc(1, sizeof(*p))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	p->master = p->slave = -1;
	p->in = STDIN_FILENO;
	p->out = STDOUT_FILENO;
	if ((p->master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC)) == -1 ||
	    grantpt(p->master) == -1 || unlockpt(p->master) == -1 ||
	    (name = ptsname(p->master)) == NULL ||
	    (p->slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC)) == -1) {
		snprintf(err, errlen, "cannot open a pseudo-terminal: %s",
		    strerror(errno));
		pty_free(p);
		return NULL;
	}
	/* The pty starts as our terminal is: modes and size. */
	if (tcgetattr(p->in, &t) == 0)
		(void)tcsetattr(p->slave, TCSANOW, &t);
	if (ioctl(p->in, TIOCGWINSZ, &ws) == 0)
		(void)ioctl(p->master, TIOCSWINSZ, &ws);
	if (fcntl(p->master, F_SETFL, O_NONBLOCK) == -1) {
		snprintf(err, errlen, "fcntl: %s", strerror(errno));
		pty_free(p);
		return NULL;
	}
	return p;
}

int
pty_slave(const struct pty *p)
{
	return p->slave;
}

void
pty_close_slave(struct pty *p)
{
	if (p->slave != -1)
		close(p->slave);
	p->slave = -1;
}

int
pty_raw(struct pty *p)
{
	struct termios	t;

	if (tcgetattr(p->in, &p->saved) == -1)
		return -1;
	t = p->saved;
	cfmakeraw(&t);
	if (tcsetattr(p->in, TCSAFLUSH, &t) == -1)
		return -1;
	p->raw = true;
	return 0;
}

void
pty_winch(struct pty *p)
{
	struct winsize	ws;

	if (ioctl(p->in, TIOCGWINSZ, &ws) == 0)
		(void)ioctl(p->master, TIOCSWINSZ, &ws);
}

size_t
pty_pollfds(struct pty *p, struct pollfd *pfd)
{
	size_t	n = 0;

	/* Read from a side only while the buffer towards the other has room. */
	pfd[n].fd = p->master;
	pfd[n].events = 0;
	if (!p->out_eof && p->downlen == 0)
		pfd[n].events |= POLLIN;
	if (p->uplen > 0)
		pfd[n].events |= POLLOUT;
	n++;
	if (!p->in_eof && p->uplen == 0) {
		pfd[n].fd = p->in;
		pfd[n].events = POLLIN;
		n++;
	}
	return n;
}

/* Writes what it can of the workload's output to stdout (blocking). */
static void
pty_flush_down(struct pty *p)
{
	ssize_t	r;
	size_t	off = 0;

	while (off < p->downlen) {
		r = write(p->out, p->down + off, p->downlen - off);
		if (r == -1 && errno == EINTR)
			continue;
		if (r <= 0)
			break;	/* stdout is gone: drop the output */
		off += (size_t)r;
	}
	if (off > 0)
		p->midline = p->down[off - 1] != '\n';
	p->downlen = 0;
}

bool
pty_is_raw(const struct pty *p)
{
	return p->raw;
}

bool
pty_take_midline(struct pty *p)
{
	bool	m = p->midline;

	p->midline = false;
	return m;
}

int
pty_service(struct pty *p, const struct pollfd *pfd, size_t n)
{
	ssize_t	r;
	size_t	i;

	for (i = 0; i < n; i++) {
		if (pfd[i].revents == 0)
			continue;
		if (pfd[i].fd == p->master) {
			if ((pfd[i].revents & (POLLIN | POLLHUP | POLLERR)) !=
			    0 && !p->out_eof) {
				r = read(p->master, p->down, sizeof(p->down));
				if (r > 0) {
					p->downlen = (size_t)r;
					pty_flush_down(p);
				} else if (r == 0 || (errno != EAGAIN &&
				    errno != EINTR))
					/* EIO: closed */
					p->out_eof = true;
			}
			if ((pfd[i].revents & POLLOUT) != 0 && p->uplen > 0) {
				r = write(p->master, p->up, p->uplen);
				if (r > 0) {
					memmove(p->up, p->up + r,
					    p->uplen - (size_t)r);
					p->uplen -= (size_t)r;
				} else if (r == -1 && errno != EAGAIN &&
				    errno != EINTR)
					p->uplen = 0;
			}
		} else if (pfd[i].fd == p->in) {
			r = read(p->in, p->up, sizeof(p->up));
			if (r > 0)
				p->uplen = (size_t)r;
			else if (r == 0 || (errno != EAGAIN && errno != EINTR))
				p->in_eof = true;
		}
	}
	return p->out_eof ? 1 : 0;
}

void
pty_drain(struct pty *p)
{
	struct pollfd	pfd;
	ssize_t		r;
	int		i;

	/* The workload has exited: whatever it wrote is already in the pty. */
	for (i = 0; i < PTY_DRAIN_MS / 10 && !p->out_eof; i++) {
		pfd.fd = p->master;
		pfd.events = POLLIN;
		if (poll(&pfd, 1, 10) <= 0)
			break;
		r = read(p->master, p->down, sizeof(p->down));
		if (r <= 0) {
			if (r == -1 && errno == EAGAIN)
				continue;
			p->out_eof = true;
			break;
		}
		p->downlen = (size_t)r;
		pty_flush_down(p);
	}
}

void
pty_restore(struct pty *p)
{
	if (p != NULL && p->raw) {
		(void)tcsetattr(p->in, TCSAFLUSH, &p->saved);
		p->raw = false;
	}
}

void
pty_free(struct pty *p)
{
	if (p == NULL)
		return;
	pty_restore(p);
	if (p->master != -1)
		close(p->master);
	pty_close_slave(p);
	free(p);
}
