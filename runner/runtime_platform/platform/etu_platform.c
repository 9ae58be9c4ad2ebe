/*
 * etu's platform layer for ExecuTorch's arm_executor_runner on the Corstone-300/AN547
 * (QEMU mps3-an547) and Corstone-320 memory maps. It stands in for Arm's Ethos-U
 * core_platform, which is not public on the project's registries: vector table, reset
 * (copy/zero tables from upstream's linker script, FPU on), a fault handler printing the
 * fault status registers, PC and LR, output on CMSDK UART0, exit by system reset and, with
 * the Ethos-U delegate, the NPU's initialisation before main and its interrupt.
 *
 * Written for etu (not copied from Arm's core_platform). Build options:
 *   ETU_ETHOSU=1        initialise the Ethos-U driver before main and route its IRQ
 *   ETU_CORSTONE_320=1  Corstone-320 addresses (Ethos-U85)
 *   ETU_FAULT_ON_START  fault on purpose before main (tests of the fault path)
 */

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define REG32(address) (*(volatile uint32_t *)(address))

/* CMSDK APB UART0, secure alias (the CPU starts in Secure state). */
#define UART0_BASE 0x59303000u
#define UART_DATA (UART0_BASE + 0x00u)
#define UART_STATE (UART0_BASE + 0x04u)
#define UART_CTRL (UART0_BASE + 0x08u)
#define UART_BAUDDIV (UART0_BASE + 0x10u)

/* System control block. */
#define SCB_CPACR 0xE000ED88u
#define SCB_AIRCR 0xE000ED0Cu
#define SCB_SHCSR 0xE000ED24u
#define SCB_CFSR 0xE000ED28u
#define SCB_HFSR 0xE000ED2Cu
#define SCB_MMFAR 0xE000ED34u
#define SCB_BFAR 0xE000ED38u
#define NVIC_ISER0 0xE000E100u

#if defined(ETU_ETHOSU)
#include <ethosu_driver.h>
#if defined(ETU_CORSTONE_320)
#define ETU_NPU_BASE 0x50004000u /* Ethos-U85, Corstone-320 FVP, secure */
#define ETU_NPU_IRQ 16
#else
#define ETU_NPU_BASE 0x48102000u /* Ethos-U55/U65, Corstone-300 / AN547, secure */
#define ETU_NPU_IRQ 56
#endif
static struct ethosu_driver etu_npu_driver;
#endif

#define ETU_IRQ_COUNT 64

extern uint32_t __StackTop;
extern uint32_t __copy_table_start__;
extern uint32_t __copy_table_end__;
extern uint32_t __zero_table_start__;
extern uint32_t __zero_table_end__;
extern void _start(void) __attribute__((noreturn));

void Reset_Handler(void) __attribute__((noreturn));
void etu_fault_handler(void) __attribute__((naked));
void etu_default_handler(void);
#if defined(ETU_ETHOSU)
void etu_npu_irq_handler(void);
#endif

typedef void (*vector_t)(void);

__attribute__((section(".vectors"), used)) const vector_t etu_vectors[16 + ETU_IRQ_COUNT] = {
    [0] = (vector_t)&__StackTop,
    [1] = Reset_Handler,
    [2] = etu_default_handler,  /* NMI */
    [3] = etu_fault_handler,    /* HardFault */
    [4] = etu_fault_handler,    /* MemManage */
    [5] = etu_fault_handler,    /* BusFault */
    [6] = etu_fault_handler,    /* UsageFault */
    [7] = etu_fault_handler,    /* SecureFault */
    [11] = etu_default_handler, /* SVC */
    [12] = etu_default_handler, /* DebugMon */
    [14] = etu_default_handler, /* PendSV */
    [15] = etu_default_handler, /* SysTick */
#if defined(ETU_ETHOSU)
    [16 + ETU_NPU_IRQ] = etu_npu_irq_handler,
#endif
};

static void uart_init(void) {
  REG32(UART_BAUDDIV) = 25000000u / 115200u;
  REG32(UART_CTRL) = 1u; /* TX enable */
}

static void uart_putc(char c) {
  while (REG32(UART_STATE) & 1u) {
  }
  REG32(UART_DATA) = (uint32_t)(unsigned char)c;
}

static void uart_puts(const char *text) {
  while (*text) {
    uart_putc(*text++);
  }
}

static void uart_hex(uint32_t value) {
  static const char digits[] = "0123456789abcdef";
  uart_puts("0x");
  for (int shift = 28; shift >= 0; shift -= 4) {
    uart_putc(digits[(value >> shift) & 0xfu]);
  }
}

static void system_reset(void) __attribute__((noreturn));
static void system_reset(void) {
  __asm volatile("dsb 0xf" ::: "memory");
  REG32(SCB_AIRCR) = (0x5FAu << 16) | (1u << 2); /* VECTKEY | SYSRESETREQ */
  __asm volatile("dsb 0xf" ::: "memory");
  for (;;) {
  }
}

void Reset_Handler(void) {
  /* FPU (CP10, CP11) full access before any floating-point code runs. */
  REG32(SCB_CPACR) |= (0xFu << 20);
  __asm volatile("dsb 0xf\n isb 0xf" ::: "memory");
  /* Usage, bus and memory faults reported as themselves, not escalated. */
  REG32(SCB_SHCSR) |= (7u << 16);
  for (uint32_t *entry = &__copy_table_start__; entry < &__copy_table_end__; entry += 3) {
    const uint32_t *from = (const uint32_t *)entry[0];
    uint32_t *to = (uint32_t *)entry[1];
    for (uint32_t i = 0; i < entry[2]; i++) {
      to[i] = from[i];
    }
  }
  for (uint32_t *entry = &__zero_table_start__; entry < &__zero_table_end__; entry += 2) {
    uint32_t *to = (uint32_t *)entry[0];
    for (uint32_t i = 0; i < entry[1]; i++) {
      to[i] = 0;
    }
  }
  uart_init();
  _start(); /* newlib: constructors, main, exit */
}

/* The stacked frame: r0 r1 r2 r3 r12 lr pc xpsr. */
void etu_fault_report(uint32_t *frame, uint32_t exc_return) __attribute__((noreturn, used));
void etu_fault_report(uint32_t *frame, uint32_t exc_return) {
  uint32_t ipsr;
  __asm volatile("mrs %0, ipsr" : "=r"(ipsr));
  /* ExecuTorch's et_pal_abort() in the runner is __builtin_trap(): a UDF instruction.
   * That is the runtime stopping after the error it printed, not a fault: say so. */
  if ((REG32(SCB_CFSR) & (1u << 16)) && (*(const uint16_t *)(frame[6] & ~1u) & 0xFF00u) == 0xDE00u) {
    uart_puts("\r\nE [etu_platform] runtime abort (et_pal_abort: trap) at PC=");
    uart_hex(frame[6]);
    uart_puts(" LR=");
    uart_hex(frame[5]);
    uart_puts(": the runner stopped after the error above\r\n");
    system_reset();
  }
  uart_puts("\r\nHard fault. irq=");
  uint32_t exception = ipsr & 0x1ffu;
  /* irq numbers as CMSIS counts them: exception number - 16 (HardFault = -13). */
  if (exception < 16) {
    uart_putc('-');
    uint32_t negative = 16u - exception;
    if (negative >= 10) uart_putc((char)('0' + negative / 10));
    uart_putc((char)('0' + negative % 10));
  } else {
    uart_putc((char)('0' + (exception - 16) / 10 % 10));
    uart_putc((char)('0' + (exception - 16) % 10));
  }
  uart_puts(", pc=");
  uart_hex(frame[6]);
  uart_puts(", lr=");
  uart_hex(frame[5]);
  uart_puts(", xpsr=");
  uart_hex(frame[7]);
  uart_puts(", sp=");
  uart_hex((uint32_t)(frame + 8));
  uart_puts(", exc_return=");
  uart_hex(exc_return);
  uart_puts("\r\n            cfsr=");
  uart_hex(REG32(SCB_CFSR));
  uart_puts(" hfsr=");
  uart_hex(REG32(SCB_HFSR));
  uart_puts(" bfar=");
  uart_hex(REG32(SCB_BFAR));
  uart_puts(" mmfar=");
  uart_hex(REG32(SCB_MMFAR));
  uart_puts("\r\nE [etu_platform] CFSR=");
  uart_hex(REG32(SCB_CFSR));
  uart_puts(" HFSR=");
  uart_hex(REG32(SCB_HFSR));
  uart_puts(" MMFAR=");
  uart_hex(REG32(SCB_MMFAR));
  uart_puts(" BFAR=");
  uart_hex(REG32(SCB_BFAR));
  uart_puts(" PC=");
  uart_hex(frame[6]);
  uart_puts(" LR=");
  uart_hex(frame[5]);
  uart_puts("\r\n");
  system_reset();
}

void etu_fault_handler(void) {
  __asm volatile(
      "tst lr, #4\n"
      "ite eq\n"
      "mrseq r0, msp\n"
      "mrsne r0, psp\n"
      "mov r1, lr\n"
      "b etu_fault_report\n");
}

void etu_default_handler(void) {
  uart_puts("\r\nE [etu_platform] unexpected exception, stopping\r\n");
  system_reset();
}

/* newlib hooks (nosys.specs leaves these to the platform). */
int _write(int fd, const char *data, int length) {
  (void)fd;
  for (int i = 0; i < length; i++) {
    if (data[i] == '\n') {
      uart_putc('\r');
    }
    uart_putc(data[i]);
  }
  return length;
}

void _exit(int status) __attribute__((noreturn));
void _exit(int status) {
  (void)status;
  system_reset(); /* QEMU's -no-reboot turns the reset into an exit */
}

/* newlib's aligned_alloc (used by flatcc in the ETDump writer) calls posix_memalign, which
 * this newlib does not provide; memalign's blocks can be given to free(). */
#include <errno.h>
#include <malloc.h>
__attribute__((weak)) int posix_memalign(void **out, size_t alignment, size_t size) {
  void *block = memalign(alignment, size);
  if (block == NULL) {
    return ENOMEM;
  }
  *out = block;
  return 0;
}

#if defined(ETU_ETHOSU)
void etu_npu_irq_handler(void) { ethosu_irq_handler(&etu_npu_driver); }

/* arm_executor_runner.cpp never initialises the NPU: do it before main. */
extern unsigned char *ethosu_fast_scratch __attribute__((weak));
extern size_t ethosu_fast_scratch_size __attribute__((weak));

__attribute__((constructor)) static void etu_npu_init(void) {
  void *fast = &ethosu_fast_scratch ? (void *)ethosu_fast_scratch : NULL;
  size_t fast_size = &ethosu_fast_scratch_size ? ethosu_fast_scratch_size : 0;
  if (ethosu_init(&etu_npu_driver, (void *)ETU_NPU_BASE, fast, fast_size, 1, 1) != 0) {
    printf("E [etu_platform] Ethos-U init failed at 0x%08lx: no NPU here; stopping\n",
           (unsigned long)ETU_NPU_BASE);
    _exit(1);
  }
  REG32(NVIC_ISER0 + 4u * (ETU_NPU_IRQ / 32)) = 1u << (ETU_NPU_IRQ % 32);
}
#endif

#if defined(ETU_FAULT_ON_START)
/* A deliberate fault: a store to an address with no memory behind it. */
__attribute__((constructor)) static void etu_fault_on_start(void) {
  printf("I [etu_platform] ETU_FAULT_ON_START: faulting on purpose\n");
  REG32(0xF0000000u) = 0xdeadbeefu;
}
#endif
