/* profiler/json.h: a small streaming JSON writer.
 *
 * The trace is written straight to a file (plain or gzip) through a 64 KiB
 * buffer; nothing is built in memory. The writer places commas itself
 * (a stack of "first element" flags), escapes strings completely (quotes,
 * backslashes, control characters) and replaces bytes that are not UTF-8
 * with U+FFFD, so any kernel or NVTX name yields valid JSON. Errors are
 * sticky: after a failed write every call is a no-op and prof_json_close
 * reports it. */
#ifndef PROFILER_JSON_H
#define PROFILER_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define PROF_JSON_DEPTH 16

struct prof_json {
    void *sink;  /* FILE * or gzFile */
    int gzip;
    int error;   /* sticky */
    int depth;
    uint8_t has_items[PROF_JSON_DEPTH];
    int after_key;
    size_t len;
    uint64_t written; /* bytes given to the sink (uncompressed) */
    char buf[1 << 16];
};

/* Open path for writing (gzip when `gzip`). 0 or -1. */
int prof_json_open(struct prof_json *w, const char *path, int gzip);
/* Write to an open stream (open_memstream, say); closing the writer closes it. */
void prof_json_open_stream(struct prof_json *w, FILE *f);
/* Open on a memory-less sink that discards output, for measuring (bench). */
void prof_json_open_null(struct prof_json *w);
/* Flush and close. 0, or -1 if any write failed. */
int prof_json_close(struct prof_json *w);

void prof_json_begin_object(struct prof_json *w);
void prof_json_end_object(struct prof_json *w);
void prof_json_begin_array(struct prof_json *w);
void prof_json_end_array(struct prof_json *w);
/* A key: a literal of the program's, ASCII without quotes or backslashes. */
void prof_json_key(struct prof_json *w, const char *key);
void prof_json_str(struct prof_json *w, const char *s);
void prof_json_strn(struct prof_json *w, const char *s, size_t n);
void prof_json_int(struct prof_json *w, int64_t v);
void prof_json_uint(struct prof_json *w, uint64_t v);
/* Nanoseconds as Kineto writes microseconds: "1234.567". */
void prof_json_us(struct prof_json *w, int64_t ns);
/* A double with `decimals` decimals (finite values only; others are 0). */
void prof_json_double(struct prof_json *w, double v, int decimals);
void prof_json_bool(struct prof_json *w, int v);
void prof_json_null(struct prof_json *w);

/* key + value shorthands */
void prof_json_kstr(struct prof_json *w, const char *key, const char *s);
void prof_json_kint(struct prof_json *w, const char *key, int64_t v);
void prof_json_kuint(struct prof_json *w, const char *key, uint64_t v);
void prof_json_kus(struct prof_json *w, const char *key, int64_t ns);

#endif
