/* kb_cc.c — calling-convention checks of kernel and packer calls (checking
 * runs: kb_cc_set_checking).
 *
 * A checked call goes through kb_cc_invoke, a trampoline that saves the
 * caller's callee-saved registers, fills every callee-saved register with a
 * canary, loads the call's arguments (integer ones in registers, then on
 * the stack; floats in s0/s1 or xmm0/xmm1), calls, and compares each
 * callee-saved register with its canary afterwards. What the callee did
 * not restore is a bit in kb_cc_call.clobbered; the trampoline restores the
 * caller's registers (FPCR, MXCSR and the x87 control word included) either
 * way, so the run goes on.
 *   aarch64: x19..x29 (bits 0..10), d8..d15 (bits 12..19), FPCR (bit 20)
 *   x86_64:  rbx, rbp (bits 0, 1), r12..r15 (bits 2..5), the MXCSR control
 *            bits (bit 7), the x87 control word (bit 8)
 * The stack pointer: a callee that does not restore it leaves no frame to
 * return to; the trampoline traps (brk, ud2) instead of returning through it.
 * The SME state (SVCR, ZA) after a call is checked apart (kb_sme_state.c).
 *
 * The first violation of a call (any thread) is kept with what was called;
 * kb_cc_take turns it into the call's error. */
#include "kb_internal.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

_Static_assert(offsetof(kb_cc_call, fn) == 0, "kb_cc_call layout");
_Static_assert(offsetof(kb_cc_call, x) == 8, "kb_cc_call layout");
_Static_assert(offsetof(kb_cc_call, nx) == 136, "kb_cc_call layout");
_Static_assert(offsetof(kb_cc_call, f) == 144, "kb_cc_call layout");
_Static_assert(offsetof(kb_cc_call, ret) == 152, "kb_cc_call layout");
_Static_assert(offsetof(kb_cc_call, clobbered) == 160, "kb_cc_call layout");

#if defined(__aarch64__) && defined(__ELF__)
#define KB_HAVE_CC 1
__asm__(
    "    .text\n"
    "    .p2align 4\n"
    "    .globl kb_cc_invoke\n"
    "    .type kb_cc_invoke, %function\n"
    "kb_cc_invoke:\n"
    "    stp x29, x30, [sp, #-192]!\n"
    "    mov x29, sp\n"
    "    stp x19, x20, [sp, #16]\n"
    "    stp x21, x22, [sp, #32]\n"
    "    stp x23, x24, [sp, #48]\n"
    "    stp x25, x26, [sp, #64]\n"
    "    stp x27, x28, [sp, #80]\n"
    "    stp d8, d9, [sp, #96]\n"
    "    stp d10, d11, [sp, #112]\n"
    "    stp d12, d13, [sp, #128]\n"
    "    stp d14, d15, [sp, #144]\n"
    "    str x0, [sp, #160]\n"
    "    mrs x9, fpcr\n"
    "    str x9, [sp, #168]\n"
    "    movz x9, #0x4343\n"
    "    movk x9, #0x4b42, lsl #16\n"
    "    str x9, [sp, #176]\n"
    "    sub sp, sp, #64\n" /* up to 8 stack arguments */
    "    ldr w9, [x0, #136]\n"
    "    mov x10, #8\n"
    "1:  cmp x10, x9\n"
    "    b.ge 2f\n"
    "    add x11, x0, #8\n"
    "    ldr x12, [x11, x10, lsl #3]\n"
    "    sub x13, x10, #8\n"
    "    str x12, [sp, x13, lsl #3]\n"
    "    add x10, x10, #1\n"
    "    b 1b\n"
    "2:  movz x17, #0xca00\n"
    "    movk x17, #0x1a5e, lsl #16\n"
    "    movk x17, #0xcc6b, lsl #32\n"
    "    movk x17, #0x6b62, lsl #48\n"
    "    add x19, x17, #19\n"
    "    add x20, x17, #20\n"
    "    add x21, x17, #21\n"
    "    add x22, x17, #22\n"
    "    add x23, x17, #23\n"
    "    add x24, x17, #24\n"
    "    add x25, x17, #25\n"
    "    add x26, x17, #26\n"
    "    add x27, x17, #27\n"
    "    add x28, x17, #28\n"
    "    add x29, x17, #29\n"
    "    add x9, x17, #0x108\n"
    "    fmov d8, x9\n"
    "    add x9, x17, #0x109\n"
    "    fmov d9, x9\n"
    "    add x9, x17, #0x10a\n"
    "    fmov d10, x9\n"
    "    add x9, x17, #0x10b\n"
    "    fmov d11, x9\n"
    "    add x9, x17, #0x10c\n"
    "    fmov d12, x9\n"
    "    add x9, x17, #0x10d\n"
    "    fmov d13, x9\n"
    "    add x9, x17, #0x10e\n"
    "    fmov d14, x9\n"
    "    add x9, x17, #0x10f\n"
    "    fmov d15, x9\n"
    "    ldr x16, [x0, #0]\n"
    "    ldr s0, [x0, #144]\n"
    "    ldr s1, [x0, #148]\n"
    "    ldp x6, x7, [x0, #56]\n"
    "    ldp x4, x5, [x0, #40]\n"
    "    ldp x2, x3, [x0, #24]\n"
    "    ldp x0, x1, [x0, #8]\n"
    "    blr x16\n"
    "    add x9, sp, #64\n"
    "    ldr x10, [x9, #176]\n"
    "    movz x11, #0x4343\n"
    "    movk x11, #0x4b42, lsl #16\n"
    "    cmp x10, x11\n"
    "    b.ne 9f\n"
    "    ldr x10, [x9, #160]\n"
    "    str x0, [x10, #152]\n"
    "    mov w12, #0\n"
    "    movz x17, #0xca00\n"
    "    movk x17, #0x1a5e, lsl #16\n"
    "    movk x17, #0xcc6b, lsl #32\n"
    "    movk x17, #0x6b62, lsl #48\n"
#define KB_CC_X(reg, n, bit)                                                                          \
    "    add x13, x17, #" #n "\n"                                                                     \
    "    cmp " #reg ", x13\n"                                                                          \
    "    cset w14, ne\n"                                                                               \
    "    orr w12, w12, w14, lsl #" #bit "\n"
    KB_CC_X(x19, 19, 0) KB_CC_X(x20, 20, 1) KB_CC_X(x21, 21, 2) KB_CC_X(x22, 22, 3) KB_CC_X(x23, 23, 4)
    KB_CC_X(x24, 24, 5) KB_CC_X(x25, 25, 6) KB_CC_X(x26, 26, 7) KB_CC_X(x27, 27, 8) KB_CC_X(x28, 28, 9)
    KB_CC_X(x29, 29, 10)
#define KB_CC_D(reg, n, bit)                                                                          \
    "    fmov x13, " #reg "\n"                                                                         \
    "    add x15, x17, #" #n "\n"                                                                      \
    "    cmp x13, x15\n"                                                                               \
    "    cset w14, ne\n"                                                                               \
    "    orr w12, w12, w14, lsl #" #bit "\n"
    KB_CC_D(d8, 0x108, 12) KB_CC_D(d9, 0x109, 13) KB_CC_D(d10, 0x10a, 14) KB_CC_D(d11, 0x10b, 15)
    KB_CC_D(d12, 0x10c, 16) KB_CC_D(d13, 0x10d, 17) KB_CC_D(d14, 0x10e, 18) KB_CC_D(d15, 0x10f, 19)
    "    mrs x13, fpcr\n"
    "    ldr x14, [x9, #168]\n"
    "    cmp x13, x14\n"
    "    cset w15, ne\n"
    "    orr w12, w12, w15, lsl #20\n"
    "    msr fpcr, x14\n"
    "    str w12, [x10, #160]\n"
    "    add sp, sp, #64\n"
    "    ldp d14, d15, [sp, #144]\n"
    "    ldp d12, d13, [sp, #128]\n"
    "    ldp d10, d11, [sp, #112]\n"
    "    ldp d8, d9, [sp, #96]\n"
    "    ldp x27, x28, [sp, #80]\n"
    "    ldp x25, x26, [sp, #64]\n"
    "    ldp x23, x24, [sp, #48]\n"
    "    ldp x21, x22, [sp, #32]\n"
    "    ldp x19, x20, [sp, #16]\n"
    "    ldp x29, x30, [sp], #192\n"
    "    ret\n"
    "9:  brk #0x4b43\n" /* the callee did not restore the stack pointer */
    "    .size kb_cc_invoke, .-kb_cc_invoke\n");
#undef KB_CC_X
#undef KB_CC_D

static const char *const REGS[32] = {
    "x19", "x20", "x21", "x22", "x23", "x24", "x25", "x26", "x27", "x28", "x29 (the frame pointer)", NULL,
    "d8",  "d9",  "d10", "d11", "d12", "d13", "d14", "d15", "FPCR"};

#elif defined(__x86_64__) && defined(__ELF__)
#define KB_HAVE_CC 1
__asm__(
    "    .text\n"
    "    .p2align 4\n"
    "    .globl kb_cc_invoke\n"
    "    .type kb_cc_invoke, @function\n"
    "kb_cc_invoke:\n"
    "    push %rbp\n"
    "    mov %rsp, %rbp\n"
    "    push %rbx\n"
    "    push %r12\n"
    "    push %r13\n"
    "    push %r14\n"
    "    push %r15\n"
    "    sub $56, %rsp\n" /* -48 call, -56 mxcsr, -52 x87 cw, -64 magic, -72 / -76 scratch */
    "    mov %rdi, -48(%rbp)\n"
    "    stmxcsr -56(%rbp)\n"
    "    fnstcw -52(%rbp)\n"
    "    movabs $0x4b4243434b424343, %rax\n"
    "    mov %rax, -64(%rbp)\n"
    "    sub $80, %rsp\n" /* up to 10 stack arguments */
    "    mov 136(%rdi), %ecx\n"
    "    mov $6, %rax\n"
    "1:  cmp %rcx, %rax\n"
    "    jge 2f\n"
    "    mov 8(%rdi,%rax,8), %rdx\n"
    "    mov %rdx, -48(%rsp,%rax,8)\n"
    "    inc %rax\n"
    "    jmp 1b\n"
    "2:  movabs $0x6b62cc6b1a5eca00, %rax\n"
    "    lea 1(%rax), %rbx\n"
    "    lea 12(%rax), %r12\n"
    "    lea 13(%rax), %r13\n"
    "    lea 14(%rax), %r14\n"
    "    lea 15(%rax), %r15\n"
    "    mov %rdi, %r11\n"
    "    lea 2(%rax), %rbp\n"
    "    movss 144(%r11), %xmm0\n"
    "    movss 148(%r11), %xmm1\n"
    "    mov 8(%r11), %rdi\n"
    "    mov 16(%r11), %rsi\n"
    "    mov 24(%r11), %rdx\n"
    "    mov 32(%r11), %rcx\n"
    "    mov 40(%r11), %r8\n"
    "    mov 48(%r11), %r9\n"
    "    mov 0(%r11), %r11\n"
    "    mov $2, %eax\n"
    "    call *%r11\n"
    "    lea 176(%rsp), %r11\n" /* our frame pointer, if rsp came back unchanged */
    "    movabs $0x4b4243434b424343, %r10\n"
    "    cmp %r10, -64(%r11)\n"
    "    jne 9f\n"
    "    mov -48(%r11), %r10\n"
    "    mov %rax, 152(%r10)\n"
    "    xor %ecx, %ecx\n"
    "    movabs $0x6b62cc6b1a5eca00, %rax\n"
    "    lea 1(%rax), %rdx\n"
    "    cmp %rdx, %rbx\n"
    "    je 3f\n"
    "    or $1, %ecx\n"
    "3:  lea 2(%rax), %rdx\n"
    "    cmp %rdx, %rbp\n"
    "    je 4f\n"
    "    or $2, %ecx\n"
    "4:  lea 12(%rax), %rdx\n"
    "    cmp %rdx, %r12\n"
    "    je 5f\n"
    "    or $4, %ecx\n"
    "5:  lea 13(%rax), %rdx\n"
    "    cmp %rdx, %r13\n"
    "    je 6f\n"
    "    or $8, %ecx\n"
    "6:  lea 14(%rax), %rdx\n"
    "    cmp %rdx, %r14\n"
    "    je 7f\n"
    "    or $16, %ecx\n"
    "7:  lea 15(%rax), %rdx\n"
    "    cmp %rdx, %r15\n"
    "    je 8f\n"
    "    or $32, %ecx\n"
    "8:  stmxcsr -72(%r11)\n"
    "    mov -72(%r11), %edx\n"
    "    xor -56(%r11), %edx\n"
    "    and $0xffc0, %edx\n" /* the control bits; the status flags (0..5) may change */
    "    jz 10f\n"
    "    or $0x80, %ecx\n"
    "10: fnstcw -76(%r11)\n"
    "    movzwl -76(%r11), %edx\n"
    "    movzwl -52(%r11), %eax\n"
    "    cmp %edx, %eax\n"
    "    je 11f\n"
    "    or $0x100, %ecx\n"
    "11: ldmxcsr -56(%r11)\n"
    "    fldcw -52(%r11)\n"
    "    mov %ecx, 160(%r10)\n"
    "    mov %r11, %rbp\n"
    "    lea -40(%rbp), %rsp\n"
    "    pop %r15\n"
    "    pop %r14\n"
    "    pop %r13\n"
    "    pop %r12\n"
    "    pop %rbx\n"
    "    pop %rbp\n"
    "    ret\n"
    "9:  ud2\n" /* the callee did not restore the stack pointer */
    "    .size kb_cc_invoke, .-kb_cc_invoke\n");

static const char *const REGS[32] = {"rbx", "rbp (the frame pointer)", "r12", "r13", "r14", "r15", NULL,
                                     "the MXCSR control bits", "the x87 control word"};
#endif

static _Atomic int checking;
static _Atomic uint64_t checked_calls;

uint64_t kb_cc_checked_calls(void) { return atomic_load(&checked_calls); }
_Atomic uint32_t kb_cc_first_mask;
static char first_what[KB_NAME_LEN];
static atomic_flag first_taken = ATOMIC_FLAG_INIT;

void kb_cc_set_checking(int on) { atomic_store(&checking, on ? 1 : 0); }

int kb_cc_checking(void) {
#ifdef KB_HAVE_CC
    return atomic_load_explicit(&checking, memory_order_relaxed);
#else
    return 0;
#endif
}

/* The trampoline call in progress on this thread (for a fault's report). */
static _Thread_local const char *current_call;

const char *kb_cc_current_call(void) { return current_call; }

uint64_t kb_cc_run(const char *what, void *fn, unsigned nx, const uint64_t *x, unsigned nf, const float *f) {
    kb_cc_call c;
    memset(&c, 0, sizeof c);
    c.fn = fn;
    c.nx = nx > 16 ? 16 : nx;
    for (unsigned i = 0; i < c.nx; i++) c.x[i] = x[i];
    c.nf = nf > 2 ? 2 : nf;
    for (unsigned i = 0; i < c.nf; i++) c.f[i] = f[i];
#ifdef KB_HAVE_CC
    const char *outer = current_call;
    current_call = what;
    kb_cc_invoke(&c);
    current_call = outer;
    atomic_fetch_add_explicit(&checked_calls, 1, memory_order_relaxed);
#else
    (void)what;
    return 0;
#endif
    if (c.clobbered && !atomic_flag_test_and_set(&first_taken)) {
        snprintf(first_what, sizeof first_what, "%s", what);
        atomic_store(&kb_cc_first_mask, c.clobbered);
    }
    return c.ret;
}

kb_status kb_cc_take_violation(const char *who, kb_error *err) {
    uint32_t mask = atomic_exchange(&kb_cc_first_mask, 0);
    if (!mask) return KB_OK;
    char regs[160] = "";
    size_t used = 0;
#ifdef KB_HAVE_CC
    for (int b = 0; b < 32; b++) {
        if (!(mask & (1u << b)) || !REGS[b]) continue;
        int n = snprintf(regs + used, sizeof regs - used, "%s%s", used ? ", " : "", REGS[b]);
        if (n < 0 || (size_t)n >= sizeof regs - used) break;
        used += (size_t)n;
    }
#endif
    kb_status st = kb_fail(err, KB_ERR_INTERNAL, "ABI",
                           "calling convention: %s (%s) returned with %s not restored: callee-saved state "
                           "the caller relies on was clobbered",
                           who, first_what, used ? regs : "a callee-saved register");
    atomic_flag_clear(&first_taken);
    return st;
}
