"""A cache-line prefetch hint callable from numba kernels.

Why: the counting kernel (costmodel.count_kernel) reads MappingBatch's batch-last arrays mapping by
mapping, one strided stream per (level, dim) of each array: a few hundred streams, more than the
hardware prefetchers follow, so without a hint most lines arrive from memory on demand (measured:
10 % less time per mapping with it on 10^5 mappings of tpu_like). The latency kernel used it too
until it read each row of a block as one sequential run, which the prefetchers follow unaided.
"""

from __future__ import annotations

from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic


@intrinsic
def prefetch(typingctx, arr, i, j, k):
    """Asks the CPU to bring the cache line of ``arr[i, j, k]`` (a 3-d array) into cache for reading.
    A hint: it never faults, even past the end of the array, and changes no result."""
    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, signature.args[0], ary, list(args[1:]), wraparound=False)
        i8p, i32 = ir.PointerType(ir.IntType(8)), ir.IntType(32)
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]),
                                            "llvm.prefetch.p0i8")
        # read, highest locality, data cache
        builder.call(fn, [builder.bitcast(ptr, i8p), ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return types.none(arr, i, j, k), codegen


@njit(cache=True, inline='always')
def prefetch_rows(arr, b, n):
    """Hints the cache lines of rows b..b+n-1 of ``arr`` [B, L, X] when it is stored batch-last,
    one hint per line of each (l, x) column (a batch-first array is read row by row, a stream the
    hardware prefetchers follow)."""
    if arr.strides[0] < arr.strides[2]:
        step = max(1, 64 // arr.itemsize)
        for m in range(arr.shape[1]):
            for d in range(arr.shape[2]):
                for j in range(0, n, step):
                    prefetch(arr, b + j, m, d)
