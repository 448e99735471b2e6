/* model/trace_event.c: one traceEvents entry parsed into a struct
 * raw_event (trace_event.h).
 *
 * Only the fields the model uses are decoded (ph, cat, name, pid, tid, id,
 * ts, dur and a few args); every other value is validated and skipped.
 * Keys are matched by their length first, then by a few word compares. */
#include "model/trace_event.h"

#include <stddef.h>
#include <string.h>

#include "common/banned.h"

static struct raw_coll *coll_of(struct raw_args *a)
{
    if (!a->has_coll) {
        struct raw_coll *c = &a->c;
        memset(c, 0, sizeof *c);
        c->in_nelems = c->out_nelems = c->group_size = c->seq = c->nccl_seq = c->peer = -1;
        a->has_coll = 1;
    }
    return &a->c;
}

static struct raw_sync *sync_of(struct raw_args *a)
{
    if (!a->has_sync) {
        memset(&a->s, 0, sizeof a->s);
        a->s.wait_on_stream = a->s.wait_corr = a->s.event_id = -1;
        a->has_sync = 1;
    }
    return &a->s;
}

static int parse_args(struct reader *r, struct raw_args *a)
{
    int rc = skip_ws(r);
    if (rc)
        return rc;
    if (*r->p == 'n')
        return tr_lex_literal(r, "null", 4);
    if (*r->p != '{')
        return FAIL(r, "args is not an object");
    int more;
    if ((rc = open_container(r, &more)))
        return rc;
    while (more) {
        struct slice k;
        if ((rc = member_key(r, &k)))
            return rc;
        switch (k.n) {
        case 3:
            if (KEY_IS(k, "Seq")) {
                rc = get_int(r, &coll_of(a)->seq, "Seq");
                goto next;
            }
            break;
        case 4:
            if (KEY_IS(k, "grid")) {
                rc = tr_get_dim3(r, a->grid);
                goto next;
            }
            if (KEY_IS(k, "name")) {
                rc = tr_get_raw(r, &a->meta_name);
                goto next;
            }
            break;
        case 5:
            if (KEY_IS(k, "bytes")) {
                rc = get_int(r, &a->bytes, "bytes");
                goto next;
            }
            if (KEY_IS(k, "block")) {
                rc = tr_get_dim3(r, a->block);
                goto next;
            }
            if (KEY_IS(k, "dtype")) {
                rc = tr_get_raw(r, &coll_of(a)->dtype);
                goto next;
            }
            break;
        case 6:
            if (KEY_IS(k, "stream")) {
                rc = get_int(r, &a->stream, "stream");
                goto next;
            }
            if (KEY_IS(k, "device")) {
                rc = get_int(r, &a->device, "device");
                goto next;
            }
            break;
        case 8:
            if (KEY_IS(k, "NCCL seq")) {
                rc = get_int(r, &coll_of(a)->nccl_seq, "NCCL seq");
                goto next;
            }
            if (KEY_IS(k, "event_id")) {
                rc = get_int(r, &sync_of(a)->event_id, "event_id");
                goto next;
            }
            if (KEY_IS(k, "Dst Rank") || KEY_IS(k, "Src Rank")) {
                rc = get_int(r, &coll_of(a)->peer, "a peer rank");
                goto next;
            }
            break;
        case 10:
            if (KEY_IS(k, "Input Dims")) {
                rc = tr_get_raw(r, &a->input_dims);
                goto next;
            }
            if (KEY_IS(k, "Input type")) {
                rc = tr_get_raw(r, &a->input_types);
                goto next;
            }
            if (KEY_IS(k, "Group size")) {
                rc = get_int(r, &coll_of(a)->group_size, "Group size");
                goto next;
            }
            break;
        case 11:
            if (KEY_IS(k, "correlation")) {
                rc = get_int(r, &a->correlation, "correlation");
                goto next;
            }
            if (KEY_IS(k, "External id") || KEY_IS(k, "external id")) {
                rc = get_int(r, &a->external_id, "External id");
                goto next;
            }
            break;
        case 13:
            if (KEY_IS(k, "In msg nelems")) {
                rc = get_int(r, &coll_of(a)->in_nelems, "In msg nelems");
                goto next;
            }
            if (KEY_IS(k, "In split size")) {
                rc = tr_get_raw(r, &coll_of(a)->in_split);
                goto next;
            }
            break;
        case 14:
            if (KEY_IS(k, "Out msg nelems")) {
                rc = get_int(r, &coll_of(a)->out_nelems, "Out msg nelems");
                goto next;
            }
            if (KEY_IS(k, "Out split size")) {
                rc = tr_get_raw(r, &coll_of(a)->out_split);
                goto next;
            }
            if (KEY_IS(k, "cuda_sync_kind")) {
                rc = tr_get_raw(r, &sync_of(a)->kind);
                goto next;
            }
            if (KEY_IS(k, "wait_on_stream")) {
                rc = get_int(r, &sync_of(a)->wait_on_stream, "wait_on_stream");
                goto next;
            }
            break;
        case 15:
            if (KEY_IS(k, "Concrete Inputs")) {
                rc = tr_get_raw(r, &a->concrete_inputs);
                goto next;
            }
            if (KEY_IS(k, "Collective name")) {
                rc = tr_get_raw(r, &coll_of(a)->name);
                goto next;
            }
            break;
        case 16:
            if (KEY_IS(k, "Process Group ID")) {
                if (!coll_of(a)->pg_name.p)
                    rc = tr_get_raw(r, &coll_of(a)->pg_name);
                else
                    rc = tr_skip_value(r);
                goto next;
            }
            break;
        case 18:
            if (KEY_IS(k, "Process Group Name")) {
                rc = tr_get_raw(r, &coll_of(a)->pg_name);
                goto next;
            }
            break;
        case 19:
            if (KEY_IS(k, "Process Group Ranks")) {
                rc = tr_get_raw(r, &coll_of(a)->pg_ranks);
                goto next;
            }
            break;
        case 21:
            if (KEY_IS(k, "wait_on_cuda_event_id")) {
                rc = get_int(r, &sync_of(a)->event_id, "wait_on_cuda_event_id");
                goto next;
            }
            break;
        case 25:
            if (KEY_IS(k, "Process Group Description")) {
                rc = tr_get_raw(r, &coll_of(a)->pg_desc);
                goto next;
            }
            break;
        case 33:
            if (KEY_IS(k, "wait_on_cuda_event_record_corr_id")) {
                rc = get_int(r, &sync_of(a)->wait_corr, "wait_on_cuda_event_record_corr_id");
                goto next;
            }
            break;
        }
        rc = tr_skip_value(r);
    next:
        if (rc || (rc = next_item(r, '}', &more)))
            return rc;
    }
    return RD_OK;
}

static void raw_event_init(struct raw_event *e)
{
    memset(e, 0, offsetof(struct raw_event, a) + offsetof(struct raw_args, c));
    struct raw_args *a = &e->a;
    a->correlation = a->external_id = a->stream = a->device = a->bytes = -1;
}

/* Parse one traceEvents entry at r->p into *e. */
int tr_parse_event(struct reader *r, struct raw_event *e)
{
    int rc = skip_ws(r);
    if (rc)
        return rc;
    if (*r->p != '{')
        return FAIL(r, "a traceEvents entry is not an object");
    raw_event_init(e);
    int more;
    if ((rc = open_container(r, &more)))
        return rc;
    while (more) {
        struct slice k;
        if ((rc = member_key(r, &k)))
            return rc;
        switch (k.n) {
        case 2:
            if (KEY_IS(k, "ph")) {
                rc = tr_get_string(r, &e->ph, "ph");
                goto next;
            }
            if (KEY_IS(k, "ts")) {
                pass_ws(r);
                e->ts_off = (size_t)(r->p - r->buf);
                if (*r->p != '-' && (*r->p < '0' || *r->p > '9'))
                    return NOT_EXPECTED(r, "ts is not a number");
                rc = lex_number(r, 3, &e->ts);
                e->has_ts = 1;
                goto next;
            }
            if (KEY_IS(k, "id")) {
                rc = get_idval(r, &e->id, "id");
                e->has_id = 1;
                goto next;
            }
            break;
        case 3:
            if (KEY_IS(k, "cat")) {
                rc = tr_get_string(r, &e->cat, "cat");
                goto next;
            }
            if (KEY_IS(k, "pid")) {
                rc = get_idval(r, &e->pid, "pid");
                e->has_pid = 1;
                goto next;
            }
            if (KEY_IS(k, "tid")) {
                rc = get_idval(r, &e->tid, "tid");
                e->has_tid = 1;
                goto next;
            }
            if (KEY_IS(k, "dur")) {
                pass_ws(r);
                e->dur_off = (size_t)(r->p - r->buf);
                if (*r->p != '-' && (*r->p < '0' || *r->p > '9'))
                    return NOT_EXPECTED(r, "dur is not a number");
                rc = lex_number(r, 3, &e->dur);
                e->has_dur = 1;
                goto next;
            }
            break;
        case 4:
            if (KEY_IS(k, "name")) {
                rc = tr_get_string(r, &e->name, "name");
                goto next;
            }
            if (KEY_IS(k, "args")) {
                rc = parse_args(r, &e->a);
                e->has_args = 1;
                goto next;
            }
            break;
        }
        rc = tr_skip_value(r);
    next:
        if (rc || (rc = next_item(r, '}', &more)))
            return rc;
    }
    return RD_OK;
}

