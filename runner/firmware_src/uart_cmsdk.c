/*
 * Polled CMSDK APB UART output (see uart_cmsdk.h). No printf: newlib's would triple the
 * image and the runner-like lines need only text, decimal and hex numbers.
 */
#include "uart_cmsdk.h"

#define UART_REG(offset) (*(volatile uint32_t *)(ETU_UART0_BASE + (offset)))
#define UART_DATA UART_REG(0x00)
#define UART_STATE UART_REG(0x04)
#define UART_CTRL UART_REG(0x08)
#define UART_BAUDDIV UART_REG(0x10)
#define UART_STATE_TX_FULL 1u
#define UART_CTRL_TX_ENABLE 1u
#define APB_CLOCK_HZ 25000000u

void uart_init(uint32_t baud) {
  uint32_t div = APB_CLOCK_HZ / (baud ? baud : 115200u);
  UART_BAUDDIV = div < 16u ? 16u : div; /* the UART needs at least 16 */
  UART_CTRL = UART_CTRL_TX_ENABLE;
}

void uart_putc(char c) {
  while (UART_STATE & UART_STATE_TX_FULL) {
  }
  UART_DATA = (uint32_t)(unsigned char)c;
}

void uart_puts(const char *text) {
  while (*text) {
    uart_putc(*text++);
  }
}

void uart_put_dec(uint32_t value) {
  char digits[10];
  int n = 0;
  do {
    digits[n++] = (char)('0' + value % 10u);
    value /= 10u;
  } while (value);
  while (n) {
    uart_putc(digits[--n]);
  }
}

void uart_put_hex(uint32_t value) {
  static const char hex[] = "0123456789abcdef";
  int shift = 28;
  uart_puts("0x");
  while (shift > 0 && ((value >> shift) & 0xfu) == 0) {
    shift -= 4;
  }
  for (; shift >= 0; shift -= 4) {
    uart_putc(hex[(value >> shift) & 0xfu]);
  }
}
