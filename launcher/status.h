/*
 * status.h - what `moat status` prints: moatd's answers to the admin ops
 * stats and list (proto/admin_proto.h) as text, one block about moatd and
 * a table of its sandboxes, each with its listeners and the names of its
 * secrets.
 *
 * Everything printed that came from moatd is escaped (a byte below 0x20
 * or 0x7f becomes '?'), and a field moatd left out prints as "-".  libc
 * and jansson only, so that the unit tests link it alone.
 */
#ifndef MOAT_STATUS_H
#define MOAT_STATUS_H

#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#define STATUS_FIELD_MAX	64	/* a short field, bytes with its NUL */

/*
 * Prints stats (the stats answer) and sandboxes (the "sandboxes" of every
 * list page, one array; borrowed) to f.  Returns 0, or -1 if f failed.
 */
int	status_print(FILE *f, json_t *stats, json_t *sandboxes);

/* n bytes, short: "512 B", "1.5 KiB", "30.0 MiB".  Into buf (len). */
void	status_bytes(uint64_t n, char *buf, size_t len);
/* s seconds, short: "12s", "5m12s", "2h03m", "3d04h".  Into buf (len). */
void	status_age(uint64_t s, char *buf, size_t len);

#endif /* MOAT_STATUS_H */
