/*
 * replay.c - a plain main() for the fuzz targets: feeds each file named on
 * the command line (directories are walked one level) to
 * LLVMFuzzerTestOneInput, so the corpus runs in `make check` without
 * libFuzzer.  A crash or sanitizer report fails the test.
 */
#include <sys/mman.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int	replay_file(const char *path);
static int	replay_path(const char *path, size_t *count);

static int
replay_file(const char *path)
{
	FILE		*f;
	uint8_t		*buf = NULL;
	size_t		 len = 0, cap = 0, n;
	int		 rc = -1;

	if ((f = fopen(path, "rb")) == NULL) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	for (;;) {
		if (len == cap) {
			uint8_t *nb;

			cap = cap ? cap * 2 : 4096;
			if ((nb = realloc(buf, cap)) == NULL) {
				fprintf(stderr, "replay: out of memory\n");
				goto out;
			}
			buf = nb;
		}
		n = fread(buf + len, 1, cap - len, f);
		if (n == 0)
			break;
		len += n;
	}
	if (ferror(f)) {
		fprintf(stderr, "replay: %s: read error\n", path);
		goto out;
	}
	/*
	 * The input ends exactly where an inaccessible page begins: any read
	 * past its end faults, even one made by uninstrumented code (a libc
	 * string function scanning for a NUL that is not there), which an
	 * ASan redzone alone would let pass.
	 */
	{
		size_t	 pg = (size_t)sysconf(_SC_PAGESIZE);
		size_t	 datalen = (len + pg - 1) / pg * pg;
		uint8_t	*map;

		if (datalen == 0)
			datalen = pg;
		map = mmap(NULL, datalen + pg, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (map == MAP_FAILED ||
		    mprotect(map + datalen, pg, PROT_NONE) == -1) {
			fprintf(stderr, "replay: mmap: %s\n", strerror(errno));
			goto out;
		}
		memcpy(map + datalen - len, buf, len);
		LLVMFuzzerTestOneInput(map + datalen - len, len);
		munmap(map, datalen + pg);
	}
	rc = 0;
 out:
	free(buf);
	fclose(f);
	return rc;
}

static int
replay_path(const char *path, size_t *count)
{
	struct stat	 st;
	DIR		*d;
	struct dirent	*de;
	char		 sub[4096];
	int		 rc = 0;

	if (stat(path, &st) == -1) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		(*count)++;
		return replay_file(path);
	}
	if ((d = opendir(path)) == NULL) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name);
		if (stat(sub, &st) == -1 || !S_ISREG(st.st_mode))
			continue;
		(*count)++;
		if (replay_file(sub) == -1)
			rc = -1;
	}
	closedir(d);
	return rc;
}

int
main(int argc, char *argv[])
{
	size_t	count = 0;
	int	i, rc = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
		return 2;
	}
	for (i = 1; i < argc; i++)
		if (replay_path(argv[i], &count) == -1)
			rc = 1;
	printf("%s: replayed %zu inputs\n", argv[0], count);
	return rc;
}
