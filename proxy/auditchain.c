/*
 * auditchain.c - SHA-256 chained audit lines, for the audit writer.
 *
 * Not here: the queue, the file, retries (audit.c).  This file only adds
 * the chain's fields to lines the writer is about to write, and keeps the
 * state of the chain between writes.  OpenSSL's EVP does the digest (loaded
 * when the chain is first asked for); the writer thread pays for it,
 * never a worker.
 */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "certs/ssldl.h"
#include "proto/chainfmt.h"
#include "proxy/auditchain.h"

struct auditchain {
	EVP_MD_CTX	*md;
	long long	 seq;			/* committed: -1 none */
	char		 hash[AUDITCHAIN_HEX + 1];
};

struct auditchain *
auditchain_new(void)
{
	struct auditchain	*ch;
	char			 err[256];

	/* The chain is the one use of OpenSSL a config without TLS can
	 * ask for: loaded here (moatd's main thread, certs/ssldl.c). */
	if (ssldl_load(err, sizeof(err)) == -1)
		return NULL;
	if ((ch = calloc(1, sizeof(*ch))) == NULL)
		return NULL;
	if ((ch->md = EVP_MD_CTX_new()) == NULL) {
		free(ch);
		return NULL;
	}
	ch->seq = -1;
	memset(ch->hash, '0', AUDITCHAIN_HEX);
	return ch;
}

void
auditchain_free(struct auditchain *ch)
{
	if (ch == NULL)
		return;
	EVP_MD_CTX_free(ch->md);
	free(ch);
}

long long
auditchain_seq(const struct auditchain *ch)
{
	return ch->seq;
}

const char *
auditchain_hash(const struct auditchain *ch)
{
	return ch->hash;
}

/*
 * The seq and hash of line (len bytes, no newline) if it ends as a
 * chained line does; else -1.
 */
static int
ac_parse(const char *line, size_t len, long long *seq, char *hash)
{
	struct chainfmt_tail	t;

	if (!chainfmt_parse(line, len, &t))
		return -1;
	*seq = t.seq;
	memcpy(hash, t.hash, sizeof(t.hash));
	return 0;
}

/*
 * The chain of the file behind fd, from its last line: 0 if it has one.
 * The file is read through a descriptor of its own (fd is write-only),
 * opened by path and checked to be the same file.
 */
static int
ac_tail(struct auditchain *ch, int fd, const char *path)
{
	struct stat	 a, b;
	char		*buf = NULL, *s;
	size_t		 n;
	ssize_t		 r;
	int		 rfd = -1, rc = -1;

	if (path == NULL || fstat(fd, &a) == -1 || !S_ISREG(a.st_mode) ||
	    a.st_size == 0)
		return -1;
	if ((rfd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY |
	    O_NONBLOCK)) == -1 || fstat(rfd, &b) == -1 ||
	    a.st_dev != b.st_dev || a.st_ino != b.st_ino)
		goto out;
	n = b.st_size < AUDITCHAIN_TAIL_BYTES ? (size_t)b.st_size :
	    AUDITCHAIN_TAIL_BYTES;
	if ((buf = malloc(n)) == NULL ||
	    (r = pread(rfd, buf, n, b.st_size - (off_t)n)) != (ssize_t)n ||
	    buf[n - 1] != '\n')
		goto out;
	for (s = buf + n - 1; s > buf && s[-1] != '\n'; s--)
		;
	rc = ac_parse(s, (size_t)(buf + n - 1 - s), &ch->seq, ch->hash);
 out:
	free(buf);
	if (rfd != -1)
		close(rfd);
	return rc;
}

int
auditchain_seed(struct auditchain *ch, int fd, const char *path)
{
	if (ac_tail(ch, fd, path) == 0)
		return AUDITCHAIN_FROM_FILE;
	return ch->seq >= 0 ? AUDITCHAIN_FROM_BEFORE : AUDITCHAIN_NEW;
}

size_t
auditchain_start_line(int how, const char *ts, char *line, size_t cap)
{
	const char	*what;
	int		 n;

	if (how == AUDITCHAIN_FROM_FILE)
		what = "the chain goes on from this file's last line";
	else if (how == AUDITCHAIN_FROM_BEFORE)
		what = "the chain goes on from the last line written before "
		    "(the file before this one)";
	else
		what = "a new chain: no earlier line to go on from";
	n = snprintf(line, cap, "{\"ts\":\"%s\",\"event\":\"chain-start\","
	    "\"detail\":\"%s\"}\n", ts, what);
	return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

/* One line's chain fields and hash into o (room is there). */
static size_t
ac_line(struct auditchain *ch, const char *l, size_t n, long long seq,
    const char *prev, char *o)
{
	static const char	 hex[] = "0123456789abcdef";
	unsigned char		 md[EVP_MAX_MD_SIZE];
	unsigned		 mdlen = 0, i;
	size_t			 k;

	/* l[0..n) is the line without its "}\n" */
	memcpy(o, l, n);
	k = n + (size_t)sprintf(o + n, CHAINFMT_SEQ_TAIL "%lld" CHAINFMT_PREV_TAIL "%s\"",
	    seq, prev);
	if (EVP_DigestInit_ex(ch->md, EVP_sha256(), NULL) != 1 ||
	    EVP_DigestUpdate(ch->md, o, k) != 1 ||
	    EVP_DigestUpdate(ch->md, "}", 1) != 1 ||
	    EVP_DigestFinal_ex(ch->md, md, &mdlen) != 1 || mdlen != 32)
		return 0;
	memcpy(o + k, CHAINFMT_HASH_TAIL, sizeof(CHAINFMT_HASH_TAIL) - 1);
	k += sizeof(CHAINFMT_HASH_TAIL) - 1;
	for (i = 0; i < mdlen; i++) {
		o[k++] = hex[md[i] >> 4];
		o[k++] = hex[md[i] & 0xf];
	}
	memcpy(o + k, "\"}\n", 3);
	return k + 3;
}

ssize_t
auditchain_apply(struct auditchain *ch, const char *buf, size_t len,
    char **out, size_t *cap)
{
	const char	*p = buf, *nl, *end = buf + len;
	char		 prev[AUDITCHAIN_HEX + 1];
	long long	 seq = ch->seq;
	size_t		 o = 0, n, lines = 0, need, k;
	char		*nb;

	for (nl = buf; (nl = memchr(nl, '\n', (size_t)(end - nl))) != NULL;
	    nl++)
		lines++;
	need = len + lines * AUDITCHAIN_EXTRA + 1;
	if (need > *cap) {
		if ((nb = realloc(*out, need)) == NULL)
			return -1;
		*out = nb;
		*cap = need;
	}
	memcpy(prev, ch->hash, sizeof(prev));
	for (; p < end; p = nl + 1) {
		if ((nl = memchr(p, '\n', (size_t)(end - p))) == NULL)
			nl = end - 1;	/* whole lines only: not reached */
		n = (size_t)(nl - p) + 1;
		if (n < 3 || p[n - 2] != '}' ||
		    (k = ac_line(ch, p, n - 2, seq + 1, prev, *out + o)) == 0) {
			memcpy(*out + o, p, n);	/* not ours: as it is */
			o += n;
			continue;
		}
		memcpy(prev, *out + o + k - 3 - AUDITCHAIN_HEX, AUDITCHAIN_HEX);
		seq++;
		o += k;
	}
	return (ssize_t)o;
}

void
auditchain_commit(struct auditchain *ch, const char *out, size_t done)
{
	const char	*s, *e;
	long long	 seq;
	char		 hash[AUDITCHAIN_HEX + 1];

	/* The last whole line of out[0..done) that carries the chain. */
	for (e = out + done; e > out; e = s) {
		for (s = e - 1; s > out && s[-1] != '\n'; s--)
			;
		if (ac_parse(s, (size_t)(e - 1 - s), &seq, hash) == 0) {
			ch->seq = seq;
			memcpy(ch->hash, hash, sizeof(hash));
			return;
		}
	}
}
