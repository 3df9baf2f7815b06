/*
 * log.c - moatd's diagnostic log: stderr, one write(2) per line.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proxy/log.h"

#define LOG_LINE_MAX	2048

static const char	*log_progname = "moat";
static enum log_level	 log_max = LOG_LVL_INFO;

static void	log_vemit(enum log_level lvl, int with_errno, const char *fmt,
		    va_list ap) __attribute__((format(printf, 3, 0)));

void
log_init(const char *progname, enum log_level max)
{
	log_progname = progname;
	log_max = max;
}

int
log_debug_enabled(void)
{
	return log_max >= LOG_LVL_DEBUG;
}

static void
log_vemit(enum log_level lvl, int with_errno, const char *fmt, va_list ap)
{
	static const char *const names[] = {
		"error", "warning", "info", "debug"
	};
	char	line[LOG_LINE_MAX];
	int	saved = errno, n, m;

	if (lvl > log_max)
		return;
	n = snprintf(line, sizeof(line), "%s[%ld]: %s: ", log_progname,
	    (long)getpid(), names[lvl]);
	if (n < 0 || (size_t)n >= sizeof(line))
		n = 0;
	m = vsnprintf(line + n, sizeof(line) - n, fmt, ap);
	if (m < 0)
		m = 0;
	n += m;
	if ((size_t)n >= sizeof(line) - 1)
		n = sizeof(line) - 2;
	if (with_errno) {
		m = snprintf(line + n, sizeof(line) - n, ": %s",
		    strerror(saved));
		if (m > 0)
			n += m;
		if ((size_t)n >= sizeof(line) - 1)
			n = sizeof(line) - 2;
	}
	line[n++] = '\n';
	(void)!write(STDERR_FILENO, line, n);
	errno = saved;
}

void
log_warn(const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	log_vemit(LOG_LVL_WARN, 1, fmt, ap);
	va_end(ap);
}

void
log_warnx(const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	log_vemit(LOG_LVL_WARN, 0, fmt, ap);
	va_end(ap);
}

void
log_info(const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	log_vemit(LOG_LVL_INFO, 0, fmt, ap);
	va_end(ap);
}

void
log_debug(const char *fmt, ...)
{
	va_list	ap;

	if (log_max < LOG_LVL_DEBUG)
		return;
	va_start(ap, fmt);
	log_vemit(LOG_LVL_DEBUG, 0, fmt, ap);
	va_end(ap);
}

void
fatal(const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	log_vemit(LOG_LVL_ERROR, 1, fmt, ap);
	va_end(ap);
	exit(1);
}

void
fatalx(const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	log_vemit(LOG_LVL_ERROR, 0, fmt, ap);
	va_end(ap);
	exit(1);
}

char *
log_escape(const char *in, size_t inlen, char *out, size_t outlen)
{
	static const char hex[] = "0123456789abcdef";
	size_t	i, o = 0;

	if (outlen == 0)
		return out;
	for (i = 0; i < inlen; i++) {
		unsigned char c = (unsigned char)in[i];
		size_t need = (c < 0x20 || c > 0x7e || c == '"' ||
		    c == '\\') ? 4 : 1;

		if (o + need + sizeof("...") > outlen) { /* "..." + NUL */
			if (o + sizeof("...") <= outlen) {
				MEMCPY_LIT(out + o, "...");
				o += LIT_LEN("...");
			}
			break;
		}
		if (need == 1)
			out[o++] = (char)c;
		else {
			out[o++] = '\\';
			out[o++] = 'x';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 0xf];
		}
	}
	out[o] = '\0';
	return out;
}
