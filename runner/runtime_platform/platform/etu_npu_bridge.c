/*
 * etu's Ethos-U driver layer for the emulated board (QEMU mps3-an547 has no NPU).
 *
 * ExecuTorch's EthosUBackend, unmodified, calls the Ethos-U core driver's API: reserve a
 * driver, invoke a command stream with its base addresses, release. This layer implements
 * exactly that part of the API and touches no NPU register: each invoke becomes one request
 * on the board's UART1 to etu, which reads the command stream and the regions from the
 * board's DDR (QEMU maps it from a memory file etu shares), executes the NPU operations on
 * them in place, and answers with a status and one line for the log. Regions outside the DDR
 * (SRAM scratch) are bounced through a DDR area past the linker script's DDR region.
 *
 * Written for etu; the wire format is runner/npu_bridge.py's (both sides change together).
 *
 *   request:  "ETUNPUQ1" seq cmd_addr cmd_size count {addr size board_addr}*count   (u32 LE)
 *   answer:   "ETUNPUA1" seq status(i32) text_length(u32) text
 */

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <ethosu_driver.h>

#define REG32(address) (*(volatile uint32_t *)(address))

/* CMSDK APB UART1, secure alias: QEMU connects the second -serial to it. */
#define BRIDGE_UART 0x59304000u
#define UART_DATA (BRIDGE_UART + 0x00u)
#define UART_STATE (BRIDGE_UART + 0x04u)
#define UART_CTRL (BRIDGE_UART + 0x08u)
#define UART_BAUDDIV (BRIDGE_UART + 0x10u)
#define UART_TX_FULL 0x1u
#define UART_RX_FULL 0x2u

/* QEMU mps3-an547's DDR window, which etu sees as its memory file. */
#define DDR_START 0x60000000u
#define DDR_END 0xE0000000u
/* Upstream's Corstone-300.ld places DDR at 0x70000000 + 0x60000000 bytes: the rest of the
 * window is never allocated by the link and serves as the bounce area. */
#define BOUNCE_START 0xD0000000u
#define BOUNCE_END DDR_END

#define MAX_BASES 8
#define MAX_TEXT 200

static struct ethosu_driver etu_bridge_driver;
static uint32_t etu_bridge_sequence;
static int etu_bridge_ready;

static void uart_init(void) {
    if (!etu_bridge_ready) {
        REG32(UART_BAUDDIV) = 16u;
        REG32(UART_CTRL) = 0x3u; /* TX and RX enable */
        etu_bridge_ready = 1;
    }
}

static void send_bytes(const void *data, size_t size) {
    const uint8_t *bytes = (const uint8_t *)data;
    for (size_t i = 0; i < size; i++) {
        while (REG32(UART_STATE) & UART_TX_FULL) {
        }
        REG32(UART_DATA) = bytes[i];
    }
}

static void send_word(uint32_t word) {
    uint8_t bytes[4] = {(uint8_t)word, (uint8_t)(word >> 8), (uint8_t)(word >> 16),
                        (uint8_t)(word >> 24)};
    send_bytes(bytes, sizeof(bytes));
}

static uint8_t receive_byte(void) {
    while (!(REG32(UART_STATE) & UART_RX_FULL)) {
    }
    return (uint8_t)REG32(UART_DATA);
}

static uint32_t receive_word(void) {
    uint32_t word = 0;
    for (int i = 0; i < 4; i++) {
        word |= (uint32_t)receive_byte() << (8 * i);
    }
    return word;
}

static int in_ddr(uint32_t address, uint32_t size) {
    return address >= DDR_START && size <= DDR_END - address;
}

struct ethosu_driver *ethosu_reserve_driver(void) { return &etu_bridge_driver; }

void ethosu_release_driver(struct ethosu_driver *drv) { (void)drv; }

int ethosu_invoke_v3(struct ethosu_driver *drv, const void *custom_data_ptr,
                     const int custom_data_size, uint64_t *const base_addr,
                     const size_t *base_addr_size, const int num_base_addr, void *user_arg) {
    (void)drv;
    (void)user_arg;
    uint32_t cmd = (uint32_t)(uintptr_t)custom_data_ptr;
    if (num_base_addr < 0 || num_base_addr > MAX_BASES || custom_data_size < 0 ||
        !in_ddr(cmd, (uint32_t)custom_data_size)) {
        printf("E [executorch:etu_npu_bridge.c:%d ethosu_invoke_v3()] etu-npu: the command stream at "
               "0x%08lx (%d B) or its %d base addresses are outside what the bridge serves\n",
               __LINE__, (unsigned long)cmd, custom_data_size, num_base_addr);
        return -1;
    }
    uint32_t addresses[MAX_BASES];
    uint32_t bounced[MAX_BASES];
    uint32_t next_bounce = BOUNCE_START;
    for (int i = 0; i < num_base_addr; i++) {
        uint32_t address = (uint32_t)base_addr[i];
        uint32_t size = (uint32_t)base_addr_size[i];
        bounced[i] = 0;
        addresses[i] = address;
        if (size == 0 || in_ddr(address, size)) {
            continue;
        }
        if (size > BOUNCE_END - next_bounce) {
            printf("E [executorch:etu_npu_bridge.c:%d ethosu_invoke_v3()] etu-npu: base %d (%lu B at "
                   "0x%08lx) does not fit the DDR bounce area\n",
                   __LINE__, i, (unsigned long)size, (unsigned long)address);
            return -1;
        }
        memcpy((void *)(uintptr_t)next_bounce, (const void *)(uintptr_t)address, size);
        addresses[i] = next_bounce;
        bounced[i] = 1;
        next_bounce = (next_bounce + size + 15u) & ~15u;
    }

    uart_init();
    uint32_t sequence = ++etu_bridge_sequence;
    send_bytes("ETUNPUQ1", 8);
    send_word(sequence);
    send_word(cmd);
    send_word((uint32_t)custom_data_size);
    send_word((uint32_t)num_base_addr);
    for (int i = 0; i < num_base_addr; i++) {
        send_word(addresses[i]);
        send_word((uint32_t)base_addr_size[i]);
        send_word((uint32_t)base_addr[i]);
    }

    /* The answer: find the magic (anything before it is skipped), then the fields. */
    static const char magic[] = "ETUNPUA1";
    size_t matched = 0;
    while (matched < 8) {
        uint8_t byte = receive_byte();
        matched = (byte == (uint8_t)magic[matched]) ? matched + 1 : (byte == (uint8_t)magic[0]);
    }
    uint32_t answered = receive_word();
    int32_t status = (int32_t)receive_word();
    uint32_t length = receive_word();
    char text[MAX_TEXT + 1];
    for (uint32_t i = 0; i < length; i++) {
        uint8_t byte = receive_byte();
        if (i < MAX_TEXT) {
            text[i] = (byte >= 0x20 && byte < 0x7f) ? (char)byte : '?';
        }
    }
    text[length < MAX_TEXT ? length : MAX_TEXT] = '\0';

    for (int i = 0; i < num_base_addr; i++) {
        if (bounced[i]) {
            memcpy((void *)(uintptr_t)(uint32_t)base_addr[i],
                   (const void *)(uintptr_t)addresses[i], base_addr_size[i]);
        }
    }
    if (answered != sequence) {
        printf("E [executorch:etu_npu_bridge.c:%d ethosu_invoke_v3()] etu-npu: answer %lu to request "
               "%lu\n", __LINE__, (unsigned long)answered, (unsigned long)sequence);
        return -1;
    }
    printf("%c [executorch:etu_npu_bridge.c:%d ethosu_invoke_v3()] etu-npu: %s\n",
           status == 0 ? 'I' : 'E', __LINE__, text);
    return status == 0 ? 0 : -1;
}
