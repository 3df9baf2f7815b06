/*
 * adminrep.c - the answers of the admin ops list and stats, as JSON
 * (adminrep.h).  The list is paged by name so that its answer never
 * outgrows an admin message (ADMIN_MSG_MAX): a platform with thousands of
 * sandboxes asks again with "after".
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "proxy/adminrep.h"

static json_int_t
adminrep_int(uint64_t v)
{
	return v > (uint64_t)INT64_MAX ? (json_int_t)INT64_MAX : (json_int_t)v;
}

static int
adminrep_cmp(const void *a, const void *b)
{
	const struct adminrep_sandbox	*x = a, *y = b;

	return strcmp(x->name, y->name);
}

/* Sets key to a new integer in o.  0, or -1 when out of memory. */
static int
adminrep_set_int(json_t *o, const char *key, uint64_t v)
{
	return json_object_set_new(o, key, json_integer(adminrep_int(v)));
}

static json_t *
adminrep_listeners(const struct adminrep_sandbox *s)
{
	json_t	*a;
	size_t	 i;

	if ((a = json_array()) == NULL)
		return NULL;
	for (i = 0; i < s->nls && i < ADMINREP_LISTENERS_MAX; i++)
		if (json_array_append_new(a, json_pack("{s:s, s:s}", "proto",
		    s->ls[i].proto, "address", s->ls[i].address)) == -1) {
			json_decref(a);
			return NULL;
		}
	return a;
}

static json_t *
adminrep_secrets(const struct adminrep_sandbox *s)
{
	json_t	*a;
	size_t	 i;

	if ((a = json_array()) == NULL)
		return NULL;
	for (i = 0; i < s->nsecrets && i < ADMINREP_SECRETS_MAX; i++)
		if (json_array_append_new(a, json_string(s->secrets[i])) ==
		    -1) {
			json_decref(a);
			return NULL;
		}
	return a;
}

json_t *
adminrep_sandbox(const struct adminrep_sandbox *s)
{
	const struct sandbox_counters	*c = &s->c;
	json_t				*o;

	o = json_pack("{s:s, s:s, s:s, s:o*, s:o*}", "sandbox", s->name,
	    "kind", s->registered ? "registered" : "configured", "policy",
	    s->own_policy ? "own" : "moatd", "listeners",
	    adminrep_listeners(s), "secrets", adminrep_secrets(s));
	if (o == NULL || json_object_size(o) != 5 ||
	    (s->client_pid > 0 && adminrep_set_int(o, "client_pid",
	    (uint64_t)s->client_pid) == -1) ||
	    adminrep_set_int(o, "age_s", c->age_ms / 1000) == -1 ||
	    adminrep_set_int(o, "limit", s->limit) == -1 ||
	    adminrep_set_int(o, "connections", c->conns_open) == -1 ||
	    adminrep_set_int(o, "allowed", c->allowed) == -1 ||
	    adminrep_set_int(o, "denied", c->denied) == -1 ||
	    adminrep_set_int(o, "refused_at_limit", c->limit_refused) == -1 ||
	    adminrep_set_int(o, "bytes_up", c->bytes_up) == -1 ||
	    adminrep_set_int(o, "bytes_down", c->bytes_down) == -1 ||
	    adminrep_set_int(o, "would_deny", c->would_deny) == -1 ||
	    adminrep_set_int(o, "dropped_packets", c->dropped) == -1) {
		json_decref(o);
		return NULL;
	}
	return o;
}

json_t *
adminrep_list(struct adminrep_sandbox *sbs, size_t n, const char *after,
    size_t budget)
{
	json_t	*ans, *arr, *o;
	size_t	 i, used, len;

	if (n > 0)
		qsort(sbs, n, sizeof(*sbs), adminrep_cmp);
	for (i = 0; after != NULL && i < n && strcmp(sbs[i].name, after) <= 0;
	    i++)
		;
	if ((ans = json_pack("{s:b, s:[]}", "ok", 1, "sandboxes")) == NULL)
		return NULL;
	arr = json_object_get(ans, "sandboxes");
	/* {"ok":true,"sandboxes":[],"more":N}: room for the frame. */
	used = 64;
	for (; i < n; i++) {
		if ((o = adminrep_sandbox(&sbs[i])) == NULL)
			goto fail;
		len = json_dumpb(o, NULL, 0, JSON_COMPACT) + 1;
		if (json_array_size(arr) > 0 && used + len > budget) {
			json_decref(o);
			break;
		}
		used += len;
		if (json_array_append_new(arr, o) == -1)
			goto fail;
	}
	if (i < n && adminrep_set_int(ans, "more", n - i) == -1)
		goto fail;
	return ans;
 fail:
	json_decref(ans);
	return NULL;
}

json_t *
adminrep_stats(const struct adminrep_stats *st)
{
	json_t	*ans;

	ans = json_pack("{s:b, s:{s:s, s:I, s:s, s:I, s:I}, s:{s:I, s:I}, "
	    "s:{s:I, s:I}, s:{s:I, s:I}, s:{s:I, s:I, s:b}, s:{s:I, s:I}}",
	    "ok", 1,
	    "moatd", "version", st->version, "pid", (json_int_t)st->pid,
	    "config", st->config != NULL ? st->config : "",
	    "uptime_s", adminrep_int(st->uptime_ms / 1000),
	    "workers", adminrep_int(st->workers),
	    "sandboxes", "registered", adminrep_int(st->registered),
	    "configured", adminrep_int(st->configured),
	    "admin", "clients", adminrep_int(st->admin_clients),
	    "watches", adminrep_int(st->watches),
	    "connections", "open", adminrep_int(st->conns_open),
	    "limit", adminrep_int(st->conns_limit),
	    "audit", "queued_bytes", adminrep_int(st->audit_queued_bytes),
	    "dropped", adminrep_int(st->audit_dropped), "ok", st->audit_ok,
	    "reloads", "done", adminrep_int(st->reloads),
	    "refused", adminrep_int(st->reloads_refused));
	return ans;
}
