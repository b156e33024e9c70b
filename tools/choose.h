/* choose.h - the subcommands that choose variants (variants, explain, tune, warm) and the
 * instruction-mix wrapper of inspect (--mix), with the helpers they share. Kept apart from
 * tool.h so that they can be added without touching the other subcommands. */
#ifndef NJ_TOOL_CHOOSE_H
#define NJ_TOOL_CHOOSE_H

#include "tool.h"

int cmd_variants(int argc, char **argv); /* cmd_explain.c */
int cmd_explain(int argc, char **argv);  /* cmd_explain.c */
int cmd_tune(int argc, char **argv);     /* cmd_tune.c */
int cmd_warm(int argc, char **argv);     /* cmd_tune.c */
/* `inspect`: cmd_inspect of cmd_compile.c, plus --mix (cmd_mix.c). */
int cmd_inspect_mix(int argc, char **argv);

/* Parse "sm_90a,sm_100a" into archs (deduplicated, in order, at most cap).
 * @return the count, or -1 after a usage message. */
int tool_parse_arch_list(const char *cmd, const char *s, nvfp4jit_arch *out, int cap);
/* The device's arch when it runs one, else sm_90a and sm_100a. @return the count (out has
 * room for 2). */
int tool_default_archs(nvfp4jit_ctx *ctx, nvfp4jit_arch *out);

#endif
