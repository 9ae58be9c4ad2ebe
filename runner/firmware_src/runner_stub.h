/*
 * Shared declarations of etu's stand-in for ExecuTorch's bare-metal arm_executor_runner.
 *
 * The stub reproduces what a memory map of the real runner shows (section names, symbol
 * names, pool sizes and alignment, a kernel registry of operator-name strings) so that
 * etu's ELF tooling can be tested against a real GNU ld link. It runs nothing real.
 */
#ifndef ETU_RUNNER_STUB_H
#define ETU_RUNNER_STUB_H

#include <stddef.h>
#include <stdint.h>

/* A kernel receives opaque argument slots; the stubs only count and touch them. */
typedef void (*et_kernel_fn)(void **args, size_t count);

/* One registry entry: the operator's registry key ("ns::op.overload") and its function. */
struct et_kernel {
  const char *name;
  et_kernel_fn fn;
};

/* Bumped by every kernel stub; op_kernels.c is built position-independent, so this
   reference goes through the GOT and the image gets a real .got section. */
extern volatile uint32_t et_kernel_invocations;

/* selected_ops.inc holds one ET_KERNEL(identifier, "operator name") line per selected
   operator; it is generated at build time from the ops list (runner/firmware.py). */
#define ET_KERNEL(ident, name) void ident(void **args, size_t count);
#include "selected_ops.inc"
#undef ET_KERNEL

#endif /* ETU_RUNNER_STUB_H */
