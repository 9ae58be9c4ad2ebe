/*
 * etu's bare-metal stand-in for ExecuTorch's arm_executor_runner (Corstone-300/320).
 *
 * Same section names, symbol names, alignment and pool-size macros as the runner described
 * in runtime_formats.md §6.2-6.3, so the ELF, the ld map and ld's --print-memory-usage of a
 * link of this file look like the real firmware's. It does not execute a program: main()
 * only touches each pool and walks the kernel registry, printing runner-like lines over
 * UART0 (uart_cmsdk.c) that say so. Reset_Handler is a start-up that boots on QEMU's
 * mps3-an547 (Cortex-M55, Corstone-300 map); the end is SYSRESETREQ, which QEMU run with
 * -no-reboot turns into its own exit.
 *
 * Build-time knobs (all optional):
 *   ET_PTE_FILE_PATH                                   "path" of the .pte to embed (model_pte)
 *   ET_ARM_BAREMETAL_METHOD_ALLOCATOR_POOL_SIZE        method pool (default 60 MiB)
 *   ET_ARM_BAREMETAL_SCRATCH_TEMP_ALLOCATOR_POOL_SIZE  temp pool / Ethos-U scratch (2 MiB)
 *   ET_ARM_BAREMETAL_FAST_SCRATCH_TEMP_ALLOCATOR_POOL_SIZE  Dedicated_Sram fast scratch
 *   ET_ARM_BAREMETAL_PLANNED_FAST_MEMORY_SIZE          planned buffer mem_id 3 pool
 *   SEMIHOSTING + ET_ARM_BAREMETAL_SEMIHOSTING_FILE_ALLOCATOR_POOL_SIZE  file pool (60 MiB)
 *   ET_NUM_INFERENCES                                  kept in .data (default 1)
 */
#include "runner_stub.h"
#include "uart_cmsdk.h"

#ifndef ET_ARM_BAREMETAL_METHOD_ALLOCATOR_POOL_SIZE
#define ET_ARM_BAREMETAL_METHOD_ALLOCATOR_POOL_SIZE (60 * 1024 * 1024)
#endif
#ifndef ET_ARM_BAREMETAL_SCRATCH_TEMP_ALLOCATOR_POOL_SIZE
#define ET_ARM_BAREMETAL_SCRATCH_TEMP_ALLOCATOR_POOL_SIZE 0x200000
#endif
#ifndef ET_ARM_BAREMETAL_SEMIHOSTING_FILE_ALLOCATOR_POOL_SIZE
#define ET_ARM_BAREMETAL_SEMIHOSTING_FILE_ALLOCATOR_POOL_SIZE (60 * 1024 * 1024)
#endif
#ifndef ET_NUM_INFERENCES
#define ET_NUM_INFERENCES 1
#endif

#define ET_POOL(name) __attribute__((section(name), aligned(16)))

/* ------------------------------------------------------------------ the program (PTE) */

#ifdef ET_PTE_FILE_PATH
/* The runner's model_pte.h holds the bytes as a C array; .incbin gives the same symbol,
   section and alignment without a 4x larger header. */
__asm__(".section network_model_sec, \"a\", %progbits\n"
        ".balign 16\n"
        ".global model_pte\n"
        ".type model_pte, %object\n"
        "model_pte:\n"
        ".incbin \"" ET_PTE_FILE_PATH "\"\n"
        ".size model_pte, . - model_pte\n"
        "model_pte_end:\n"
        ".previous\n");
extern const unsigned char model_pte[];
extern const unsigned char model_pte_end[];
#endif

/* -------------------------------------------------------------------------- the pools */

unsigned char method_allocation_pool[ET_ARM_BAREMETAL_METHOD_ALLOCATOR_POOL_SIZE] ET_POOL(
    ".bss.method_allocator_sec");

unsigned char temp_allocation_pool[ET_ARM_BAREMETAL_SCRATCH_TEMP_ALLOCATOR_POOL_SIZE] ET_POOL(
    ".bss.tensor_arena");

#ifdef ET_ARM_BAREMETAL_FAST_SCRATCH_TEMP_ALLOCATOR_POOL_SIZE
static unsigned char dedicated_sram[ET_ARM_BAREMETAL_FAST_SCRATCH_TEMP_ALLOCATOR_POOL_SIZE]
    ET_POOL(".bss.ethosu_scratch");
/* The Ethos-U driver finds its fast scratch (base address 2) through these two. */
unsigned char *ethosu_fast_scratch = dedicated_sram;
size_t ethosu_fast_scratch_size = sizeof(dedicated_sram);
#endif

#ifdef ET_ARM_BAREMETAL_PLANNED_FAST_MEMORY_SIZE
unsigned char planned_fast_memory_pool[ET_ARM_BAREMETAL_PLANNED_FAST_MEMORY_SIZE] ET_POOL(
    ".fast_memory");
#endif

#ifdef SEMIHOSTING
unsigned char input_file_allocation_pool[ET_ARM_BAREMETAL_SEMIHOSTING_FILE_ALLOCATOR_POOL_SIZE]
    ET_POOL(".bss.input_file_allocator_sec");
#endif

/* ------------------------------------------------------------------ the kernel registry */

/* Like ExecuTorch's generated registration: operator names as string literals next to the
   kernel functions, one entry per operator selected at build time. */
static const struct et_kernel kernels_to_register[] = {
#define ET_KERNEL(ident, name) {name, ident},
#include "selected_ops.inc"
#undef ET_KERNEL
    {0, 0},
};

volatile uint32_t et_kernel_invocations;
uint32_t et_num_inferences = ET_NUM_INFERENCES;

/* Initialised data the linker scripts run from fast RAM (.sram.data: BRAM on Corstone-300,
   SRAM on Corstone-320), copied there from its load image by Reset_Handler. */
__attribute__((section(".sram.data"))) uint32_t et_inference_counts[4] = {0, 0, 0, 0};

/* ----------------------------------------------------------------------- start-up code */

extern uint32_t __StackTop;
extern const uint32_t __copy_table_start__[], __copy_table_end__[];
extern const uint32_t __zero_table_start__[], __zero_table_end__[];

int main(void);
void Reset_Handler(void);
void Default_Handler(void);
void system_exit(void);

void Default_Handler(void) {
  for (;;) {
  }
}

__attribute__((section(".vectors"), used)) const void *const vector_table[16] = {
    &__StackTop, Reset_Handler, Default_Handler, Default_Handler, Default_Handler,
    Default_Handler, Default_Handler, 0, 0, 0, 0, Default_Handler, Default_Handler, 0,
    Default_Handler, Default_Handler,
};

/* Copy each (load, run, words) triple, zero each (run, words) pair, then run main. */
void Reset_Handler(void) {
  for (const uint32_t *entry = __copy_table_start__; entry < __copy_table_end__; entry += 3) {
    const volatile uint32_t *from = (const uint32_t *)entry[0];
    volatile uint32_t *to = (uint32_t *)entry[1];
    for (uint32_t i = 0; i < entry[2]; ++i) {
      to[i] = from[i];
    }
  }
  for (const uint32_t *entry = __zero_table_start__; entry < __zero_table_end__; entry += 2) {
    volatile uint32_t *to = (uint32_t *)entry[0];
    for (uint32_t i = 0; i < entry[1]; ++i) {
      to[i] = 0;
    }
  }
  /* Full access to the FPU (CP10, CP11) before any code may use it. */
  *(volatile uint32_t *)0xE000ED88u |= (0xFu << 20);
  main();
  system_exit();
}

/* SYSRESETREQ through AIRCR: a board resets, QEMU with -no-reboot exits. */
void system_exit(void) {
  __asm__ volatile("dsb 0xf" ::: "memory");
  *(volatile uint32_t *)0xE000ED0Cu = 0x05FA0004u;
  __asm__ volatile("dsb 0xf" ::: "memory");
  Default_Handler();
}

/* ---------------------------------------------------------------------------- main */

/* One line in the runner's log format: "I [executorch:<file>:<line> <fn>()] <text>". */
static void log_start(uint32_t line, const char *function) {
  uart_puts("I [executorch:arm_executor_runner.cpp:");
  uart_put_dec(line);
  uart_putc(' ');
  uart_puts(function);
  uart_puts("()] ");
}

static void log_text(uint32_t line, const char *function, const char *text) {
  log_start(line, function);
  uart_puts(text);
  uart_putc('\n');
}

static void log_size(uint32_t line, const char *function, const char *text, uint32_t size,
                     const char *unit) {
  log_start(line, function);
  uart_puts(text);
  uart_put_dec(size);
  uart_puts(unit);
  uart_putc('\n');
}

int main(void) {
  volatile unsigned char sink = 0;
  uart_init(115200u);
  uart_puts("etu stand-in runner firmware: runs no model, prints what the runner prints\n");
#ifdef ET_PTE_FILE_PATH
  log_start(912, "runner_init");
  uart_puts("PTE @ ");
  uart_put_hex((uint32_t)(uintptr_t)model_pte);
  uart_puts(" [----");
  for (int i = 4; i < 8; ++i) {
    uart_putc((char)model_pte[i]);
  }
  uart_puts("]\n");
  log_size(917, "runner_init", "PTE Model data loaded. Size: ",
           (uint32_t)(model_pte_end - model_pte), " bytes.");
  sink ^= model_pte[4]; /* 'E' of the "ET12" identifier */
#else
  log_text(1021, "runner_init", "Model data is not initialized");
#endif
  log_size(968, "runner_init", "Setup Method allocator pool. Size: ",
           (uint32_t)sizeof(method_allocation_pool), " bytes.");
  method_allocation_pool[0] = sink;
  temp_allocation_pool[0] = sink;
#ifdef ET_ARM_BAREMETAL_FAST_SCRATCH_TEMP_ALLOCATOR_POOL_SIZE
  ethosu_fast_scratch[ethosu_fast_scratch_size - 1] = sink;
#endif
#ifdef ET_ARM_BAREMETAL_PLANNED_FAST_MEMORY_SIZE
  planned_fast_memory_pool[0] = sink;
#endif
#ifdef SEMIHOSTING
  input_file_allocation_pool[0] = sink;
#endif
  log_size(1140, "run_model", "Starting running ", et_num_inferences, " inferences...");
  void *args[2] = {(void *)&sink, 0};
  for (uint32_t run = 0; run < et_num_inferences; ++run) {
    for (const struct et_kernel *k = kernels_to_register; k->name; ++k) {
      k->fn(args, 2);
    }
    et_inference_counts[run & 3]++;
  }
  log_size(1172, "run_model", "", et_num_inferences, " inferences finished");
  log_size(1210, "log_mem_status", "kernel stub calls: ", et_kernel_invocations, "");
  log_size(1210, "log_mem_status", "temp_allocator:            ",
           (uint32_t)sizeof(temp_allocation_pool), "");
  log_text(1381, "main", "Program complete, exiting.");
  return 0;
}
