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
#include <string.h>

#include "common/banned.h"

struct nccl_v5 {
    const char *name;
    int (*init)(void **ctx, uint64_t id, int *mask, const char *name, int nnodes, int nranks,
                int rank, void *logfn);
};

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: prof-inject-real LIBRARY [nccl|nvtx|both]\n");
        return 2;
    }
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        printf("dlopen failed: %s\n", dlerror());
        return 1;
    }
    if (argc > 2 && strcmp(argv[2], "both") == 0) {
        void *isym = dlsym(lib, "InitializeInjection");
        int (*inject)(void);
        if (!isym) {
            printf("no InitializeInjection\n");
            return 1;
        }
        memcpy(&inject, &isym, sizeof inject);
        printf("InitializeInjection=%d\n", inject());
    }
    if (argc > 2 && (strcmp(argv[2], "nccl") == 0 || strcmp(argv[2], "both") == 0)) {
        const struct nccl_v5 *t = dlsym(lib, "ncclProfiler_v5");
        void *ctx = NULL;
        int mask = -1;
        if (!t) {
            printf("no ncclProfiler_v5\n");
            return 1;
        }
        int rc = t->init(&ctx, 0x1234, &mask, "world", 1, 8, 3, NULL);
        printf("plugin %s init=%d mask=%d\n", t->name, rc, mask);
        return 0;
    }
    if (argc > 2 && strcmp(argv[2], "nvtx") == 0) {
        void *nsym = dlsym(lib, "InitializeInjectionNvtx2");
        int (*nvtx)(void *);
        if (!nsym) {
            printf("no InitializeInjectionNvtx2\n");
            return 1;
        }
        memcpy(&nvtx, &nsym, sizeof nvtx);
        printf("InitializeInjectionNvtx2=%d\n", nvtx(NULL));
        return 0;
    }
    void *sym = dlsym(lib, "InitializeInjection");
    int (*init)(void);
    if (!sym) {
        printf("no InitializeInjection\n");
        return 1;
    }
    memcpy(&init, &sym, sizeof init);
    int first = init(), second = init();
    printf("InitializeInjection=%d again=%d\n", first, second);
    return 0;
}
