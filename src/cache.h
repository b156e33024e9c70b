/* cache.h - content-addressed disk cache of compiled variants.
 *
 * Layout: <dir>/v<CACHE_FORMAT>/<key[0:2]>/<key>/ holding
 *   source.cu, kernel.ptx, kernel.cubin, log.txt and manifest.txt (written last; readable
 *   "name = value" lines: "format = 1", "key = <key>", the caller's manifest_extra lines
 *   verbatim, then one "file <name> <size> <xxh3-64 hex>" line per data file).
 * The directory is made 0700 (with its missing parents); see cache_check_dir for what is
 * trusted. Writes go to a temporary directory <dir>/v1/tmp.XXXXXX and are published with rename(2),
 * which is atomic within one filesystem; a reader verifies sizes and checksums before use. A
 * bad entry is moved aside atomically (renamed to <dir>/v1/trash.XXXXXX, then deleted) and
 * rebuilt by the caller. */
#ifndef NJ_CACHE_H
#define NJ_CACHE_H

#include "common.h"

#define NJ_CACHE_FORMAT 1
/* The largest data file (source.cu, kernel.ptx, kernel.cubin, log.txt) an entry may hold, 64
 * MiB: real ones are well under 1 MiB. A bigger one (or a manifest that says so) makes the entry
 * corrupt before anything is read, and cache_store refuses to write one. */
#define NJ_CACHE_FILE_MAX ((unsigned long long)64 << 20)

typedef struct cache_entry {
    nj_buf source; /* rendered CUDA source */
    nj_buf ptx;
    nj_buf cubin;
    nj_buf log;
    nj_buf manifest_extra; /* caller's "name = value\n" lines (key fields, resources) */
} cache_entry;

void cache_entry_init(cache_entry *e);
void cache_entry_free(cache_entry *e);

typedef enum cache_result {
    CACHE_HIT = 0,
    CACHE_MISS = 1,
    CACHE_CORRUPT = 2, /* an entry was there but failed verification; it was moved aside */
    CACHE_ERROR = 3    /* I/O error other than "not there" */
} cache_result;

/* Look up key (32 hex chars) under dir. On CACHE_HIT, e is filled (its old contents freed; e
 * may be NULL to verify only); otherwise e is left as it was. On CACHE_CORRUPT, `why` says
 * what failed (e.g. "kernel.cubin: size 1234, manifest says 5678") and the entry was removed
 * so that a following cache_store can publish a good one. CACHE_ERROR (why says it) for a bad
 * key or an error that is not the entry's fault (EACCES, ENOMEM...); the entry is kept. */
cache_result cache_lookup(const char *dir, const char *key, cache_entry *e, char *why,
                          size_t why_n);

/* Publish an entry. Safe with many processes storing the same key at once: every one returns
 * 0 and exactly one entry remains, with no temporaries left behind. An existing good entry is
 * kept as it is (success); an existing bad one is replaced. manifest_extra must not contain NUL
 * bytes or lines starting with "file " (reserved); a missing final newline is added.
 * @return 0, or -1 with the reason in err. */
int cache_store(const char *dir, const char *key, const cache_entry *e, char *err,
                size_t err_n);

/* 1 if key is 32 lowercase hex digits (what nj_hash128_hex makes), else 0. Lookup and store
 * reject any other key. */
int cache_key_valid(const char *key);

/* Path of an entry's directory (whether or not it exists). */
void cache_entry_path(const char *dir, const char *key, char *out, size_t n);

/* Visit every entry, in key order: cb(key, entry_dir, ok, why, user) where ok = 1 if it
 * verifies (why is "" then). Only reports: bad entries are left in place. cb may be NULL.
 * @return number of entries visited, or -1 if dir cannot be read (a missing dir is 0). */
typedef void (*cache_visit_fn)(const char *key, const char *entry_dir, int ok,
                               const char *why, void *user);
int cache_foreach(const char *dir, cache_visit_fn cb, void *user);

/* Copy the manifest of entry key under dir (good or bad, NUL-terminated, cut to n - 1 bytes)
 * into out. Every component below dir is opened relative to its parent's fd with O_NOFOLLOW,
 * as lookups do; nothing is verified. @return the length copied, or -1 (errno) when there is no
 * such entry, it cannot be read, the manifest is not a regular file or is larger than 1 MiB. */
int cache_read_manifest(const char *dir, const char *key, char *out, size_t n);

/* Remove every entry (good or bad), temporary and trash under dir/v<CACHE_FORMAT>, and empty
 * prefix dirs. A store running at the same moment may fail (its temporary is removed).
 * @return entries removed (0 for a missing dir), -1 on error (err says the first). */
int cache_clear(const char *dir, char *err, size_t err_n);

/* Default cache dir: $NVFP4JIT_CACHE_DIR, else $XDG_CACHE_HOME/nvfp4jit, else
 * $HOME/.cache/nvfp4jit. Empty values count as unset; a relative XDG_CACHE_HOME is ignored
 * (the XDG spec calls it invalid). @return 0, -1 if none can be formed, -2 if it does not fit
 * in n (out is "" on both). */
int cache_default_dir(char *out, size_t n);

/* Trust model (README "Trust and limits"), like ssh's StrictModes and git's safe.directory.
 * The cache directory itself may be a symlink (the user named it); below it nothing is
 * followed: every component is opened relative to its parent's fd with O_NOFOLLOW, files
 * O_NONBLOCK and fstat'ed before a byte is read, and a cubin must be a CUDA ELF for the
 * entry's SM before it counts. */
typedef enum cache_trust {
    CACHE_TRUSTED = 0,   /* ours, and only we can write it (or it does not exist yet) */
    CACHE_READ_ONLY = 1, /* another user's, writable only by them: lookups only */
    CACHE_UNTRUSTED = 2  /* writable by others (group/world without the sticky bit), or not a
                            directory: not used at all */
} cache_trust;

/* What may be done with dir; why says why not (empty for CACHE_TRUSTED). dir/v1, when there,
 * must also be a directory not writable by others (sticky aside) owned by us, root or dir's
 * owner, or the result is CACHE_UNTRUSTED. Lookups, stores, foreach and clear check the same on
 * every call, and the same rule for each prefix and entry directory they open (foreach reads any
 * directory: it only reports, an entry below an untrusted one as bad). */
cache_trust cache_check_dir(const char *dir, char *why, size_t why_n);

#endif
