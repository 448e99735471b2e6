/* common/cancel.c: the calling thread's cancel flag (cancel.h). */
#include "common/cancel.h"

#include <stddef.h>

static _Thread_local atomic_int *flag;

void sc_cancel_attach(atomic_int *f)
{
    flag = f;
}

int sc_cancelled(void)
{
    return flag && atomic_load_explicit(flag, memory_order_relaxed);
}

atomic_int *sc_cancel_flag(void)
{
    return flag;
}
