"""Boards: profiles, ports, transfer methods, and the emulated board (QEMU)."""
