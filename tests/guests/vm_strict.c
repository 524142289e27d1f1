/*
 * vm_strict: the vm guest plus checks where QEMU departs from the
 * privileged specification (run on vmm only, not compared with QEMU;
 * re-checked against QEMU 10.0.2):
 *
 *  - An instruction page fault on the second half of a 32-bit instruction
 *    that straddles two pages reports the instruction's address in mepc
 *    (QEMU 7.2 reported the address of the second page; QEMU 10.0 agrees
 *    with the spec).
 *  - An AMO on an invalid PTE raises a store/AMO page fault, cause 15
 *    (QEMU 7.2 raised a load page fault, cause 13; QEMU 10.0 raises 15).
 *  - A page-table walk that reads no memory (root table at PA 0, or a
 *    pointer past the end of RAM) raises an access fault of the original
 *    access type (1, 5 or 7), as in step 2 of the translation algorithm
 *    (QEMU 7.2 and 10.0 raise a page fault).
 */
#define VM_STRICT
#define VM_NAME "vm_strict"
#include "vm.c"
