/* Stand-in for libjemalloc.so.2, for the lockchaos node image.
 *
 * Why: Debian's redis-server links jemalloc; under libfaketime (LD_PRELOAD) jemalloc's
 * initialisation calls clock_gettime, libfaketime's hook allocates, and redis hangs at start
 * with "Unexpected recursive calls to clock_gettime()". Put this library first on
 * LD_LIBRARY_PATH (/opt/lockchaos/jemalloc-stub) and the dynamic loader binds the jemalloc
 * names redis imports here; malloc/free/malloc_usable_size then come from glibc.
 * redis-server (7.0, bookworm) imports only these three jemalloc-specific symbols. */
#include <errno.h>
#include <stddef.h>

/* No jemalloc controls exist: callers (INFO memory, MEMORY PURGE, ...) treat errors as
 * "statistic unavailable". */
int mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen) {
    (void)name; (void)oldp; (void)oldlenp; (void)newp; (void)newlen;
    return ENOENT;
}

void malloc_stats_print(void (*write_cb)(void *, const char *), void *cbopaque,
                        const char *opts) {
    (void)opts;
    if (write_cb) write_cb(cbopaque, "jemalloc stand-in (lockchaos): glibc malloc in use\n");
}

/* Usable size of an allocation of `size` bytes: the request itself is always a safe
 * answer (glibc never gives less). */
size_t nallocx(size_t size, int flags) {
    (void)flags;
    return size ? size : 1;
}
