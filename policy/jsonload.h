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

#endif /* MOAT_JSONLOAD_H */
