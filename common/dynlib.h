/* common/dynlib.h: a shared library's functions, loaded the first time a
 * command needs them rather than when the program starts. libcurl (the
 * CLI's remote mode) and libarchive (tar archives of traces) bring some
 * forty libraries between them, about 5 ms of every start of `stepcast`
 * (BENCHMARKS.md, "Start-up"), though most commands use neither.
 *
 *     static struct { __typeof__(cos) *cos; } m;
 *     static const struct sc_dynlib_fn fns[] = {{"cos", &m.cos, sizeof m.cos}};
 *     static const char *const sonames[] = {"libm.so.6", NULL};
 *     static struct sc_dynlib lib = SC_DYNLIB_INIT(sonames, fns);
 *     if (sc_dynlib_load(&lib, err)) ...;  then m.cos(0.5)
 */
#ifndef COMMON_DYNLIB_H
#define COMMON_DYNLIB_H

#include <pthread.h>
#include <stddef.h>

#include "common/error.h"

/* One function: its name and the function pointer that receives it. */
struct sc_dynlib_fn {
    const char *name;
    void *slot; /* the address of a function pointer */
    size_t size; /* sizeof that pointer */
};

struct sc_dynlib {
    const char *const *sonames; /* tried in order; NULL-terminated */
    const struct sc_dynlib_fn *fns;
    size_t n_fns;
    pthread_mutex_t mu;
    int state;     /* 0 not tried, 1 loaded, -1 failed */
    char why[240]; /* the failure, said again to every later caller */
};

#define SC_DYNLIB_INIT(sonames, fns) \
    {(sonames), (fns), sizeof(fns) / sizeof((fns)[0]), PTHREAD_MUTEX_INITIALIZER, 0, ""}

/* Load lib once per process (any thread): open the first of its sonames
 * that loads and resolve every function. SC_ENOTFOUND naming the library,
 * or the function it lacks, when it cannot; asked again, the same answer. */
int sc_dynlib_load(struct sc_dynlib *lib, struct sc_error *err);

#endif
