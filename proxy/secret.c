/*
 * secret.c - read secret values from the environment or 0600 files.
 */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proxy/secret.h"
#include "proxy/util.h"

static char	*secret_read_file(const char *path, size_t *len, char *err,
		    size_t errlen);

char *
secret_read(const struct moat_secret_ref *ref, size_t *len, char *err,
    size_t errlen)
{
	const char	*v;
	char		*out;
	size_t		 n;

	if (ref->file != NULL)
		return secret_read_file(ref->file, len, err, errlen);
	if (ref->env == NULL || (v = getenv(ref->env)) == NULL) {
		snprintf(err, errlen, "%s: environment variable %s is not set",
		    ref->name, ref->env ? ref->env : "(none)");
		return NULL;
	}
	n = strlen(v);
	if (n == 0 || n > SECRET_MAX_BYTES) {
		snprintf(err, errlen, "%s: environment variable %s is %s",
		    ref->name, ref->env, n ? "too long" : "empty");
		return NULL;
	}
	if ((out = malloc(n + 1)) == NULL) {
		snprintf(err, errlen, "%s: out of memory", ref->name);
		return NULL;
	}
	memcpy(out, v, n + 1);
	*len = n;
	return out;
}

static char *
secret_read_file(const char *path, size_t *len, char *err, size_t errlen)
{
	struct stat	 st;
	char		*buf = NULL;
	size_t		 n = 0;
	ssize_t		 r;
	int		 fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) == -1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) == -1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file", path);
		goto fail;
	}
	if (st.st_mode & (S_IRWXG | S_IRWXO)) {
		snprintf(err, errlen, "%s: readable or writable by group or "
		    "others (mode %04o); run: chmod 600 %s", path,
		    (unsigned)(st.st_mode & 07777), path);
		goto fail;
	}
	if (st.st_uid != 0 && st.st_uid != geteuid()) {
		snprintf(err, errlen, "%s: owned by uid %u, neither root nor "
		    "moatd's user", path, (unsigned)st.st_uid);
		goto fail;
	}
	/* moat run hides a secret file by its path: another name of the
	 * same file would stay readable in the sandbox. */
	if (st.st_nlink > 1) {
		snprintf(err, errlen, "%s: the file has %lu hard links; moat "
		    "hides a secret file from sandboxes by its path, so keep "
		    "it to one name (copy it instead of linking)", path,
		    (unsigned long)st.st_nlink);
		goto fail;
	}
	if (st.st_size <= 0 || st.st_size > SECRET_MAX_BYTES + 2) {
		snprintf(err, errlen, "%s: %s", path, st.st_size <= 0 ?
		    "empty" : "too long for a secret");
		goto fail;
	}
	if ((buf = malloc((size_t)st.st_size + 1)) == NULL) {
		snprintf(err, errlen, "%s: out of memory", path);
		goto fail;
	}
	while (n < (size_t)st.st_size) {
		r = read(fd, buf + n, (size_t)st.st_size - n);
		if (r == -1 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	fd = -1;
	if (n > 0 && buf[n - 1] == '\n')
		n--;
	if (n > 0 && buf[n - 1] == '\r')
		n--;
	buf[n] = '\0';
	if (n == 0 || memchr(buf, '\0', n) != NULL) {
		snprintf(err, errlen, "%s: %s", path, n == 0 ? "empty" :
		    "contains a NUL byte");
		secret_free(buf, (size_t)st.st_size + 1);
		return NULL;
	}
	*len = n;
	return buf;
 fail:
	if (fd >= 0)
		close(fd);
	return NULL;
}

void
secret_free(char *v, size_t len)
{
	if (v == NULL)
		return;
	util_wipe(v, len);
	free(v);
}
