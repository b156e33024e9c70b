/* main.c - the nvfp4jit command: global options and the subcommand table. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <string.h>

#include "choose.h"
#include "tool.h"

/* The subcommands. Later ones (variants, explain, tune, warm) are one more line here and a
 * cmd_*.c file that defines their run function. */
static const tool_cmd tool_commands[] = {
    {"compile", "render and compile one variant (or load it from the cache)", cmd_compile},
    {"inspect", "print a variant's source, PTX, SASS, log, resources or --mix", cmd_inspect_mix},
    {"cache", "show, list, verify or clear the disk cache", cmd_cache},
    {"demo", "plan, compile and (on a GPU) run and check the grouped GEMM", cmd_demo},
    {"bench", "time the chosen variant against cuBLAS fp16/bf16 (needs a GPU)", cmd_bench},
    {"variants", "list the valid variant space of an arch", cmd_variants},
    {"explain", "show the heuristic's candidates, their costs and why the winner won", cmd_explain},
    {"tune", "time the best candidates on the GPU and store the winner (needs a GPU)", cmd_tune},
    {"warm", "compile the variant space (or each set's choice) into the cache in parallel", cmd_warm},
    {NULL, NULL, NULL},
};

static void main_help(FILE *f) {
    fprintf(f,
            "usage: nvfp4jit [--cache-dir DIR] [--no-disk-cache] COMMAND [OPTIONS]\n"
            "\n"
            "Render, compile, cache and run NVFP4 block-scaled grouped GEMM kernels\n"
            "(sm_90a: H100/H200, sm_100a: B200). Library %s.\n"
            "\n"
            "commands:\n",
            nvfp4jit_version_string());
    for (const tool_cmd *c = tool_commands; c->name; c++)
        fprintf(f, "  %-10s %s\n", c->name, c->summary);
    fprintf(f,
            "\n"
            "common options (before or after COMMAND):\n"
            "  --cache-dir DIR   cache directory (default: $NVFP4JIT_CACHE_DIR,\n"
            "                    $XDG_CACHE_HOME/nvfp4jit or ~/.cache/nvfp4jit)\n"
            "  --no-disk-cache   do not read or write the disk cache\n"
            "  --help, -h        help (of a command: nvfp4jit COMMAND --help)\n"
            "  --version         print the version\n"
            "\n"
            "exit status: 0 success, 1 library/device failure or failed check, 2 bad usage\n");
}

int main(int argc, char **argv) {
    tool_g.argv0 = argv[0];
    int i = 1;
    /* global options before the command */
    for (; i < argc && argv[i][0] == '-'; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            main_help(stdout);
            return 0;
        }
        if (!strcmp(a, "--version")) {
            printf("nvfp4jit %s (library %s)\n", NVFP4JIT_VERSION_STRING,
                   nvfp4jit_version_string());
            if (nvfp4jit_version_number() != NVFP4JIT_VERSION_NUMBER) {
                fprintf(stderr, "nvfp4jit: header/library version mismatch\n");
                return 1;
            }
            return 0;
        }
        if (!strcmp(a, "--no-disk-cache")) {
            tool_g.no_disk_cache = 1;
            continue;
        }
        if (!strcmp(a, "--cache-dir") || !strncmp(a, "--cache-dir=", 12)) {
            if (a[11] == '=') {
                tool_g.cache_dir = a + 12;
            } else if (i + 1 < argc) {
                tool_g.cache_dir = argv[++i];
            } else {
                fprintf(stderr, "nvfp4jit: option --cache-dir needs an argument\n");
                return 2;
            }
            if (!*tool_g.cache_dir) {
                fprintf(stderr, "nvfp4jit: --cache-dir: empty directory name\n");
                return 2;
            }
            continue;
        }
        fprintf(stderr, "nvfp4jit: unknown option '%s'\nTry 'nvfp4jit --help'.\n", a);
        return 2;
    }
    if (i >= argc) {
        fprintf(stderr, "nvfp4jit: missing command\n\n");
        main_help(stderr);
        return 2;
    }
    for (const tool_cmd *c = tool_commands; c->name; c++)
        if (!strcmp(c->name, argv[i])) return c->run(argc - i, argv + i);
    if (!strcmp(argv[i], "help")) {
        if (i + 1 < argc) {
            for (const tool_cmd *c = tool_commands; c->name; c++) {
                if (!strcmp(c->name, argv[i + 1])) {
                    static char help_flag[] = "--help";
                    char *hv[] = {argv[i + 1], help_flag, NULL};
                    return c->run(2, hv);
                }
            }
        } else {
            main_help(stdout);
            return 0;
        }
    }
    fprintf(stderr, "nvfp4jit: unknown command '%s' (commands:", argv[i]);
    for (const tool_cmd *c = tool_commands; c->name; c++) fprintf(stderr, " %s", c->name);
    fprintf(stderr, ")\nTry 'nvfp4jit --help'.\n");
    return 2;
}
