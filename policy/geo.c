/*
 * geo.c - the country and AS number of an address, from MaxMind DB files
 * (GeoLite2-Country / -City / -ASN, DB-IP lite, or any database with the
 * same fields), read with libmaxminddb.
 *
 * The databases are opened when a config is loaded (the only file access
 * of the policy library besides what the caller hands it) and mapped read
 * only, so lookups from any number of worker threads need no lock.  A
 * reload opens them again: replacing a file and sending SIGHUP is how a
 * newer database takes effect.
 *
 * What is mapped is a private copy, a memfd sealed against every change:
 * libmaxminddb reads the database through its mapping at each lookup, and
 * a file truncated or rewritten in place under a mapping of it would kill
 * the process (SIGBUS) or change answers between two lookups.
 */
#include "config.h"

#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <netinet/in.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <maxminddb.h>

#include "policy/policy_int.h"

struct geo_db {
	MMDB_s	mmdb;
};

/* No GeoIP database comes near this; a disk image named by mistake would
 * otherwise be copied into memory whole. */
#define GEO_COPY_MAX	((off_t)2 << 30)

/*
 * The file's bytes in a new memfd that can no longer shrink, grow or be
 * written.  Returns the memfd, or -1 with *err set.  Only a regular file
 * is read (a FIFO would block the load).
 */
static int
geo_copy(const char *path, const char **err)
{
	static const int	 seals = F_SEAL_SHRINK | F_SEAL_GROW |
				    F_SEAL_WRITE | F_SEAL_SEAL;
	struct stat		 st;
	off_t			 left;
	ssize_t			 n;
	int			 in, out = -1, saved;

	if ((in = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) == -1) {
		*err = strerror(errno);
		return -1;
	}
	if (fstat(in, &st) == -1)
		goto fail;
	if (!S_ISREG(st.st_mode) || st.st_size > GEO_COPY_MAX) {
		close(in);
		*err = S_ISREG(st.st_mode) ? "larger than 2 GiB: not a GeoIP "
		    "database" : "not a regular file";
		return -1;
	}
	if ((out = memfd_create("moat-geoip", MFD_CLOEXEC |
	    MFD_ALLOW_SEALING)) == -1)
		goto fail;
	/* What the file holds now, up to its size when opened, copied in
	 * the kernel. */
	for (left = st.st_size; left > 0; left -= n) {
		if ((n = sendfile(out, in, NULL, (size_t)left)) == -1) {
			if (errno != EINTR)
				goto fail;
			n = 0;
		} else if (n == 0)
			break;	/* shorter now: the metadata check judges */
	}
	if (fcntl(out, F_ADD_SEALS, seals) == -1)
		goto fail;
	close(in);
	return out;
 fail:
	saved = errno != 0 ? errno : EIO;
	close(in);
	if (out != -1)
		close(out);
	*err = strerror(saved);
	return -1;
}

struct geo_db *
geo_open(const char *path, const char **err)
{
	struct geo_db	*g;
	char		 copy[64];
	int		 rc, fd;

	if ((g = calloc(1, sizeof(*g))) == NULL) {
		*err = "out of memory";
		return NULL;
	}
	if ((fd = geo_copy(path, err)) == -1) {
		free(g);
		return NULL;
	}
	/* libmaxminddb opens by name: the memfd's, which it maps and
	 * closes again; ours goes once it is mapped. */
	snprintf(copy, sizeof(copy), "/proc/self/fd/%d", fd);
	errno = 0;
	rc = MMDB_open(copy, MMDB_MODE_MMAP, &g->mmdb);
	if (rc == MMDB_FILE_OPEN_ERROR && errno == ENOENT) {
		/* No /proc: map the file itself (see moat.json(5)). */
		errno = 0;
		rc = MMDB_open(path, MMDB_MODE_MMAP, &g->mmdb);
	}
	close(fd);
	if (rc != MMDB_SUCCESS) {
		*err = (rc == MMDB_IO_ERROR || rc == MMDB_FILE_OPEN_ERROR) &&
		    errno != 0 ? strerror(errno) : rc ==
		    MMDB_INVALID_METADATA_ERROR ? "not a MaxMind DB file (no "
		    "valid metadata)" : MMDB_strerror(rc);
		free(g);
		return NULL;
	}
	return g;
}

void
geo_close(struct geo_db *g)
{
	if (g == NULL)
		return;
	MMDB_close(&g->mmdb);
	free(g);
}

const char *
geo_type(const struct geo_db *g)
{
	return g->mmdb.metadata.database_type != NULL ?
	    g->mmdb.metadata.database_type : "";
}

/* The database's entry for a, or false if it has none. */
static bool
geo_entry(const struct geo_db *g, const struct policy_addr *a,
    MMDB_entry_s *out)
{
	MMDB_lookup_result_s	res;
	struct sockaddr_in	s4;
	struct sockaddr_in6	s6;
	const struct sockaddr	*sa;
	int			err = MMDB_SUCCESS;

	if (a->family == AF_INET) {
		memset(&s4, 0, sizeof(s4));
		s4.sin_family = AF_INET;
		s4.sin_addr = a->u.v4;
		sa = (const struct sockaddr *)&s4;
	} else if (a->family == AF_INET6) {
		memset(&s6, 0, sizeof(s6));
		s6.sin6_family = AF_INET6;
		s6.sin6_addr = a->u.v6;
		sa = (const struct sockaddr *)&s6;
	} else
		return false;
	/* An IPv6 address in an IPv4-only database is an error: unknown. */
	res = MMDB_lookup_sockaddr(&g->mmdb, sa, &err);
	if (err != MMDB_SUCCESS || !res.found_entry)
		return false;
	*out = res.entry;
	return true;
}

bool
geo_country(const struct geo_db *g, const struct policy_addr *a, char cc[3])
{
	MMDB_entry_s		e;
	MMDB_entry_data_s	d;
	const char		*s;

	if (g == NULL || !geo_entry(g, a, &e))
		return false;
	/* Where the network is; else (anycast, satellite) where it is
	 * registered. */
	if (MMDB_get_value(&e, &d, "country", "iso_code", NULL) !=
	    MMDB_SUCCESS || !d.has_data ||
	    d.type != MMDB_DATA_TYPE_UTF8_STRING || d.data_size != 2) {
		if (MMDB_get_value(&e, &d, "registered_country", "iso_code",
		    NULL) != MMDB_SUCCESS || !d.has_data ||
		    d.type != MMDB_DATA_TYPE_UTF8_STRING || d.data_size != 2)
			return false;
	}
	s = d.utf8_string;
	if (!geo_cc_ok(s, 2))
		return false;
	cc[0] = (char)(s[0] & ~0x20);
	cc[1] = (char)(s[1] & ~0x20);
	cc[2] = '\0';
	return true;
}

bool
geo_asn(const struct geo_db *g, const struct policy_addr *a, uint32_t *asn)
{
	MMDB_entry_s		e;
	MMDB_entry_data_s	d;

	if (g == NULL || !geo_entry(g, a, &e))
		return false;
	if (MMDB_get_value(&e, &d, "autonomous_system_number", NULL) !=
	    MMDB_SUCCESS || !d.has_data)
		return false;
	switch (d.type) {
	case MMDB_DATA_TYPE_UINT16:
		*asn = d.uint16;
		break;
	case MMDB_DATA_TYPE_UINT32:
		*asn = d.uint32;
		break;
	default:
		return false;
	}
	return *asn != 0;
}

bool
geo_cc_ok(const char *s, size_t len)
{
	size_t	i;

	if (len != 2)
		return false;
	for (i = 0; i < 2; i++)
		if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' &&
		    s[i] <= 'z')))
			return false;
	return true;
}
