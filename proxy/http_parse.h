/*
 * http_parse.h - strict HTTP/1.1 message head and chunked-body parsers
 * (RFC 9110, RFC 9112).
 *
 * What it is: pure functions over bytes.  No I/O, no libevent, no
 * allocation except in http_*_head_parse (one block per head, freed with
 * the matching _free).  moatd's connection code and the fuzzers call them.
 *
 * Strictness is a security property (DESIGN.md invariant 6): anything a
 * second parser could read differently is rejected, never repaired or
 * forwarded: bare CR or LF, NUL and other control bytes, obs-fold, white
 * space before the colon or in the request line, Content-Length together
 * with Transfer-Encoding, repeated or differing Content-Length, a
 * Transfer-Encoding other than exactly "chunked", bad chunk sizes, over-long
 * lines or heads.
 *
 * Return codes of every scanning/parsing function: HTTP_NEED_MORE (0),
 * HTTP_OK (1) and HTTP_INVALID (-1).  After HTTP_INVALID the *err argument
 * points to a static English message starting in lower case ("bare LF in
 * head") that moatd puts in the 400 body and the log.  The one message that is not the
 * peer's fault is "out of memory" (a failed malloc in a head parser).
 *
 * Every function taking a struct http_limits accepts NULL for the
 * defaults below.
 */
#ifndef MOAT_HTTP_PARSE_H
#define MOAT_HTTP_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HTTP_NEED_MORE	0
#define HTTP_OK		1
#define HTTP_INVALID	(-1)

/* Defaults; moatd passes the configured values in struct http_limits. */
#define HTTP_REQUEST_LINE_MAX_BYTES	8192
#define HTTP_HEAD_MAX_BYTES		65536
#define HTTP_HEADER_COUNT_MAX		100
#define HTTP_CHUNK_LINE_MAX_BYTES	4096	/* size + extensions + CRLF */
#define HTTP_TRAILER_MAX_BYTES		16384

struct http_limits {
	size_t	line_max;	/* request/status line, bytes without CRLF */
	size_t	head_max;	/* whole head including the final CRLF CRLF */
	size_t	header_count_max;
};

/*
 * Incremental scan for the end of a head.  Feed the whole buffered input
 * each time (buf/len always start at the first byte of the head, and the
 * bytes already fed must not change); *state carries how far earlier calls
 * got (set it to 0 before the first call; the value is opaque), so each
 * byte is examined once.  Set it to 0 again for the next head.  Rejects
 * byte-level errors as soon as they arrive: NUL or other control bytes
 * except HTAB, bare CR, bare LF, a line longer than the limit (first line:
 * line_max; others: head_max), a head longer than head_max.  Leading
 * empty lines (CRLF) before a request line are an error too (RFC 9112
 * allows ignoring one; moat does not).
 *
 * Returns HTTP_NEED_MORE, HTTP_OK with *head_len set to the length of the
 * head including the terminating CRLF CRLF, or HTTP_INVALID with *err.
 */
int	http_head_scan(const char *buf, size_t len,
	    const struct http_limits *lim, size_t *state, size_t *head_len,
	    const char **err);

/*
 * A field line.  name points into the head copy and is not NUL-terminated;
 * value has its leading and trailing OWS removed, and the parser writes a
 * NUL after it in the copy, so value[value_len] == '\0'.
 */
struct http_header {
	const char	*name;
	size_t		 name_len;
	const char	*value;
	size_t		 value_len;
};

enum http_target_form {
	HTTP_FORM_ORIGIN = 0,	/* "/path?query" */
	HTTP_FORM_ABSOLUTE,	/* "http://host:port/path?query" */
	HTTP_FORM_AUTHORITY,	/* "host:port" (CONNECT only) */
	HTTP_FORM_ASTERISK	/* "*" (OPTIONS only) */
};

enum http_body_kind {
	HTTP_BODY_NONE = 0,	/* no body */
	HTTP_BODY_LENGTH,	/* content_length bytes */
	HTTP_BODY_CHUNKED,	/* Transfer-Encoding: chunked */
	HTTP_BODY_CLOSE		/* responses only: until the connection ends */
};

/*
 * mem is one block: the header array, a copy of the head and room for the
 * pieces of the request-target; every pointer below points into it.  The
 * copy is not verbatim: NUL bytes replace the SP after the method and
 * after the target, the CR of a status line, and the byte after each field
 * value.
 *
 * scheme, authority, host and port are set for HTTP_FORM_ABSOLUTE and
 * HTTP_FORM_AUTHORITY (NUL-terminated; NULL or 0 otherwise).  scheme is
 * lower-cased ("http", "https", "ws", "wss"); authority is "host[:port]"
 * as sent (userinfo is refused); host is the host part as sent, brackets
 * kept for IPv6; port is the explicit port or 0.  path is path and query
 * ("/" if the path is empty) for absolute form, the target itself for
 * origin form, NULL for authority and asterisk form.  host_header is the
 * Host field value (NUL-terminated, checked as host[:port] like an
 * authority), NULL if absent.
 */
struct http_request_head {
	char			*mem;		/* owned block */
	size_t			 head_len;
	const char		*method;	/* NUL-terminated token */
	const char		*target;	/* NUL-terminated, as sent */
	size_t			 target_len;
	enum http_target_form	 form;
	const char		*scheme;
	const char		*authority;
	const char		*host;
	uint16_t		 port;
	const char		*path;
	int			 version_minor;	/* HTTP/1.<minor>: 0 or 1 */
	struct http_header	*headers;
	size_t			 nheaders;
	enum http_body_kind	 body;		/* NONE, LENGTH or CHUNKED */
	uint64_t		 content_length;
	bool			 keep_alive;	/* 1.1 without "close", or 1.0
						 * with "keep-alive" */
	bool			 expect_continue; /* Expect: 100-continue */
	const char		*host_header;
};

/*
 * Parses a complete request head (buf/len exactly as delimited by
 * http_head_scan).  Checks, besides the byte rules of http_head_scan:
 * method is a token; one SP between the three parts; request-target has
 * no control bytes, SP or bytes >= 0x80 and matches one of the four forms
 * (authority form only with CONNECT, asterisk only with OPTIONS); version
 * is exactly "HTTP/1.0" or "HTTP/1.1"; field names are tokens with no white
 * space before the colon; no obs-fold; at most header_count_max fields;
 * exactly one Host field for HTTP/1.1 (RFC 9112 §3.2), at most one for
 * HTTP/1.0, its value a valid host[:port]; framing: any
 * Transfer-Encoding must be exactly "chunked" (case-insensitive, one
 * field, one coding) and excludes Content-Length; Content-Length is 1*DIGIT
 * without sign or white space inside, at most 19 digits and INT64_MAX, and
 * at most one field (a list "5, 5" is refused too); Transfer-Encoding in
 * HTTP/1.0 is refused.
 *
 * Stricter than RFC 9112, on purpose (each is a known confusion vector):
 * - the framing fields allow no OWS but one SP before the value, and
 *   "Content_Length" / "Transfer_Encoding" (underscore) are refused;
 * - request-target: '#' (fragment), '\' and malformed percent-encoding are
 *   refused; absolute-form only with scheme http, https, ws or wss;
 *   userinfo ("user@host") is refused in absolute and authority form and
 *   in Host; a host is letters, digits, '-', '.', '_' or a bracketed IPv6
 *   literal without zone ID; a port is 1..65535 without sign or leading
 *   zero;
 * - CONNECT needs authority form with a port, and a body (Transfer-Encoding
 *   or a non-zero Content-Length) is refused: bytes after a CONNECT head
 *   belong to the tunnel.
 * Content-Length: 0 gives HTTP_BODY_LENGTH with content_length 0.
 *
 * Returns HTTP_OK and fills *out (caller frees with
 * http_request_head_free()), or HTTP_INVALID with *err (nothing to free).
 */
int	http_request_head_parse(const char *buf, size_t len,
	    const struct http_limits *lim, struct http_request_head *out,
	    const char **err);
/* Frees what *h owns and zeroes it.  NULL and zeroed heads are accepted. */
void	http_request_head_free(struct http_request_head *h);

struct http_response_head {
	char			*mem;		/* owned block, as above */
	size_t			 head_len;
	int			 version_minor;
	int			 status;	/* 100..999 */
	const char		*reason;	/* NUL-terminated, maybe "" */
	struct http_header	*headers;
	size_t			 nheaders;
	enum http_body_kind	 body;
	uint64_t		 content_length; /* the field's value, even
						  * when body is NONE */
	bool			 keep_alive;	/* false with HTTP_BODY_CLOSE */
};

/*
 * Parses a complete response head.  request_method is the method of the
 * request it answers: with "HEAD", or a status of 1xx, 204 or 304, body is
 * HTTP_BODY_NONE whatever the fields say; a 2xx answer to "CONNECT" is
 * refused (moat never forwards CONNECT).  request_method may be NULL (no
 * special method).  Framing rules as for requests (Host is not looked
 * at); with neither field the body is HTTP_BODY_CLOSE.  The status line is
 * "HTTP/1.x SP 3DIGIT SP reason", or "HTTP/1.x SP 3DIGIT" with no reason.
 * Returns as http_request_head_parse.
 */
int	http_response_head_parse(const char *buf, size_t len,
	    const struct http_limits *lim, const char *request_method,
	    struct http_response_head *out, const char **err);
void	http_response_head_free(struct http_response_head *h);

/*
 * True if err (a message from this module; NULL accepted) says a
 * configured or built-in size limit was passed ("head too long", "too many
 * header fields", ...), as opposed to malformed input: moatd logs the two
 * under different reasons.
 */
bool	http_error_is_limit(const char *err);

/*
 * Case-insensitive lookup of a field name.  Returns the index of the first
 * match at or after index from, or -1.
 */
int	http_header_find(const struct http_header *hv, size_t n, size_t from,
	    const char *name);

/*
 * True if the request has a field asking for another method:
 * X-HTTP-Method-Override, X-HTTP-Method or X-Method-Override, in any case,
 * "_" standing for "-" as well.
 */
bool	http_request_has_override(const struct http_request_head *req);

/*
 * True if the comma-separated list in value (e.g. a Connection field)
 * contains token, case-insensitively, ignoring OWS.
 */
bool	http_list_has_token(const char *value, size_t len, const char *token);

/*
 * Chunked transfer coding decoder (RFC 9112 §7.1), incremental.
 *
 * The caller alternates between framing and data:
 *   while (input available) {
 *       if ((left = http_chunked_data_left(c)) > 0) {
 *           n = min(left, available);
 *           move n data bytes;
 *           http_chunked_data_consumed(c, n);
 *       } else {
 *           rc = http_chunked_feed(c, p, avail, &used, &err);
 *           drop used bytes;
 *           if rc is HTTP_CHUNKED_DONE / HTTP_INVALID: stop;
 *           if rc is HTTP_NEED_MORE: wait for more input;
 *       }
 *   }
 * Rejected: a chunk size that is empty, not hex, longer than 16 hex digits
 * (leading zeros count) or over 2^63 - 1; white space around the size
 * other than BWS before ';' extensions; extensions that do not follow
 * RFC 9112 §7.1.1, *( BWS ";" BWS name [ BWS "=" BWS value ] ) with value
 * a token or quoted-string, or hold control bytes; a line without CRLF or
 * with bare CR/LF; a missing CRLF after chunk data; a size line (CRLF
 * included) over HTTP_CHUNK_LINE_MAX_BYTES; a trailer section (final CRLF
 * included) over HTTP_TRAILER_MAX_BYTES or with malformed fields (bad
 * names, white space before the colon, obs-fold, control bytes).
 *
 * A zeroed struct is a valid initial state.  Errors are sticky: once a
 * call returned HTTP_INVALID, every later call returns it with the same
 * message.
 */
struct http_chunked {
	int		 state;		/* private */
	uint64_t	 remaining;	/* data left in the current chunk */
	uint64_t	 size;		/* size of the current chunk */
	size_t		 line_len;	/* bytes of the size line so far */
	size_t		 trailer_len;	/* bytes of trailer section so far */
	int		 digits;	/* hex digits of the size so far */
	const char	*err;		/* the message, once failed */
};

#define HTTP_CHUNKED_DONE	2	/* last chunk and trailers consumed */

void		http_chunked_init(struct http_chunked *c);
/* Data bytes the caller may move now (0 when framing is expected). */
uint64_t	http_chunked_data_left(const struct http_chunked *c);
/* Records that n (<= data_left) data bytes were moved. */
void		http_chunked_data_consumed(struct http_chunked *c, uint64_t n);
/*
 * Consumes framing bytes from in[0..len) and stops at the first data byte,
 * at the end of the input, at the end of the body or at an error.  *used is
 * set to the number of bytes consumed in every case (on HTTP_INVALID, the
 * bytes before the offending one).  Returns HTTP_NEED_MORE (all of in
 * consumed, more framing expected), HTTP_OK (a chunk's data starts at
 * in[*used]: see http_chunked_data_left; also returned with *used = 0 when
 * called while data is still expected), HTTP_CHUNKED_DONE (also on every
 * call after the end, with *used = 0; bytes after the body are not
 * consumed), or HTTP_INVALID with *err.
 */
int		http_chunked_feed(struct http_chunked *c, const char *in,
		    size_t len, size_t *used, const char **err);

#endif /* MOAT_HTTP_PARSE_H */
