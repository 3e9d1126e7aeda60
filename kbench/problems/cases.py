"""Problem descriptions: one dataclass per operator, no data, no behaviour
beyond derived sizes. Inputs are generated from a case by kbench.inputs."""

from __future__ import annotations

from dataclasses import dataclass, field

B_FORMS = ("plain", "packed", "native")
INPUT_KINDS = ("exact", "uniform", "normal", "specials")


@dataclass(frozen=True)
class GemmCase:
    """C[m,n] = clamp(A[m,k] @ B[k,n] + bias[n]) for each of `batch` problems."""

    name: str
    m: int
    n: int
    k: int
    batch: int = 1
    bias: bool = True
    clamp: bool = False
    lda_pad: int = 0  # lda = k + lda_pad
    ldb_pad: int = 0  # ldb = n + ldb_pad (plain B only)
    ldc_pad: int = 0  # ldc = n + ldc_pad
    b_form: str = "plain"  # plain | packed (portable) | native (backend layout)
    layers: int = 1  # how often the shape occurs in its model
    tags: tuple[str, ...] = field(default_factory=tuple)
    # a fixed upper clamp bound instead of the 85th percentile (the lower one
    # stays the 15th); -0.0 is the bound whose sign kernels must keep
    clamp_max: float | None = None

    op = "gemm"

    @property
    def lda(self) -> int:
        return self.k + self.lda_pad

    @property
    def ldb(self) -> int:
        return self.n + self.ldb_pad

    @property
    def ldc(self) -> int:
        return self.n + self.ldc_pad

    @property
    def reduction(self) -> int:
        """Length of each dot product (K)."""
        return self.k

    @property
    def flops(self) -> int:
        return 2 * self.m * self.n * self.k * self.batch

    def shape_str(self) -> str:
        return f"m{self.m}n{self.n}k{self.k}" + (f"x{self.batch}" if self.batch > 1 else "")


@dataclass(frozen=True)
class ConvCase:
    """2-D convolution, NHWC input, HWIO filter, NHWC output."""

    name: str
    n: int
    h: int
    w: int
    c_in: int
    c_out: int
    kh: int
    kw: int
    stride: tuple[int, int] = (1, 1)
    pad: tuple[int, int, int, int] = (0, 0, 0, 0)  # top, bottom, left, right
    dilation: tuple[int, int] = (1, 1)
    groups: int = 1
    bias: bool = True
    clamp: bool = False
    layers: int = 1
    tags: tuple[str, ...] = field(default_factory=tuple)

    op = "conv2d"

    @property
    def out_h(self) -> int:
        eff = self.dilation[0] * (self.kh - 1) + 1
        return (self.h + self.pad[0] + self.pad[1] - eff) // self.stride[0] + 1

    @property
    def out_w(self) -> int:
        eff = self.dilation[1] * (self.kw - 1) + 1
        return (self.w + self.pad[2] + self.pad[3] - eff) // self.stride[1] + 1

    @property
    def reduction(self) -> int:
        """Length of each dot product: kh * kw * c_in / groups."""
        return self.kh * self.kw * (self.c_in // self.groups)

    @property
    def flops(self) -> int:
        return 2 * self.n * self.out_h * self.out_w * self.c_out * self.reduction

    def shape_str(self) -> str:
        s = f"n{self.n}h{self.h}w{self.w}c{self.c_in}o{self.c_out}k{self.kh}x{self.kw}"
        if self.stride != (1, 1):
            s += f"s{self.stride[0]}x{self.stride[1]}"
        if any(self.pad):
            s += "p" + "_".join(map(str, self.pad))
        if self.dilation != (1, 1):
            s += f"d{self.dilation[0]}x{self.dilation[1]}"
        if self.groups > 1:
            s += f"g{self.groups}"
        return s


Case = GemmCase | ConvCase


@dataclass(frozen=True)
class Catalog:
    """A named list of cases read from a data file in reference/."""

    name: str
    description: str
    path: str
    gemm: tuple[GemmCase, ...] = ()
    conv: tuple[ConvCase, ...] = ()

    @property
    def cases(self) -> tuple[Case, ...]:
        return (*self.gemm, *self.conv)
