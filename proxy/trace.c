/*
 * trace.c - the traceparent validator, the request's trace fields for
 * its audit line, and the id of moatd's own replies (trace.h).
 *
 * What it is not: the audit line (audit.c writes and redacts it) or the
 * reply (http_reply.c).
 */
#include "config.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "proxy/http_parse.h"
#include "proxy/trace.h"

static bool	trace_hex(const char *v, size_t n, bool *zero);

/* n lowercase hex digits; *zero: all of them "0". */
static bool
trace_hex(const char *v, size_t n, bool *zero)
{
	size_t	i;

	*zero = true;
	for (i = 0; i < n; i++) {
		if (!((v[i] >= '0' && v[i] <= '9') ||
		    (v[i] >= 'a' && v[i] <= 'f')))
			return false;
		if (v[i] != '0')
			*zero = false;
	}
	return true;
}

size_t
trace_traceparent(const char *v, size_t len)
{
	bool	zero;

	if (len < TRACE_TRACEPARENT_LEN || v[2] != '-' || v[35] != '-' ||
	    v[52] != '-')
		return 0;
	if (!trace_hex(v, 2, &zero) || strncmp(v, "ff", 2) == 0)
		return 0;
	/* Version 00 has exactly these four parts; a later one may have
	 * more after a "-" (section 4.3: parse what is known). */
	if (len > TRACE_TRACEPARENT_LEN && (zero ||
	    v[TRACE_TRACEPARENT_LEN] != '-'))
		return 0;
	if (!trace_hex(v + 3, 32, &zero) || zero)
		return 0;
	if (!trace_hex(v + 36, 16, &zero) || zero)
		return 0;
	if (!trace_hex(v + 53, 2, &zero))
		return 0;
	return TRACE_TRACEPARENT_LEN;
}

/*
 * Copies v[0..len) into *o, or, longer than max, says how long it was
 * (no piece of it: a cut could keep part of a secret the audit's
 * redaction would no longer recognise).  Returns the copy.
 */
static const char *
trace_copy(char **o, const char *v, size_t len, size_t max)
{
	char	*s = *o;
	int	 n;

	if (len > max) {
		n = snprintf(s, TRACE_TOO_LONG_MAX, "[too long: %zu bytes]",
		    len);
		len = n > 0 && n < TRACE_TOO_LONG_MAX ? (size_t)n : 0;
	} else
		memcpy(s, v, len);
	s[len] = '\0';
	*o = s + len + 1;
	return s;
}

void
trace_fields(const struct http_header *hv, size_t nh, char *const *names,
    size_t nnames, struct trace_fields *out)
{
	char	*o = out->buf;
	size_t	 i, k, tp = 0, ntp = 0;

	out->traceparent = NULL;
	out->n = 0;
	for (i = 0; i < nh; i++)
		if (hv[i].name_len == LIT_LEN("traceparent") &&
		    strncasecmp(hv[i].name, "traceparent",
		    LIT_LEN("traceparent")) == 0 && ntp++ == 0)
			tp = i;
	if (ntp == 1 && trace_traceparent(hv[tp].value, hv[tp].value_len) > 0)
		out->traceparent = trace_copy(&o, hv[tp].value,
		    TRACE_TRACEPARENT_LEN, TRACE_TRACEPARENT_LEN);
	else if (ntp > 0)
		out->traceparent = TRACE_INVALID;
	for (k = 0; k < nnames && k < MOAT_REQUEST_IDS_MAX; k++) {
		for (i = 0; i < nh; i++)
			if (hv[i].name_len == strlen(names[k]) &&
			    strncasecmp(hv[i].name, names[k],
			    hv[i].name_len) == 0)
				break;
		if (i == nh)
			continue;
		out->names[out->n] = names[k];
		out->values[out->n++] = trace_copy(&o, hv[i].value,
		    hv[i].value_len, TRACE_REQUEST_ID_MAX);
	}
}

char *
trace_moat_id(char *buf, size_t len, uint64_t prefix, uint64_t conn,
    unsigned n)
{
	snprintf(buf, len, "%016llx-%llu-%u", (unsigned long long)prefix,
	    (unsigned long long)conn, n);
	return buf;
}
