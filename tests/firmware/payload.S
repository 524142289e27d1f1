/* The S-mode payload of tests/tests/firmware.rs: OpenSBI's fw_jump (Debian's opensbi
   package) runs on `vmm machine` with the machine's device tree and jumps here, at
   0x80200000, in S-mode with a1 = the device tree it passes on. Prints through the SBI
   (legacy console putchar), checks a1's magic, and shuts down through SBI SRST, which
   OpenSBI carries out with the syscon-poweroff node (the SiFive test finisher): the run
   ends with status 0. */
    .section .text.payload, "ax"
    .globl payload
payload:
    mv s1, a1
    la s0, hello
    call puts
    lwu t0, 0(s1)
    li t1, 0xedfe0dd0       /* 0xd00dfeed, stored big-endian */
    la s0, no_fdt
    bne t0, t1, 1f
    la s0, fdt
1:  call puts
    li a7, 0x53525354       /* SRST */
    li a6, 0                /* system reset */
    li a0, 0                /* shutdown */
    li a1, 0                /* no reason */
    ecall
2:  j 2b

/* Prints the string at s0. */
puts:
    mv s2, ra
1:  lbu a0, 0(s0)
    beqz a0, 2f
    li a7, 1                /* legacy console putchar */
    ecall
    addi s0, s0, 1
    j 1b
2:  mv ra, s2
    ret

hello:  .asciz "payload: S-mode under the firmware\n"
fdt:    .asciz "payload: a1 is a device tree\n"
no_fdt: .asciz "payload: a1 is not a device tree\n"
