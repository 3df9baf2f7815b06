/*
 * refusals.c - the lines `moat run` and `moat attach` print about their
 * sandbox's refusals (refusals.h).
 *
 * What it is: a formatter of moatd's audit records, a rate limit, and the
 * counts of the summary.  The records come from moatd, which we do not
 * trust either: every field is checked for its type, and every string
 * from it is escaped before it reaches the terminal.
 *
 * What it is not: a second audit log.  A line says what, why and where
 * to look; the audit log (`--audit FILE`, moatd's) has the rest.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "launcher/refusals.h"

#define REFUSALS_REASON_LEN	32	/* a reason code, bytes */
#define REFUSALS_SUMMARY_TOP	6	/* reasons named in the summary */

struct refusals_reason {
	char		name[REFUSALS_REASON_LEN];
	uint64_t	n;
};

/* Counts by reason: of the refusals, or of the would-denies. */
struct refusals_tally {
	uint64_t		count;
	struct refusals_reason	reasons[REFUSALS_REASONS_MAX];
	size_t			nreasons;
	uint64_t		other;		/* past REFUSALS_REASONS_MAX */
};

struct refusals {
	struct refusals_opts	o;		/* details: our copy */
	struct refusals_tally	deny;		/* refusals */
	struct refusals_tally	would;		/* would-denies (audit mode) */
	uint64_t		lost;		/* lines moatd dropped */
	/* The rate: lines shown in the window that began at wstart. */
	uint64_t		wstart;
	unsigned		shown;
	bool			window;
	uint64_t		more_deny, more_would, more_allow; /* not shown */
};

/* A line being built: always NUL-terminated, cut at its capacity. */
struct lb {
	char	*p;
	size_t	 len, cap;
};

/* The reasons `moat explain` explains: the policy's, not the network's. */
static const char *const refusals_policy_reasons[] = {
	"no-rule", "denied-by-rule", "port", "method", "path",
	"private-address", "metadata", "needs-inspection", "dns-denied",
	"secret-leak", "needs-tls", "method-override", "body-on-get",
	"secret-unsafe", "protocol", "sni-mismatch", NULL
};

static void
lb_add(struct lb *b, const char *s, size_t n)
{
	if (b->cap == 0)
		return;
	if (n > b->cap - 1 - b->len)
		n = b->cap - 1 - b->len;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void
lb_str(struct lb *b, const char *s)
{
	lb_add(b, s, strlen(s));
}

static void __attribute__((format(printf, 2, 3)))
lb_fmt(struct lb *b, const char *fmt, ...)
{
	char	tmp[128];
	va_list	ap;
	int	n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n > 0)
		lb_add(b, tmp, (size_t)n < sizeof(tmp) ? (size_t)n :
		    sizeof(tmp) - 1);
}

/*
 * s with every byte outside printable ASCII, and the backslash, as \xNN,
 * at most max columns: a longer text is cut (never inside an escape) and
 * ends in "..." when dots, else just cut.
 */
static void
lb_esc(struct lb *b, const char *s, size_t max, bool dots)
{
	static const char	hex[] = "0123456789abcdef";
	char			piece[4];
	size_t			i, n, cols = 0, total = 0, keep;

	for (i = 0; s[i] != '\0'; i++) {
		unsigned char c = (unsigned char)s[i];

		total += c < 0x20 || c >= 0x7f || c == '\\' ? 4 : 1;
	}
	keep = total <= max ? max : dots && max > 3 ? max - 3 : max;
	for (i = 0; s[i] != '\0'; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c < 0x20 || c >= 0x7f || c == '\\') {
			piece[0] = '\\';
			piece[1] = 'x';
			piece[2] = hex[c >> 4];
			piece[3] = hex[c & 0xf];
			n = 4;
		} else {
			piece[0] = (char)c;
			n = 1;
		}
		if (cols + n > keep)
			break;
		lb_add(b, piece, n);
		cols += n;
	}
	if (total > max && dots)
		lb_str(b, "...");
}

/*
 * s (escaped, at most max columns) as one shell word: as it is when it
 * holds only characters no shell treats specially, else in single quotes.
 */
static void
lb_word(struct lb *b, const char *s, size_t max)
{
	char		 tmp[REFUSALS_LINE_MAX];
	struct lb	 w = { tmp, 0, sizeof(tmp) };
	size_t		 i;
	bool		 plain = true;

	tmp[0] = '\0';
	lb_esc(&w, s, max, false);
	for (i = 0; i < w.len; i++)
		if (!((tmp[i] >= 'a' && tmp[i] <= 'z') ||
		    (tmp[i] >= 'A' && tmp[i] <= 'Z') ||
		    (tmp[i] >= '0' && tmp[i] <= '9') ||
		    strchr("_./:@%+=,-", tmp[i]) != NULL) ||
		    (i == 0 && tmp[i] == '-'))
			plain = false;
	if (plain && w.len > 0) {
		lb_add(b, tmp, w.len);
		return;
	}
	lb_str(b, "'");
	for (i = 0; i < w.len; i++) {
		if (tmp[i] == '\'')
			lb_str(b, "'\\''");
		else
			lb_add(b, tmp + i, 1);
	}
	lb_str(b, "'");
}

static const char *
rf_str(const json_t *rec, const char *key)
{
	return json_string_value(json_object_get(rec, key));
}

static long long
rf_int(const json_t *rec, const char *key)
{
	const json_t	*v = json_object_get(rec, key);

	return json_is_integer(v) ? (long long)json_integer_value(v) : -1;
}

/* The record's time ("ts", UTC) as the local HH:MM:SS; now if it has none. */
static void
rf_clock(const json_t *rec, char *out, size_t len)
{
	const char	*ts = rf_str(rec, "ts");
	struct tm	 tm;
	time_t		 t;

	memset(&tm, 0, sizeof(tm));
	if (ts != NULL && sscanf(ts, "%4d-%2d-%2dT%2d:%2d:%2d", &tm.tm_year,
	    &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
	    &tm.tm_sec) == 6 && tm.tm_year >= 1970 && tm.tm_mon >= 1 &&
	    tm.tm_mon <= 12) {
		tm.tm_year -= 1900;
		tm.tm_mon -= 1;
		t = timegm(&tm);
	} else
		t = time(NULL);
	if (localtime_r(&t, &tm) == NULL ||
	    strftime(out, len, "%H:%M:%S", &tm) == 0)
		snprintf(out, len, "--:--:--");
}

/* host, or [host] when it is an IPv6 address, and ":port" if port >= 0. */
static void
rf_hostport(char *out, size_t len, const char *host, long long port)
{
	bool	v6 = strchr(host, ':') != NULL && host[0] != '[';

	if (port >= 0)
		snprintf(out, len, "%s%s%s:%lld", v6 ? "[" : "", host,
		    v6 ? "]" : "", port);
	else
		snprintf(out, len, "%s%s%s", v6 ? "[" : "", host,
		    v6 ? "]" : "");
}

/*
 * A request's URL: scheme (https inside an inspected tunnel), host, the
 * port unless the scheme's own, the path as the client sent it (without
 * the query when noquery).
 */
static void
rf_url(const json_t *rec, char *out, size_t len, bool noquery)
{
	const char	*proto = rf_str(rec, "proto"), *host = rf_str(rec,
			    "host"), *path = rf_str(rec, "path");
	bool		 tls = proto != NULL && strcmp(proto, "https") == 0;
	long long	 port = rf_int(rec, "port");
	char		 hp[600];
	size_t		 n;

	if (port == (tls ? 443 : 80))
		port = -1;
	if (path == NULL)
		path = "";
	if (host == NULL)
		snprintf(out, len, "%s", path);
	else {
		rf_hostport(hp, sizeof(hp), host, port);
		snprintf(out, len, "%s://%s%s", tls ? "https" : "http", hp,
		    path);
	}
	if (noquery && (n = strcspn(out, "?#")) < strlen(out))
		out[n] = '\0';
}

static bool
rf_policy_reason(const char *reason)
{
	size_t	i;

	for (i = 0; reason != NULL && refusals_policy_reasons[i] != NULL; i++)
		if (strcmp(reason, refusals_policy_reasons[i]) == 0)
			return true;
	return false;
}

/*
 * A packet the sandbox's firewall dropped: "udp to 198.51.100.9:123",
 * "icmp to 198.51.100.9", or of a summary line "21 more packets".
 */
static void
rf_drop(const json_t *rec, struct lb *b)
{
	const char	*proto = rf_str(rec, "proto"), *ip = rf_str(rec, "ip");
	long long	 n = rf_int(rec, "refused");
	char		 hp[600];

	if (n > 0) {
		lb_fmt(b, "%lld more packet%s", n, n == 1 ? "" : "s");
		return;
	}
	lb_esc(b, proto != NULL ? proto : "packet", 16, true);
	if (ip != NULL) {
		rf_hostport(hp, sizeof(hp), ip, rf_int(rec, "port"));
		lb_str(b, " to ");
		lb_esc(b, hp, REFUSALS_WHAT_MAX, true);
	}
}

/*
 * The kind of a drop line, when the protocol does not say it already
 * ("loopback-port", "interface", "forward", "egress"), into kind; else
 * "".  The kind is detail's first word, before ':'.
 */
static void
rf_drop_kind(const json_t *rec, char *kind, size_t len)
{
	static const char *const	plain[] = { "udp", "tcp", "icmp",
	    "other-proto", NULL };
	const char			*d = rf_str(rec, "detail");
	size_t				 n, i;

	kind[0] = '\0';
	if (d == NULL || rf_int(rec, "refused") > 0 ||
	    (n = strcspn(d, ":")) == strlen(d) || n >= len)
		return;
	memcpy(kind, d, n);
	kind[n] = '\0';
	for (i = 0; plain[i] != NULL; i++)
		if (strcmp(kind, plain[i]) == 0)
			kind[0] = '\0';
}

/* A quota's window used up: which quota and its limit. */
static void
rf_quota(const json_t *rec, struct lb *b)
{
	const char	*kind = rf_str(rec, "quota"), *name;
	bool		 secret = kind != NULL && strcmp(kind, "secret") == 0;

	lb_str(b, "quota used up: ");
	if (secret) {
		name = rf_str(rec, "secret");
		lb_str(b, "secret ");
		lb_esc(b, name != NULL ? name : "?", 64, true);
		lb_str(b, ", ");
	} else if (kind != NULL && strcmp(kind, "sandbox") == 0)
		lb_str(b, "the sandbox's, ");
	lb_fmt(b, "%lld %s per %lld s", rf_int(rec, "limit"),
	    secret ? "requests" : "bytes up", rf_int(rec, "per_seconds"));
}

/*
 * What the record was about, and (into target, "" for none) what
 * `moat explain` takes to judge it again.  false: not a line to show.
 */
static bool
rf_what(const json_t *rec, struct lb *b, char *target, size_t tlen,
    const char **method)
{
	const char	*event = rf_str(rec, "event"), *proto = rf_str(rec,
			    "proto"), *host = rf_str(rec, "host"), *m;
	char		 url[2048], hp[600];
	long long	 port = rf_int(rec, "port");

	target[0] = '\0';
	*method = NULL;
	if (event == NULL)
		return false;
	if (strcmp(event, "request") == 0) {
		m = rf_str(rec, "method");
		lb_esc(b, m != NULL ? m : "?", 16, true);
		lb_str(b, " ");
		rf_url(rec, url, sizeof(url), false);
		lb_esc(b, url, REFUSALS_WHAT_MAX, true);
		if (host != NULL) {
			rf_url(rec, target, tlen, true);
			if (m != NULL && strcmp(m, "GET") != 0)
				*method = m;
		}
	} else if (strcmp(event, "open") == 0) {
		lb_str(b, proto == NULL ? "connection" :
		    strcmp(proto, "connect") == 0 ? "CONNECT" :
		    strcmp(proto, "socks5") == 0 ? "SOCKS5" :
		    strcmp(proto, "transparent") == 0 ? "TCP" : "connection");
		if (host != NULL) {
			rf_hostport(hp, sizeof(hp), host, port);
			lb_str(b, " ");
			lb_esc(b, hp, REFUSALS_WHAT_MAX, true);
			if (port > 0)
				snprintf(target, tlen, "%s", hp);
		}
	} else if (strcmp(event, "dns") == 0) {
		lb_str(b, "DNS ");
		lb_esc(b, host != NULL ? host : "?", REFUSALS_WHAT_MAX, true);
		if ((m = rf_str(rec, "qtype")) != NULL) {
			lb_str(b, " ");
			lb_esc(b, m, 16, true);
		}
		/* No rule allows the name on any port: 443 stands for all. */
		if (host != NULL)
			snprintf(target, tlen, "%s:443", host);
	} else if (strcmp(event, "connection") == 0) {
		lb_fmt(b, "%lld connection%s", rf_int(rec, "refused"),
		    rf_int(rec, "refused") == 1 ? "" : "s");
	} else if (strcmp(event, "drop") == 0) {
		rf_drop(rec, b);
	} else if (strcmp(event, "quota") == 0) {
		rf_quota(rec, b);
	} else if (strcmp(event, "sandbox") == 0) {
		/* Registered, unregistered: no decision about traffic. */
		if (strcmp(rf_str(rec, "verdict") ? rf_str(rec, "verdict") :
		    "", "deny") != 0)
			return false;
		lb_str(b, "admin request");
	} else if (strcmp(event, "close") == 0)
		return false;	/* its open had the line */
	else
		lb_esc(b, event, 16, true);
	return true;
}

/* The columns of s's first n bytes, escaped as lb_esc() does. */
static size_t
rf_width(const char *s, size_t n)
{
	size_t	i, cols = 0;

	for (i = 0; i < n && s[i] != '\0'; i++) {
		unsigned char c = (unsigned char)s[i];

		cols += c < 0x20 || c >= 0x7f || c == '\\' ? 4 : 1;
	}
	return cols;
}

/*
 * How much of the hint's target to print when the line is at col: what
 * keeps the line within REFUSALS_COLUMNS, but never less than what judges
 * the same (a URL's scheme, host and port; all of its path, up to
 * REFUSALS_TARGET_MAX, when its path or method was refused).
 */
static size_t
rf_target_room(const char *target, const char *reason, size_t col)
{
	const char	*p, *q;
	size_t		 room, least = strlen(target);

	if ((p = strstr(target, "://")) != NULL &&
	    (q = strchr(p + 3, '/')) != NULL && strcmp(reason, "path") != 0 &&
	    strcmp(reason, "method") != 0)
		least = (size_t)(q - target) + 1;
	least = rf_width(target, least);
	room = col < REFUSALS_COLUMNS ? REFUSALS_COLUMNS - col : 0;
	if (room < least)
		room = least;
	return room < REFUSALS_TARGET_MAX ? room : REFUSALS_TARGET_MAX;
}

size_t
refusals_format(const json_t *rec, const struct refusals_opts *o, char *buf,
    size_t len)
{
	struct lb	 b = { buf, 0, len };
	const char	*verdict, *reason, *rule, *detail, *method, *event;
	char		 clock[16], target[2048], kind[32];
	bool		 deny, drop, would;

	if (len == 0)
		return 0;
	buf[0] = '\0';
	if (!json_is_object(rec) ||
	    (verdict = rf_str(rec, "verdict")) == NULL)
		return 0;
	deny = strcmp(verdict, "deny") == 0;
	/* Audit mode: allowed, but the policy would refuse it. */
	would = !deny && rf_str(rec, "would_deny") != NULL;
	if (!deny && !would && !o->all)
		return 0;
	reason = would ? rf_str(rec, "would_deny") : rf_str(rec, "reason");
	rule = rf_str(rec, "rule");
	event = rf_str(rec, "event");
	drop = deny && event != NULL && strcmp(event, "drop") == 0;
	rf_clock(rec, clock, sizeof(clock));
	lb_str(&b, "moat: ");
	lb_str(&b, clock);
	lb_str(&b, drop ? " dropped " : event != NULL &&
	    strcmp(event, "quota") == 0 ? " " : deny ? " denied " : would ?
	    " would refuse " : " allowed ");
	if (!rf_what(rec, &b, target, sizeof(target), &method))
		return 0;
	lb_str(&b, would ? " (audit-only: " : " (");
	if (deny || would || reason == NULL || strcmp(reason, "allowed") != 0) {
		lb_esc(&b, reason != NULL ? reason : "?", 32, true);
		/* A DNS refusal names the policy's reason in detail. */
		detail = rf_str(rec, "detail");
		if (detail != NULL && strcmp(rf_str(rec, "event"), "dns") ==
		    0 && strcspn(detail, " ") == strlen(detail)) {
			lb_str(&b, ": ");
			lb_esc(&b, detail, 32, true);
		}
		if (drop && (rf_drop_kind(rec, kind, sizeof(kind)),
		    kind[0] != '\0')) {
			lb_str(&b, ": ");
			lb_esc(&b, kind, 32, true);
		}
		if (rule != NULL)
			lb_str(&b, ", ");
	}
	if (rule != NULL) {
		lb_str(&b, "rule ");
		lb_esc(&b, rule, 32, true);
	}
	lb_str(&b, ")");
	if ((deny || would) && o->hint && target[0] != '\0' &&
	    rf_policy_reason(reason)) {
		lb_str(&b, " -> moat explain ");
		if (o->config != NULL) {
			lb_str(&b, "-c ");
			lb_word(&b, o->config, REFUSALS_TARGET_MAX);
			lb_str(&b, " ");
		}
		if (method != NULL) {
			lb_str(&b, "-m ");
			lb_word(&b, method, 16);
			lb_str(&b, " ");
		}
		lb_word(&b, target, rf_target_room(target, reason, b.len));
	}
	return b.len;
}

struct refusals *
refusals_new(const struct refusals_opts *o)
{
	struct refusals	*rf;

	if ((rf = calloc(1, sizeof(*rf))) == NULL)
		return NULL;
	rf->o = *o;
	if (o->details != NULL && (rf->o.details = strdup(o->details)) ==
	    NULL) {
		free(rf);
		return NULL;
	}
	return rf;
}

void
refusals_free(struct refusals *rf)
{
	if (rf == NULL)
		return;
	free((char *)rf->o.details);
	free(rf);
}

uint64_t
refusals_count(const struct refusals *rf)
{
	return rf->deny.count;
}

uint64_t
refusals_would_count(const struct refusals *rf)
{
	return rf->would.count;
}

/* Writes one line (text without its end) as the terminal wants it. */
static void
rf_write(struct refusals *rf, const char *text, size_t n)
{
	char	line[REFUSALS_LINE_MAX + 8];
	size_t	o = 0;
	int	t = rf->o.term != NULL ? rf->o.term(rf->o.term_arg) : 0;
	ssize_t	w;

	if (n > REFUSALS_LINE_MAX)
		n = REFUSALS_LINE_MAX;
	if (t & REFUSALS_TERM_MIDLINE) {
		if (t & REFUSALS_TERM_RAW)
			line[o++] = '\r';
		line[o++] = '\n';
	}
	memcpy(line + o, text, n);
	o += n;
	if (t & REFUSALS_TERM_RAW)
		line[o++] = '\r';
	line[o++] = '\n';
	/* One write: lines of other processes on stderr stay whole. */
	do
		w = write(rf->o.fd, line, o);
	while (w == -1 && errno == EINTR);
}

/* How many refusals a record stands for: a "connection" or "drop" line's
 * "refused", else one. */
static uint64_t
rf_weight(const json_t *rec)
{
	const char	*event = rf_str(rec, "event");

	if (event != NULL && (strcmp(event, "connection") == 0 ||
	    strcmp(event, "drop") == 0) && rf_int(rec, "refused") > 0)
		return (uint64_t)rf_int(rec, "refused");
	return 1;
}

/* One refusal (key "reason") or would-deny (key "would_deny"). */
static void
rf_count(struct refusals_tally *t, const json_t *rec, const char *key)
{
	const char	*reason = rf_str(rec, key);
	uint64_t	 n = rf_weight(rec);
	size_t		 i;

	t->count += n;
	if (reason == NULL || strlen(reason) >= REFUSALS_REASON_LEN)
		reason = "?";
	for (i = 0; i < t->nreasons; i++)
		if (strcmp(t->reasons[i].name, reason) == 0)
			break;
	if (i == t->nreasons) {
		if (i == REFUSALS_REASONS_MAX) {
			t->other += n;
			return;
		}
		snprintf(t->reasons[i].name, sizeof(t->reasons[i].name),
		    "%s", reason);
		t->nreasons++;
	}
	t->reasons[i].n += n;
}

/* The "N more ... not shown" line; a new window starts at now_ms. */
static void
rf_more(struct refusals *rf, uint64_t now_ms)
{
	char		 text[REFUSALS_LINE_MAX];
	struct lb	 b = { text, 0, sizeof(text) };

	rf->window = false;
	if (rf->more_deny == 0 && rf->more_would == 0 && rf->more_allow == 0)
		return;
	text[0] = '\0';
	lb_str(&b, "moat: ");
	if (rf->more_deny > 0)
		lb_fmt(&b, "%llu more refusal%s", (unsigned long long)
		    rf->more_deny, rf->more_deny == 1 ? "" : "s");
	if (rf->more_would > 0)
		lb_fmt(&b, "%s%llu more would-den%s (audit-only)",
		    rf->more_deny > 0 ? (rf->more_allow > 0 ? ", " : " and ") :
		    "", (unsigned long long)rf->more_would,
		    rf->more_would == 1 ? "y" : "ies");
	if (rf->more_allow > 0)
		lb_fmt(&b, "%s%llu %sallowed", rf->more_deny > 0 ||
		    rf->more_would > 0 ? " and " : "",
		    (unsigned long long)rf->more_allow,
		    rf->more_deny > 0 || rf->more_would > 0 ? "" : "more ");
	lb_str(&b, " not shown");
	rf_write(rf, text, b.len);
	rf->more_deny = rf->more_would = rf->more_allow = 0;
	/* The next window starts now: at most one such line a second. */
	rf->window = true;
	rf->wstart = now_ms;
	rf->shown = 0;
}

void
refusals_tick(struct refusals *rf, uint64_t now_ms)
{
	if (rf->window && now_ms - rf->wstart >= REFUSALS_WINDOW_MS)
		rf_more(rf, now_ms);
}

int
refusals_timeout(const struct refusals *rf, uint64_t now_ms)
{
	uint64_t	due;

	if (!rf->window || (rf->more_deny == 0 && rf->more_would == 0 &&
	    rf->more_allow == 0))
		return -1;
	due = rf->wstart + REFUSALS_WINDOW_MS;
	return due <= now_ms ? 0 : (int)(due - now_ms);
}

void
refusals_message(struct refusals *rf, json_t *msg, uint64_t now_ms)
{
	const json_t	*rec = json_object_get(msg, "audit");
	const json_t	*d = json_object_get(msg, "dropped");
	char		 text[REFUSALS_LINE_MAX];
	size_t		 n;
	bool		 deny, would;

	if (json_is_integer(d) && json_integer_value(d) > 0) {
		rf->lost += (uint64_t)json_integer_value(d);
		return;
	}
	if (!json_is_object(rec) || rf_str(rec, "verdict") == NULL)
		return;
	deny = strcmp(rf_str(rec, "verdict"), "deny") == 0;
	would = !deny && rf_str(rec, "would_deny") != NULL;
	/* A quota's line tells of a window, not of a refusal: the
	 * refusals under it have lines of their own. */
	if (deny && (rf_str(rec, "event") == NULL ||
	    strcmp(rf_str(rec, "event"), "quota") != 0))
		rf_count(&rf->deny, rec, "reason");
	else if (would)
		rf_count(&rf->would, rec, "would_deny");
	if ((n = refusals_format(rec, &rf->o, text, sizeof(text))) == 0)
		return;
	refusals_tick(rf, now_ms);
	if (!rf->window) {
		rf->window = true;
		rf->wstart = now_ms;
		rf->shown = 0;
	}
	if (rf->shown < REFUSALS_RATE) {
		rf->shown++;
		rf_write(rf, text, n);
	} else if (deny)
		rf->more_deny += rf_weight(rec);
	else if (would)
		rf->more_would++;
	else
		rf->more_allow++;
}

/* " (REASON N, REASON N, other N)": the most frequent reasons first. */
static void
rf_reasons(struct lb *b, const struct refusals_tally *t, const char *open)
{
	bool		 done[REFUSALS_REASONS_MAX];
	size_t		 i, k, best;

	memset(done, 0, sizeof(done));
	for (k = 0; k < t->nreasons && k < REFUSALS_SUMMARY_TOP; k++) {
		for (best = t->nreasons, i = 0; i < t->nreasons; i++)
			if (!done[i] && (best == t->nreasons ||
			    t->reasons[i].n > t->reasons[best].n))
				best = i;
		done[best] = true;
		lb_str(b, k == 0 ? open : ", ");
		lb_esc(b, t->reasons[best].name, REFUSALS_REASON_LEN, true);
		lb_fmt(b, " %llu", (unsigned long long)t->reasons[best].n);
	}
	if (k < t->nreasons || t->other > 0) {
		uint64_t rest = t->other;

		for (i = 0; i < t->nreasons; i++)
			if (!done[i])
				rest += t->reasons[i].n;
		lb_fmt(b, "%sother %llu", k > 0 ? ", " : open,
		    (unsigned long long)rest);
		k++;
	}
	if (k > 0)
		lb_str(b, ")");
}

size_t
refusals_summary(const struct refusals *rf, char *buf, size_t len)
{
	struct lb	 b = { buf, 0, len };

	if (len == 0)
		return 0;
	buf[0] = '\0';
	if (rf->deny.count == 0 && rf->would.count == 0 && rf->lost == 0)
		return 0;
	lb_fmt(&b, "moat: %llu refusal%s", (unsigned long long)
	    rf->deny.count, rf->deny.count == 1 ? "" : "s");
	rf_reasons(&b, &rf->deny, " (");
	if (rf->would.count > 0) {
		lb_fmt(&b, ", %llu would-den%s", (unsigned long long)
		    rf->would.count, rf->would.count == 1 ? "y" : "ies");
		rf_reasons(&b, &rf->would, " (audit-only: ");
		if (rf->would.nreasons == 0 && rf->would.other == 0)
			lb_str(&b, " (audit-only)");
	}
	if (rf->lost > 0)
		lb_fmt(&b, " and %llu line%s moatd dropped (read too slowly)",
		    (unsigned long long)rf->lost, rf->lost == 1 ? "" : "s");
	if (rf->o.details != NULL) {
		lb_str(&b, "; ");
		lb_esc(&b, rf->o.details, REFUSALS_LINE_MAX, true);
	}
	return b.len;
}

void
refusals_finish(struct refusals *rf)
{
	char	text[REFUSALS_LINE_MAX];
	size_t	n;

	/* Due or not: this is the last chance. */
	rf_more(rf, 0);
	if ((n = refusals_summary(rf, text, sizeof(text))) > 0)
		rf_write(rf, text, n);
}
