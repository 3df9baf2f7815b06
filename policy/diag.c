/*
 * diag.c - the list of errors and warnings a config load produces.
 *
 * The loader reports every problem it finds, so diagnostics accumulate in
 * a growing array owned by the caller.  Adding one never fails: if memory
 * runs out the problem is still counted, which keeps a failed load failed.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy_int.h"

#define DIAG_FIRST_CAP	8	/* initial room in the array */

static const char	diag_oom_msg[] =
    "out of memory while reporting a problem";

void
policy_diags_init(struct policy_diags *d)
{
	memset(d, 0, sizeof(*d));
}

void
policy_diags_clear(struct policy_diags *d)
{
	size_t	i;

	if (d == NULL)
		return;
	for (i = 0; i < d->n; i++)
		if (d->v[i].msg != diag_oom_msg)
			free(d->v[i].msg);
	free(d->v);
	free(d->file);
	memset(d, 0, sizeof(*d));
}

char *
policy_diag_format(const struct policy_diags *d, size_t i, char *buf,
    size_t len)
{
	const struct policy_diag	*g;
	const char			*file, *kind;

	if (len == 0)
		return buf;
	if (i >= d->n) {
		buf[0] = '\0';
		return buf;
	}
	g = &d->v[i];
	file = d->file != NULL ? d->file : "config";
	kind = g->level == POLICY_DIAG_WARNING ? "warning: " : "";
	if (g->line > 0 && g->column > 0)
		snprintf(buf, len, "%s:%d:%d: %s%s", file, g->line, g->column,
		    kind, g->msg);
	else if (g->line > 0)
		snprintf(buf, len, "%s:%d: %s%s", file, g->line, kind, g->msg);
	else
		snprintf(buf, len, "%s: %s%s", file, kind, g->msg);
	return buf;
}

void
diag_vadd(struct policy_diags *d, enum policy_diag_level level, int line,
    int column, const char *fmt, va_list ap)
{
	struct policy_diag	*g;
	char			*msg = NULL;

	if (level == POLICY_DIAG_ERROR)
		d->nerrors++;
	else
		d->nwarnings++;
	if (d->n == d->cap) {
		size_t	ncap = d->cap ? d->cap * 2 : DIAG_FIRST_CAP;

		g = reallocarray(d->v, ncap, sizeof(*g));
		if (g == NULL)
			return;	/* counted above; nothing to show */
		d->v = g;
		d->cap = ncap;
	}
	if (vasprintf(&msg, fmt, ap) == -1)
		msg = NULL;
	g = &d->v[d->n++];
	g->level = level;
	g->line = line;
	g->column = column;
	g->msg = msg != NULL ? msg : (char *)diag_oom_msg;
}

void
diag_add(struct policy_diags *d, enum policy_diag_level level, int line,
    int column, const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	diag_vadd(d, level, line, column, fmt, ap);
	va_end(ap);
}

void
diag_truncate(struct policy_diags *d, size_t n, size_t nerrors,
    size_t nwarnings)
{
	size_t	i;

	for (i = n; i < d->n; i++)
		if (d->v[i].msg != diag_oom_msg)
			free(d->v[i].msg);
	if (n < d->n)
		d->n = n;
	d->nerrors = nerrors;
	d->nwarnings = nwarnings;
}
