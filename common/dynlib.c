/* common/dynlib.c: loading a library's functions on first use (dynlib.h). */
#include "common/dynlib.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "common/banned.h"

/* Every function of lib from handle h into its slot, copied rather than
 * cast (ISO C has no conversion from an object to a function pointer). */
static int resolve(struct sc_dynlib *lib, void *h, const char *soname)
{
    for (size_t i = 0; i < lib->n_fns; i++) {
        void *p = dlsym(h, lib->fns[i].name);
        if (!p) {
            snprintf(lib->why, sizeof lib->why, "%s has no %s", soname, lib->fns[i].name);
            return -1;
        }
        memcpy(lib->fns[i].slot, &p, lib->fns[i].size);
    }
    return 0;
}

static void load(struct sc_dynlib *lib)
{
    void *h = NULL;
    size_t k = 0;
    while (lib->sonames[k] && !(h = dlopen(lib->sonames[k], RTLD_NOW | RTLD_LOCAL)))
        k++;
    if (!h) {
        snprintf(lib->why, sizeof lib->why, "%s is not installed (scripts/deps.sh installs it)",
                 lib->sonames[0] ? lib->sonames[0] : "the library");
        lib->state = -1;
        return;
    }
    if (resolve(lib, h, lib->sonames[k])) {
        dlclose(h);
        lib->state = -1;
        return;
    }
    lib->state = 1; /* the library stays loaded for the process */
}

int sc_dynlib_load(struct sc_dynlib *lib, struct sc_error *err)
{
    pthread_mutex_lock(&lib->mu);
    if (lib->state == 0)
        load(lib);
    int state = lib->state;
    pthread_mutex_unlock(&lib->mu);
    return state > 0 ? SC_OK : sc_error_set(err, SC_ENOTFOUND, "%s", lib->why);
}
