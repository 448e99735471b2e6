/* estimator/calibrate/published.c: the published step-time table read, and each
 * row's spec as it ran (published.h). */
#include "estimator/calibrate/published.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/csv.h"
#include "common/vec.h"
#include "estimator/spec/hf_config.h"
#include "estimator/spec/memory.h"
#include "common/banned.h"

#define MAX_ROWS 100000
#define MAX_COLUMNS 64
#define MAX_CELL 1024
#define MAX_COUNT (1LL << 30)

/* the columns read, by header name */
enum col {
    C_GPU, C_GPUS, C_MODEL, C_DIMS, C_PREC, C_SEQ, C_LAYERS, C_TP, C_PP, C_CP, C_EP, C_VP, C_DP,
    C_MBS, C_GBS, C_SOFTWARE, C_STEP, C_NOTES, N_COLS
};
static const char *const col_names[N_COLS] = {
    "GPU", "#GPUs", "model", "model dims", "prec", "seq", "layers run", "TP", "PP", "CP", "EP", "VP", "DP",
    "MBS", "GBS", "software", "step time (s)", "notes"};

/* The families the file's README leaves out, and why. */
static const struct {
    const char *prefix, *why;
} left_out[] = {
    {"llama4", "Llama 4: MoE in alternate layers and a shared expert (the README leaves it out)"},
    {"nemotronh", "Nemotron-H: Mamba layers (the README leaves it out)"},
};

/* Why a latent-attention row waits for calib_published_latent_widths. */
static const char latent_pending[] = "latent attention (MLA): its widths are not in the table";

struct cells {
    char text[MAX_COLUMNS][MAX_CELL];
    int n;
};

/* Split a table line "| a | b |" into trimmed cells. */
static int split(const char *p, size_t w, size_t line, struct cells *c, struct sc_error *err)
{
    const char *e = p + w;
    while (p < e && isspace((unsigned char)*p))
        p++;
    while (e > p && isspace((unsigned char)e[-1]))
        e--;
    if (p == e || *p != '|')
        return sc_error_set(err, SC_EPARSE, "line %zu: a table line starts with '|'", line);
    p++;
    if (e > p && e[-1] == '|')
        e--;
    c->n = 0;
    while (p <= e) {
        const char *q = memchr(p, '|', (size_t)(e - p));
        const char *end = q ? q : e;
        const char *a = p, *b = end;
        if (c->n == MAX_COLUMNS)
            return sc_error_set(err, SC_ELIMIT, "line %zu: more than %d columns", line, MAX_COLUMNS);
        while (a < b && isspace((unsigned char)*a))
            a++;
        while (b > a && isspace((unsigned char)b[-1]))
            b--;
        if ((size_t)(b - a) >= MAX_CELL)
            return sc_error_set(err, SC_ELIMIT, "line %zu: column %d: over %d characters", line, c->n + 1,
                                MAX_CELL - 1);
        memcpy(c->text[c->n], a, (size_t)(b - a));
        c->text[c->n][b - a] = '\0';
        c->n++;
        if (!q)
            break;
        p = q + 1;
    }
    return SC_OK;
}

/* A whole number from 1 to MAX_COUNT, perhaps followed by a space and a
 * remark. dash: what '-' (and "NA ...") means, < 0 when not accepted. */
static int count_cell(const char *s, int64_t dash, int64_t *out)
{
    if (dash >= 0 && (!strcmp(s, "-") || !strncmp(s, "NA", 2))) {
        *out = dash;
        return 0;
    }
    if (!isdigit((unsigned char)*s))
        return -1;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || v < 1 || v > MAX_COUNT || (*end && *end != ' '))
        return -1;
    *out = v;
    return 0;
}

static int contains(const char *hay, const char *needle)
{
    return strstr(hay, needle) != NULL;
}

/* The dims column's number after `key` at the token's start: "h4096". */
static int dim_token(const char *tok, const char *key, int64_t *out)
{
    size_t k = strlen(key);
    int64_t v;
    if (strncmp(tok, key, k) || !isdigit((unsigned char)tok[k]) || count_cell(tok + k, -1, &v))
        return 0;
    *out = v;
    return 1;
}

/* The dims column: "L32 h4096 heads32 kv8 ffn14336 (SwiGLU) V128256",
 * "... (gated GELU MLP: three matrices) MoE 8 experts top-2 ...", "(MHA)",
 * "L61 h7168 MLA heads128; MoE 256 routed+1 shared, top-8, expert ffn2048,
 * first 3 layers dense ffn18432; V129280". Parenthesised text is a remark,
 * read for the MLP's kind (SwiGLU or gated: three matrices; else two).
 * "MLA" is latent attention (its widths are not in the table: the row
 * waits for calib_published_latent_widths), "routed+N shared" N shared
 * experts, "expert ffnN" the experts' size, "first N layers dense ffnM"
 * the dense layers before the MoE ones and their size. Every other token
 * must be one of those; "heads=unknown" leaves the heads unknown (the row
 * is skipped). */
static int parse_dims(const char *s, size_t line, struct est_published *r, struct sc_error *err)
{
    struct est_model *m = &r->dims;
    char tok[MAX_CELL];
    int moe = 0, depth = 0;
    enum { PLAIN, EXPERT_FFN, DENSE_COUNT, DENSE_LAYERS, DENSE_WORD, DENSE_FFN } next = PLAIN;
    const char *p = s;
    while (*p) {
        while (*p == ' ' || *p == ';' || *p == ',')
            p++;
        if (!*p)
            break;
        if (*p == '(') { /* a remark, to its closing parenthesis */
            const char *q = strchr(p, ')');
            if (!q)
                return sc_error_set(err, SC_EPARSE, "line %zu: model dims: '(' not closed", line);
            size_t k = (size_t)(q - p);
            memcpy(tok, p, k);
            tok[k] = '\0';
            if (contains(tok, "SwiGLU") || contains(tok, "gated"))
                m->mlp = EST_MLP_SWIGLU;
            p = q + 1;
            continue;
        }
        size_t k = strcspn(p, " ;,(");
        memcpy(tok, p, k);
        tok[k] = '\0';
        p += k;
        int64_t v;
        if (next == EXPERT_FFN || next == DENSE_FFN) {
            if (!dim_token(tok, "ffn", next == EXPERT_FFN ? &m->moe.ffn : &m->ffn))
                return sc_error_set(err, SC_EPARSE, "line %zu: model dims: '%s' where ffnN was expected", line, tok);
            next = PLAIN;
        } else if (next == DENSE_COUNT) {
            if (count_cell(tok, -1, &m->moe.dense_layers))
                return sc_error_set(err, SC_EPARSE, "line %zu: model dims: 'first %s' is not a count", line, tok);
            next = DENSE_LAYERS;
        } else if (next == DENSE_LAYERS || next == DENSE_WORD) {
            if (strcmp(tok, next == DENSE_LAYERS ? "layers" : "dense"))
                return sc_error_set(err, SC_EPARSE, "line %zu: model dims: 'first N layers dense ffnM' expected",
                                    line);
            next = next == DENSE_LAYERS ? DENSE_WORD : DENSE_FFN;
        } else if (!strcmp(tok, "MLA"))
            r->latent = 1;
        else if (!strcmp(tok, "MoE"))
            moe = 1;
        else if (moe && !strcmp(tok, "experts") && depth == 1)
            depth = 2;
        else if (moe && depth == 1 && !strncmp(tok, "routed+", 7) && !count_cell(tok + 7, -1, &v)) {
            m->moe.shared_experts = v;
            depth = 3; /* "shared" next */
        } else if (moe && depth == 3 && !strcmp(tok, "shared"))
            depth = 2;
        else if (moe && depth == 2 && !strcmp(tok, "expert"))
            next = EXPERT_FFN;
        else if (moe && depth == 2 && !strcmp(tok, "first"))
            next = DENSE_COUNT;
        else if (moe && depth == 0 && !count_cell(tok, -1, &v)) {
            m->moe.experts = v;
            depth = 1;
        } else if (moe && dim_token(tok, "top-", &m->moe.top_k))
            ;
        else if (!strcmp(tok, "heads=unknown"))
            m->heads = 0;
        else if (!(dim_token(tok, "L", &r->full_layers) || dim_token(tok, "heads", &m->heads) ||
                   dim_token(tok, "kv", &m->kv_heads) || dim_token(tok, "ffn", &m->ffn) ||
                   dim_token(tok, "h", &m->hidden) || dim_token(tok, "V", &m->vocab)))
            return sc_error_set(err, SC_EPARSE, "line %zu: model dims: '%s' is not a dimension", line, tok);
    }
    if (next != PLAIN)
        return sc_error_set(err, SC_EPARSE, "line %zu: model dims: ends inside 'expert ffnN' or 'first N layers "
                                            "dense ffnM'", line);
    if (moe && (depth != 2 || !m->moe.top_k))
        return sc_error_set(err, SC_EPARSE, "line %zu: model dims: MoE without 'N experts top-K' or 'N routed+S "
                                            "shared, top-K'", line);
    if (m->moe.dense_layers >= r->full_layers && r->full_layers)
        return sc_error_set(err, SC_EPARSE, "line %zu: model dims: %lld dense layers first of L%lld", line,
                            (long long)m->moe.dense_layers, (long long)r->full_layers);
    if (!r->full_layers || !m->hidden || !m->vocab)
        return sc_error_set(err, SC_EPARSE, "line %zu: model dims: L, h and V are needed", line);
    if (!m->heads)
        snprintf(r->skip, sizeof r->skip, "model dims: the attention heads are not published");
    return SC_OK;
}

/* The step time in seconds; spaces inside the number are dropped (the
 * source's "8.7  5"). */
static int step_cell(const char *s, double *out)
{
    char buf[64];
    size_t k = 0;
    for (; *s; s++) {
        if (*s == ' ')
            continue;
        if (k + 1 == sizeof buf)
            return -1;
        buf[k++] = *s;
    }
    buf[k] = '\0';
    char *end;
    errno = 0;
    double v = k ? strtod(buf, &end) : 0;
    if (!k || *end || errno || !(v > 0) || v > 1e6 || !isdigit((unsigned char)buf[0]))
        return -1;
    *out = v;
    return 0;
}

static int bad(struct sc_error *err, size_t line, enum col c, const char *text, const char *what)
{
    return sc_error_set(err, SC_EPARSE, "line %zu: %s: '%s' is not %s", line, col_names[c], text, what);
}

/* One data row, cells at the header's columns `at`. */
static int parse_row(const struct cells *c, const int *at, size_t line, struct est_published *r,
                     struct sc_error *err)
{
    const char *t[N_COLS];
    int rc;
    for (int i = 0; i < N_COLS; i++)
        t[i] = c->text[at[i]];
    memset(r, 0, sizeof *r);
    spec_model_init(&r->dims);
    r->dims.vocab = 0; /* the dims column's V, required */
    r->line = line;

    if (snprintf(r->gpu, sizeof r->gpu, "%s", t[C_GPU]) >= (int)sizeof r->gpu || !r->gpu[0])
        return bad(err, line, C_GPU, t[C_GPU], "a GPU name");
    if (snprintf(r->model, sizeof r->model, "%s", t[C_MODEL]) >= (int)sizeof r->model || !r->model[0])
        return bad(err, line, C_MODEL, t[C_MODEL], "a model name of under 48 characters");
    const char *dash = strrchr(r->model, '-');
    size_t fl = dash ? (size_t)(dash - r->model) : strlen(r->model);
    if (fl >= sizeof r->family)
        fl = sizeof r->family - 1;
    memcpy(r->family, r->model, fl);
    r->family[fl] = '\0';

    static const struct {
        enum col c;
        int64_t dash;
        size_t off;
    } counts[] = {
        {C_GPUS, -1, offsetof(struct est_published, gpus)},
        {C_SEQ, -1, offsetof(struct est_published, dims.seq)},
        {C_LAYERS, -1, offsetof(struct est_published, dims.layers)},
        {C_TP, -1, offsetof(struct est_published, tp)},
        {C_PP, -1, offsetof(struct est_published, pp)},
        {C_CP, 1, offsetof(struct est_published, cp)},
        {C_EP, 1, offsetof(struct est_published, ep)},
        {C_VP, 0, offsetof(struct est_published, vp)},
        {C_MBS, -1, offsetof(struct est_published, micro_batch)},
        {C_GBS, -1, offsetof(struct est_published, global_batch)},
    };
    r->vp_unstated = !strncmp(t[C_VP], "NA", 2);
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
        if (count_cell(t[counts[i].c], counts[i].dash, (int64_t *)((char *)r + counts[i].off)))
            return bad(err, line, counts[i].c, t[counts[i].c],
                       counts[i].dash < 0 ? "a whole number above 0" : "a whole number above 0 or '-'");

    if (!strcmp(t[C_PREC], "BF16"))
        r->dtype = HW_BF16;
    else if (!strcmp(t[C_PREC], "FP8"))
        r->dtype = HW_FP8;
    else
        return bad(err, line, C_PREC, t[C_PREC], "BF16 or FP8");

    if (!strncmp(t[C_SOFTWARE], "NeMo", 4))
        r->software = EST_PUB_NEMO;
    else if (!strncmp(t[C_SOFTWARE], "MaxText", 7))
        r->software = EST_PUB_MAXTEXT;
    else if (!strncmp(t[C_SOFTWARE], "PAXML", 5))
        r->software = EST_PUB_PAXML;
    else
        return bad(err, line, C_SOFTWARE, t[C_SOFTWARE], "NeMo, MaxText or PAXML");

    if (step_cell(t[C_STEP], &r->step_s))
        return bad(err, line, C_STEP, t[C_STEP], "a time in seconds above 0");

    const char *etp = strstr(t[C_NOTES], "ETP=");
    if (etp && count_cell(etp + 4, -1, &r->etp))
        return bad(err, line, C_NOTES, etp, "ETP=N");

    /* DP: N, "FSDP=a x DP=b", "FSDP+DP (split unknown)" */
    const char *dp = t[C_DP];
    double shards = (double)r->tp * (double)r->pp * (double)r->cp;
    int derive = 0, split_unknown = 0;
    long long a, b;
    int used = 0;
    if (!strncmp(dp, "FSDP+DP", 7)) {
        derive = split_unknown = 1;
    } else if (!strncmp(dp, "FSDP=", 5)) {
        if (sscanf(dp, "FSDP=%lld x DP=%lld%n", &a, &b, &used) != 2 || dp[used] || a < 1 || b < 1 ||
            a > MAX_COUNT || b > MAX_COUNT)
            return bad(err, line, C_DP, dp, "N, 'FSDP=N x DP=N' or 'FSDP+DP (split unknown)'");
        r->fsdp = a;
        r->dp = a * b;
    } else if (count_cell(dp, -1, &r->dp))
        return bad(err, line, C_DP, dp, "N, 'FSDP=N x DP=N' or 'FSDP+DP (split unknown)'");
    if (!derive && (double)r->gpus != shards * (double)r->dp) {
        if (r->ep == 1)
            return sc_error_set(err, SC_EPARSE, "line %zu: #GPUs %lld are not TP x PP x CP x DP = %.0f", line,
                                (long long)r->gpus, shards * (double)r->dp);
        derive = 1;
    }
    if (derive) {
        if (fmod((double)r->gpus, shards) != 0)
            return sc_error_set(err, SC_EPARSE, "line %zu: #GPUs %lld are not a multiple of TP x PP x CP = %.0f",
                                line, (long long)r->gpus, shards);
        r->dp = (int64_t)((double)r->gpus / shards);
    }
    if (split_unknown) /* sharded over all of them */
        r->fsdp = r->dp;

    for (size_t i = 0; i < sizeof left_out / sizeof left_out[0]; i++)
        if (!strncmp(r->model, left_out[i].prefix, strlen(left_out[i].prefix))) {
            snprintf(r->skip, sizeof r->skip, "%s", left_out[i].why);
            return SC_OK;
        }
    if ((rc = parse_dims(t[C_DIMS], line, r, err)))
        return rc;
    if (r->dims.layers > r->full_layers)
        return sc_error_set(err, SC_EPARSE, "line %zu: layers run %lld: more than the model's L%lld", line,
                            (long long)r->dims.layers, (long long)r->full_layers);
    if (!r->skip[0] && strcmp(r->gpu, "H100") && strcmp(r->gpu, "GB200"))
        snprintf(r->skip, sizeof r->skip, "GPU '%s': no hardware profile is mapped to it", r->gpu);
    if (!r->skip[0] && r->latent)
        snprintf(r->skip, sizeof r->skip, "%s", latent_pending);
    return SC_OK;
}

/* The separator line under the header: cells of '-' and ':'. */
static int is_separator(const struct cells *c)
{
    for (int i = 0; i < c->n; i++)
        if (!c->text[i][0] || strspn(c->text[i], "-:") != strlen(c->text[i]))
            return 0;
    return 1;
}

/* A row whose VP the config table left out ("NA in config table") runs
 * the virtual stages another release printed for the same model and
 * layout (GPU, GPUs, TP, PP, CP, EP): the file's rows repeated across
 * releases are the same configuration measured again. */
static void vp_from_other_releases(struct est_published *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct est_published *r = &v[i];
        for (size_t j = 0; r->vp_unstated && j < n; j++) {
            const struct est_published *o = &v[j];
            if (!o->vp_unstated && !strcmp(o->gpu, r->gpu) && !strcmp(o->model, r->model) && o->gpus == r->gpus &&
                o->tp == r->tp && o->pp == r->pp && o->cp == r->cp && o->ep == r->ep && o->dims.layers == r->dims.layers) {
                r->vp = o->vp;
                r->vp_unstated = 0;
            }
        }
    }
}

int calib_published_parse(const char *text, size_t len, struct est_published **rows, size_t *n,
                        struct sc_error *err)
{
    struct est_published *v = NULL;
    struct cells *c = malloc(sizeof *c);
    size_t cap = 0, count = 0, w;
    int at[N_COLS], width = 0, state = 0; /* 0 before the table, 1 header read, 2 in it, 3 after */
    struct sc_lines l;
    const char *p;
    int rc = SC_OK;
    *rows = NULL;
    *n = 0;
    if (!c)
        return sc_error_set(err, SC_ENOMEM, "out of memory");
    sc_lines_init(&l, text, len);
    while (sc_lines_next(&l, &p, &w)) {
        size_t line = l.line, k = 0;
        while (k < w && isspace((unsigned char)p[k]))
            k++;
        if (k == w || p[k] != '|') {
            if (state == 1) {
                rc = sc_error_set(err, SC_EPARSE, "line %zu: the header's separator line (|---|...) expected",
                                  line);
                goto fail;
            }
            if (state == 2)
                state = 3;
            continue;
        }
        if (state == 3) {
            rc = sc_error_set(err, SC_EPARSE, "line %zu: a second table (one is read)", line);
            goto fail;
        }
        if ((rc = split(p, w, line, c, err)))
            goto fail;
        if (state == 0) {
            for (int i = 0; i < N_COLS; i++) {
                at[i] = -1;
                for (int j = 0; j < c->n && at[i] < 0; j++)
                    if (!strcmp(c->text[j], col_names[i]))
                        at[i] = j;
                if (at[i] < 0) {
                    rc = sc_error_set(err, SC_EPARSE, "line %zu: the header has no '%s' column", line,
                                      col_names[i]);
                    goto fail;
                }
            }
            width = c->n;
            state = 1;
            continue;
        }
        if (c->n != width) {
            rc = sc_error_set(err, SC_EPARSE, "line %zu: %d cells, the header has %d", line, c->n, width);
            goto fail;
        }
        if (state == 1) {
            if (!is_separator(c)) {
                rc = sc_error_set(err, SC_EPARSE, "line %zu: the header's separator line (|---|...) expected",
                                  line);
                goto fail;
            }
            state = 2;
            continue;
        }
        if (count == MAX_ROWS) {
            rc = sc_error_set(err, SC_ELIMIT, "line %zu: more than %d rows", line, MAX_ROWS);
            goto fail;
        }
        if (sc_vec_reserve((void **)&v, &cap, count + 1, sizeof *v)) {
            rc = sc_error_set(err, SC_ENOMEM, "out of memory");
            goto fail;
        }
        if ((rc = parse_row(c, at, line, &v[count], err)))
            goto fail;
        count++;
    }
    if (state == 1) {
        rc = sc_error_set(err, SC_EPARSE, "line %zu: the header's separator line (|---|...) expected",
                          l.line + 1);
        goto fail;
    }
    if (state == 0) {
        rc = sc_error_set(err, SC_EPARSE, "no table (a line starting with '|')");
        goto fail;
    }
    free(c);
    vp_from_other_releases(v, count);
    *rows = v;
    *n = count;
    return SC_OK;
fail:
    free(c);
    free(v);
    return rc;
}

int calib_published_latent_pending(const struct est_published *r)
{
    return r->latent && !strcmp(r->skip, latent_pending);
}

void calib_published_latent_widths(struct est_published *rows, size_t n, const char *family, const char *config,
                                   size_t len)
{
    struct est_model m;
    struct sc_error err;
    int rc = config ? spec_model_from_hf(config, len, 0, &m, NULL, &err) : SC_ENOTFOUND;
    for (size_t i = 0; i < n; i++) {
        struct est_published *r = &rows[i];
        if (!calib_published_latent_pending(r) || strcmp(r->family, family))
            continue;
        if (!config)
            snprintf(r->skip, sizeof r->skip, "latent attention (MLA): no %s.json gives its widths", family);
        else if (rc)
            snprintf(r->skip, sizeof r->skip, "latent attention (MLA): %s.json: %.60s", family, err.msg);
        else if (m.hidden != r->dims.hidden || m.heads != r->dims.heads || m.vocab != r->dims.vocab ||
                 !m.mla.kv_lora_rank)
            snprintf(r->skip, sizeof r->skip, "latent attention (MLA): %s.json is not the table's model", family);
        else {
            r->dims.mla = m.mla;
            r->skip[0] = '\0';
        }
    }
}

const char *calib_pub_software_name(enum est_pub_software s)
{
    return s == EST_PUB_MAXTEXT ? "MaxText" : s == EST_PUB_PAXML ? "PAXML" : "NeMo";
}

/* Row r's spec as run, its recomputation left to the memory model
 * ("auto"): every field the table gives or the recipes fix, in one place. */
static int spec_as_run(const struct est_published *r, struct est_spec *out, const struct hw_profile **hw,
                       struct sc_error *err)
{
    const struct est_model *m = &r->dims;
    int gb200 = !strcmp(r->gpu, "GB200"), tp = r->tp > 1;
    char moe[224] = "", mla[192] = "", vpp[64] = "", etp[32] = "", shard[40] = "", text[2048];
    if (m->moe.experts)
        snprintf(moe, sizeof moe,
                 ",\"moe\":{\"experts\":%lld,\"top_k\":%lld,\"ffn\":%lld,\"shared_experts\":%lld,"
                 "\"dense_layers\":%lld}",
                 (long long)m->moe.experts, (long long)m->moe.top_k,
                 (long long)(m->moe.ffn ? m->moe.ffn : m->ffn ? m->ffn : 4 * m->hidden),
                 (long long)m->moe.shared_experts, (long long)m->moe.dense_layers);
    if (m->mla.kv_lora_rank)
        snprintf(mla, sizeof mla,
                 ",\"mla\":{\"kv_lora_rank\":%lld,\"q_lora_rank\":%lld,\"qk_head_dim\":%lld,"
                 "\"qk_pos_emb_head_dim\":%lld,\"v_head_dim\":%lld}",
                 (long long)m->mla.kv_lora_rank, (long long)m->mla.q_lora_rank, (long long)m->mla.qk_head_dim,
                 (long long)m->mla.qk_pos_emb_head_dim, (long long)m->mla.v_head_dim);
    if (r->vp > 1) /* VP 1: one model chunk per rank */
        snprintf(vpp, sizeof vpp, ",\"schedule\":\"interleaved\",\"vpp\":%lld", (long long)r->vp);
    if (r->etp)
        snprintf(etp, sizeof etp, ",\"etp\":%lld", (long long)r->etp);
    if (r->fsdp && r->fsdp < r->dp * r->cp) /* hybrid: FSDP groups, replicated */
        snprintf(shard, sizeof shard, ",\"fsdp_shard\":%lld", (long long)r->fsdp);
    int len = snprintf(
        text, sizeof text,
        "{\"model\":{\"layers\":%lld,\"hidden\":%lld,\"heads\":%lld,\"kv_heads\":%lld,\"ffn\":%lld,"
        "\"mlp\":\"%s\",\"seq\":%lld,\"vocab\":%lld%s%s},"
        "\"parallel\":{\"tp\":%lld,\"pp\":%lld,\"cp\":%lld,\"dp\":%lld,\"ep\":%lld%s,\"micro_batch\":%lld,"
        "\"global_batch\":%lld%s%s},"
        "\"cluster\":{\"gpu\":\"%s\",\"gpus_per_node\":%d},"
        "\"options\":{\"dtype\":\"%s\",\"attention\":\"flash\",\"recompute\":\"auto\",\"zero_stage\":%d,"
        "\"sequence_parallel\":%s,\"tp_comm_overlap\":%s,\"overlap_grad_reduce\":true,"
        "\"overlap_param_gather\":true,\"grad_reduce_in_fp32\":false}}",
        (long long)m->layers, (long long)m->hidden, (long long)m->heads,
        (long long)(m->kv_heads ? m->kv_heads : m->heads), (long long)(m->ffn ? m->ffn : 4 * m->hidden),
        m->mlp == EST_MLP_SWIGLU ? "swiglu" : "gelu", (long long)m->seq, (long long)m->vocab, moe, mla,
        (long long)r->tp, (long long)r->pp, (long long)r->cp, (long long)r->dp, (long long)r->ep, etp,
        (long long)r->micro_batch, (long long)r->global_batch, vpp, shard, gb200 ? "gb200" : "h100-sxm",
        gb200 ? 72 : 8, cost_hw_dtype_name(r->dtype), r->fsdp ? 3 : 1, tp ? "true" : "false",
        tp ? "true" : "false");
    if (len < 0 || (size_t)len >= sizeof text)
        return sc_error_set(err, SC_EINVAL, "line %zu: spec too long", r->line);
    if (spec_load(text, (size_t)len, out, hw, err))
        return sc_error_prefix(err, "line %zu", r->line);
    return SC_OK;
}

int calib_published_spec(const struct est_published *r, struct est_spec *out, const struct hw_profile **hw,
                       int *fits, struct sc_error *err)
{
    struct est_spec asked;
    struct est_memory mem;
    int rc;
    *fits = 0;
    if ((rc = spec_as_run(r, &asked, hw, err)) ||
        (rc = spec_memory_resolve_recompute(&asked, (*hw)->hbm_gb, out, err)) ||
        (rc = spec_memory_estimate(out, (*hw)->hbm_gb, &mem, err)))
        return rc;
    *fits = mem.fits;
    spec_memory_release(&mem);
    return SC_OK;
}
