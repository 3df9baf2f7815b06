/*
 * jsonload.c - json_loadb() that fails whole when memory runs out (see
 * jsonload.h).
 *
 * jansson's allocator is process-wide; the one installed here passes
 * every call on to the allocator that was in place before (malloc and
 * free, or a test's) and differs only inside policy_json_loadb() on this
 * thread, once an allocation of that load has failed.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "policy/jsonload.h"

static json_malloc_t	jl_prev_malloc;
static json_free_t	jl_prev_free;
static pthread_once_t	jl_once = PTHREAD_ONCE_INIT;

static _Thread_local unsigned	jl_depth;	/* loads under way */
static _Thread_local bool	jl_failed;	/* one of their allocs failed */

static void *
jl_malloc(size_t n)
{
	void	*p;

	if (jl_depth > 0 && jl_failed) {
		errno = ENOMEM;
		return NULL;
	}
	p = jl_prev_malloc(n);
	if (p == NULL && jl_depth > 0)
		jl_failed = true;
	return p;
}

static void
jl_free(void *p)
{
	jl_prev_free(p);
}

static void
jl_install(void)
{
	json_get_alloc_funcs(&jl_prev_malloc, &jl_prev_free);
	json_set_alloc_funcs(jl_malloc, jl_free);
}

/* Pieces of text, one after the other, as jansson's callback loader
 * reads them. */
struct jl_parts {
	const struct policy_json_seg	*segs;
	size_t				 nsegs, seg, at;
};

static size_t
jl_read(void *out, size_t room, void *arg)
{
	struct jl_parts	*p = arg;
	size_t		 n = 0, k;

	while (n < room && p->seg < p->nsegs) {
		k = p->segs[p->seg].len - p->at;
		if (k > room - n)
			k = room - n;
		memcpy((char *)out + n, p->segs[p->seg].buf + p->at, k);
		n += k;
		p->at += k;
		if (p->at == p->segs[p->seg].len) {
			p->seg++;
			p->at = 0;
		}
	}
	return n;
}

json_t *
policy_json_loadv(const struct policy_json_seg *segs, size_t nsegs,
    size_t flags, json_error_t *je)
{
	struct jl_parts	 parts = { segs, nsegs, 0, 0 };
	json_t		*root;
	bool		 outer;

	(void)pthread_once(&jl_once, jl_install);
	outer = jl_depth++ == 0;
	if (outer)
		jl_failed = false;
	if (nsegs == 1)
		root = json_loadb(segs[0].buf, segs[0].len, flags, je);
	else
		root = json_load_callback(jl_read, &parts, flags, je);
	jl_depth--;
	if (jl_failed) {
		/* Whatever came back was built around a lost allocation. */
		json_decref(root);
		root = NULL;
		if (je != NULL) {
			snprintf(je->text, sizeof(je->text), "out of memory");
			je->line = je->column = -1;
			je->position = 0;
		}
	}
	if (outer)
		jl_failed = false;
	return root;
}

json_t *
policy_json_loadb(const char *buf, size_t len, size_t flags,
    json_error_t *je)
{
	struct policy_json_seg	seg = { buf, len };

	return policy_json_loadv(&seg, 1, flags, je);
}

json_t *
policy_json_loadb_skip(const char *buf, size_t len, size_t skip_from,
    size_t skip_to, size_t flags, json_error_t *je)
{
	struct policy_json_seg	 segs[2];
	json_t			*root;

	if (skip_from >= skip_to || skip_to > len)
		return policy_json_loadb(buf, len, flags, je);
	segs[0].buf = buf;
	segs[0].len = skip_from;
	segs[1].buf = buf + skip_to;
	segs[1].len = len - skip_to;
	root = policy_json_loadv(segs, 2, flags, je);
	if (root == NULL && je != NULL && je->position > 0 &&
	    (size_t)je->position > skip_from)
		je->position += (int)(skip_to - skip_from);
	return root;
}
