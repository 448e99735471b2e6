/* profiler/tests/inject_real.c: loads libstepcast_prof.so the way the CUDA
 * driver does (dlopen, then InitializeInjection) and, with "nccl", the way
 * NCCL does (dlsym ncclProfiler_v5, then init), then exits normally so the
 * exit handler runs. Prints what the entry points returned; the test
 * (test_inject.c) checks this and the library's one message on stderr.
 *
 * With "nvtx", it calls InitializeInjectionNvtx2 as NVTX would (the test
 * only does so with NVTX forwarding switched off: a real libcupti would
 * need NVTX's export table). With "both", InitializeInjection and then the
 * NCCL plugin's init, as in a job that sets both variables.
 *
 *   prof-inject-real LIBRARY [nccl|nvtx|both]                             */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/banned.h"

struct nccl_v5 {
    const char *name;
    int (*init)(void **ctx, uint64_t id, int *mask, const char *name, int nnodes, int nranks,
                int rank, void *logfn);
};

/* The symbol `name` of the library; exits 1 saying so when it is missing. */
static void *entry(void *lib, const char *name)
{
    void *p = dlsym(lib, name);
    if (!p) {
        printf("no %s\n", name);
        exit(1);
    }
    return p;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 2 ? argv[2] : "";
    int (*inject)(void), (*nvtx)(void *);
    void *sym;
    if (argc < 2) {
        fprintf(stderr, "usage: prof-inject-real LIBRARY [nccl|nvtx|both]\n");
        return 2;
    }
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        printf("dlopen failed: %s\n", dlerror());
        return 1;
    }
    if (strcmp(mode, "nvtx") == 0) {
        sym = entry(lib, "InitializeInjectionNvtx2");
        memcpy(&nvtx, &sym, sizeof nvtx);
        printf("InitializeInjectionNvtx2=%d\n", nvtx(NULL));
        return 0;
    }
    sym = entry(lib, "InitializeInjection");
    memcpy(&inject, &sym, sizeof inject);
    if (strcmp(mode, "nccl") == 0 || strcmp(mode, "both") == 0) {
        const struct nccl_v5 *t = entry(lib, "ncclProfiler_v5");
        void *ctx = NULL;
        int mask = -1;
        if (strcmp(mode, "both") == 0)
            printf("InitializeInjection=%d\n", inject());
        int rc = t->init(&ctx, 0x1234, &mask, "world", 1, 8, 3, NULL);
        printf("plugin %s init=%d mask=%d\n", t->name, rc, mask);
        return 0;
    }
    int first = inject(), second = inject();
    printf("InitializeInjection=%d again=%d\n", first, second);
    return 0;
}
