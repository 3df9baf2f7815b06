/*
 * policyio.c - the GeoIP loader and the libidn2 loader of moatd and moat
 * (policyio.h): the file and library access policy/ leaves to its callers.
 *
 * What is mapped of a GeoIP database is a private copy, a memfd sealed
 * against every change: libmaxminddb reads the database through its
 * mapping at each lookup, and a file truncated or rewritten in place under
 * a mapping of it would kill the process (SIGBUS) or change answers
 * between two lookups.
 */
#include "config.h"

#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <maxminddb.h>

#include "policyio/policyio.h"

/* No GeoIP database comes near this; a disk image named by mistake would
 * otherwise be copied into memory whole. */
#define GEO_COPY_MAX	((off_t)2 << 30)

static int	policyio_geo_copy(const char *path, const char **err);
static int	policyio_geo_open(const char *path, struct MMDB_s *db,
		    const char **err, void *arg);

const struct policy_load_opts	policyio_load_opts = {
	.geo_open = policyio_geo_open,
	.geo_arg = NULL,
};

/*
 * The file's bytes in a new memfd that can no longer shrink, grow or be
 * written.  Returns the memfd, or -1 with *err set.  Only a regular file
 * is read (a FIFO would block the load).
 */
static int
policyio_geo_copy(const char *path, const char **err)
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

static int
policyio_geo_open(const char *path, struct MMDB_s *db, const char **err,
    void *arg)
{
	char	copy[64];
	int	rc, fd;

	(void)arg;
	if ((fd = policyio_geo_copy(path, err)) == -1)
		return -1;
	/* libmaxminddb opens by name: the memfd's, which it maps and
	 * closes again; ours goes once it is mapped. */
	snprintf(copy, sizeof(copy), "/proc/self/fd/%d", fd);
	errno = 0;
	rc = MMDB_open(copy, MMDB_MODE_MMAP, db);
	if (rc == MMDB_FILE_OPEN_ERROR && errno == ENOENT) {
		/* No /proc: map the file itself (see moat.json(5)). */
		errno = 0;
		rc = MMDB_open(path, MMDB_MODE_MMAP, db);
	}
	close(fd);
	if (rc != MMDB_SUCCESS) {
		*err = (rc == MMDB_IO_ERROR || rc == MMDB_FILE_OPEN_ERROR) &&
		    errno != 0 ? strerror(errno) : rc ==
		    MMDB_INVALID_METADATA_ERROR ? "not a MaxMind DB file (no "
		    "valid metadata)" : MMDB_strerror(rc);
		return -1;
	}
	return 0;
}

int
policyio_idn_load(void)
{
	static bool			 tried;
	static struct policy_idn	 idn;
	void				*h;

	if (!tried) {
		tried = true;
		/* RTLD_NODELETE: never unloaded, the pointers stay valid. */
		if ((h = dlopen(IDN2_SONAME, RTLD_NOW | RTLD_LOCAL |
		    RTLD_NODELETE)) != NULL) {
			idn.lookup_u8 = (__typeof__(idn.lookup_u8))dlsym(h,
			    "idn2_lookup_u8");
			idn.free = (__typeof__(idn.free))dlsym(h, "idn2_free");
		}
	}
	if (idn.lookup_u8 == NULL || idn.free == NULL)
		return -1;
	policy_idn_set(&idn);
	return 0;
}

void
policyio_idn_for(const char *text, size_t len)
{
	if (policy_idn_wanted(text, len))
		(void)policyio_idn_load();
}
