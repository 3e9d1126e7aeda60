// Instructions and their expected kbench.targets.a64 classes (after //), assembled by
// clang-19 in suites/test_counts.py and classified from the encoded words.
b .                                                          // control
bl .                                                         // control
br x0                                                        // control
blr x1                                                       // control
ret                                                          // control
b.ne .                                                       // control
cbz x0, .                                                    // control
cbnz w0, .                                                   // control
tbz x0, #3, .                                                // control
tbnz x0, #3, .                                               // control
svc #0                                                       // other
nop                                                          // other
msr nzcv, x0                                                 // other
mrs x0, nzcv                                                 // other
dmb ish                                                      // other
cmp x0, #1                                                   // control
cmp x0, x1                                                   // control
cmn x0, #1                                                   // control
tst x0, #1                                                   // control
tst x0, x1                                                   // control
subs x0, x1, #1                                              // control
adds x0, x1, x2                                              // control
ands x0, x1, x2                                              // control
bics x0, x1, x2                                              // control
ccmp x0, x1, #0, ne                                          // control
ccmn x0, #1, #0, eq                                          // control
adcs x0, x1, x2                                              // control
add x0, x1, #1                                               // other
sub x0, x1, x2                                               // other
mov x0, x1                                                   // other
movz x0, #1                                                  // other
movk x0, #1, lsl #16                                         // other
adrp x0, .                                                   // other
adr x0, .                                                    // other
and x0, x1, #1                                               // other
csel x0, x1, x2, ne                                          // other
madd x0, x1, x2, x3                                          // other
msub x0, x1, x2, x3                                          // other
umulh x0, x1, x2                                             // other
udiv x0, x1, x2                                              // other
lsl x0, x1, #3                                               // other
ubfx x0, x1, #3, #4                                          // other
ldr x0, [x1]                                                 // load
ldr x0, [x1, #8]!                                            // load
ldr x0, [x1], #8                                             // load
ldr x0, [x1, x2]                                             // load
ldr w0, [x1, #4]                                             // load
ldrsw x0, [x1]                                               // load
ldrsh x0, [x1]                                               // load
ldrb w0, [x1]                                                // load
ldrh w0, [x1]                                                // load
ldur x0, [x1, #-8]                                           // load
ldr q0, [x1]                                                 // load
ldr d0, [x1]                                                 // load
ldr h0, [x1]                                                 // load
ldr s0, [x1, x2, lsl #2]                                     // load
ldur q0, [x1, #-16]                                          // load
ldp x0, x1, [sp]                                             // load
ldp q0, q1, [x0, #32]                                        // load
ldpsw x0, x1, [x2]                                           // load
ldnp q0, q1, [x0]                                            // load
ld1 {v0.8h}, [x0]                                            // load
ld1 {v0.8h, v1.8h}, [x0], #32                                // load
ld1r {v0.8h}, [x0]                                           // load
ld1 {v0.h}[3], [x0]                                          // load
ld4 {v0.8h-v3.8h}, [x0]                                      // load
ldar x0, [x1]                                                // load
ldaxr x0, [x1]                                               // load
ldxr x0, [x1]                                                // load
ldadd x0, x1, [x2]                                           // load
ldaddal x0, x1, [x2]                                         // load
swpa x0, x1, [x2]                                            // load
swpl x0, x1, [x2]                                            // load
casa x0, x1, [x2]                                            // load
ldapr x0, [x1]                                               // load
prfm pldl1keep, [x0]                                         // load
str x0, [x1]                                                 // store
str x0, [x1, #8]!                                            // store
str w0, [x1, x2]                                             // store
strb w0, [x1]                                                // store
strh w0, [x1]                                                // store
stur x0, [x1, #-8]                                           // store
str q0, [x1]                                                 // store
str h0, [x1]                                                 // store
str s0, [x1, #4]                                             // store
stur q0, [x1, #-16]                                          // store
stp x29, x30, [sp, #-16]!                                    // store
stp q0, q1, [x0]                                             // store
stnp q0, q1, [x0]                                            // store
st1 {v0.8h}, [x0]                                            // store
st1 {v0.8h, v1.8h}, [x0], #32                                // store
st1 {v0.h}[3], [x0]                                          // store
st4 {v0.8h-v3.8h}, [x0]                                      // store
stlr x0, [x1]                                                // store
stxr w3, x0, [x1]                                            // store
stlxr w3, x0, [x1]                                           // store
fmla v0.8h, v1.8h, v2.8h                                     // mla
fmla v0.4s, v1.4s, v2.4s                                     // mla
fmla v0.2d, v1.2d, v2.2d                                     // mla
fmls v0.8h, v1.8h, v2.8h                                     // mla
fmls v0.4s, v1.4s, v2.4s                                     // mla
fmla v0.8h, v1.8h, v2.h[3]                                   // mla
fmla v0.4s, v1.4s, v2.s[1]                                   // mla
fmls v0.4s, v1.4s, v2.s[1]                                   // mla
fmla h0, h1, v2.h[3]                                         // mla
fmla s0, s1, v2.s[1]                                         // mla
fmlal v0.4s, v1.4h, v2.4h                                    // mla
fmlal2 v0.4s, v1.4h, v2.4h                                   // mla
fmlsl v0.4s, v1.4h, v2.4h                                    // mla
fmlsl2 v0.4s, v1.4h, v2.4h                                   // mla
fmlal v0.4s, v1.4h, v2.h[3]                                  // mla
fmlal2 v0.4s, v1.4h, v2.h[7]                                 // mla
fmlsl v0.4s, v1.4h, v2.h[3]                                  // mla
fmlsl2 v0.4s, v1.4h, v2.h[3]                                 // mla
mla v0.4s, v1.4s, v2.4s                                      // mla
mls v0.8h, v1.8h, v2.8h                                      // mla
mla v0.4s, v1.4s, v2.s[1]                                    // mla
smlal v0.4s, v1.4h, v2.4h                                    // mla
umlal2 v0.4s, v1.8h, v2.8h                                   // mla
smlal v0.4s, v1.4h, v2.h[1]                                  // mla
fmadd s0, s1, s2, s3                                         // mla
fmsub d0, d1, d2, d3                                         // mla
fnmadd h0, h1, h2, h3                                        // mla
sdot v0.4s, v1.16b, v2.16b                                   // dot
udot v0.4s, v1.16b, v2.4b[1]                                 // dot
usdot v0.4s, v1.16b, v2.16b                                  // dot
bfdot v0.4s, v1.8h, v2.8h                                    // dot
bfdot v0.4s, v1.8h, v2.2h[1]                                 // dot
bfmlalb v0.4s, v1.8h, v2.8h                                  // mla
fmul v0.8h, v1.8h, v2.8h                                     // other
fmul v0.4s, v1.4s, v2.s[1]                                   // other
fadd v0.4s, v1.4s, v2.4s                                     // other
fcvtl v0.4s, v1.4h                                           // other
fcvtl2 v0.4s, v1.8h                                          // other
fcvtn v0.4h, v1.4s                                           // other
fmax v0.8h, v1.8h, v2.8h                                     // other
fmin v0.4s, v1.4s, v2.4s                                     // other
fcmgt v0.4s, v1.4s, v2.4s                                    // other
movi v0.2d, #0                                               // other
mvni v0.4s, #1                                               // other
dup v0.8h, w0                                                // other
mov v0.16b, v1.16b                                           // other
ext v0.16b, v1.16b, v2.16b, #4                               // other
fcvt s0, h0                                                  // other
fcmp s0, s1                                                  // other
fcsel s0, s1, s2, ne                                         // other
fmov s0, w1                                                  // other
fnmul s0, s1, s2                                             // other
fadd s0, s1, s2                                              // other
ucvtf s0, w1                                                 // other
ptrue p0.b                                                   // control
ptrue p0.s, vl4                                              // control
pfalse p1.b                                                  // control
whilelt p1.h, x25, x2                                        // control
whilelo p1.s, x0, x1                                         // control
whilelt p4.s, xzr, x26                                       // control
and p0.b, p1/z, p2.b, p3.b                                   // control
ptest p0, p1.b                                               // control
cntp x0, p0, p1.s                                            // control
pnext p0.s, p1, p0.s                                         // control
cmpeq p0.s, p1/z, z0.s, z1.s                                 // control
cmpgt p0.s, p1/z, z0.s, #3                                   // control
cmphi p0.s, p1/z, z0.s, #3                                   // control
fcmgt p0.s, p1/z, z0.s, z1.s                                 // control
fcmge p0.h, p1/z, z0.h, #0.0                                 // control
fcmeq p0.s, p1/z, z0.s, z1.s                                 // control
incw x0                                                      // other
decw x0                                                      // other
cntw x16                                                     // other
cntb x0                                                      // other
addvl x23, x23, #4                                           // other
addpl x0, x0, #1                                             // other
rdvl x0, #1                                                  // other
dup z28.s, #0                                                // other
dup z0.s, w1                                                 // other
mov z0.s, #1                                                 // other
fdup z0.s, #1.0                                              // other
add z0.s, z0.s, #1                                           // other
mul z0.s, z0.s, #3                                           // other
fmla z0.s, p0/m, z1.s, z2.s                                  // mla
fmls z0.h, p0/m, z1.h, z2.h                                  // mla
fnmla z0.s, p0/m, z1.s, z2.s                                 // mla
fmad z0.s, p0/m, z1.s, z2.s                                  // mla
fmsb z0.s, p0/m, z1.s, z2.s                                  // mla
fmla z0.s, z1.s, z2.s[1]                                     // mla
fmla z0.h, z1.h, z2.h[1]                                     // mla
fmls z0.d, z1.d, z2.d[1]                                     // mla
fmlalb z0.s, z1.h, z2.h                                      // mla
fmlalt z0.s, z1.h, z2.h                                      // mla
fmlalb z0.s, z1.h, z2.h[1]                                   // mla
fmlslt z0.s, z1.h, z2.h                                      // mla
bfmlalb z0.s, z1.h, z2.h                                     // mla
fdot z0.s, z1.h, z2.h                                        // dot
fdot z0.s, z1.h, z2.h[1]                                     // dot
bfdot z0.s, z1.h, z2.h                                       // dot
bfdot z0.s, z1.h, z2.h[1]                                    // dot
sdot z0.s, z1.b, z2.b                                        // dot
udot z0.d, z1.h, z2.h                                        // dot
sdot z0.s, z1.b, z2.b[1]                                     // dot
usdot z0.s, z1.b, z2.b                                       // dot
mla z0.s, p0/m, z1.s, z2.s                                   // mla
mls z0.s, p0/m, z1.s, z2.s                                   // mla
mad z0.s, p0/m, z1.s, z2.s                                   // mla
mla z0.s, z1.s, z2.s[1]                                      // mla
smlalb z0.s, z1.h, z2.h                                      // mla
mul z0.s, z1.s, z2.s[1]                                      // other
fmul z0.s, z1.s, z2.s[1]                                     // other
fmul z0.s, p0/m, z0.s, z1.s                                  // other
fadd z2.s, z2.s, z28.s                                       // other
fadd z0.s, p0/m, z0.s, z1.s                                  // other
fcvt z2.s, p0/m, z2.h                                        // other
fcvt z2.h, p0/m, z2.s                                        // other
fmax z0.s, p0/m, z0.s, z1.s                                  // other
fmaxnm z0.s, p0/m, z0.s, #1.0                                // other
fmin z0.s, p0/m, z0.s, z1.s                                  // other
fclamp z0.s, z1.s, z2.s                                      // other
sel z0.s, p0, z1.s, z2.s                                     // other
mov z0.s, p0/m, z1.s                                         // other
uzp1 z0.h, z1.h, z2.h                                        // other
ld1h {z2.s}, p0/z, [x19]                                     // load
ld1h {z3.s}, p0/z, [x19, #1, mul vl]                         // load
ld1rw {z30.s}, p0/z, [x0, #4]                                // load
ld1rqh {z8.h}, p1/z, [x23]                                   // load
ld1rh {z8.h}, p1/z, [x23]                                    // load
ld1w {z0.s}, p0/z, [x0, z1.s, uxtw #2]                       // load
ld1d {z0.d}, p0/z, [x0, z1.d]                                // load
ldr z0, [x0]                                                 // load
ldr p0, [x0]                                                 // load
prfb pldl1keep, p0, [x0]                                     // load
st1h {z2.s}, p0, [x19]                                       // store
st1h {z2.h}, p0, [x19, x1, lsl #1]                           // store
st1w {z0.s}, p0, [x0, z1.s, uxtw #2]                         // store
str z0, [x0]                                                 // store
str p0, [x0]                                                 // store
fdot za.s[w8, 0, vgx2], {z0.h-z1.h}, z8.h[0]                 // dot
fdot za.s[w8, 0, vgx4], {z0.h-z3.h}, z8.h[1]                 // dot
fdot za.s[w8, 0, vgx2], {z0.h-z1.h}, z8.h                    // dot
fdot za.s[w8, 0, vgx4], {z0.h-z3.h}, z8.h                    // dot
fdot za.s[w8, 0, vgx2], {z0.h-z1.h}, {z2.h-z3.h}             // dot
fdot za.s[w8, 0, vgx4], {z0.h-z3.h}, {z4.h-z7.h}             // dot
bfdot za.s[w8, 0, vgx2], {z0.h-z1.h}, z8.h[0]                // dot
bfdot za.s[w8, 0, vgx4], {z0.h-z3.h}, z8.h                   // dot
sdot za.s[w8, 0, vgx2], {z0.b-z1.b}, z8.b[0]                 // dot
udot za.s[w8, 0, vgx4], {z0.b-z3.b}, {z4.b-z7.b}             // dot
sdot za.s[w8, 0, vgx2], {z0.h-z1.h}, z8.h                    // dot
usdot za.s[w8, 0, vgx2], {z0.b-z1.b}, z8.b                   // dot
fvdot za.s[w8, 0, vgx2], {z0.h-z1.h}, z8.h[0]                // dot
bfvdot za.s[w8, 0, vgx2], {z0.h-z1.h}, z8.h[0]               // dot
fmla za.s[w8, 0, vgx2], {z0.s-z1.s}, z8.s[0]                 // mla
fmla za.s[w8, 0, vgx4], {z0.s-z3.s}, z8.s                    // mla
fmla za.s[w8, 0, vgx2], {z0.s-z1.s}, {z2.s-z3.s}             // mla
fmls za.s[w8, 0, vgx4], {z0.s-z3.s}, {z4.s-z7.s}             // mla
fmla za.d[w8, 0, vgx2], {z0.d-z1.d}, z8.d[0]                 // mla
fmlal za.s[w8, 0:1], z0.h, z8.h[0]                           // mla
fmlal za.s[w8, 0:1, vgx2], {z0.h-z1.h}, z8.h[0]              // mla
fmlal za.s[w8, 0:1, vgx4], {z0.h-z3.h}, z8.h                 // mla
fmlal za.s[w8, 0:1], z0.h, z8.h                              // mla
fmlal za.s[w8, 0:1, vgx2], {z0.h-z1.h}, {z2.h-z3.h}          // mla
fmlsl za.s[w8, 0:1, vgx2], {z0.h-z1.h}, z8.h                 // mla
bfmlal za.s[w8, 0:1, vgx2], {z0.h-z1.h}, z8.h[0]             // mla
smlal za.s[w8, 0:1, vgx2], {z0.h-z1.h}, z8.h                 // mla
umlall za.s[w8, 0:3], z0.b, z8.b                             // mla
fmopa za0.s, p0/m, p0/m, z0.h, z4.h                          // outer
fmops za1.s, p0/m, p0/m, z0.h, z4.h                          // outer
fmopa za0.s, p0/m, p0/m, z0.s, z4.s                          // outer
fmopa za0.d, p0/m, p0/m, z0.d, z4.d                          // outer
bfmopa za0.s, p0/m, p0/m, z0.h, z4.h                         // outer
smopa za0.s, p0/m, p0/m, z0.b, z4.b                          // outer
umopa za0.s, p0/m, p0/m, z0.b, z4.b                          // outer
sumopa za0.s, p0/m, p0/m, z0.b, z4.b                         // outer
usmopa za0.s, p0/m, p0/m, z0.b, z4.b                         // outer
smopa za0.s, p0/m, p0/m, z0.h, z4.h                          // outer
bmopa za0.s, p0/m, p0/m, z0.s, z4.s                          // outer
ld1h {z0.h-z3.h}, pn8/z, [x23]                               // load
ld1h {z0.h-z1.h}, pn8/z, [x24, #2, mul vl]                   // load
st1h {z0.h-z3.h}, pn8, [x23]                                 // store
st1w {z0.s-z1.s}, pn8, [x23, x2, lsl #2]                     // store
ld1w {z0.s, z8.s}, pn8/z, [x23]                              // load
st1w {z0.s, z8.s}, pn8, [x23]                                // store
ld1w {za0h.s[w12, 0]}, p0/z, [x27]                           // load
st1w {za0h.s[w12, 0]}, p0, [x27]                             // store
ld1h {za0h.h[w12, 0]}, p0/z, [x27, x1, lsl #1]               // load
ldr za[w12, 0], [x0]                                         // load
str za[w12, 0], [x0]                                         // store
ldr zt0, [x0]                                                // load
str zt0, [x0]                                                // store
mova {z16.s-z19.s}, za0h.s[w12, 0:3]                         // other
mova za.d[w8, 0, vgx2], {z2.d-z3.d}                          // other
mova {z4.d-z5.d}, za.d[w8, 0, vgx2]                          // other
mova z0.s, p0/m, za0h.s[w12, 0]                              // other
mova za0h.s[w12, 0], p0/m, z0.s                              // other
zero {za}                                                    // other
addha za0.s, p0/m, p0/m, z0.s                                // other
add za.s[w8, 0, vgx2], {z0.s-z1.s}                           // other
fadd za.s[w8, 0, vgx2], {z0.s-z1.s}                          // other
fclamp {z0.s-z1.s}, z2.s, z3.s                               // other
fmax {z0.s-z1.s}, {z0.s-z1.s}, z4.s                          // other
zip {z0.s-z1.s}, z2.s, z3.s                                  // other
sel {z0.s-z1.s}, pn8, {z2.s-z3.s}, {z4.s-z5.s}               // other
fcvt z0.h, {z2.s-z3.s}                                       // other
ptrue pn8.h                                                  // control
whilelt pn8.s, x0, x1, vlx2                                  // control
whilelt {p0.s, p1.s}, x0, x1                                 // control
luti2 {z0.s-z1.s}, zt0, z2[0]                                // other
smstart                                                      // other
smstop                                                       // other
smstart sm                                                   // other
rdsvl x17, #1                                                // other
fmls za.s[w8, 0, vgx2], {z0.s-z1.s}, z8.s[0]                 // mla
fmla za.s[w8, 0, vgx4], {z0.s-z3.s}, z8.s[1]                 // mla
fmla za.d[w8, 0, vgx2], {z0.d-z1.d}, z8.d                    // mla
fmla za.d[w8, 0, vgx2], {z0.d-z1.d}, {z2.d-z3.d}             // mla
fmla za.d[w8, 0, vgx4], {z0.d-z3.d}, z8.d[1]                 // mla
fmla za.h[w8, 0, vgx2], {z0.h-z1.h}, z8.h[0]                 // mla
fmla za.h[w8, 0, vgx2], {z0.h-z1.h}, z8.h                    // mla
fmla za.h[w8, 0, vgx2], {z0.h-z1.h}, {z2.h-z3.h}             // mla
fmopa za0.h, p0/m, p0/m, z0.h, z4.h                          // outer
sdot za.d[w8, 0, vgx2], {z0.h-z1.h}, z8.h[0]                 // dot
sdot za.d[w8, 0, vgx2], {z0.h-z1.h}, z8.h                    // dot
udot za.s[w8, 0, vgx2], {z0.h-z1.h}, z8.h[1]                 // dot
svdot za.s[w8, 0, vgx2], {z0.h-z1.h}, z8.h[0]                // dot
fmlal za.s[w8, 0:1, vgx4], {z0.h-z3.h}, {z4.h-z7.h}          // mla
fmlal za.s[w8, 0:1, vgx4], {z0.h-z3.h}, z8.h[7]              // mla
fmlsl za.s[w8, 0:1], z0.h, z8.h[0]                           // mla
smlall za.s[w8, 0:3, vgx2], {z0.b-z1.b}, z8.b[0]             // mla
fadd za.s[w8, 0, vgx4], {z0.s-z3.s}                          // other
fsub za.d[w8, 0, vgx2], {z0.d-z1.d}                          // other
add za.s[w8, 0, vgx2], {z0.s-z1.s}, z4.s                     // other
add za.s[w8, 0, vgx2], {z0.s-z1.s}, {z4.s-z5.s}              // other
fmin {z0.s-z3.s}, {z0.s-z3.s}, {z4.s-z7.s}                   // other
sqrshr z0.h, {z2.s-z3.s}, #16                                // other
uzp {z0.s-z1.s}, z2.s, z3.s                                  // other
frintn {z0.s-z1.s}, {z2.s-z3.s}                              // other
movt x0, zt0[0]                                              // other
zero {zt0}                                                   // other
mova {z0.s-z1.s}, za0h.s[w12, 0:1]                           // other
mova za0h.s[w12, 0:3], {z0.s-z3.s}                           // other
ld1h {z0.h, z4.h, z8.h, z12.h}, pn8/z, [x0]                  // load
st1h {z0.h, z4.h, z8.h, z12.h}, pn8, [x0]                    // store
ldnt1h {z0.h-z1.h}, pn8/z, [x0]                              // load
ld1b {za0h.b[w12, 0]}, p0/z, [x0]                            // load
st1d {za0h.d[w12, 0]}, p0, [x0]                              // store
ld1q {za0h.q[w12, 0]}, p0/z, [x0]                            // load
st1q {za0h.q[w12, 0]}, p0, [x0]                              // store
