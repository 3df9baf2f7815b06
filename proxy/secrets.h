/*
 * secrets.h - secret values in moatd's memory, and what a sandbox's
 * traffic is scanned for.
 *
 * A struct secrets holds the values of one config's "secrets" (the
 * daemon's, reloaded on SIGHUP, or a registered sandbox's own), read once
 * and wiped when the last reference goes.  Each sandbox also has one
 * random placeholder per secret (the value its workload holds instead of
 * the real one) and a compiled scanner that finds both, so that requests
 * carrying a value or a placeholder to a host the secret is not bound to
 * are refused, placeholders are swapped for values on requests to bound
 * hosts, and values echoed back in responses become placeholders again.
 *
 * No value ever reaches a log line, an audit record (names only), an
 * error page or a file moatd writes.
 */
#ifndef MOAT_SECRETS_H
#define MOAT_SECRETS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/policy.h"
#include "proxy/secretscan.h"

struct audit_rec;
struct secrets;
struct sandbox;

/*
 * Reads the values of cfg->secrets (files must be private; see
 * secret_read()).  Returns NULL with an empty err when cfg has no
 * secrets, NULL with a message on failure ("FILE:LINE:COLUMN: ..." with
 * positions, "FILE: ..." for a config built by a program, whose lines
 * mean nothing to its user), or the values with one reference (they keep
 * a reference to cfg, for the names).
 */
struct secrets	*secrets_load(struct moat_config *cfg, bool positions,
		    char *err, size_t errlen);
struct secrets	*secrets_ref(struct secrets *s);
/* Drops a reference; wipes and frees at zero.  NULL ok.  Thread-safe. */
void		 secrets_unref(struct secrets *s);

size_t		 secrets_count(const struct secrets *s);
/* The secret's name (borrowed from the config); never a value. */
const char	*secrets_name(const struct secrets *s, size_t i);
/* secrets_name() as secretscan_redact() calls it (arg: a secrets). */
const char	*secrets_name_of(const void *arg, uint32_t i);
/* The value (borrowed: valid while the reference is held). */
const uint8_t	*secrets_value(const struct secrets *s, size_t i, size_t *len);
/* The variable the sandbox gets the placeholder in ("sandbox_env"). */
const char	*secrets_env(const struct secrets *s, size_t i);
/*
 * The secret's "quota" (requests per per_s seconds that may carry it):
 * true with both set, false if it has none.
 */
bool		 secrets_quota(const struct secrets *s, size_t i,
		    unsigned *requests, unsigned *per_s);

/*
 * What one sandbox's traffic is matched against: its secrets, its
 * placeholders, and the scanner built from both.  Everything is borrowed
 * from the view, which holds a reference until secrets_view_done().
 */
struct secrets_set;
struct secrets_view {
	struct secrets_set	*set;		/* private: the reference */
	struct secrets		*vals;		/* NULL: no secrets */
	const char *const	*ph;		/* placeholder of secret i */
	const struct secretscan	*scan;
};

/*
 * Fills *v for sandbox sb: its own secrets if it registered some, else
 * daemon (may be NULL).  Placeholders are made on first use and kept as
 * long as the secrets do (a registered sandbox gets them at
 * registration).  Returns 0 (v->vals NULL when there are no secrets), or
 * -1 on failure (the caller fails closed).  Thread-safe.
 */
int	secrets_view(struct sandbox *sb, struct secrets *daemon,
	    struct secrets_view *v);
/*
 * SIGHUP for a registered sandbox with secrets of its own: reads them
 * again (a rotated key takes effect; the placeholders stay).  On failure
 * the old values stay and err says why.  Returns 0 or -1.
 */
int	secrets_sandbox_reload(struct sandbox *sb, char *err, size_t errlen);
/*
 * Whether name (a target's canonical name, port 0 for any) holds a value
 * or placeholder of one of sb's secrets that policy p does not bind to
 * it.  Returns 1 (the secret's name, never a value, in who), 0, or -1
 * (memory: fail closed).
 */
int	secrets_name_leak(struct sandbox *sb, struct secrets *daemon,
	    const struct policy *p, const char *name, uint16_t port,
	    char *who, size_t len);
/*
 * Sets audit record r to redact, with sandbox sb's scanner, the fields
 * that repeat what its client sent (no secrets: nothing to do; the view
 * failing: those fields are written "[redacted]").  *v holds the scanner:
 * release it with secrets_view_done() after audit_emit().
 */
void	secrets_audit_redact(struct sandbox *sb, struct secrets *daemon,
	    struct secrets_view *v, struct audit_rec *r);
/* Releases what secrets_view() took.  Safe on a zeroed view. */
void	secrets_view_done(struct secrets_view *v);
/* Frees the set a sandbox keeps (sandbox teardown).  NULL ok. */
void	secrets_set_unref(struct secrets_set *set);

#endif /* MOAT_SECRETS_H */
