/*
 * statusfmt.c - `moat status`'s text (status.h): moatd's stats and list
 * answers, as a block about moatd and a table of sandboxes.
 */
#include "config.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "launcher/status.h"

#define STATUS_NAME_COL_MAX	40	/* widest SANDBOX column */
#define STATUS_TEXT_MAX		512	/* one escaped field */

static const char *status_esc(const char *s, char *buf, size_t len);
static json_t	*status_get(json_t *o, const char *a, const char *b);
static const char *status_num(json_t *o, const char *a, const char *b,
		    char *buf, size_t len);
static uint64_t	status_u64(json_t *o, const char *a, const char *b);
static void	status_head(FILE *f, json_t *st);
static void	status_row(FILE *f, json_t *sb, int w);
static void	status_detail(FILE *f, json_t *sb);

void
status_bytes(uint64_t n, char *buf, size_t len)
{
	static const char *const	 unit[] = { "KiB", "MiB", "GiB", "TiB",
					    "PiB" };
	double				 v = (double)n;
	size_t				 u = 0;

	if (n < 1024) {
		snprintf(buf, len, "%" PRIu64 " B", n);
		return;
	}
	v /= 1024;
	while (v >= 1024 && u + 1 < sizeof(unit) / sizeof(unit[0])) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, "%.1f %s", v, unit[u]);
}

void
status_age(uint64_t s, char *buf, size_t len)
{
	if (s < 60)
		snprintf(buf, len, "%" PRIu64 "s", s);
	else if (s < 3600)
		snprintf(buf, len, "%" PRIu64 "m%02" PRIu64 "s", s / 60, s % 60);
	else if (s < 86400)
		snprintf(buf, len, "%" PRIu64 "h%02" PRIu64 "m", s / 3600,
		    s % 3600 / 60);
	else
		snprintf(buf, len, "%" PRIu64 "d%02" PRIu64 "h", s / 86400,
		    s % 86400 / 3600);
}

/* s with control bytes as '?', cut to len; NULL as "-". */
static const char *
status_esc(const char *s, char *buf, size_t len)
{
	size_t	i;

	if (s == NULL)
		return "-";
	for (i = 0; s[i] != '\0' && i + 1 < len; i++)
		buf[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' :
		    s[i];
	buf[i] = '\0';
	return buf;
}

/* o[a] or o[a][b] (b NULL: o[a]); NULL if absent. */
static json_t *
status_get(json_t *o, const char *a, const char *b)
{
	json_t	*v = json_object_get(o, a);

	return b != NULL ? json_object_get(v, b) : v;
}

/* A non-negative integer field as text, or "-". */
static const char *
status_num(json_t *o, const char *a, const char *b, char *buf, size_t len)
{
	json_t	*v = status_get(o, a, b);

	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return "-";
	snprintf(buf, len, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
	return buf;
}

static uint64_t
status_u64(json_t *o, const char *a, const char *b)
{
	json_t	*v = status_get(o, a, b);

	return json_is_integer(v) && json_integer_value(v) > 0 ?
	    (uint64_t)json_integer_value(v) : 0;
}

static void
status_head(FILE *f, json_t *st)
{
	char	t[STATUS_TEXT_MAX], u[STATUS_TEXT_MAX], a[STATUS_FIELD_MAX],
		b[STATUS_FIELD_MAX], c[STATUS_FIELD_MAX];
	bool	ok = !json_is_false(status_get(st, "audit", "ok"));

	status_age(status_u64(st, "moatd", "uptime_s"), a, sizeof(a));
	fprintf(f, "moatd %s (pid %s), up %s, %s worker%s, config %s\n",
	    status_esc(json_string_value(status_get(st, "moatd", "version")),
	    t, sizeof(t)), status_num(st, "moatd", "pid", b, sizeof(b)), a,
	    status_num(st, "moatd", "workers", c, sizeof(c)),
	    status_u64(st, "moatd", "workers") == 1 ? "" : "s",
	    status_esc(json_string_value(status_get(st, "moatd", "config")),
	    u, sizeof(u)));
	fprintf(f, "connections: %s open (limit %s)\n",
	    status_num(st, "connections", "open", a, sizeof(a)),
	    status_num(st, "connections", "limit", b, sizeof(b)));
	fprintf(f, "sandboxes: %s registered, %s configured\n",
	    status_num(st, "sandboxes", "registered", a, sizeof(a)),
	    status_num(st, "sandboxes", "configured", b, sizeof(b)));
	fprintf(f, "admin: %s client%s, %s watch%s\n",
	    status_num(st, "admin", "clients", a, sizeof(a)),
	    status_u64(st, "admin", "clients") == 1 ? "" : "s",
	    status_num(st, "admin", "watches", b, sizeof(b)),
	    status_u64(st, "admin", "watches") == 1 ? "" : "es");
	status_bytes(status_u64(st, "audit", "queued_bytes"), a, sizeof(a));
	fprintf(f, "audit: %s%s queued, %s line%s dropped since start\n",
	    ok ? "" : "FAILING (lines wait or are lost; see moatd's log): ",
	    a, status_num(st, "audit", "dropped", b, sizeof(b)),
	    status_u64(st, "audit", "dropped") == 1 ? "" : "s");
	fprintf(f, "reloads: %s done, %s refused\n",
	    status_num(st, "reloads", "done", a, sizeof(a)),
	    status_num(st, "reloads", "refused", b, sizeof(b)));
}

static void
status_row(FILE *f, json_t *sb, int w)
{
	char	name[STATUS_TEXT_MAX], age[STATUS_FIELD_MAX],
		co[STATUS_FIELD_MAX], al[STATUS_FIELD_MAX],
		de[STATUS_FIELD_MAX], up[STATUS_FIELD_MAX],
		dn[STATUS_FIELD_MAX], kind[STATUS_FIELD_MAX];

	status_age(status_u64(sb, "age_s", NULL), age, sizeof(age));
	status_bytes(status_u64(sb, "bytes_up", NULL), up, sizeof(up));
	status_bytes(status_u64(sb, "bytes_down", NULL), dn, sizeof(dn));
	fprintf(f, "%-*s  %-10s  %6s  %5s  %7s  %6s  %10s  %10s\n", w,
	    status_esc(json_string_value(json_object_get(sb, "sandbox")),
	    name, sizeof(name)),
	    status_esc(json_string_value(json_object_get(sb, "kind")), kind,
	    sizeof(kind)), age,
	    status_num(sb, "connections", NULL, co, sizeof(co)),
	    status_num(sb, "allowed", NULL, al, sizeof(al)),
	    status_num(sb, "denied", NULL, de, sizeof(de)), up, dn);
}

/* A list of strings (or of {"proto", "address"}) on one line. */
static void
status_list(FILE *f, const char *label, json_t *arr)
{
	char	 a[STATUS_TEXT_MAX], b[STATUS_TEXT_MAX];
	json_t	*v;
	size_t	 i;

	if (json_array_size(arr) == 0)
		return;
	fprintf(f, "    %s:", label);
	json_array_foreach(arr, i, v) {
		if (json_is_string(v))
			fprintf(f, "%s %s", i > 0 ? "," : "",
			    status_esc(json_string_value(v), a, sizeof(a)));
		else
			fprintf(f, "%s %s %s", i > 0 ? "," : "",
			    status_esc(json_string_value(json_object_get(v,
			    "proto")), a, sizeof(a)),
			    status_esc(json_string_value(json_object_get(v,
			    "address")), b, sizeof(b)));
	}
	fputc('\n', f);
}

static void
status_detail(FILE *f, json_t *sb)
{
	char	pol[STATUS_FIELD_MAX], lim[STATUS_FIELD_MAX],
		ref[STATUS_FIELD_MAX], pid[STATUS_FIELD_MAX],
		drp[STATUS_FIELD_MAX], wd[STATUS_FIELD_MAX];

	fprintf(f, "    policy %s, limit %s connections (%s refused at it)",
	    status_esc(json_string_value(json_object_get(sb, "policy")), pol,
	    sizeof(pol)), status_num(sb, "limit", NULL, lim, sizeof(lim)),
	    status_num(sb, "refused_at_limit", NULL, ref, sizeof(ref)));
	if (json_is_integer(json_object_get(sb, "client_pid")))
		fprintf(f, ", registered by pid %s", status_num(sb,
		    "client_pid", NULL, pid, sizeof(pid)));
	if (status_u64(sb, "would_deny", NULL) > 0)
		fprintf(f, ", %s would-den%s (audit mode)", status_num(sb,
		    "would_deny", NULL, wd, sizeof(wd)),
		    status_u64(sb, "would_deny", NULL) == 1 ? "y" : "ies");
	if (status_u64(sb, "dropped_packets", NULL) > 0)
		fprintf(f, ", %s packet%s dropped", status_num(sb,
		    "dropped_packets", NULL, drp, sizeof(drp)),
		    status_u64(sb, "dropped_packets", NULL) == 1 ? "" : "s");
	fputc('\n', f);
	status_list(f, "listeners", json_object_get(sb, "listeners"));
	status_list(f, "secrets", json_object_get(sb, "secrets"));
}

int
status_print(FILE *f, json_t *stats, json_t *sandboxes)
{
	const char	*name;
	json_t		*sb;
	size_t		 i;
	int		 w = (int)strlen("SANDBOX");

	status_head(f, stats);
	json_array_foreach(sandboxes, i, sb) {
		name = json_string_value(json_object_get(sb, "sandbox"));
		if (name != NULL && (int)strlen(name) > w)
			w = (int)strlen(name);
	}
	if (w > STATUS_NAME_COL_MAX)
		w = STATUS_NAME_COL_MAX;
	if (json_array_size(sandboxes) == 0)
		fprintf(f, "\nno sandboxes\n");
	else
		fprintf(f, "\n%-*s  %-10s  %6s  %5s  %7s  %6s  %10s  %10s\n", w,
		    "SANDBOX", "KIND", "AGE", "CONNS", "ALLOWED", "DENIED",
		    "SENT", "RECEIVED");
	json_array_foreach(sandboxes, i, sb) {
		status_row(f, sb, w);
		status_detail(f, sb);
	}
	return fflush(f) == EOF || ferror(f) ? -1 : 0;
}
