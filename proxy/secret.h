/*
 * secret.h - reading secret values (API keys, proxy tokens) into moatd's
 * memory, and wiping them.
 *
 * A secret lives only in moatd's memory (DESIGN.md invariant 7): never in
 * a log line, an audit record, an error page or a file moatd writes.
 */
#ifndef MOAT_SECRET_H
#define MOAT_SECRET_H

#include <stddef.h>

#include "policy/policy.h"

#define SECRET_MAX_BYTES	65536	/* longest secret value */

/*
 * Reads the value of ref from its environment variable or file.  A file
 * must be a regular file, not readable or writable by group or others,
 * owned by the current user or root; one trailing newline (LF or CRLF) is
 * dropped.  An empty value is an error.  Returns a malloc'd, NUL-terminated
 * value (caller frees with secret_free()) and its length in *len, or NULL
 * with a message (which never contains the value) in err.
 */
char	*secret_read(const struct moat_secret_ref *ref, size_t *len, char *err,
	    size_t errlen);
/* Wipes len bytes of v and frees it.  NULL is ok. */
void	 secret_free(char *v, size_t len);

#endif /* MOAT_SECRET_H */
