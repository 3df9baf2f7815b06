/*
 * test_refusals.c - the lines moat run and moat attach print about their
 * sandbox's refusals (launcher/refusals.c): the line of each kind of
 * record, the `moat explain` hint and its quoting, escaping of what the
 * sandbox sent, the rate limit and its "N more" line, the summary.
 *
 * Lines are read back from a pipe.  TZ is UTC, so the clock in a line is
 * the record's own.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <CUnit/CUnit.h>
#include <jansson.h>

#include "launcher/refusals.h"
#include "tests/unit/unit.h"

#define TS	"\"ts\":\"2026-11-29T13:42:38.789Z\""

/* The line of one record (JSON text) with o; "" when none. */
static const char *
fmt(const char *json, const struct refusals_opts *o)
{
	static char	 buf[REFUSALS_LINE_MAX];
	json_error_t	 e;
	json_t		*rec;

	rec = json_loads(json, 0, &e);
	CU_ASSERT_PTR_NOT_NULL_FATAL(rec);
	if (refusals_format(rec, o, buf, sizeof(buf)) == 0)
		buf[0] = '\0';
	json_decref(rec);
	return buf;
}

static void
utc(void)
{
	setenv("TZ", "UTC", 1);
	tzset();
}

static void
test_request(void)
{
	struct refusals_opts	o = { .fd = -1, .hint = true,
				    .config = "conf.json" };

	utc();
	CU_ASSERT_STRING_EQUAL(fmt("{" TS ",\"event\":\"request\","
	    "\"proto\":\"http\",\"host\":\"example.com\",\"port\":80,"
	    "\"verdict\":\"deny\",\"reason\":\"method\",\"rule\":\"api\","
	    "\"method\":\"POST\",\"path\":\"/upload?x=1\"}", &o),
	    "moat: 13:42:38 denied POST http://example.com/upload?x=1 "
	    "(method, rule api) -> moat explain -c conf.json -m POST "
	    "http://example.com/upload");
	/* Inside an inspected tunnel, on another port; no rule, no -c. */
	o.config = NULL;
	CU_ASSERT_STRING_EQUAL(fmt("{" TS ",\"event\":\"request\","
	    "\"proto\":\"https\",\"host\":\"api.test\",\"port\":8443,"
	    "\"verdict\":\"deny\",\"reason\":\"no-rule\",\"rule\":null,"
	    "\"method\":\"GET\",\"path\":\"/\"}", &o),
	    "moat: 13:42:38 denied GET https://api.test:8443/ (no-rule) -> "
	    "moat explain https://api.test:8443/");
	/* Without the hint option: no hint. */
	o.hint = false;
	CU_ASSERT_STRING_EQUAL(fmt("{" TS ",\"event\":\"request\","
	    "\"proto\":\"http\",\"host\":\"a.test\",\"port\":80,"
	    "\"verdict\":\"deny\",\"reason\":\"no-rule\",\"rule\":null,"
	    "\"method\":\"GET\",\"path\":\"/\"}", &o),
	    "moat: 13:42:38 denied GET http://a.test/ (no-rule)");
}

static void
test_tunnel_dns(void)
{
	struct refusals_opts	o = { .fd = -1, .hint = true };

	utc();
	CU_ASSERT_STRING_EQUAL(fmt("{" TS ",\"event\":\"open\","
	    "\"proto\":\"connect\",\"host\":\"pastebin.com\",\"port\":443,"
	    "\"verdict\":\"deny\",\"reason\":\"denied-by-rule\","
	    "\"rule\":\"paste\"}", &o),
	    "moat: 13:42:38 denied CONNECT pastebin.com:443 (denied-by-rule, "
	    "rule paste) -> moat explain pastebin.com:443");
	/* An IPv6 address: bracketed, and quoted for the shell. */
	CU_ASSERT_STRING_EQUAL(fmt("{" TS ",\"event\":\"open\","
	    "\"proto\":\"transparent\",\"host\":\"2001:db8::1\","
	    "\"port\":22,\"verdict\":\"deny\",\"reason\":\"no-rule\"}", &o),
	    "moat: 13:42:38 denied TCP [2001:db8::1]:22 (no-rule) -> moat "
	    "explain '[2001:db8::1]:22'");
	/* Already bracketed: not twice. */
	CU_ASSERT_STRING_EQUAL(fmt("{" TS ",\"event\":\"open\","
	    "\"proto\":\"connect\",\"host\":\"[2001:db8::1]\","
	    "\"port\":22,\"verdict\":\"deny\",\"reason\":\"no-rule\"}", &o),
	    "moat: 13:42:38 denied CONNECT [2001:db8::1]:22 (no-rule) -> moat "
	    "explain '[2001:db8::1]:22'");
	CU_ASSERT_STRING_EQUAL(fmt("{" TS ",\"event\":\"open\","
	    "\"proto\":\"socks5\",\"host\":\"x.test\",\"port\":25,"
	    "\"verdict\":\"deny\",\"reason\":\"port\",\"rule\":\"x\"}", &o),
	    "moat: 13:42:38 denied SOCKS5 x.test:25 (port, rule x) -> moat "
	    "explain x.test:25");
	CU_ASSERT_STRING_EQUAL(fmt("{" TS ",\"event\":\"dns\","
	    "\"proto\":\"dns\",\"host\":\"pastebin.com\",\"qtype\":\"A\","
	    "\"verdict\":\"deny\",\"reason\":\"dns-denied\",\"rule\":null,"
	    "\"detail\":\"no-rule\"}", &o),
	    "moat: 13:42:38 denied DNS pastebin.com A (dns-denied: no-rule) "
	    "-> moat explain pastebin.com:443");
	/* Not the policy's doing: no hint; a limit line counts. */
	CU_ASSERT_STRING_EQUAL(fmt("{" TS ",\"event\":\"open\","
	    "\"proto\":\"connect\",\"host\":\"slow.test\",\"port\":443,"
	    "\"verdict\":\"deny\",\"reason\":\"timeout\",\"rule\":\"s\"}",
	    &o), "moat: 13:42:38 denied CONNECT slow.test:443 (timeout, "
	    "rule s)");
	CU_ASSERT_STRING_EQUAL(fmt("{" TS ",\"event\":\"connection\","
	    "\"proto\":\"http\",\"verdict\":\"deny\",\"reason\":\"limit\","
	    "\"rule\":null,\"refused\":17}", &o),
	    "moat: 13:42:38 denied 17 connections (limit)");
}

static void
test_allowed(void)
{
	struct refusals_opts	o = { .fd = -1, .hint = true };
	const char		*ok = "{" TS ",\"event\":\"request\","
				    "\"proto\":\"http\",\"host\":\"a.test\","
				    "\"port\":80,\"verdict\":\"allow\","
				    "\"reason\":\"allowed\",\"rule\":\"a\","
				    "\"method\":\"GET\",\"path\":\"/x\"}";

	utc();
	CU_ASSERT_STRING_EQUAL(fmt(ok, &o), "");
	o.all = true;
	CU_ASSERT_STRING_EQUAL(fmt(ok, &o),
	    "moat: 13:42:38 allowed GET http://a.test/x (rule a)");
	/* Allowed, then failed: the reason is said. */
	CU_ASSERT_STRING_EQUAL(fmt("{" TS ",\"event\":\"request\","
	    "\"proto\":\"http\",\"host\":\"a.test\",\"port\":80,"
	    "\"verdict\":\"allow\",\"reason\":\"upstream-unreachable\","
	    "\"rule\":\"a\",\"method\":\"GET\",\"path\":\"/\"}", &o),
	    "moat: 13:42:38 allowed GET http://a.test/ (upstream-unreachable, "
	    "rule a)");
	/* A tunnel's close and a registration are no decisions to show. */
	CU_ASSERT_STRING_EQUAL(fmt("{" TS ",\"event\":\"close\","
	    "\"proto\":\"connect\",\"host\":\"a.test\",\"port\":443,"
	    "\"verdict\":\"allow\",\"reason\":\"allowed\",\"rule\":\"a\"}",
	    &o), "");
	CU_ASSERT_STRING_EQUAL(fmt("{" TS ",\"event\":\"sandbox\","
	    "\"proto\":\"admin\",\"verdict\":\"allow\",\"reason\":\"allowed\","
	    "\"detail\":\"registered\"}", &o), "");
	/* Not a record. */
	CU_ASSERT_STRING_EQUAL(fmt("{\"event\":\"request\"}", &o), "");
	CU_ASSERT_STRING_EQUAL(fmt("[1]", &o), "");
}

static void
test_escape(void)
{
	struct refusals_opts	 o = { .fd = -1, .hint = true };
	const char		*l;
	size_t			 i;

	utc();
	/* A terminal escape and a newline in the name and the path. */
	l = fmt("{" TS ",\"event\":\"request\",\"proto\":\"http\","
	    "\"host\":\"a\\u001b[2Jb.test\",\"port\":80,\"verdict\":\"deny\","
	    "\"reason\":\"path\",\"method\":\"GET\","
	    "\"path\":\"/it's\\n\\u00e9\\\\\"}", &o);
	for (i = 0; l[i] != '\0'; i++)
		CU_ASSERT((unsigned char)l[i] >= 0x20 &&
		    (unsigned char)l[i] < 0x7f);
	CU_ASSERT_STRING_EQUAL(l, "moat: 13:42:38 denied GET "
	    "http://a\\x1b[2Jb.test/it's\\x0a\\xc3\\xa9\\x5c (path) -> "
	    "moat explain 'http://a\\x1b[2Jb.test/it'\\''s\\x0a\\xc3\\xa9\\x5c'");
	/* A long path is cut, with dots; the line stays short. */
	l = fmt("{" TS ",\"event\":\"request\",\"proto\":\"http\","
	    "\"host\":\"a.test\",\"port\":80,\"verdict\":\"deny\","
	    "\"reason\":\"path\",\"rule\":\"a\",\"method\":\"GET\","
	    "\"path\":\"/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}", &o);
	CU_ASSERT_PTR_NOT_NULL(strstr(l, "aaa... (path, rule a)"));
	/* A path refused: its hint has the path (as much as fits). */
	CU_ASSERT_PTR_NOT_NULL(strstr(l, "-> moat explain http://a.test/aaa"));
	CU_ASSERT(strlen(l) <= 6 + 8 + 8 + 4 + REFUSALS_WHAT_MAX + 15 + 17 +
	    REFUSALS_TARGET_MAX);
	/* Another reason: the hint needs the host alone, the line stays
	 * within REFUSALS_COLUMNS. */
	l = fmt("{" TS ",\"event\":\"request\",\"proto\":\"http\","
	    "\"host\":\"a.test\",\"port\":80,\"verdict\":\"deny\","
	    "\"reason\":\"no-rule\",\"method\":\"GET\","
	    "\"path\":\"/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}", &o);
	CU_ASSERT_PTR_NOT_NULL(strstr(l, "-> moat explain http://a.test/"));
	CU_ASSERT(strlen(l) <= REFUSALS_COLUMNS);
	/* A config path with a space is quoted. */
	o.config = "my conf.json";
	l = fmt("{" TS ",\"event\":\"open\",\"proto\":\"connect\","
	    "\"host\":\"b.test\",\"port\":443,\"verdict\":\"deny\","
	    "\"reason\":\"no-rule\"}", &o);
	CU_ASSERT_PTR_NOT_NULL(strstr(l, "-> moat explain -c 'my conf.json' "
	    "b.test:443"));
}

/* Everything written to the pipe so far. */
static char *
drain(int fd)
{
	static char	buf[65536];
	ssize_t		n;
	size_t		len = 0;

	while ((n = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)n;
	buf[len] = '\0';
	return buf;
}

static size_t
count(const char *s, const char *what)
{
	size_t	n = 0;

	while ((s = strstr(s, what)) != NULL) {
		n++;
		s += strlen(what);
	}
	return n;
}

static json_t *
msg(const char *reason)
{
	return json_pack("{s:{s:s, s:s, s:s, s:s, s:i, s:s, s:s, s:s, s:s}}",
	    "audit", "ts", "2026-11-29T13:42:38.789Z", "event", "request",
	    "proto", "http", "host", "a.test", "port", 80, "verdict", "deny",
	    "reason", reason, "method", "GET", "path", "/");
}

static void
test_rate_summary(void)
{
	struct refusals_opts	 o = { .hint = true,
				    .details = "see --audit FILE" };
	struct refusals		*rf;
	json_t			*m;
	char			*out, sum[REFUSALS_LINE_MAX];
	int			 p[2];
	uint64_t		 t = 100000;
	size_t			 i;

	CU_ASSERT_FATAL(pipe2(p, O_NONBLOCK) == 0);
	o.fd = p[1];
	rf = refusals_new(&o);
	CU_ASSERT_PTR_NOT_NULL_FATAL(rf);
	CU_ASSERT_EQUAL(refusals_timeout(rf, t), -1);
	CU_ASSERT_EQUAL(refusals_summary(rf, sum, sizeof(sum)), 0);
	/* 500 refusals in half a second: 10 lines, the rest counted. */
	for (i = 0; i < 500; i++) {
		m = msg(i % 25 == 0 ? "method" : "no-rule");
		refusals_message(rf, m, t + i);
		json_decref(m);
	}
	out = drain(p[0]);
	CU_ASSERT_EQUAL(count(out, "\n"), REFUSALS_RATE);
	CU_ASSERT_EQUAL(count(out, " denied GET http://a.test/ "),
	    REFUSALS_RATE);
	CU_ASSERT(refusals_timeout(rf, t + 500) > 0);
	CU_ASSERT(refusals_timeout(rf, t + 500) <= REFUSALS_WINDOW_MS);
	refusals_tick(rf, t + 600);
	CU_ASSERT_STRING_EQUAL(drain(p[0]), "");
	refusals_tick(rf, t + REFUSALS_WINDOW_MS);
	CU_ASSERT_STRING_EQUAL(drain(p[0]),
	    "moat: 490 more refusals not shown\n");
	CU_ASSERT_EQUAL(refusals_timeout(rf, t + REFUSALS_WINDOW_MS), -1);
	CU_ASSERT_EQUAL(refusals_count(rf), 500);
	/* Lines moatd dropped, and a limit line that stands for 30. */
	m = json_pack("{s:i}", "dropped", 12);
	refusals_message(rf, m, t + 2000);
	json_decref(m);
	m = json_pack("{s:{s:s, s:s, s:s, s:s, s:i}}", "audit", "event",
	    "connection", "proto", "http", "verdict", "deny", "reason",
	    "limit", "refused", 30);
	refusals_message(rf, m, t + 2000);
	json_decref(m);
	CU_ASSERT_EQUAL(refusals_count(rf), 530);
	out = drain(p[0]);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "denied 30 connections (limit)"));
	refusals_finish(rf);
	CU_ASSERT_STRING_EQUAL(drain(p[0]), "moat: 530 refusals (no-rule 480, "
	    "limit 30, method 20) and 12 lines moatd dropped (read too "
	    "slowly); see --audit FILE\n");
	refusals_free(rf);
	close(p[0]);
	close(p[1]);
}

/* A packet the sandbox's firewall dropped, and the line that counts more. */
static void
test_drop(void)
{
	struct refusals_opts	 o = { .fd = -1, .hint = true };
	struct refusals		*rf;
	json_t			*m;
	char			*out;
	int			 p[2];

	utc();
	CU_ASSERT_STRING_EQUAL(fmt("{" TS ",\"event\":\"drop\","
	    "\"proto\":\"udp\",\"client\":\"10.0.0.2:5000\","
	    "\"port\":53,\"ip\":\"8.8.8.8\",\"verdict\":\"deny\","
	    "\"reason\":\"dropped-packet\",\"rule\":null,"
	    "\"detail\":\"udp: only DNS leaves\"}", &o),
	    "moat: 13:42:38 dropped udp to 8.8.8.8:53 (dropped-packet)");
	CU_ASSERT_STRING_EQUAL(fmt("{" TS ",\"event\":\"drop\","
	    "\"proto\":\"icmpv6\",\"ip\":\"2001:db8::10\","
	    "\"verdict\":\"deny\",\"reason\":\"dropped-packet\","
	    "\"rule\":null,\"detail\":\"icmp: ICMPv6 type 128\"}", &o),
	    "moat: 13:42:38 dropped icmpv6 to [2001:db8::10] (dropped-packet)");
	/* A kind the protocol does not say: named. */
	CU_ASSERT_STRING_EQUAL(fmt("{" TS ",\"event\":\"drop\","
	    "\"proto\":\"tcp\",\"ip\":\"127.0.0.1\",\"port\":7777,"
	    "\"verdict\":\"deny\",\"reason\":\"dropped-packet\","
	    "\"rule\":null,\"detail\":\"loopback-port: nothing listens\"}",
	    &o), "moat: 13:42:38 dropped tcp to 127.0.0.1:7777 "
	    "(dropped-packet: loopback-port)");
	CU_ASSERT_STRING_EQUAL(fmt("{" TS ",\"event\":\"drop\","
	    "\"proto\":\"arp\",\"ip\":null,\"verdict\":\"deny\","
	    "\"reason\":\"dropped-packet\",\"rule\":null,"
	    "\"detail\":\"egress: a frame\"}", &o),
	    "moat: 13:42:38 dropped arp (dropped-packet: egress)");
	/* The sandbox chose none of it but the address: escaped anyway. */
	CU_ASSERT_STRING_EQUAL(fmt("{" TS ",\"event\":\"drop\","
	    "\"proto\":\"u\\u001bdp\",\"ip\":\"1.2.3.4\","
	    "\"verdict\":\"deny\",\"reason\":\"dropped-packet\","
	    "\"rule\":null}", &o),
	    "moat: 13:42:38 dropped u\\x1bdp to 1.2.3.4 (dropped-packet)");
	CU_ASSERT_STRING_EQUAL(fmt("{" TS ",\"event\":\"drop\","
	    "\"ip\":null,\"verdict\":\"deny\",\"reason\":"
	    "\"dropped-packet\",\"rule\":null,\"refused\":990,"
	    "\"detail\":\"990 more dropped packets (udp 990): ...\"}", &o),
	    "moat: 13:42:38 dropped 990 more packets (dropped-packet)");
	/* The summary counts what a line stands for. */
	CU_ASSERT_FATAL(pipe2(p, O_NONBLOCK) == 0);
	o.fd = p[1];
	o.details = NULL;
	rf = refusals_new(&o);
	CU_ASSERT_PTR_NOT_NULL_FATAL(rf);
	m = json_pack("{s:{s:s, s:s, s:s, s:s, s:s}}", "audit", "event",
	    "drop", "proto", "udp", "ip", "8.8.8.8", "verdict", "deny",
	    "reason", "dropped-packet");
	refusals_message(rf, m, 1);
	json_decref(m);
	m = json_pack("{s:{s:s, s:s, s:s, s:i}}", "audit", "event", "drop",
	    "verdict", "deny", "reason", "dropped-packet", "refused", 990);
	refusals_message(rf, m, 2);
	json_decref(m);
	CU_ASSERT_EQUAL(refusals_count(rf), 991);
	out = drain(p[0]);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, " dropped udp to 8.8.8.8 "
	    "(dropped-packet)\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, " dropped 990 more packets "
	    "(dropped-packet)\n"));
	CU_ASSERT_PTR_NULL(strstr(out, "moat explain"));
	refusals_finish(rf);
	CU_ASSERT_STRING_EQUAL(drain(p[0]), "moat: 991 refusals "
	    "(dropped-packet 991)\n");
	refusals_free(rf);
	close(p[0]);
	close(p[1]);
}

/* An allowed request that audit mode let through: a would-deny. */
static json_t *
would_msg(const char *reason)
{
	return json_pack("{s:{s:s, s:s, s:s, s:s, s:i, s:s, s:s, s:s, s:s, "
	    "s:s, s:s}}", "audit", "ts", "2026-11-29T13:42:38.789Z", "event",
	    "request", "proto", "http", "host", "w.test", "port", 80,
	    "verdict", "allow", "reason", "allowed", "would_deny", reason,
	    "rule", "r", "method", "GET", "path", "/");
}

/*
 * Audit mode: a would-deny is shown without -v, as "would refuse", with
 * its would-be reason and the hint; it is counted apart from the
 * refusals, in the rate's "more" line and in the summary.
 */
static void
test_would_deny(void)
{
	struct refusals_opts	 o = { .hint = true };
	struct refusals		*rf;
	json_t			*m;
	char			*out;
	int			 p[2];
	uint64_t		 t = 100000;
	size_t			 i;

	utc();
	CU_ASSERT_STRING_EQUAL(fmt("{" TS ",\"event\":\"request\","
	    "\"proto\":\"http\",\"host\":\"w.test\",\"port\":80,"
	    "\"verdict\":\"allow\",\"reason\":\"allowed\","
	    "\"would_deny\":\"method\",\"rule\":\"api\","
	    "\"method\":\"POST\",\"path\":\"/x\"}", &o),
	    "moat: 13:42:38 would refuse POST http://w.test/x (audit-only: "
	    "method, rule api) -> moat explain -m POST http://w.test/x");
	CU_ASSERT_STRING_EQUAL(fmt("{" TS ",\"event\":\"dns\","
	    "\"proto\":\"dns\",\"host\":\"x.test\",\"qtype\":\"A\","
	    "\"verdict\":\"allow\",\"reason\":\"allowed\","
	    "\"would_deny\":\"dns-denied\",\"rule\":null,"
	    "\"detail\":\"no-rule\"}", &o),
	    "moat: 13:42:38 would refuse DNS x.test A (audit-only: dns-denied: "
	    "no-rule) -> moat explain x.test:443");
	/* a plain allow stays quiet without -v */
	CU_ASSERT_STRING_EQUAL(fmt("{" TS ",\"event\":\"request\","
	    "\"proto\":\"http\",\"host\":\"w.test\",\"port\":80,"
	    "\"verdict\":\"allow\",\"reason\":\"allowed\",\"rule\":\"r\","
	    "\"method\":\"GET\",\"path\":\"/\"}", &o), "");

	CU_ASSERT_FATAL(pipe2(p, O_NONBLOCK) == 0);
	o.fd = p[1];
	rf = refusals_new(&o);
	CU_ASSERT_PTR_NOT_NULL_FATAL(rf);
	for (i = 0; i < 15; i++) {
		m = i < 3 ? msg("metadata") : would_msg(i % 4 == 0 ? "port" :
		    "no-rule");
		refusals_message(rf, m, t + i);
		json_decref(m);
	}
	out = drain(p[0]);
	CU_ASSERT_EQUAL(count(out, "\n"), REFUSALS_RATE);
	CU_ASSERT_EQUAL(count(out, " would refuse GET http://w.test/ "),
	    REFUSALS_RATE - 3);
	CU_ASSERT_EQUAL(refusals_count(rf), 3);
	CU_ASSERT_EQUAL(refusals_would_count(rf), 12);
	refusals_tick(rf, t + REFUSALS_WINDOW_MS);
	CU_ASSERT_STRING_EQUAL(drain(p[0]),
	    "moat: 5 more would-denies (audit-only) not shown\n");
	refusals_finish(rf);
	CU_ASSERT_STRING_EQUAL(drain(p[0]), "moat: 3 refusals (metadata 3), "
	    "12 would-denies (audit-only: no-rule 9, port 3)\n");
	refusals_free(rf);
	close(p[0]);
	close(p[1]);
}

/* A quota's window used up: its line, and no refusal counted for it. */
static void
test_quota(void)
{
	struct refusals_opts	 o = { .fd = -1, .hint = true };
	struct refusals		*rf;
	json_t			*m;
	int			 p[2];

	utc();
	CU_ASSERT_STRING_EQUAL(fmt("{" TS ",\"event\":\"quota\",\"id\":0,"
	    "\"sandbox\":\"s\",\"ip\":null,\"verdict\":\"deny\","
	    "\"reason\":\"quota-bytes\",\"rule\":\"up\",\"quota\":"
	    "\"rule\",\"limit\":50000,\"per_seconds\":600,\"used\":65655}",
	    &o), "moat: 13:42:38 quota used up: 50000 bytes up per 600 s "
	    "(quota-bytes, rule up)");
	CU_ASSERT_STRING_EQUAL(fmt("{" TS ",\"event\":\"quota\","
	    "\"verdict\":\"deny\",\"reason\":\"quota-secret\",\"rule\":null,"
	    "\"quota\":\"secret\",\"secret\":\"K\",\"limit\":3,"
	    "\"per_seconds\":60,\"used\":3}", &o),
	    "moat: 13:42:38 quota used up: secret K, 3 requests per 60 s "
	    "(quota-secret)");
	CU_ASSERT_STRING_EQUAL(fmt("{" TS ",\"event\":\"quota\","
	    "\"verdict\":\"deny\",\"reason\":\"quota-bytes\",\"rule\":null,"
	    "\"quota\":\"sandbox\",\"limit\":300000,\"per_seconds\":600}",
	    &o), "moat: 13:42:38 quota used up: the sandbox's, 300000 bytes "
	    "up per 600 s (quota-bytes)");
	/* Shown, but the summary counts only the refusals. */
	CU_ASSERT_FATAL(pipe2(p, O_NONBLOCK) == 0);
	o.fd = p[1];
	rf = refusals_new(&o);
	CU_ASSERT_PTR_NOT_NULL_FATAL(rf);
	m = json_pack("{s:{s:s, s:s, s:s, s:s, s:s, s:i, s:i}}", "audit",
	    "event", "quota", "verdict", "deny", "reason", "quota-secret",
	    "quota", "secret", "secret", "K", "limit", 3, "per_seconds", 60);
	refusals_message(rf, m, 1);
	json_decref(m);
	CU_ASSERT_EQUAL(refusals_count(rf), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(drain(p[0]), " quota used up: secret "
	    "K, 3 requests per 60 s (quota-secret)\n"));
	refusals_free(rf);
	close(p[0]);
	close(p[1]);
}

/* The terminal of the test below: raw, and the workload mid-line once. */
static int	term_calls;

static int
term(void *arg)
{
	(void)arg;
	return REFUSALS_TERM_RAW | (term_calls++ == 0 ?
	    REFUSALS_TERM_MIDLINE : 0);
}

static void
test_terminal(void)
{
	struct refusals_opts	 o = { .term = term };
	struct refusals		*rf;
	json_t			*m;
	char			*out;
	int			 p[2];

	utc();
	CU_ASSERT_FATAL(pipe2(p, O_NONBLOCK) == 0);
	o.fd = p[1];
	term_calls = 0;
	rf = refusals_new(&o);
	CU_ASSERT_PTR_NOT_NULL_FATAL(rf);
	m = msg("no-rule");
	refusals_message(rf, m, 1);
	refusals_message(rf, m, 2);
	json_decref(m);
	out = drain(p[0]);
	/* A line of its own, even after a workload's half line; "\r\n" in
	 * a raw terminal. */
	CU_ASSERT_STRING_EQUAL(out, "\r\nmoat: 13:42:38 denied GET "
	    "http://a.test/ (no-rule)\r\nmoat: 13:42:38 denied GET "
	    "http://a.test/ (no-rule)\r\n");
	refusals_free(rf);
	close(p[0]);
	close(p[1]);
}

void
test_refusals_register(void)
{
	CU_pSuite s = CU_add_suite("refusals", NULL, NULL);

	CU_add_test(s, "a refused request: method, URL, reason, rule, hint",
	    test_request);
	CU_add_test(s, "tunnels, DNS, limits: their lines and hints",
	    test_tunnel_dns);
	CU_add_test(s, "allowed lines only with -v; closes never",
	    test_allowed);
	CU_add_test(s, "what the sandbox sent is escaped, cut and quoted",
	    test_escape);
	CU_add_test(s, "dropped packets and their count", test_drop);
	CU_add_test(s, "a quota used up: shown, not counted", test_quota);
	CU_add_test(s, "10 lines a second, one \"more\" line, the summary",
	    test_rate_summary);
	CU_add_test(s, "audit mode: would-denies shown and counted",
	    test_would_deny);
	CU_add_test(s, "a raw terminal, a workload's half line",
	    test_terminal);
}
