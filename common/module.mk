# common/: errors, arenas, interning, growing arrays (and large ones that move
# their pages), time spans, libraries loaded on first use. libc only.
CORE_SRCS += common/error.c common/arena.c common/strtab.c common/vec.c common/pagevec.c common/i64map.c common/hugepage.c common/pool.c common/spans.c common/dynlib.c common/csv.c common/cancel.c
