/*
 * jsonload.h - json_loadb() that fails whole when memory runs out.
 *
 * jansson 2.14's lexer ignores a failure to grow its token buffer
 * (lex_save() drops the result of strbuffer_append_byte()); if a later
 * allocation succeeds, it decodes a string whose closing quote was lost
 * and writes past the end of its copy.  policy_json_loadb() makes every
 * allocation after the first failed one of the same load fail too, so a
 * load under memory pressure ends in an error, never in that overflow;
 * its result is NULL (with je saying "out of memory") whenever any of
 * its allocations failed.  Every JSON text moat reads from outside (the
 * config, admin messages, policy files) goes through it.
 */
#ifndef MOAT_JSONLOAD_H
#define MOAT_JSONLOAD_H

#include <stddef.h>

#include <jansson.h>

json_t	*policy_json_loadb(const char *buf, size_t len, size_t flags,
	    json_error_t *je);
/* A piece of text. */
struct policy_json_seg {
	const char	*buf;
	size_t		 len;
};

/*
 * The same for the text that pieces segs[0..nsegs) make one after the
 * other, without copying them; an error's je->position is one of that
 * text.
 */
json_t	*policy_json_loadv(const struct policy_json_seg *segs, size_t nsegs,
	    size_t flags, json_error_t *je);
/*
 * The same for buf without the bytes [skip_from, skip_to) (the config
 * loader reads policy.rules' elements apart: jsonpos_find_array()),
 * without copying it; an error's je->position is one of buf.
 */
json_t	*policy_json_loadb_skip(const char *buf, size_t len, size_t skip_from,
	    size_t skip_to, size_t flags, json_error_t *je);

#endif /* MOAT_JSONLOAD_H */
