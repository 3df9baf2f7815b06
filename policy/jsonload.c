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

json_t *
policy_json_loadb(const char *buf, size_t len, size_t flags,
    json_error_t *je)
{
	json_t	*root;
	bool	 outer;

	(void)pthread_once(&jl_once, jl_install);
	outer = jl_depth++ == 0;
	if (outer)
		jl_failed = false;
	root = json_loadb(buf, len, flags, je);
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
