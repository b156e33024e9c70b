/* tunedb.h - the tuning database (tdb_*) and problem-set signatures. Internal, not API.
 * Below the plan API (dispatch.c looks tuned variants up here); the tuner is tuner.c.
 *
 * File: <cache_dir>/tune-v1.txt (TDB_FILE). Line 1 is the header TDB_HEADER. Every other
 * non-empty line that does not start with '#' is an entry of 7 tab-separated fields:
 *   device  sms  driver  library  signature  variant  median_us
 * e.g. "NVIDIA H200\t132\t12080\t0.1.0\tsm_90a:8x4096x7168*2,0x4096x7168\tsm90a:...\t12.345".
 * device is the driver's name with tabs/newlines replaced by blanks. A line that does not
 * parse (wrong field count, bad number or variant) is ignored with a warning. A file without
 * the header (another format, or not ours) is ignored as a whole with a warning, and the next
 * store replaces it.
 *
 * Writes (tdb_store): flock(LOCK_EX) on <file>.lock, read the file, replace the entry with the
 * same key (device, sms, driver, library, signature) or append it, write everything to a
 * temporary file in the same directory, fsync, rename(2) over the file, unlock. Readers take no
 * lock: rename is atomic, a reader sees the old or the new file. */
#ifndef NJ_TUNEDB_H
#define NJ_TUNEDB_H

#include "common.h"

#define TDB_FILE "tune-v1.txt"
#define TDB_HEADER "# nvfp4jit tuning database v1"
#define TDB_SIG_MAX 1024

typedef struct tdb_key {
    char device[256];
    int sms;
    int driver;       /* cuDriverGetVersion, e.g. 12080 */
    char library[32]; /* NVFP4JIT_VERSION_STRING */
    char sig[TDB_SIG_MAX];
} tdb_key;

typedef struct tdb_entry {
    tdb_key key;
    nvfp4jit_variant v;
    double us;
} tdb_entry;

/* The M bucket of the signature: 0 -> 0, 1..8 -> 8, else the next power of two >= m. */
int64_t tdb_m_bucket(int64_t m);

/* Problem-set signature: "<arch>:" then per group "<bucket(M)>x<N>x<K>", comma-separated, with
 * runs of r > 1 equal consecutive groups written once as "...*r" (e.g.
 * "sm_90a:8x4096x7168*3,0x4096x7168"). When that text does not fit TDB_SIG_MAX, the form is
 * "<arch>:g<count>:h<32 hex of XXH3-128 of the full text>". @return 0, -1 on bad arguments. */
int tdb_signature(nvfp4jit_arch arch, const nvfp4jit_group *g, size_t n, char *out,
                  size_t cap);

/* The key of the device the caller's current context belongs to (else device 0), with sig
 * copied in. Asks the driver only (no context is created). @return 0, -1 without a driver
 * or device. */
int tdb_device_key(const char *sig, tdb_key *key);

/* <cache_dir>/tune-v1.txt. @return 0, -1 if it does not fit (out is ""). */
int tdb_path(const char *cache_dir, char *out, size_t n);

/* Read and parse the database. *entries (malloc'ed, caller frees) gets the entries in file
 * order; *ignored the number of lines ignored (each one warned about on ctx, which may be
 * NULL). A missing file is an empty database. @return 0, -1 on a read error (errno). */
int tdb_load(nvfp4jit_ctx *ctx, const char *path, tdb_entry **entries, size_t *count,
             size_t *ignored);

/* Look up one key. @return 1 and *out when found (the last matching line wins), 0 when not,
 * -1 on a read error. */
int tdb_lookup(nvfp4jit_ctx *ctx, const char *path, const tdb_key *key, tdb_entry *out);

/* Insert or replace one entry (see above). @return 0, or -1 with the reason in err. */
int tdb_store(nvfp4jit_ctx *ctx, const char *path, const tdb_entry *e, char *err,
              size_t err_n);

/* Format one entry as a line (with '\n'). @return 0, -1 if it does not fit. */
int tdb_format(const tdb_entry *e, char *out, size_t n);

/* The plan-time lookup: the tuned variant for this problem set on this device, if any.
 * Silent without a driver/device or disk cache, or with ctx->no_tune (NVFP4JIT_NO_TUNE when
 * the context was created). @return 1 and
 * *v when a valid entry was found, else 0. */
int tune_lookup(nvfp4jit_ctx *ctx, nvfp4jit_arch arch, const nvfp4jit_group *g, size_t n,
                nvfp4jit_variant *v);

#endif
