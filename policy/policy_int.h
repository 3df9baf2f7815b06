/*
 * policy_int.h - private structures and helpers of the policy library.
 *
 * Nothing here is visible to moatd or the CLI: they use policy.h.  Each
 * section names the file that implements it; every external symbol carries
 * the prefix of its file (diag_, addr_, host_, path_, trie_, domain_,
 * deny_, jsonpos_, policy_, config_).
 */
#ifndef MOAT_POLICY_INT_H
#define MOAT_POLICY_INT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/policy.h"

#define POLICY_NONE	UINT32_MAX	/* "no index" in every uint32 link */

/*
 * For a large variable on a hot path that is written before it is read:
 * exempt from -ftrivial-auto-var-init=zero (configure's hardening), which
 * would clear it on every call.  proxy/util.h has the same for moatd.
 */
#if defined(__has_attribute)
#if __has_attribute(uninitialized)
#define POLICY_NOINIT	__attribute__((uninitialized))
#endif
#endif
#ifndef POLICY_NOINIT
#define POLICY_NOINIT
#endif

/* ------------------------------------------------------------------ */
/* diag.c                                                               */
/* ------------------------------------------------------------------ */

/*
 * Appends a diagnostic.  line/column 0 mean unknown.  If memory runs out
 * the diagnostic is counted (so an error still fails the load) and an
 * "out of memory" message replaces it where possible.  Never fails.
 */
void	diag_add(struct policy_diags *d, enum policy_diag_level level,
	    int line, int column, const char *fmt, ...)
	    __attribute__((format(printf, 5, 6)));
void	diag_vadd(struct policy_diags *d, enum policy_diag_level level,
	    int line, int column, const char *fmt, va_list ap)
	    __attribute__((format(printf, 5, 0)));
/*
 * Drops the diagnostics from index n on and sets the counts back (to
 * what they were when there were n): what a load reported before it
 * found that its text is not JSON after all.
 */
void	diag_truncate(struct policy_diags *d, size_t n, size_t nerrors,
	    size_t nwarnings);

/* ------------------------------------------------------------------ */
/* addr.c: addresses and CIDR prefixes                                 */
/* ------------------------------------------------------------------ */

#define ADDR_V4_BITS	32
#define ADDR_V6_BITS	128
#define ADDR_TEXT_MAX	64	/* "[v6]/128" with room to spare */

/* A prefix: addr with every bit past plen zero. */
struct addr_cidr {
	struct policy_addr	addr;
	unsigned		plen;
};

/* Number of bits in an address of this family (32 or 128). */
unsigned	addr_bits(int family);
/* The address bytes in network order (4 or 16 of them). */
const uint8_t	*addr_bytes(const struct policy_addr *a);
/* Bit i (0 = most significant) of the bytes p. */
int		addr_bit(const uint8_t *p, unsigned i);
/* Zeroes every bit from plen on.  Returns true if one was set. */
bool		addr_mask(struct policy_addr *a, unsigned plen);
/* True if a (of either family) lies in c. */
bool		addr_in_cidr(const struct policy_addr *a,
		    const struct addr_cidr *c);
/* Formats "ADDR/PLEN" into buf.  Returns buf. */
char		*addr_cidr_format(const struct addr_cidr *c, char *buf,
		    size_t len);
/*
 * Parses "ADDR/PLEN" or a bare ADDR (= /32 or /128).  ADDR is a strict
 * IPv4 dotted quad or an IPv6 address (inet_pton, brackets allowed); an
 * IPv4-mapped prefix (::ffff:0:0/96 or longer) is refused.  Returns 0,
 * or -1 with *err set to a static message.  If the only problem is host
 * bits set past the prefix length, returns -2 and stores the fixed
 * network in *fixed (so the caller can suggest it).
 */
int		addr_cidr_parse(const char *in, size_t len,
		    struct addr_cidr *out, struct addr_cidr *fixed,
		    const char **err);
/*
 * Parses a strict IP literal: dotted quad, or IPv6 (bare or bracketed when
 * brackets is true).  Returns 0 or -1.
 */
int		addr_parse_strict(const char *in, size_t len, bool brackets,
		    struct policy_addr *out);

/* ------------------------------------------------------------------ */
/* host.c                                                               */
/* ------------------------------------------------------------------ */

/* True for an RFC 9110 tchar (token character). */
bool	host_is_tchar(unsigned char c);
/* Parses 1..65535 from exactly len decimal digits.  Returns 0 or -1. */
int	host_port_parse(const char *in, size_t len, uint16_t *port);

/* ------------------------------------------------------------------ */
/* path.c: request path normalisation and matching                     */
/* ------------------------------------------------------------------ */

#define PATH_STACK_BYTES	4096	/* longer paths are normalised on the heap */

/*
 * Normalises a path for matching: the query (from "?") is dropped,
 * percent-escapes of unreserved characters are decoded and the others
 * kept with upper-case hex, dot segments are removed and repeated "/"
 * collapsed.  out must have room for len + 1 bytes (the result is never
 * longer than the input); it is NUL-terminated and *outlen set.
 *
 * Returns 0, or -1 with *err set when the path cannot be normalised
 * safely: it does not start with "/", it has a bad or NUL escape, a
 * control byte, space, "\", "#", a byte >= 0x80, a dot segment spelt with
 * escapes ("%2e%2e"), or a dot segment hidden behind an escaped separator
 * ("..%2F").  With pattern true, a "?" is an error too (patterns never
 * carry a query).
 */
int	path_normalise(const char *in, size_t len, bool pattern, char *out,
	    size_t *outlen, const char **err);
/*
 * Matches a normalised path against a normalised pattern: a glob if the
 * pattern has "*" (any run of bytes, "/" included; anchored at both ends),
 * otherwise a prefix that ends at a segment boundary ("/v1" matches "/v1"
 * and "/v1/x", not "/v1beta"; "/v1/" matches "/v1/" and below).
 */
bool	path_match(const char *pattern, const char *path, size_t pathlen);

#define PATH_WIDE_ROUNDS	4	/* decodings that may change a path */

/*
 * The wide form of a path, which deny rules match: in (len bytes, a path
 * or pattern path_normalise() returned) is percent-decoded and its UTF-8
 * look-alikes of ASCII folded (path_fold_cp() in path.c lists them:
 * overlong forms, full-width forms, ...), again and again until nothing
 * changes (a path that still changes after PATH_WIDE_ROUNDS rounds is
 * refused); it is cut at a decoded
 * "?" or "#"; "\" and a decoded "%2F" separate segments; each segment
 * loses its ";parameters", then its trailing dots and spaces (unless it
 * is all dots), and is lower-cased; "." and ".." segments are removed and
 * "//" collapsed as path_normalise() does, and *hidden is set if there
 * was one (in a normalised path, a dot segment there is one the strict
 * form did not see: "..;", "%252e%252e", "%C0%AE.").  out has room for
 * len + 1 bytes; it is NUL-terminated and *outlen set.
 *
 * Returns 0, or -1 with *err set for a decoded NUL, a path still encoded
 * after the last round, or one that no longer starts with "/".
 */
int	path_wide(const char *in, size_t len, char *out, size_t *outlen,
	    bool *hidden, const char **err);

#define PATH_QUERY_NAME_MAX	256	/* longer parameter names are not read */

/*
 * True if the query q (n bytes, after the "?") has a parameter called
 * name (lower case): names are split at "&" and ";", end at "=", are
 * percent-decoded until stable (PATH_WIDE_ROUNDS at most; "+" is a space)
 * and compared in any case.
 */
bool	path_query_has(const char *q, size_t n, const char *name);

/* ------------------------------------------------------------------ */
/* inject_rules.c: the parts of injections that need no config context */
/* ------------------------------------------------------------------ */

/*
 * Frees what one injection owns (header, template parts and their text,
 * secret indexes) and zeroes it.  NULL is accepted.
 */
void	inject_clear(struct policy_inject *in);
/* Frees a template's parts and their text, and zeroes it. */
void	inject_template_clear(struct policy_template *t);
/*
 * If name (len bytes) may not be injected, returns a static reason ("a
 * hop-by-hop field", ...); else NULL.  Case-insensitive.
 */
const char	*inject_header_refused(const char *name, size_t len);
/* True if the rule injects secret (an index in moat_config.secrets[]). */
bool	inject_rule_has(const struct policy_rule *r, size_t secret);

/* ------------------------------------------------------------------ */
/* trie.c: path-compressed binary tries of prefixes                    */
/* ------------------------------------------------------------------ */

struct trie_node {
	uint8_t		key[16];	/* prefix, bits past plen zero */
	uint32_t	child[2];	/* POLICY_NONE if absent */
	uint32_t	value;		/* POLICY_NONE for a glue node */
	uint8_t		plen;
};

struct trie {
	struct trie_node	*v;
	size_t			 n, cap;
	uint32_t		 root;
	unsigned		 bits;	/* 32 or 128 */
};

#define TRIE_MATCH_MAX	129	/* most prefixes that can contain one key */

void	trie_init(struct trie *t, unsigned bits);
void	trie_free(struct trie *t);
/*
 * Finds or creates the node of exactly key/plen and returns a pointer to
 * its value (POLICY_NONE if new), valid until the next insert; NULL if
 * memory ran out.
 */
uint32_t	*trie_insert(struct trie *t, const uint8_t *key, unsigned plen);
/*
 * Stores in vals[]/plens[] the value of every node whose prefix contains
 * key/plen, shortest first.  Returns their number (<= TRIE_MATCH_MAX).
 * plens may be NULL.
 */
size_t	trie_match(const struct trie *t, const uint8_t *key, unsigned plen,
	    uint32_t *vals, unsigned *plens);
/* True if a node with a value contains key/plen or lies inside it. */
bool	trie_overlaps(const struct trie *t, const uint8_t *key, unsigned plen);

/* ------------------------------------------------------------------ */
/* domain.c: hash table keyed by canonical names                       */
/* ------------------------------------------------------------------ */

struct domain_slot {
	uint32_t	hash;
	uint32_t	key;	/* offset in the arena, POLICY_NONE if free */
	uint32_t	value;
};

struct domain_table {
	struct domain_slot	*slots;
	size_t			 cap;	/* a power of two, or 0 */
	size_t			 n;
	char			*arena;	/* NUL-terminated keys */
	size_t			 alen, acap;
};

void	domain_init(struct domain_table *t);
void	domain_free(struct domain_table *t);
/*
 * Finds or adds name (len bytes) and returns a pointer to its value
 * (POLICY_NONE if new), valid until the next insert; NULL if out of
 * memory.
 */
uint32_t	*domain_insert(struct domain_table *t, const char *name,
		    size_t len);
/* Returns the value stored for name, or POLICY_NONE. */
uint32_t	domain_lookup(const struct domain_table *t, const char *name,
		    size_t len);
/*
 * Room for n keys of keybytes in all (NULs included) before they come, so
 * that a table whose size is known is not grown by doubling.  0 or -1.
 */
int		domain_reserve(struct domain_table *t, size_t n,
		    size_t keybytes);

/* ------------------------------------------------------------------ */
/* deny.c: built-in deny sets                                          */
/* ------------------------------------------------------------------ */

/*
 * The tries of the built-in deny table, built on first use and shared by
 * every policy (refcounted, thread-safe): deny_get() takes a reference
 * (NULL if out of memory), deny_put() gives it back (NULL is ok).
 */
struct deny_sets;
const struct deny_sets	*deny_get(void);
void			 deny_put(const struct deny_sets *d);
/*
 * If name is a built-in denied name, returns its reason (metadata or
 * private-address); else POLICY_R_ALLOWED.
 */
enum policy_reason	deny_name(const char *name);
/*
 * If addr is denied by a built-in set that allow_private does not lift,
 * returns the reason (metadata or private-address); else POLICY_R_ALLOWED.
 * IPv6 forms that embed an IPv4 address (NAT64, 6to4, Teredo, mapped,
 * compatible) are denied as such; if allow_private lifts that range, the
 * embedded IPv4 address is checked as well.
 */
enum policy_reason	deny_addr(const struct policy *p,
			    const struct policy_addr *addr);
/*
 * For config warnings.  Returns true if c lies wholly inside a built-in
 * denied range; *lifted tells whether allow_private opens all of c, and
 * *reason the range's reason.
 */
bool	deny_cidr_inside(const struct policy *p, const struct addr_cidr *c,
	    bool *lifted, enum policy_reason *reason);
/* True if c overlaps some built-in denied range (contains or inside). */
bool	deny_cidr_overlaps(const struct policy *p, const struct addr_cidr *c);

/* ------------------------------------------------------------------ */
/* jsonpos.c: line:column of every key and value of a JSON text        */
/* ------------------------------------------------------------------ */

/*
 * One entry per JSON value, in document (pre-)order, which is also the
 * order in which jansson iterates a loaded tree (objects keep insertion
 * order).  The children of entry i start at i + 1; the next sibling of i
 * is at i + 1 + nsub.
 */
struct jsonpos_ent {
	uint32_t	kline, kcol;	/* of the member's key; 0 if not a member */
	uint32_t	vline, vcol;	/* of the value's first byte */
	uint32_t	nsub;		/* number of entries below this one */
};

struct jsonpos {
	struct jsonpos_ent	*v;
	size_t			 n, cap;
};

/*
 * Scans buf, which jansson has already accepted as JSON.  Returns 0, or -1
 * if memory ran out or the text is not the JSON it should be.  Free with
 * jsonpos_free().
 */
int	jsonpos_scan(const char *buf, size_t len, struct jsonpos *out);
/*
 * The same for the value in buf[from, to) (the whole of it), whose first
 * byte is on line `line`, which starts at offset linestart; the bytes
 * [skip_from, skip_to) (none if equal) are passed over as if absent (the
 * elements of an array read apart: jsonpos_find_array).  out is zeroed
 * before the first call; a table already allocated is reused.  Lines and
 * columns are those of buf.
 */
int	jsonpos_scan_at(const char *buf, size_t from, size_t to, uint32_t line,
	    size_t linestart, size_t skip_from, size_t skip_to,
	    struct jsonpos *out);
void	jsonpos_free(struct jsonpos *jp);
/*
 * The same for the elements of an array without its brackets (some of
 * them: buf[from, to) is elements and the commas between): entry 0 is
 * that array, at from.
 */
int	jsonpos_scan_elements(const char *buf, size_t from, size_t to,
	    uint32_t line, size_t linestart, struct jsonpos *out);
/* Moves *line and *linestart over the newlines of buf[from, to). */
void	jsonpos_lines(const char *buf, size_t from, size_t to, uint32_t *line,
	    size_t *linestart);

/*
 * An array of a JSON text, found before jansson reads the text: the bytes
 * between its brackets and how many elements they hold.
 */
struct jsonpos_span {
	size_t	from, to;	/* buf[from - 1] is '[', buf[to] is ']' */
	size_t	count;
};

/*
 * The deepest nesting the skeleton accepts: jansson's own limit
 * (JSON_PARSER_MAX_DEPTH, 2048; config.c checks it is not below this),
 * so an element jansson would refuse in place is never read apart.
 */
#define JSONPOS_SKEL_DEPTH_MAX	2048

/*
 * Finds the array at key path path[0..npath) from the object that
 * buf[from, to) is (keys compared byte for byte, as written), an object
 * at depth base + 1 of its text (the root: base 0), and checks its
 * skeleton: elements that are strings, bracket-matched containers or
 * runs of other bytes, nested no deeper than jansson reads them there,
 * separated by commas.  Returns 0 with *out filled (offsets of buf), or
 * -1 if the text has no such array or its skeleton is not that (the
 * caller then reads the text whole; jansson says what is wrong).
 * Validates nothing else.
 */
int	jsonpos_find_array(const char *buf, size_t from, size_t to,
	    unsigned base, const char *const *path, size_t npath,
	    struct jsonpos_span *out);
/*
 * The next element of a span found by jsonpos_find_array(), from *i
 * (sp->from at first): its bytes buf[*start, *end), and *i past it and
 * its comma.  Returns 0, or -1 after the last one.
 */
int	jsonpos_next_element(const char *buf, const struct jsonpos_span *sp,
	    size_t *i, size_t *start, size_t *end);
/* Entry index of the sibling after entry i. */
size_t	jsonpos_next(const struct jsonpos *jp, size_t i);
/*
 * Line and 1-based byte column of offset off in buf (for jansson's syntax
 * errors).
 */
void	jsonpos_locate(const char *buf, size_t len, size_t off, int *line,
	    int *column);

/* ------------------------------------------------------------------ */
/* geo.c: GeoIP country and AS number (libmaxminddb)                    */
/* ------------------------------------------------------------------ */

struct geo_db;

/*
 * Opens a MaxMind DB file with the caller's loader (o NULL or without one:
 * fails).  NULL with *err set (the loader's message or a static one).
 */
struct geo_db	*geo_open(const struct policy_load_opts *o, const char *path,
		    const char **err);
void		 geo_close(struct geo_db *g);
/* The database's own name of its type ("GeoLite2-Country", ...). */
const char	*geo_type(const struct geo_db *g);
/* a's ISO 3166-1 alpha-2 code, upper case, into cc; false if unknown. */
bool		 geo_country(const struct geo_db *g,
		    const struct policy_addr *a, char cc[3]);
/* a's AS number; false if unknown. */
bool		 geo_asn(const struct geo_db *g, const struct policy_addr *a,
		    uint32_t *asn);
/* True if s (len bytes) is two ASCII letters. */
bool		 geo_cc_ok(const char *s, size_t len);

/* ------------------------------------------------------------------ */
/* policy.c: the compiled policy                                        */
/* ------------------------------------------------------------------ */

struct policy_port_range {
	uint16_t	lo, hi;
};

/*
 * What few rules have (methods, paths, injections, a rate, a quota),
 * apart from the rule: a rule of hosts alone, the common one and what a
 * list of thousands is made of, holds none of it (48 bytes a rule, not
 * 112).
 */
struct policy_rule_more {
	char				**methods;
	char				**paths;	/* normalised patterns */
	char				**wpaths;	/* deny rules: their wide
							   forms, same order */
	struct policy_inject		*injects;	/* see inject_clear() */
	size_t				*secrets;	/* each injected one */
	size_t				 ninjects, nsecrets;
	unsigned			 rate_requests, rate_per_seconds;
	uint64_t			 quota_bytes;	/* "quota": 0 none */
	unsigned			 quota_per_seconds;
	uint16_t			 nmethods, npaths;
};

struct policy_rule {
	char				*name;		/* the policy's (pool) */
	const struct policy_port_range	*ports;	/* sorted, merged */
	struct policy_rule_more		*more;		/* NULL: none */
	uint32_t			 index;
	int				 line, column;
	uint16_t			 nports;
	uint8_t				 action;	/* POLICY_ALLOW or POLICY_DENY */
	uint8_t				 flags;		/* POLICY_F_* */
	uint8_t				 own_ports;	/* ports is malloc'd */
	uint8_t				 has_cidrs;
	uint8_t				 given;		/* POLICY_GIVEN_* */
	uint8_t				 plain_http;	/* "plain_http": true */
	uint8_t				 git;		/* POLICY_GIT_* */
	uint8_t				 strict_methods; /* "strict_methods": true */
	uint8_t				 protocols;	/* POLICY_PROTO_*, 0: any */
};

/* A rule's more (read only): its own, or an empty one. */
extern const struct policy_rule_more	policy_rule_none;
static inline const struct policy_rule_more *
policy_more(const struct policy_rule *r)
{
	return r->more != NULL ? r->more : &policy_rule_none;
}
/* A rule's more to fill, allocated on first use; NULL if out of memory. */
struct policy_rule_more	*policy_more_new(struct policy_rule *r);

/* policy_rule.given: keys that make a rule look inside (for messages). */
#define POLICY_GIVEN_INJECT	0x01	/* "inject" */
#define POLICY_GIVEN_GIT	0x02	/* "git" */
#define POLICY_GIVEN_INTERCEPT	0x04	/* "intercept": true */

/* A link of the list of rules attached to a name, suffix or prefix. */
struct policy_ref {
	uint32_t	rule;
	uint32_t	next;
};

/* Strings that live as long as their policy (rule names), packed. */
struct policy_strblk {
	struct policy_strblk	*next;
	size_t			 used, cap;
	char			 data[];
};

struct policy {
	struct policy_strblk	*strs;		/* newest first */
	struct policy_rule	*rules;
	size_t			 nrules, caprules;
	struct policy_ref	*refs;
	size_t			 nrefs, caprefs;
	struct domain_table	 exact;		/* "api.example.com" */
	struct domain_table	 wild;		/* "*.example.com", keyed "example.com" */
	uint32_t		 star;		/* rules with "*" */
	struct trie		 cidr4, cidr6;	/* rule cidrs and IP hosts */
	const struct deny_sets	*deny;		/* built-in sets (deny.c), shared */
	struct trie		 ap4, ap6;	/* allow_private */
	struct domain_table	 geo_cc;	/* deny rules' "countries", keyed "KP" */
	struct domain_table	 geo_asn;	/* their "asns", keyed "64500" */
	struct geo_db		*geo_country_db; /* "geoip": NULL if none */
	struct geo_db		*geo_asn_db;
	uint64_t		 quota_bytes;	/* policy.quota: 0 none */
	unsigned		 quota_per_seconds;
};

struct policy	*policy_new(void);
void		 policy_free(struct policy *p);
/*
 * Appends a rule (fields copied; name, methods, paths, ports ownership
 * moves to the policy) and returns its index, or POLICY_NONE if out of
 * memory (ownership still moves: they are freed).
 */
uint32_t	policy_add_rule(struct policy *p, const struct policy_rule *r);
/* A copy of s[0..n) (NUL added) that lives as long as p; NULL if out of
 * memory.  Never freed alone. */
char		*policy_strdup(struct policy *p, const char *s, size_t n);
/* Frees what a rule that was never added owns (its name is p's). */
void		policy_rule_drop(struct policy_rule *r);
/* Room for n rules in all (the config's count, known before they are
 * read), so that the array is not grown by doubling.  0 or -1. */
int		policy_reserve_rules(struct policy *p, size_t n);
/* Attaches rule to an exact name, a "*." suffix, "*" or a prefix.
 * Each returns 0 or -1 (out of memory). */
int	policy_add_name(struct policy *p, uint32_t rule, const char *name);
int	policy_add_suffix(struct policy *p, uint32_t rule, const char *suffix);
int	policy_add_star(struct policy *p, uint32_t rule);
int	policy_add_cidr(struct policy *p, uint32_t rule,
	    const struct addr_cidr *c);
/* Attaches a deny rule to a country code (two upper-case letters) or an
 * AS number.  Each returns 0 or -1 (out of memory). */
int	policy_add_country(struct policy *p, uint32_t rule, const char *cc);
int	policy_add_asn(struct policy *p, uint32_t rule, uint32_t asn);
/* Adds an allow_private prefix.  Returns 0 or -1. */
int	policy_add_allow_private(struct policy *p, const struct addr_cidr *c);

#endif /* MOAT_POLICY_INT_H */
