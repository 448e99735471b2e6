/* daemon/failpoint.c: named crash and hold points (failpoint.h). */
#include "daemon/failpoint.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon/log.h"
#include "common/banned.h"

static const char *armed; /* the point named in the environment, or NULL */

void fp_init(void)
{
    const char *v = getenv("STEPCAST_FAILPOINT");
    armed = v && *v ? v : NULL;
    if (armed)
        log_warn("failpoint", "armed=%s", armed);
}

int fp_armed(const char *name)
{
    return armed && strcmp(armed, name) == 0;
}

void fp_hit(const char *name)
{
    if (fp_armed(name)) {
        log_warn("failpoint", "hit=%s action=SIGKILL", name);
        kill(getpid(), SIGKILL);
        pause();
    }
}

void fp_hold(const char *name, long ms)
{
    if (fp_armed(name)) {
        log_warn("failpoint", "hold=%s ms=%ld", name, ms);
        nanosleep(&(struct timespec){ms / 1000, ms % 1000 * 1000000}, NULL);
        log_warn("failpoint", "held=%s", name);
    }
}
