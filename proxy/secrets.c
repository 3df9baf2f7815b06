/*
 * secrets.c - secret values, placeholders and the per-sandbox scanner.
 *
 * Values are read once per config generation (start, SIGHUP, a sandbox's
 * registration) and wiped when the last reference goes.  A sandbox's set
 * (its placeholders and the compiled scanner of values + placeholders) is
 * refcounted so a worker can use it while a reload builds a new one.
 *
 * Not here: matching (secretscan.c), deciding which host a secret is
 * bound to (policy/), rewriting traffic (http.c).
 */
#include "config.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "certs/ssldl.h"
#include "policy/policy.h"
#include "proxy/sandbox.h"
#include "proxy/secret.h"
#include "proxy/secrets.h"
#include "proxy/audit.h"
#include "proxy/secretscan.h"
#include "proxy/util.h"

struct secrets {
	atomic_int		 refcnt;
	struct moat_config	*cfg;		/* names and sandbox_env */
	size_t			 n;
	char			**vals;
	size_t			*lens;
};

struct secrets_set {
	atomic_int		 refcnt;
	struct secrets		*vals;		/* a reference */
	char			**ph;		/* placeholders, n of them */
	struct secretscan	*scan;
};

/* Guards every sandbox's sset pointer (swaps are rare, reads short). */
static pthread_mutex_t	secrets_mu = PTHREAD_MUTEX_INITIALIZER;

struct secrets *
secrets_load(struct moat_config *cfg, bool positions, char *err,
    size_t errlen)
{
	struct secrets	*s;
	char		 e[512], at[POLICY_NAME_MAX + 64];
	size_t		 i;

	err[0] = '\0';
	if (cfg->nsecrets == 0)
		return NULL;
	/* Injected Basic credentials are base64'd by OpenSSL: loaded
	 * here, in the main thread, not at a worker's first request. */
	if (ssldl_load(e, sizeof(e)) == -1) {
		snprintf(err, errlen, "secrets: %s", e);
		return NULL;
	}
	if ((s = calloc(1, sizeof(*s))) == NULL ||
	    (s->vals = calloc(cfg->nsecrets, sizeof(*s->vals))) == NULL ||
	    (s->lens = calloc(cfg->nsecrets, sizeof(*s->lens))) == NULL) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	atomic_init(&s->refcnt, 1);
	s->cfg = policy_config_ref(cfg);
	s->n = cfg->nsecrets;
	for (i = 0; i < s->n; i++) {
		if (positions)
			snprintf(at, sizeof(at), "%s:%d:%d", cfg->file,
			    cfg->secrets[i].line, cfg->secrets[i].column);
		else
			snprintf(at, sizeof(at), "%s", cfg->file);
		s->vals[i] = secret_read(&cfg->secrets[i], &s->lens[i], e,
		    sizeof(e));
		if (s->vals[i] == NULL) {
			snprintf(err, errlen, "%s: secrets.%s: %s", at,
			    cfg->secrets[i].name, e);
			goto fail;
		}
		if (s->lens[i] < SECRETSCAN_MIN_LEN) {
			snprintf(err, errlen, "%s: secrets.%s: shorter than %d "
			    "bytes: too short to be recognised in traffic", at,
			    cfg->secrets[i].name, SECRETSCAN_MIN_LEN);
			goto fail;
		}
	}
	return s;
 fail:
	secrets_unref(s);
	return NULL;
}

struct secrets *
secrets_ref(struct secrets *s)
{
	atomic_fetch_add(&s->refcnt, 1);
	return s;
}

void
secrets_unref(struct secrets *s)
{
	size_t	i;

	if (s == NULL || atomic_fetch_sub(&s->refcnt, 1) != 1)
		return;
	for (i = 0; s->vals != NULL && i < s->n; i++)
		secret_free(s->vals[i], s->lens[i]);
	free(s->vals);
	free(s->lens);
	policy_config_unref(s->cfg);
	free(s);
}

size_t
secrets_count(const struct secrets *s)
{
	return s != NULL ? s->n : 0;
}

const char *
secrets_name(const struct secrets *s, size_t i)
{
	return s->cfg->secrets[i].name;
}

bool
secrets_quota(const struct secrets *s, size_t i, unsigned *requests,
    unsigned *per_s)
{
	const struct moat_secret_ref	*r = &s->cfg->secrets[i];

	if (r->quota_requests == 0)
		return false;
	*requests = r->quota_requests;
	*per_s = r->quota_per_seconds;
	return true;
}

const uint8_t *
secrets_value(const struct secrets *s, size_t i, size_t *len)
{
	*len = s->lens[i];
	return (const uint8_t *)s->vals[i];
}

const char *
secrets_env(const struct secrets *s, size_t i)
{
	const char	*e = s->cfg->secrets[i].placeholder_env;

	return e != NULL ? e : s->cfg->secrets[i].name;
}

void
secrets_set_unref(struct secrets_set *set)
{
	size_t	i;

	if (set == NULL || atomic_fetch_sub(&set->refcnt, 1) != 1)
		return;
	for (i = 0; set->ph != NULL && i < set->vals->n; i++) {
		if (set->ph[i] != NULL)
			util_wipe(set->ph[i], strlen(set->ph[i]));
		free(set->ph[i]);
	}
	free(set->ph);
	secretscan_free(set->scan);
	secrets_unref(set->vals);
	free(set);
}

/*
 * Placeholders for every secret of vals and the scanner of both.  A
 * secret that old (the set being replaced, or NULL) knew by the same name
 * keeps its placeholder: the workload holds it, and a reload or a rotated
 * key must not break it.
 */
static struct secrets_set *
secrets_set_new(struct secrets *vals, const struct secrets_set *old)
{
	struct secrets_set		*set;
	struct secretscan_pattern	*p = NULL;
	char				 err[256];
	size_t				 i;

	if ((set = calloc(1, sizeof(*set))) == NULL)
		return NULL;
	atomic_init(&set->refcnt, 1);
	set->vals = secrets_ref(vals);
	if ((set->ph = calloc(vals->n, sizeof(*set->ph))) == NULL ||
	    (p = calloc(vals->n * 2, sizeof(*p))) == NULL)
		goto fail;
	for (i = 0; i < vals->n; i++) {
		const char *keep = NULL;
		size_t j;

		for (j = 0; old != NULL && j < old->vals->n; j++)
			if (strcmp(secrets_name(old->vals, j),
			    secrets_name(vals, i)) == 0)
				keep = old->ph[j];
		if ((set->ph[i] = malloc(SECRETSCAN_PLACEHOLDER_LEN + 1)) ==
		    NULL)
			goto fail;
		if (keep != NULL)
			memcpy(set->ph[i], keep, SECRETSCAN_PLACEHOLDER_LEN + 1);
		else if (secretscan_placeholder(set->ph[i],
		    SECRETSCAN_PLACEHOLDER_LEN + 1) == -1)
			goto fail;
		p[2 * i].bytes = (const uint8_t *)vals->vals[i];
		p[2 * i].len = vals->lens[i];
		p[2 * i].secret = (uint32_t)i;
		p[2 * i].kind = SECRETSCAN_VALUE;
		p[2 * i + 1].bytes = (const uint8_t *)set->ph[i];
		p[2 * i + 1].len = SECRETSCAN_PLACEHOLDER_LEN;
		p[2 * i + 1].secret = (uint32_t)i;
		p[2 * i + 1].kind = SECRETSCAN_PLACEHOLDER;
	}
	if ((set->scan = secretscan_new(p, vals->n * 2, err, sizeof(err))) ==
	    NULL)
		goto fail;
	free(p);
	return set;
 fail:
	free(p);
	secrets_set_unref(set);
	return NULL;
}

int
secrets_view(struct sandbox *sb, struct secrets *daemon,
    struct secrets_view *v)
{
	struct secrets		*want;
	struct secrets_set	*set, *old = NULL;

	memset(v, 0, sizeof(*v));
	/* No secrets anywhere (the common case): no lock. */
	if (daemon == NULL && (sb->cfg == NULL || sb->cfg->nsecrets == 0))
		return 0;
	pthread_mutex_lock(&secrets_mu);
	/* own_secrets may be swapped by a reload: take it under the lock. */
	want = sb->own_secrets != NULL ? sb->own_secrets : daemon;
	if (want == NULL) {
		pthread_mutex_unlock(&secrets_mu);
		return 0;
	}
	secrets_ref(want);
	set = sb->sset;
	if (set == NULL || set->vals != want) {
		/* First use, or the secrets were reloaded. */
		if (set != NULL)
			atomic_fetch_add(&set->refcnt, 1);
		pthread_mutex_unlock(&secrets_mu);
		old = set;
		set = secrets_set_new(want, old);
		secrets_set_unref(old);
		old = NULL;
		if (set == NULL) {
			secrets_unref(want);
			return -1;
		}
		pthread_mutex_lock(&secrets_mu);
		if (sb->sset != NULL && sb->sset->vals == want) {
			/* Another worker won the race: use its set. */
			secrets_set_unref(set);
			set = sb->sset;
		} else {
			old = sb->sset;
			sb->sset = set;
		}
	}
	atomic_fetch_add(&set->refcnt, 1);
	pthread_mutex_unlock(&secrets_mu);
	secrets_set_unref(old);
	secrets_unref(want);	/* the set holds its own reference */
	v->set = set;
	v->vals = set->vals;
	v->ph = (const char *const *)set->ph;
	v->scan = set->scan;
	return 0;
}

int
secrets_sandbox_reload(struct sandbox *sb, char *err, size_t errlen)
{
	struct secrets	*fresh, *prev;

	if (sb->cfg == NULL || sb->cfg->nsecrets == 0)
		return 0;
	if ((fresh = secrets_load(sb->cfg, false, err, errlen)) == NULL)
		return -1;
	pthread_mutex_lock(&secrets_mu);
	prev = sb->own_secrets;
	sb->own_secrets = fresh;
	pthread_mutex_unlock(&secrets_mu);
	/* A worker may still hold prev through its view: refcounted. */
	secrets_unref(prev);
	return 0;
}

const char *
secrets_name_of(const void *arg, uint32_t i)
{
	const struct secrets	*s = arg;

	return i < secrets_count(s) ? secrets_name(s, i) : NULL;
}

int
secrets_name_leak(struct sandbox *sb, struct secrets *daemon,
    const struct policy *p, const char *name, uint16_t port, char *who,
    size_t len)
{
	struct secrets_view	 v;
	struct secretscan_hit	 h[8];
	size_t			 i, n;
	int			 rc = 0;

	if (name == NULL)
		return 0;
	if (secrets_view(sb, daemon, &v) == -1)
		return -1;
	if (v.vals == NULL || v.scan == NULL) {
		secrets_view_done(&v);
		return 0;
	}
	n = secretscan_find(v.scan, (const uint8_t *)name, strlen(name), h,
	    sizeof(h) / sizeof(h[0]));
	for (i = 0; i < n && rc == 0; i++) {
		if (policy_secret_bound(p, h[i].secret, name, NULL, port))
			continue;
		snprintf(who, len, "%s", secrets_name(v.vals, h[i].secret));
		rc = 1;
	}
	secrets_view_done(&v);
	return rc;
}

void
secrets_audit_redact(struct sandbox *sb, struct secrets *daemon,
    struct secrets_view *v, struct audit_rec *r)
{
	if (sb == NULL) {
		memset(v, 0, sizeof(*v));
		return;
	}
	if (secrets_view(sb, daemon, v) == -1) {
		r->redact_fail = 1;
		return;
	}
	if (v->vals == NULL || v->scan == NULL)
		return;
	r->redact = v->scan;
	r->redact_name = secrets_name_of;
	r->redact_arg = v->vals;
}

void
secrets_view_done(struct secrets_view *v)
{
	secrets_set_unref(v->set);
	memset(v, 0, sizeof(*v));
}
