/*
 * audit_in.c - audit files read line by line, plain or gzip-compressed.
 *
 * A file is compressed when its first two bytes are gzip's magic (1f 8b),
 * whatever its name, so `audit.jsonl.2.gz` and a compressed stream on
 * standard input are read alike; its members are inflated one after
 * another, as gzip -dc does.  zlib is loaded with dlopen() the first time
 * a compressed file is met: `moat` itself does not link it (moat run's
 * start-up pays for every library it maps).
 *
 * Memory: one read buffer (AUDIT_IN_CHUNK) and one line buffer of at most
 * AUDIT_LN_MAX_BYTES plus a chunk; a longer line is skipped and named.
 */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

#include "launcher/audit_cmd.h"

#define AUDIT_IN_CHUNK		(256u << 10)	/* one read(2) */
#define AUDIT_IN_BUF		(AUDIT_LN_MAX_BYTES + 2 * AUDIT_IN_CHUNK)
#define AUDIT_IN_ZLIB		"libz.so.1"

struct audit_in {
	const char	*name;
	int		 fd;
	bool		 own_fd;
	bool		 eof;		/* no more bytes from the file */
	bool		 skipping;	/* in a line too long, to its end */
	bool		 sniffed;	/* gzip or not is known */
	bool		 gz;
	bool		 zlive;		/* zs holds an inflate stream */
	bool		 zend;		/* a member ended: another may start */
	z_stream	 zs;
	unsigned char	*raw;		/* compressed bytes read */
	char		*buf;		/* text: lines */
	size_t		 start, end;	/* buf[start..end) not yet returned */
	uint64_t	 lineno;
};

/* zlib's inflate, by dlopen(). */
static struct {
	void	*h;
	int	(*init2)(z_streamp, int, const char *, int);
	int	(*inflate)(z_streamp, int);
	int	(*reset)(z_streamp);
	int	(*end)(z_streamp);
} Z;

static int	audit_in_zlib(char *err, size_t errlen);
static ssize_t	audit_in_fill(struct audit_in *in, char *err, size_t errlen);
static ssize_t	audit_in_inflate(struct audit_in *in, char *dst, size_t cap,
		    char *err, size_t errlen);

static int
audit_in_zlib(char *err, size_t errlen)
{
	if (Z.h != NULL)
		return 0;
	if ((Z.h = dlopen(AUDIT_IN_ZLIB, RTLD_NOW | RTLD_LOCAL)) == NULL) {
		snprintf(err, errlen, "a gzip-compressed file needs zlib "
		    "(%s, Debian package zlib1g): %s; or decompress it first "
		    "(gzip -dc FILE | moat audit ... -)", AUDIT_IN_ZLIB,
		    dlerror());
		return -1;
	}
	*(void **)&Z.init2 = dlsym(Z.h, "inflateInit2_");
	*(void **)&Z.inflate = dlsym(Z.h, "inflate");
	*(void **)&Z.reset = dlsym(Z.h, "inflateReset");
	*(void **)&Z.end = dlsym(Z.h, "inflateEnd");
	if (Z.init2 == NULL || Z.inflate == NULL || Z.reset == NULL ||
	    Z.end == NULL) {
		snprintf(err, errlen, "%s lacks inflate", AUDIT_IN_ZLIB);
		dlclose(Z.h);
		Z.h = NULL;
		return -1;
	}
	return 0;
}

struct audit_in *
audit_in_open(const char *path, char *err, size_t errlen)
{
	struct audit_in	*in;

	if ((in = calloc(1, sizeof(*in))) == NULL ||
	    (in->buf = malloc(AUDIT_IN_BUF + 1)) == NULL) {
		snprintf(err, errlen, "out of memory");
		free(in);
		return NULL;
	}
	in->name = strcmp(path, "-") == 0 ? "(stdin)" : path;
	if (strcmp(path, "-") == 0)
		in->fd = STDIN_FILENO;
	else if ((in->fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY)) ==
	    -1) {
		snprintf(err, errlen, "%s", strerror(errno));
		free(in->buf);
		free(in);
		return NULL;
	} else
		in->own_fd = true;
	return in;
}

void
audit_in_close(struct audit_in *in)
{
	if (in == NULL)
		return;
	if (in->zlive)
		Z.end(&in->zs);
	if (in->own_fd)
		close(in->fd);
	free(in->raw);
	free(in->buf);
	free(in);
}

uint64_t
audit_in_lineno(const struct audit_in *in)
{
	return in->lineno;
}

const char *
audit_in_name(const struct audit_in *in)
{
	return in->name;
}

static ssize_t
audit_in_read(int fd, void *dst, size_t cap)
{
	ssize_t	n;

	do
		n = read(fd, dst, cap);
	while (n == -1 && errno == EINTR);
	return n;
}

/*
 * Inflates into dst: reads compressed bytes as they are needed; a member
 * that ends is followed by the next one, if any.  Returns the bytes
 * written, 0 at the end, -1 on an error.
 */
static ssize_t
audit_in_inflate(struct audit_in *in, char *dst, size_t cap, char *err,
    size_t errlen)
{
	ssize_t	n;
	int	zr;

	in->zs.next_out = (unsigned char *)dst;
	in->zs.avail_out = (unsigned)cap;
	while (in->zs.avail_out == cap) {
		if (in->zs.avail_in == 0) {
			if ((n = audit_in_read(in->fd, in->raw,
			    AUDIT_IN_CHUNK)) == -1) {
				snprintf(err, errlen, "%s", strerror(errno));
				return -1;
			}
			if (n == 0) {
				if (!in->zend) {
					snprintf(err, errlen, "the gzip data "
					    "is cut short");
					return -1;
				}
				return 0;
			}
			in->zs.next_in = in->raw;
			in->zs.avail_in = (unsigned)n;
		}
		if (in->zend) {
			if (Z.reset(&in->zs) != Z_OK) {
				snprintf(err, errlen, "inflateReset failed");
				return -1;
			}
			in->zend = false;
		}
		zr = Z.inflate(&in->zs, Z_NO_FLUSH);
		if (zr == Z_STREAM_END)
			in->zend = true;
		else if (zr != Z_OK && zr != Z_BUF_ERROR) {
			snprintf(err, errlen, "not valid gzip data (%s)",
			    in->zs.msg != NULL ? in->zs.msg : "inflate");
			return -1;
		}
	}
	return (ssize_t)(cap - in->zs.avail_out);
}

/* Starts gzip if the first bytes (already at buf[end - n..end)) say so. */
static int
audit_in_sniff(struct audit_in *in, size_t n, char *err, size_t errlen)
{
	unsigned char	*b = (unsigned char *)in->buf + in->end - n;

	in->sniffed = true;
	if (n < 2 || b[0] != 0x1f || b[1] != 0x8b)
		return 0;
	if (audit_in_zlib(err, errlen) == -1 ||
	    (in->raw = malloc(AUDIT_IN_CHUNK)) == NULL) {
		if (in->raw == NULL && Z.h != NULL)
			snprintf(err, errlen, "out of memory");
		return -1;
	}
	memcpy(in->raw, b, n);
	in->end -= n;
	memset(&in->zs, 0, sizeof(in->zs));
	in->zs.next_in = in->raw;
	in->zs.avail_in = (unsigned)n;
	if (Z.init2(&in->zs, 16 + MAX_WBITS, ZLIB_VERSION,
	    (int)sizeof(z_stream)) != Z_OK) {
		snprintf(err, errlen, "inflateInit2 failed");
		return -1;
	}
	in->zlive = true;
	in->gz = true;
	return 0;
}

/* More text at buf[end..): returns the bytes added, 0 at the end, -1. */
static ssize_t
audit_in_fill(struct audit_in *in, char *err, size_t errlen)
{
	ssize_t	n;

	if (in->start > 0) {
		memmove(in->buf, in->buf + in->start, in->end - in->start);
		in->end -= in->start;
		in->start = 0;
	}
	if (in->gz) {
		n = audit_in_inflate(in, in->buf + in->end, AUDIT_IN_CHUNK,
		    err, errlen);
		if (n > 0)
			in->end += (size_t)n;
		return n;
	}
	if ((n = audit_in_read(in->fd, in->buf + in->end, AUDIT_IN_CHUNK)) ==
	    -1) {
		snprintf(err, errlen, "%s", strerror(errno));
		return -1;
	}
	in->end += (size_t)n;
	if (!in->sniffed && n > 0) {
		if (audit_in_sniff(in, (size_t)n, err, errlen) == -1)
			return -1;
		if (in->gz)
			return audit_in_fill(in, err, errlen);
	}
	return n;
}

int
audit_in_line(struct audit_in *in, char **line, size_t *len, char *err,
    size_t errlen)
{
	char	*nl;
	ssize_t	 n;

	for (;;) {
		nl = memchr(in->buf + in->start, '\n', in->end - in->start);
		if (nl != NULL) {
			size_t	at = in->start;

			*nl = '\0';
			in->start = (size_t)(nl - in->buf) + 1;
			in->lineno++;
			if (in->skipping || (size_t)(nl - in->buf) - at >
			    AUDIT_LN_MAX_BYTES) {
				in->skipping = false;
				snprintf(err, errlen, "a line longer than %u "
				    "bytes (skipped)", AUDIT_LN_MAX_BYTES);
				return -2;
			}
			*line = in->buf + at;
			*len = (size_t)(nl - in->buf) - at;
			return 1;
		}
		if (in->end - in->start > AUDIT_LN_MAX_BYTES) {
			in->skipping = true;	/* drop what is held */
			in->start = in->end = 0;
		}
		if (in->eof)
			break;
		if ((n = audit_in_fill(in, err, errlen)) == -1)
			return -1;
		if (n == 0)
			in->eof = true;
	}
	if (in->start == in->end && !in->skipping)
		return 0;
	in->lineno++;
	in->start = in->end;
	if (in->skipping)
		snprintf(err, errlen, "a line longer than %u bytes (skipped)",
		    AUDIT_LN_MAX_BYTES);
	else
		snprintf(err, errlen, "the last line has no newline: cut "
		    "short, or being written (skipped)");
	in->skipping = false;
	return -2;
}
