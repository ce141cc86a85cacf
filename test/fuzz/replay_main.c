/* A main() for building a fuzz target without libFuzzer: runs LLVMFuzzerTestOneInput once on
 * each file named on the command line, and on every regular file of each directory named (in
 * name order), so the corpora under test/fuzz/corpus/ replay as ordinary tests with gcc and
 * under the sanitizer build. A crash or a sanitizer report fails the run; so does an empty
 * corpus, so a moved directory cannot pass silently.
 *
 *   replay_fuzz_yaml test/fuzz/corpus/fuzz_yaml [more files or directories]
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Corpus files are small; anything larger is a mistake in the corpus. */
#define REPLAY_MAX_INPUT (1024 * 1024)

static int run_file(const char *path)
{
    struct stat st;
    uint8_t *data;
    size_t len = 0;
    int fd, r = -1;

    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) < 0) {
        fprintf(stderr, "%s: %s\n", path, strerror(errno));
        goto out;
    }
    if (st.st_size > REPLAY_MAX_INPUT) {
        fprintf(stderr, "%s: larger than %d bytes\n", path, REPLAY_MAX_INPUT);
        goto out;
    }
    /* An exact-size heap copy, so the sanitizers see reads past the end of the input. */
    data = malloc(st.st_size > 0 ? (size_t)st.st_size : 1);
    if (!data) {
        fprintf(stderr, "%s: out of memory\n", path);
        goto out;
    }
    while (len < (size_t)st.st_size) {
        ssize_t n = read(fd, data + len, (size_t)st.st_size - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            fprintf(stderr, "%s: short read\n", path);
            free(data);
            goto out;
        }
        len += (size_t)n;
    }
    LLVMFuzzerTestOneInput(data, len);
    free(data);
    r = 0;
out:
    if (fd >= 0)
        close(fd);
    return r;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Runs every regular file of dir; returns the number run, or -1. */
static int run_dir(const char *dir)
{
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    DIR *d = opendir(dir);
    int count = 0;

    if (!d) {
        fprintf(stderr, "%s: %s\n", dir, strerror(errno));
        return -1;
    }
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        if (n == cap) {
            char **grown = realloc(names, (cap ? cap * 2 : 64) * sizeof(*names));
            if (!grown)
                break;
            names = grown;
            cap = cap ? cap * 2 : 64;
        }
        names[n] = strdup(de->d_name);
        if (names[n])
            n++;
    }
    closedir(d);
    qsort(names, n, sizeof(*names), by_name);
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        struct stat st;

        if (snprintf(path, sizeof(path), "%s/%s", dir, names[i]) < (int)sizeof(path) &&
            stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
            if (run_file(path) < 0)
                count = -1;
            else if (count >= 0)
                count++;
        }
        free(names[i]);
    }
    free(names);
    return count;
}

int main(int argc, char **argv)
{
    int total = 0;

    if (argc < 2) {
        fprintf(stderr, "usage: %s CORPUS_DIR_OR_FILE...\n", argv[0]);
        return 2;
    }
    for (int i = 1; i < argc; i++) {
        struct stat st;
        int n;

        if (stat(argv[i], &st) < 0) {
            fprintf(stderr, "%s: %s\n", argv[i], strerror(errno));
            return 1;
        }
        n = S_ISDIR(st.st_mode) ? run_dir(argv[i]) : (run_file(argv[i]) < 0 ? -1 : 1);
        if (n < 0)
            return 1;
        total += n;
    }
    if (total == 0) {
        fprintf(stderr, "%s: no inputs found\n", argv[0]);
        return 1;
    }
    printf("%s: %d inputs replayed\n", argv[0], total);
    return 0;
}
