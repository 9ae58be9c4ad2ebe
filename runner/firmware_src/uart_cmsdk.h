/*
 * A polled driver for the Arm CMSDK APB UART (UART0 of the MPS3 AN547/AN552 images).
 *
 * The CPU leaves reset in Secure state, where UART0 is at 0x59303000 (0x49303000 is the
 * non-secure alias). Registers: DATA +0x00, STATE +0x04 (bit 0 TX full), CTRL +0x08
 * (bit 0 TX enable), BAUDDIV +0x10 (APB clock 25 MHz). Output only: the runner never reads.
 */
#ifndef ETU_UART_CMSDK_H
#define ETU_UART_CMSDK_H

#include <stdint.h>

#ifndef ETU_UART0_BASE
#define ETU_UART0_BASE 0x59303000u
#endif

void uart_init(uint32_t baud);
void uart_putc(char c);
void uart_puts(const char *text);
void uart_put_dec(uint32_t value);
void uart_put_hex(uint32_t value);

#endif /* ETU_UART_CMSDK_H */
